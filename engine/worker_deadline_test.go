package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

// deadlineSrc loops for the pod named "loop", far past any deadline of these tests, and labels
// any other pod.
const deadlineSrc = `def overlay(pod):
    if pod["metadata"]["name"] == "loop":
        for i in range(1 << 40):
            pass
    pod["metadata"]["labels"] = {"done": "yes"}
    return pod
`

// deadlinePods returns pods named by names, each a test pod.
func deadlinePods(names ...string) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(names))
	for i, name := range names {
		pods[i] = testPod()
		pods[i].Name = name
	}
	return pods
}

// deadlineOptions are the options of deadlineSrc: a time limit and steps far past the
// deadlines of these tests.
func deadlineOptions(pool *engine.WorkerPool) *engine.Options {
	opts := &engine.Options{Timeout: 30 * time.Second, MaxSteps: 1 << 62}
	if pool != nil {
		opts.Isolation, opts.Workers, opts.MaxMemory = engine.WorkerProcess, pool, 128<<20
	}
	return opts
}

// slowBound bounds the wall time of an apply stopped by a deadline of a second or less: far
// below the overlay's time limit, far above what the deadline takes on a busy machine.
const slowBound = 10 * time.Second

// checkDeadline checks that err is the error of an apply that its caller's deadline stopped
// in the loop of deadlineSrc, after elapsed.
func checkDeadline(t *testing.T, what string, err error, elapsed time.Duration) {
	t.Helper()
	if elapsed > slowBound {
		t.Errorf("%s: took %v, want the deadline's stop well before the time limit", what, elapsed)
	}
	var dl *engine.DeadlineError
	var lim *engine.LimitError
	switch {
	case !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &dl):
		t.Errorf("%s: got %v, want a *DeadlineError", what, err)
	case errors.As(err, &lim):
		t.Errorf("%s: got a *LimitError of %s, want the caller's deadline, not a limit", what, lim.Limit)
	}
	matchErr(t, err, `^overlay.star:3:9: the caller's deadline passed after [0-9.]+m?s$`)
}

// TestApplyDeadline checks the error of an apply that its context's deadline stops, in
// process: the position where the script stopped, and that the caller's deadline passed.
func TestApplyDeadline(t *testing.T) {
	o := compile(t, deadlineSrc, deadlineOptions(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := o.Apply(ctx, deadlinePods("loop")[0], nil)
	checkDeadline(t, "in process", err, time.Since(start))
	var e *engine.Error
	if errors.As(err, &e) && !strings.HasPrefix(e.Backtrace, "Traceback") {
		t.Errorf("got backtrace %q, want the stack where the script stopped", e.Backtrace)
	}
}

// TestWorkerDeadline checks that a worker is told its caller's deadline: an overlay that
// loops stops there, with the error it gives in process, and the worker, not killed, serves
// the next apply; the same for a pod of a batch, whose pods after it fail with the context's
// error, and for an explain.
func TestWorkerDeadline(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	o := compile(t, deadlineSrc, deadlineOptions(pool))
	started := pool.Stats().Started
	// noRestart checks that the pool started no worker since the overlay compiled.
	noRestart := func(what string) {
		t.Helper()
		if s := pool.Stats(); s.Started != started || s.Alive != 1 {
			t.Errorf("%s: worker stats %+v, want the %d started, one alive", what, s, started)
		}
	}
	good := func(what string) {
		t.Helper()
		out, errs := o.ApplyEach(context.Background(), deadlinePods("a", "b"), nil)
		for i, err := range errs {
			if err != nil || out[i].Labels["done"] != "yes" {
				t.Errorf("%s: pod %d: got %v, want it labelled", what, i, err)
			}
		}
		noRestart(what)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	start := time.Now()
	_, err := o.Apply(ctx, deadlinePods("loop")[0], nil)
	cancel()
	checkDeadline(t, "Apply", err, time.Since(start))
	good("after Apply")

	// A second, for the pod before the loop to be done before the deadline on a busy machine.
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	start = time.Now()
	out, errs := o.ApplyEach(ctx, deadlinePods("a", "loop", "b", "c"), nil)
	cancel()
	elapsed := time.Since(start)
	if errs[0] != nil || out[0].Labels["done"] != "yes" {
		t.Errorf("ApplyEach: pod 0, before the loop: got %v, want it labelled", errs[0])
	}
	checkDeadline(t, "ApplyEach", errs[1], elapsed)
	for i, err := range errs[2:] {
		var dl *engine.DeadlineError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &dl) {
			t.Errorf("ApplyEach: pod %d, after the loop: got %v, want a *DeadlineError", i+2, err)
		}
		matchErr(t, err, `^overlay.star: the caller's deadline had passed before the apply began$`)
	}
	good("after ApplyEach")

	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	start = time.Now()
	_, err = o.ApplyBatch(ctx, deadlinePods("a", "loop", "b"), nil)
	cancel()
	checkDeadline(t, "ApplyBatch", err, time.Since(start))
	good("after ApplyBatch")

	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	start = time.Now()
	_, _, err = o.Explain(ctx, deadlinePods("loop")[0], nil)
	cancel()
	checkDeadline(t, "Explain", err, time.Since(start))
	good("after Explain")
}

// TestWorkerCancel checks that a context canceled, not by its deadline, still ends an apply
// in a worker at once: the worker is killed, and the pool starts another.
func TestWorkerCancel(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	o := compile(t, deadlineSrc, deadlineOptions(pool))
	started := pool.Stats().Started
	// A deadline far off does not keep the cancel from killing the worker.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, errs := o.ApplyEach(ctx, deadlinePods("a", "loop", "b"), nil)
	if elapsed := time.Since(start); elapsed > slowBound {
		t.Errorf("took %v, want the cancel to stop the apply well before the time limit", elapsed)
	}
	if !errors.Is(errs[1], context.Canceled) {
		t.Errorf("got %v, want context.Canceled", errs[1])
	}
	if _, err := o.Apply(context.Background(), deadlinePods("a")[0], nil); err != nil {
		t.Errorf("after a cancel: %v", err)
	}
	if s := pool.Stats(); s.Started != started+1 {
		t.Errorf("worker stats %+v, want one started after the %d: the canceled one was killed", s, started)
	}
}

package engine_test

// This file tests the batches whose worker dies with answers it had not written out: a worker
// writes its answers out in batches, and counts the pods it answered in its progress, which
// tells the parent which pod it died at.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

// lostSrc prints at pod p1, dies of its memory limit at pod p4 and labels the others.
const lostSrc = `def overlay(pod):
    name = pod["metadata"]["name"]
    if name == "p1":
        print("p1 printed")
    if name == "p4":
        s = "ab" * 1024
        for i in range(40):
            s += s
    pod["metadata"]["labels"] = {"seen": name}
`

// namedPods returns n pods named p0, p1, ...
func namedPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = testPod()
		pods[i].Name = fmt.Sprint("p", i)
	}
	return pods
}

// TestApplyEachLostAnswers checks that the pods a worker applied before the one it died at,
// whose answers died with it, get their results from another worker; that the pod it died
// at gets the memory limit; and that what the pods before it printed passes on once. The
// worker writes out the first answer at once and holds the next ones, so that p1, p2 and p3
// are lost: p1 printed, which wrote p0's answer out before it, and nothing after.
func TestApplyEachLostAnswers(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := workerOptions(pool)
	var msgs []string
	opts.Print = func(pos syntax.Position, msg string) { msgs = append(msgs, msg) }
	o := compile(t, lostSrc, opts)
	pods := namedPods(7)

	got, errs := o.ApplyEach(context.Background(), pods, nil)
	for i, pod := range pods {
		if i == 4 {
			var lim *engine.LimitError
			if !errors.As(errs[i], &lim) || lim.Limit != engine.LimitMemory || got[i] != nil {
				t.Errorf("%s: got %v, %v, want a memory LimitError", pod.Name, got[i], errs[i])
			}
			continue
		}
		if errs[i] != nil || got[i] == nil || got[i].Labels["seen"] != pod.Name {
			t.Errorf("%s: got %v, error %v, want label seen: %s", pod.Name, got[i], errs[i], pod.Name)
		}
	}
	if want := []string{"p1 printed"}; !slices.Equal(msgs, want) {
		t.Errorf("printed %q, want %q", msgs, want)
	}
	if s := pool.Stats(); s.Started != 2 {
		t.Errorf("stats = %+v, want 2 workers started (the first, then one after the death)", s)
	}

	// ApplyBatch stops at the pod that killed the worker, with the results of those before
	// it, which a second worker gave again.
	msgs = nil
	out, err := o.ApplyBatch(context.Background(), pods, nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
		t.Errorf("ApplyBatch: got %v, want a memory LimitError", err)
	}
	if len(out) != 4 {
		t.Fatalf("ApplyBatch: got %d results, want the 4 before p4", len(out))
	}
	for i, pod := range out {
		if pod == nil || pod.Labels["seen"] != pods[i].Name {
			t.Errorf("ApplyBatch: result %d is %v, want label seen: %s", i, pod, pods[i].Name)
		}
	}
	if want := []string{"p1 printed"}; !slices.Equal(msgs, want) {
		t.Errorf("ApplyBatch printed %q, want %q", msgs, want)
	}
}

package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/starpod/starpod/engine"
)

// The tasks of the tests, registered in the test binary, which serves as its own worker.
func init() {
	// test.apply applies the chain to the pod of the request (JSON) and answers the result
	// (JSON), with the ctx's app id as a label.
	engine.RegisterTask("test.apply", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		pod := new(corev1.Pod)
		if err := json.Unmarshal(req, pod); err != nil {
			return nil, err
		}
		if err := note([]byte("applying " + pod.Name)); err != nil {
			return nil, err
		}
		res, err := chain.Apply(ctx, pod, env)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	})
	// test.fail fails with the request as its error.
	engine.RegisterTask("test.fail", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		return nil, errors.New(string(req))
	})
	// test.hang notes the request and never answers.
	engine.RegisterTask("test.hang", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		if err := note(req); err != nil {
			return nil, err
		}
		select {}
	})
	// test.slow notes its progress every 50ms for as many steps as the request says, longer
	// in all than the time allowed between notes, and answers "done".
	engine.RegisterTask("test.slow", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		n := len(req)
		for i := range n {
			if err := note([]byte{byte(i)}); err != nil {
				return nil, err
			}
			time.Sleep(50 * time.Millisecond)
		}
		return []byte("done"), nil
	})
	// test.big answers as many MiB as the request's first byte says; test.bignote gives a
	// note of that many KiB.
	engine.RegisterTask("test.big", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		return make([]byte, int(req[0])<<20), nil
	})
	engine.RegisterTask("test.bignote", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		if err := note(make([]byte, int(req[0])<<10)); err != nil {
			return nil, err
		}
		return []byte("noted"), nil
	})
	// test.applythen applies the chain to pods of the names the request gives before a
	// semicolon, and then does what it says after it: answers "ok", fails, takes memory until
	// the worker dies, or hangs.
	engine.RegisterTask("test.applythen", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		names, then, _ := strings.Cut(string(req), ";")
		for _, name := range strings.Split(names, ",") {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if _, err := chain.Apply(ctx, pod, &engine.Env{AppID: "demo"}); err != nil {
				return nil, err
			}
		}
		switch then {
		case "fail":
			return nil, errors.New("failed after the pods")
		case "bomb":
			bomb()
		case "hang":
			select {}
		}
		return []byte("ok"), nil
	})
	// test.bomb takes memory until the worker dies.
	engine.RegisterTask("test.bomb", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		bomb()
		return nil, nil
	})
	// test.notebomb notes the request, as a task does before the chain applies to a pod,
	// and takes memory until the worker dies, as an overlay may.
	engine.RegisterTask("test.notebomb", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		if err := note(req); err != nil {
			return nil, err
		}
		bomb()
		return nil, nil
	})
	// test.latebomb notes "first", waits until the note has been sent, notes "second" and
	// dies at once of its memory limit, before that note can be sent.
	engine.RegisterTask("test.latebomb", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		if err := note([]byte("first")); err != nil {
			return nil, err
		}
		time.Sleep(500 * time.Millisecond)
		if err := note([]byte("second")); err != nil {
			return nil, err
		}
		sinkBytes = make([]byte, 1<<40) // more than any limit, or the machine, allows
		return nil, nil
	})
}

var sinkBytes []byte

// bomb takes memory until the worker dies.
func bomb() {
	var keep [][]byte
	for {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		keep = append(keep, b)
	}
}

// compileTaskChain compiles an overlay that labels pods with the ctx's app id and prints, in
// workers of pool, with its prints going to the returned function.
func compileTaskChain(t *testing.T, pool *engine.WorkerPool) (engine.Chain, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var prints []string
	opts := workerOptions(pool)
	opts.Timeout = 2 * time.Second
	opts.Print = func(pos syntax.Position, msg string) {
		mu.Lock()
		defer mu.Unlock()
		prints = append(prints, msg)
	}
	src := `
def overlay(pod, ctx):
    print("labelling", pod["metadata"]["name"])
    pod["metadata"]["labels"] = {"app": ctx.app_id}
    return pod
`
	o, err := engine.Compile(context.Background(), "label.star", []byte(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Chain{o}, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), prints...)
	}
}

func TestRunTask(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	chain, prints := compileTaskChain(t, pool)
	ctx := context.Background()
	opts := engine.TaskOptions{Timeout: 10 * time.Second, MaxAnswer: 1 << 20}

	req := []byte(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}`)
	answer, err := chain.RunTask(ctx, "test.apply", &engine.Env{AppID: "demo"}, req, opts)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(answer, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Labels["app"] != "demo" {
		t.Errorf("labels = %v, want app=demo", pod.Labels)
	}
	if got := prints(); len(got) != 1 || got[0] != "labelling p" {
		t.Errorf("prints = %q, want [labelling p]", got)
	}

	// The task's error reaches the caller as it is, and the worker serves on.
	if _, err := chain.RunTask(ctx, "test.fail", nil, []byte("no such thing"), opts); err == nil || err.Error() != "no such thing" {
		t.Errorf("test.fail: got %v, want the error no such thing", err)
	}
	if _, err := chain.RunTask(ctx, "test.none", nil, nil, opts); err == nil || !strings.Contains(err.Error(), `no task "test.none"`) {
		t.Errorf("test.none: got %v, want no task", err)
	}
	// A task may take longer than the time allowed between notes when it notes its progress.
	answer, err = chain.RunTask(ctx, "test.slow", nil, make([]byte, 40), engine.TaskOptions{Timeout: time.Second})
	if err != nil || string(answer) != "done" {
		t.Errorf("test.slow: got %q, %v, want done", answer, err)
	}
	if _, err := chain.RunTask(ctx, "test.apply", nil, req, opts); err != nil {
		t.Errorf("after the failures: %v", err)
	}
	// The answer goes to the memory given, when it has room.
	mem := make([]byte, 3, 64)
	withMem := opts
	withMem.Answer = mem
	answer, err = chain.RunTask(ctx, "test.slow", nil, make([]byte, 1), withMem)
	if same := len(answer) > 0 && &answer[0] == &mem[:1][0]; err != nil || string(answer) != "done" || !same {
		t.Errorf("test.slow with memory: got %q, %v, in the memory given: %v; want done in it", answer, err, same)
	}
}

// TestRunTaskHangs checks that a worker that stops noting is killed once the time allowed
// passes, and that the caller learns the last note and the overlay's time limit.
func TestRunTaskHangs(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	chain, _ := compileTaskChain(t, pool)
	_, err := chain.RunTask(context.Background(), "test.hang", nil, []byte("pod 7"), engine.TaskOptions{Timeout: 500 * time.Millisecond})
	var f *engine.TaskFailure
	if !errors.As(err, &f) {
		t.Fatalf("got %v, want a *TaskFailure", err)
	}
	if string(f.Note) != "pod 7" {
		t.Errorf("note = %q, want pod 7", f.Note)
	}
	var lim *engine.LimitError
	if f.Err == nil || !errors.As(f.Err, &lim) || lim.Limit != engine.LimitTime || f.Err.Overlay != "label.star" {
		t.Errorf("Err = %v, want the time limit of label.star", f.Err)
	}
	// The pool replaces the worker.
	req := []byte(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}`)
	if _, err := chain.RunTask(context.Background(), "test.apply", nil, req, engine.TaskOptions{Timeout: 10 * time.Second}); err != nil {
		t.Errorf("after the worker was killed: %v", err)
	}
}

// TestRunTaskMemory checks the *TaskFailure of a task whose worker dies of its memory limit:
// it blames the overlay only when the task's last note reached the caller and says the chain
// was at work.
func TestRunTaskMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a worker's progress is counted in memory files, which are Linux's")
	}
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	chain, _ := compileTaskChain(t, pool)
	run := func(task, req string) *engine.TaskFailure {
		t.Helper()
		_, err := chain.RunTask(context.Background(), task, nil, []byte(req), engine.TaskOptions{Timeout: time.Minute})
		var f *engine.TaskFailure
		if !errors.As(err, &f) {
			t.Fatalf("%s: got %v, want a *TaskFailure", task, err)
		}
		return f
	}
	blamed := func(f *engine.TaskFailure) bool {
		var lim *engine.LimitError
		return f.Err != nil && errors.As(f.Err, &lim) && lim.Limit == engine.LimitMemory && f.Err.Overlay == "label.star"
	}
	// No note: the task's own memory.
	if f := run("test.bomb", ""); len(f.Note) > 0 || f.Err != nil {
		t.Errorf("test.bomb: note %q, Err %v, want neither", f.Note, f.Err)
	}
	// The overlay at work on pod 7.
	if f := run("test.notebomb", "pod 7"); string(f.Note) != "pod 7" || !blamed(f) {
		t.Errorf("test.notebomb: note %q, Err %v, want pod 7 and the memory limit of label.star", f.Note, f.Err)
	}
	// A later note than the one the caller got died with the worker: the memory is not
	// blamed on what the note names. The worker sends its latest note every tenth of a
	// second, also while it dies, so the later note may reach the caller: then it is blamed.
	stale := false
	for i := 0; i < 10 && !stale; i++ {
		switch f := run("test.latebomb", ""); string(f.Note) {
		case "first":
			stale = true
			if f.Err != nil {
				t.Errorf("test.latebomb: Err = %v after the note %q, which was not the last, want nil", f.Err, f.Note)
			}
		case "second":
			if !blamed(f) {
				t.Errorf("test.latebomb: Err = %v after the last note, want the memory limit of label.star", f.Err)
			}
		default:
			t.Fatalf("test.latebomb: note %q, want first or second", f.Note)
		}
	}
	if !stale {
		t.Error("test.latebomb: the worker sent its last note before it died in each of 10 runs")
	}
}

// TestRunTaskNotInWorkers checks the chains RunTask refuses.
func TestRunTaskNotInWorkers(t *testing.T) {
	inProcess, err := engine.Compile(context.Background(), "x.star", []byte("def overlay(pod):\n    return pod\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	other := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer other.Close()
	a, _ := compileTaskChain(t, pool)
	b, _ := compileTaskChain(t, other)
	for name, chain := range map[string]engine.Chain{
		"empty":      nil,
		"in process": {inProcess},
		"mixed":      {a[0], inProcess},
		"two pools":  {a[0], b[0]},
	} {
		if _, err := chain.RunTask(context.Background(), "test.apply", nil, nil, engine.TaskOptions{Timeout: time.Second}); !errors.Is(err, engine.ErrNotInWorkers) {
			t.Errorf("%s: got %v, want ErrNotInWorkers", name, err)
		}
	}
}

// TestRunTaskBounds checks the bounds of what a worker sends back during a task: an answer
// larger than TaskOptions.MaxAnswer and a note over 16 KiB are the task's errors, and the
// worker serves on.
func TestRunTaskBounds(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	chain, _ := compileTaskChain(t, pool)
	ctx := context.Background()
	opts := engine.TaskOptions{Timeout: 10 * time.Second, MaxAnswer: 2 << 20}
	if answer, err := chain.RunTask(ctx, "test.big", nil, []byte{2}, opts); err != nil || len(answer) != 2<<20 {
		t.Errorf("2 MiB within 2 MiB: got %d bytes, %v", len(answer), err)
	}
	if _, err := chain.RunTask(ctx, "test.big", nil, []byte{3}, opts); err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("3 MiB over 2 MiB: got %v, want an error of the limit", err)
	}
	if answer, err := chain.RunTask(ctx, "test.bignote", nil, []byte{16}, opts); err != nil || string(answer) != "noted" {
		t.Errorf("a note of 16 KiB: got %q, %v", answer, err)
	}
	if _, err := chain.RunTask(ctx, "test.bignote", nil, []byte{17}, opts); err == nil || !strings.Contains(err.Error(), "a note of") {
		t.Errorf("a note of 17 KiB: got %v, want an error of the limit", err)
	}
	if answer, err := chain.RunTask(ctx, "test.big", nil, []byte{1}, opts); err != nil || len(answer) != 1<<20 {
		t.Errorf("after the errors: got %d bytes, %v", len(answer), err)
	}
}

// TestRunTaskPrints checks that RunTask holds the print() output of a task until the task
// ends: a task that succeeds passes it on, in order; one that fails, with its own error or
// with its worker, holds it for the caller to pass on once, or to drop.
func TestRunTaskPrints(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	chain, prints := compileTaskChain(t, pool)
	ctx := context.Background()
	want := []string{"labelling p1", "labelling p2", "labelling p3"}
	// since returns the prints after the first n.
	since := func(n int) []string { return prints()[n:] }

	answer, err := chain.RunTask(ctx, "test.applythen", nil, []byte("p1,p2,p3;ok"), engine.TaskOptions{Timeout: 10 * time.Second})
	if err != nil || string(answer) != "ok" {
		t.Fatalf("got %q, %v, want ok", answer, err)
	}
	if got := since(0); !slices.Equal(got, want) {
		t.Errorf("a task that succeeds printed %q, want %q", got, want)
	}

	for _, then := range []string{"fail", "bomb", "hang"} {
		n := len(prints())
		_, err := chain.RunTask(ctx, "test.applythen", nil, []byte("p1,p2,p3;"+then), engine.TaskOptions{Timeout: time.Second})
		var printer interface{ Print() }
		var te *engine.TaskError
		var tf *engine.TaskFailure
		switch {
		case then == "fail" && errors.As(err, &te) && err.Error() == "failed after the pods":
			printer = te
		case then != "fail" && errors.As(err, &tf):
			printer = tf
		default:
			t.Fatalf("%s: got %v (%T)", then, err, err)
		}
		if got := since(n); len(got) > 0 {
			t.Errorf("%s: the task printed %q before its caller asked", then, got)
		}
		printer.Print()
		printer.Print()
		if got := since(n); !slices.Equal(got, want) {
			t.Errorf("%s: Print twice printed %q, want %q", then, got, want)
		}
	}
}

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

// TestMain lets the test binary serve as its own overlay worker.
func TestMain(m *testing.M) {
	engine.ServeWorkerIfRequested()
	if os.Getenv(determinismEnv) != "" {
		os.Exit(determinismChild())
	}
	os.Exit(m.Run())
}

// workerOptions returns options for WorkerProcess isolation on pool.
func workerOptions(pool *engine.WorkerPool) *engine.Options {
	return &engine.Options{Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20}
}

func TestWorkerApply(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 2})
	defer pool.Close()
	src := "def overlay(pod, ctx):\n    pod[\"spec\"][\"nodeSelector\"] = {\"pool\": ctx.args[\"pool\"]}\n"
	env := &engine.Env{Args: map[string]string{"pool": "gpu"}}
	local := compile(t, src, nil)
	remote := compile(t, src, workerOptions(pool))
	want, err := local.Apply(context.Background(), testPod(), env)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := remote.Apply(context.Background(), testPod(), env)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("worker result (-in-process +worker):\n%s", diff)
		}
	}
	if s := pool.Stats(); s.Started != 1 || s.Alive != 1 || s.Idle != 1 {
		t.Errorf("stats = %+v, want one worker started, alive and idle", s)
	}
}

// TestWorkerErrors checks that every kind of error crosses the process boundary unchanged.
func TestWorkerErrors(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	for _, src := range []string{
		"def overlay(pod):\n    return pod[\n",
		"def overlay(pod):\n    return opne(pod)\n",
		"def overlays(pod):\n    pass\n",
		"def overlay(pod):\n    x = pod[\"nope\"]\n",
		"def overlay(pod):\n    f(1)\ndef f(n):\n    g(n)\ndef g(n):\n    f(n)\n",
		"def overlay(pod):\n    pod[\"spec\"][\"containers\"][0][\"ports\"][0][\"containerPort\"] = \"1\"\n    pod[\"spec\"][\"tolerration\"] = 1\n",
		"def overlay(pod):\n    for i in range(1 << 40):\n        pass\n",
		"def overlay(pod):\n    pod[\"metadata\"][\"annotations\"] = {\"a\": \"x\" * (2 << 20)}\n",
		"x = {}[1]\ndef overlay(pod):\n    pass\n",
		"load(\"lib.star\", \"f\")\ndef overlay(pod):\n    pass\n",
	} {
		opts := &engine.Options{MaxSteps: 10000}
		local, lerr := engine.Compile("overlay.star", []byte(src), opts)
		wopts := workerOptions(pool)
		wopts.MaxSteps = 10000
		remote, rerr := engine.Compile("overlay.star", []byte(src), wopts)
		if lerr == nil {
			_, lerr = local.Apply(context.Background(), testPod(), nil)
		}
		if rerr == nil {
			_, rerr = remote.Apply(context.Background(), testPod(), nil)
		}
		if lerr == nil || rerr == nil {
			t.Fatalf("%s: got errors %v and %v, want two errors", src, lerr, rerr)
		}
		if lerr.Error() != rerr.Error() {
			t.Errorf("%s: in-process error:\n%v\nworker error:\n%v", src, lerr, rerr)
		}
		var le, re *engine.Error
		if !errors.As(lerr, &le) || !errors.As(rerr, &re) {
			t.Fatalf("got %T and %T, want *engine.Error", lerr, rerr)
		}
		if le.Overlay != re.Overlay || le.Pos != re.Pos && le.Pos.String() != re.Pos.String() || le.Backtrace != re.Backtrace {
			t.Errorf("%s: in-process %q %v %q, worker %q %v %q", src, le.Overlay, le.Pos, le.Backtrace, re.Overlay, re.Pos, re.Backtrace)
		}
		if len(le.Fields) != len(re.Fields) {
			t.Fatalf("%s: %d field errors in-process, %d in the worker", src, len(le.Fields), len(re.Fields))
		}
		for i := range le.Fields {
			if le.Fields[i].Type != re.Fields[i].Type || le.Fields[i].Field != re.Fields[i].Field {
				t.Errorf("%s: field error %d: in-process %v, worker %v", src, i, le.Fields[i], re.Fields[i])
			}
		}
		var ll, rl *engine.LimitError
		if errors.As(lerr, &ll) != errors.As(rerr, &rl) {
			t.Errorf("%s: LimitError in-process %v, in the worker %v", src, ll, rl)
		}
	}
}

func TestWorkerMemoryLimit(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	bomb := compile(t, "def overlay(pod):\n    s = \"ab\" * 1024\n    for i in range(40):\n        s += s\n", workerOptions(pool))
	ok := compile(t, "def overlay(pod):\n    pod[\"metadata\"][\"labels\"] = {\"ok\": \"yes\"}\n", workerOptions(pool))
	for i := 0; i < 2; i++ {
		_, err := bomb.Apply(context.Background(), testPod(), nil)
		var lim *engine.LimitError
		if !errors.As(err, &lim) || lim.Limit != "memory" {
			t.Fatalf("got %v, want a memory LimitError", err)
		}
		if want := "overlay.star: exceeded the memory limit of 128Mi"; err.Error() != want {
			t.Errorf("got %q, want %q", err, want)
		}
		// The pool replaces the dead worker.
		got, err := ok.Apply(context.Background(), testPod(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["ok"] != "yes" {
			t.Errorf("labels = %v, want ok: yes", got.Labels)
		}
	}
	if s := pool.Stats(); s.Started != 3 || s.Alive != 1 {
		t.Errorf("stats = %+v, want 3 workers started, 1 alive", s)
	}
}

// chainSources is a chain of three overlays whose result depends on the pod and the ctx.
var chainSources = []string{
	"def overlay(pod, ctx):\n    pod[\"metadata\"].setdefault(\"labels\", {})[\"replica\"] = str(ctx.replica_id)\n",
	"def overlay(pod):\n    c = pod[\"spec\"][\"containers\"][0]\n    c[\"env\"] = [{\"name\": \"POD\", \"value\": pod[\"metadata\"][\"name\"]}]\n",
	"def overlay(pod):\n    n = len(pod[\"metadata\"][\"name\"])\n    pod[\"spec\"][\"priority\"] = n * 10\n    return pod\n",
}

func compileChain(t *testing.T, opts *engine.Options) engine.Chain {
	t.Helper()
	var chain engine.Chain
	for i, src := range chainSources {
		o, err := engine.Compile(fmt.Sprintf("chain%d.star", i), []byte(src), opts)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, o)
	}
	return chain
}

// mixedPod returns the i-th of a set of different pods.
func mixedPod(i int) *corev1.Pod {
	pod := testPod()
	pod.Name = strings.Repeat("p", 1+i%7) + fmt.Sprint(i)
	if i%3 == 0 {
		pod.Labels = nil
	}
	if i%5 == 0 {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", Image: "side:v1"})
	}
	return pod
}

// applyConcurrently applies chain to 64 goroutines' worth of mixed pods at once, several
// times each, and checks every result against the result computed alone by want.
func applyConcurrently(t *testing.T, chain engine.Chain, want func(i int) *corev1.Pod) {
	const goroutines, rounds = 64, 4
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				i := g*rounds + r
				env := &engine.Env{ReplicaID: i}
				got, err := chain.Apply(context.Background(), mixedPod(i), env)
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(want(i), got); diff != "" {
					t.Errorf("pod %d (-alone +concurrent):\n%s", i, diff)
				}
			}
		}()
	}
	wg.Wait()
}

func expectedChain(t *testing.T) func(i int) *corev1.Pod {
	chain := compileChain(t, nil)
	want := make(map[int]*corev1.Pod)
	for i := 0; i < 64*4; i++ {
		res, err := chain.Apply(context.Background(), mixedPod(i), &engine.Env{ReplicaID: i})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res
	}
	return func(i int) *corev1.Pod { return want[i] }
}

func TestChainConcurrent(t *testing.T) {
	applyConcurrently(t, compileChain(t, nil), expectedChain(t))
}

func TestWorkerPoolConcurrent(t *testing.T) {
	const size = 4
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: size})
	chain := compileChain(t, workerOptions(pool))
	applyConcurrently(t, chain, expectedChain(t))
	s := pool.Stats()
	if s.Started > size || s.Alive > size || s.Idle != s.Alive {
		t.Errorf("stats after the load = %+v, want at most %d workers started, all idle", s, size)
	}
	pool.Close()
	if s := pool.Stats(); s.Alive != 0 || s.Idle != 0 {
		t.Errorf("stats after Close = %+v, want no workers alive", s)
	}
	if _, err := chain.Apply(context.Background(), testPod(), nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("apply after Close: got %v, want an error saying the pool is closed", err)
	}
}

func TestWorkerBatch(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	o := compileChain(t, workerOptions(pool))[1]
	local := compileChain(t, nil)[1]
	var pods []*corev1.Pod
	for i := 0; i < 20; i++ {
		pods = append(pods, mixedPod(i))
	}
	got, err := o.ApplyBatch(context.Background(), pods, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantPods, err := local.ApplyBatch(context.Background(), pods, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantPods, got); diff != "" {
		t.Errorf("(-in-process +worker):\n%s", diff)
	}
}

func TestWorkerTimeAndContext(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := workerOptions(pool)
	opts.Timeout = 200 * time.Millisecond
	// One step that outlasts the time limit: the parent kills the worker.
	slow := compile(t, "def overlay(pod):\n    s = set(range(1 << 26))\n", opts)
	_, err := slow.Apply(context.Background(), testPod(), nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != "time" && lim.Limit != "memory" {
		t.Errorf("got %v, want a time (or memory) LimitError", err)
	}
	// A cancelled context stops the apply.
	opts.Timeout = time.Minute
	loop := compile(t, "def overlay(pod):\n    for i in range(1 << 60):\n        pass\n", &engine.Options{
		Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20, Timeout: time.Minute, MaxSteps: 1 << 62})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = loop.Apply(ctx, testPod(), nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	ok := compile(t, "def overlay(pod):\n    pass\n", opts)
	if _, err := ok.Apply(context.Background(), testPod(), nil); err != nil {
		t.Errorf("after a killed worker: %v", err)
	}
}

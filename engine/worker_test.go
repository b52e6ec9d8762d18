package engine_test

// This file tests overlays in worker processes: applies, and the errors and limits that cross
// the process boundary; workers that hang, break or fail to start. The other worker_*_test.go
// files test batches (ApplyEach), print() output and the pool.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/sandbox"
)

// TestMain lets the test binary serve as its own overlay worker.
func TestMain(m *testing.M) {
	if sandbox.IsWorker() {
		if mode := os.Getenv(brokenWorkerEnv); mode != "" {
			os.Exit(engine.ServeBrokenWorker(mode, os.Getenv(brokenPidEnv)))
		}
		if os.Getenv(workerProfileEnv) != "" {
			os.Exit(serveWorkerProfiled())
		}
	}
	engine.ServeWorkerIfRequested()
	if os.Getenv(determinismEnv) != "" {
		os.Exit(determinismChild())
	}
	os.Exit(m.Run())
}

// brokenWorkerEnv makes a worker started by the test binary break the protocol (see
// TestWorkerBroken).
const brokenWorkerEnv = "STARPOD_TEST_BROKEN_WORKER"

// brokenPidEnv names a file where a broken worker writes its process id.
const brokenPidEnv = "STARPOD_TEST_BROKEN_WORKER_PID"

// workerProfileEnv names a file prefix: a worker started by the test binary with it set in its
// environment writes its CPU profile to PREFIX.PID when its input closes, e.g.
//
//	STARPOD_WORKER_CPUPROFILE=/tmp/worker go test -run '^$' -bench ApplyWorkerBatch
const workerProfileEnv = "STARPOD_WORKER_CPUPROFILE"

// serveWorkerProfiled serves as a worker with a CPU profile and returns the exit code.
func serveWorkerProfiled() int {
	f, err := os.Create(fmt.Sprintf("%s.%d", os.Getenv(workerProfileEnv), os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pprof.StopCPUProfile()
	if err := engine.ServeWorker(); err != nil {
		fmt.Fprintf(os.Stderr, "starpod worker: %v\n", err)
		return 1
	}
	return 0
}

// workerOptions returns options for WorkerProcess isolation on pool, with a time limit long
// enough that a memory bomb always meets the memory limit first, even on a busy machine;
// tests of the time limit set theirs.
func workerOptions(pool *engine.WorkerPool) *engine.Options {
	return &engine.Options{Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20, Timeout: 2 * time.Minute}
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

// TestWorkerPrestart checks that Prestart fills the pool in the background, that applies use
// the workers it started, and that a closed pool starts none.
func TestWorkerPrestart(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 2})
	defer pool.Close()
	opts := workerOptions(pool)
	pool.Prestart(opts)
	pool.Prestart(opts) // the pool is full: no more workers
	for s := pool.Stats(); s.Idle < 2; s = pool.Stats() {
		if s.Started > 2 || s.Alive > 2 {
			t.Fatalf("stats = %+v, want at most 2 workers", s)
		}
		time.Sleep(time.Millisecond)
	}
	o := compile(t, "def overlay(pod):\n    pod[\"metadata\"][\"labels\"] = {\"a\": \"b\"}\n", opts)
	pods := []*corev1.Pod{testPod(), testPod(), testPod()}
	if _, err := o.ApplyBatch(context.Background(), pods, nil); err != nil {
		t.Fatal(err)
	}
	if s := pool.Stats(); s.Started != 2 || s.Alive != 2 {
		t.Errorf("stats = %+v, want the 2 workers Prestart started, and no other", s)
	}

	closed := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 2})
	closed.Close()
	closed.Prestart(nil)
	if s := closed.Stats(); s.Started != 0 || s.Alive != 0 {
		t.Errorf("closed pool: stats = %+v, want no workers", s)
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
		local, lerr := engine.Compile(context.Background(), "overlay.star", []byte(src), opts)
		wopts := workerOptions(pool)
		wopts.MaxSteps = 10000
		remote, rerr := engine.Compile(context.Background(), "overlay.star", []byte(src), wopts)
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
		if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
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
	// Each bomb ran twice: in the worker that held ok.star too, then in one of its own.
	if s := pool.Stats(); s.Started != 5 || s.Alive != 1 {
		t.Errorf("stats = %+v, want 5 workers started, 1 alive", s)
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
	if !errors.As(err, &lim) || lim.Limit != engine.LimitTime && lim.Limit != engine.LimitMemory {
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

// TestWorkerBroken checks that a worker that breaks the protocol gives a clear error, neither
// a hang nor a panic, and is replaced.
func TestWorkerBroken(t *testing.T) {
	for _, c := range []struct {
		mode string
		want string // the error of Compile, or "" for none
		each string // the error of each pod, if Compile succeeds
	}{
		{"garbage", "overlay worker failed: frame of 1952999795 bytes exceeds the limit of 9437184", ""},
		{"cut", "overlay worker failed: exit status 3", ""},
		{"kind", "overlay worker failed: got a frame of kind 'z', want done", ""},
		{"pods", "", "decoding the result: "},
		{"short", "", "overlay worker failed: answered 0 pods, want 3"},
		{"extra", "", "broken.star: x"}, // and the worker is gone
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Setenv(brokenWorkerEnv, c.mode)
			pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
			defer pool.Close()
			o, err := engine.Compile(context.Background(), "broken.star", []byte("def overlay(pod):\n    pass\n"), workerOptions(pool))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got %v, want an error containing %q", err, c.want)
				}
				var e *engine.Error
				if !errors.As(err, &e) || e.Overlay != "broken.star" {
					t.Errorf("got %T, want an *engine.Error naming the overlay", err)
				}
				if s := pool.Stats(); s.Alive != 0 {
					t.Errorf("after the error: stats %+v, want no worker alive", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pods, envs := eachInput(3)
			_, errs := o.ApplyEach(context.Background(), pods, envs)
			for i, err := range errs {
				if err == nil || !strings.Contains(err.Error(), c.each) {
					t.Errorf("pod %d: got %v, want an error containing %q", i, err, c.each)
				}
			}
			if s, want := pool.Stats().Alive, map[string]int{"pods": 1}[c.mode]; s != want {
				t.Errorf("after the apply: %d workers alive, want %d", s, want)
			}
		})
	}
}

// TestWorkerHangs checks that the parent kills a worker that never answers, at a define or at
// a pod: the caller gets the time limit's error, and the worker process is gone.
func TestWorkerHangs(t *testing.T) {
	for _, mode := range []string{"hang", "hangapply"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			t.Setenv(brokenWorkerEnv, mode)
			t.Setenv(brokenPidEnv, pidFile)
			pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
			defer pool.Close()
			opts := workerOptions(pool)
			opts.Timeout = 100 * time.Millisecond
			o, err := engine.Compile(context.Background(), "hang.star", []byte("def overlay(pod):\n    pass\n"), opts)
			if mode == "hangapply" {
				if err != nil {
					t.Fatal(err)
				}
				_, err = o.Apply(context.Background(), testPod(), nil)
			}
			var lim *engine.LimitError
			if !errors.As(err, &lim) || lim.Limit != engine.LimitTime {
				t.Fatalf("got %v, want a time LimitError", err)
			}
			if want := "hang.star: exceeded the time limit of 100ms"; err.Error() != want {
				t.Errorf("got %q, want %q", err, want)
			}
			if s := pool.Stats(); s.Alive != 0 {
				t.Errorf("stats %+v, want no worker alive", s)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(string(data))
			if err != nil {
				t.Fatal(err)
			}
			if processExists(pid) {
				t.Errorf("worker process %d still exists", pid)
			}
		})
	}
}

// TestWorkerStart checks that a worker that dies before it is ready gives an error saying the
// worker could not start, not a limit of the overlay.
func TestWorkerStart(t *testing.T) {
	t.Run("too little memory", func(t *testing.T) {
		pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
		defer pool.Close()
		opts := workerOptions(pool)
		opts.MaxMemory = 32 << 20
		_, err := engine.Compile(context.Background(), "fine.star", []byte("def overlay(pod):\n    pass\n"), opts)
		want := "fine.star: starting an overlay worker: the memory limit 32Mi is below the 48Mi a process needs to run scripts"
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %q", err, want)
		}
		var lim *engine.LimitError
		if errors.As(err, &lim) {
			t.Errorf("got a %s LimitError, want none", lim.Limit)
		}
		pool.Prestart(opts)
		if s := pool.Stats(); s.Started != 0 {
			t.Errorf("stats %+v, want no worker started", s)
		}
	})
	t.Run("no hello", func(t *testing.T) {
		t.Setenv(brokenWorkerEnv, "nostart")
		pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
		defer pool.Close()
		_, err := engine.Compile(context.Background(), "fine.star", []byte("def overlay(pod):\n    pass\n"), workerOptions(pool))
		want := "fine.star: starting an overlay worker: exit status 2: fatal error: runtime: out of memory: the overlay worker ran out of memory as it started, under the memory limit of 128Mi"
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %q", err, want)
		}
		if s := pool.Stats(); s.Started != 1 || s.Alive != 0 {
			t.Errorf("stats %+v, want one worker started and none alive", s)
		}
	})
}

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/syntax"
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
	return &engine.Options{Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20, Timeout: 20 * time.Second}
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

// TestWorkerErrors checks that every kind of error crosses the process boundary unchanged,
// from a worker's apply and through EncodeError and DecodeError.
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
		// What a task in a worker sends of an error is what an apply in a worker reports.
		data, err := engine.EncodeError(lerr)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := engine.DecodeError(data)
		if err != nil {
			t.Fatal(err)
		}
		sameErrors(t, src+" (encoded)", rerr, decoded)
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
	if _, err := engine.DecodeError([]byte("{")); err == nil {
		t.Error("DecodeError of malformed data: got no error")
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
		o, err := engine.Compile(context.Background(), fmt.Sprintf("chain%d.star", i), []byte(src), opts)
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
				env := &engine.Env{ReplicaID: i, Scheduler: "kubernetes"}
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
		res, err := chain.Apply(context.Background(), mixedPod(i), &engine.Env{ReplicaID: i, Scheduler: "kubernetes"})
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

// eachSources is a chain whose second overlay fails on some replicas: with a Starlark error
// (replica_id % 4 == 1), with an invalid result (% 4 == 2); the third runs on the others.
var eachSources = []string{
	chainSources[0],
	"def overlay(pod, ctx):\n" +
		"    if ctx.replica_id % 4 == 1:\n" +
		"        fail(\"replica %d of %s\" % (ctx.replica_id, ctx.role))\n" +
		"    if ctx.replica_id % 4 == 2:\n" +
		"        pod[\"spec\"][\"containers\"][0][\"ports\"] = [{\"containerPort\": \"x\"}]\n" +
		"        pod[\"spec\"][\"nodeSelectr\"] = {}\n",
	"def overlay(pod, ctx):\n    pod[\"metadata\"][\"labels\"][\"n\"] = str(ctx.num_replicas) + ctx.args[\"k\"]\n",
}

func compileEach(t *testing.T, opts *engine.Options) engine.Chain {
	t.Helper()
	var chain engine.Chain
	for i, src := range eachSources {
		o, err := engine.Compile(context.Background(), fmt.Sprintf("each%d.star", i), []byte(src), opts)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, o)
	}
	return chain
}

// eachInput returns n different pods and a different env for each.
func eachInput(n int) ([]*corev1.Pod, []*engine.Env) {
	pods := make([]*corev1.Pod, n)
	envs := make([]*engine.Env, n)
	for i := range pods {
		pods[i] = mixedPod(i)
		envs[i] = &engine.Env{ReplicaID: i, NumReplicas: n, Scheduler: "kubernetes", Role: fmt.Sprint("r", i%3),
			Args: map[string]string{"k": fmt.Sprint(i * i)}}
	}
	return pods, envs
}

// sameErrors checks that two errors of the same apply are the same *engine.Error.
func sameErrors(t *testing.T, what string, want, got error) {
	t.Helper()
	if (want == nil) != (got == nil) {
		t.Fatalf("%s: got error %v, want %v", what, got, want)
	}
	if want == nil {
		return
	}
	if want.Error() != got.Error() {
		t.Errorf("%s: got error\n%v\nwant\n%v", what, got, want)
	}
	var we, ge *engine.Error
	if !errors.As(want, &we) || !errors.As(got, &ge) {
		t.Fatalf("%s: got %T and %T, want *engine.Error", what, want, got)
	}
	if we.Overlay != ge.Overlay || we.Pos.String() != ge.Pos.String() || we.Backtrace != ge.Backtrace {
		t.Errorf("%s: got %q %v %q, want %q %v %q", what, ge.Overlay, ge.Pos, ge.Backtrace, we.Overlay, we.Pos, we.Backtrace)
	}
	if len(we.Fields) != len(ge.Fields) {
		t.Fatalf("%s: got %d field errors, want %d", what, len(ge.Fields), len(we.Fields))
	}
	for i := range we.Fields {
		if we.Fields[i].Type != ge.Fields[i].Type || we.Fields[i].Field != ge.Fields[i].Field {
			t.Errorf("%s: field error %d: got %v, want %v", what, i, ge.Fields[i], we.Fields[i])
		}
	}
}

// TestApplyEach checks Chain.ApplyEach against one Chain.Apply per pod, in process and in a
// worker: the same pods, and the same error for the same pods.
func TestApplyEach(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 2})
	defer pool.Close()
	const n = 23
	pods, envs := eachInput(n)
	local := compileEach(t, nil)
	for _, mode := range []struct {
		name  string
		chain engine.Chain
	}{{"in-process", local}, {"worker", compileEach(t, workerOptions(pool))}} {
		t.Run(mode.name, func(t *testing.T) {
			got, errs := mode.chain.ApplyEach(context.Background(), pods, envs)
			if len(got) != n || len(errs) != n {
				t.Fatalf("got %d pods and %d errors, want %d of each", len(got), len(errs), n)
			}
			failed := 0
			for i := range pods {
				want, werr := local.Apply(context.Background(), pods[i], envs[i])
				sameErrors(t, fmt.Sprint("pod ", i), werr, errs[i])
				if werr != nil {
					failed++
					if got[i] != nil {
						t.Errorf("pod %d: got a pod and an error", i)
					}
					continue
				}
				if diff := cmp.Diff(want, got[i]); diff != "" {
					t.Errorf("pod %d (-Apply +ApplyEach):\n%s", i, diff)
				}
			}
			if want := 12; failed != want {
				t.Errorf("%d pods failed, want %d", failed, want)
			}
			for i, pod := range pods {
				if diff := cmp.Diff(mixedPod(i), pod); diff != "" {
					t.Errorf("input pod %d changed (-before +after):\n%s", i, diff)
				}
			}
		})
	}
	// The overlays see pods in the order given, whatever their envs.
	o := compileEach(t, workerOptions(pool))[0]
	res, errs := o.ApplyEach(context.Background(), []*corev1.Pod{pods[2], pods[1]}, []*engine.Env{envs[7], envs[3]})
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if res[0].Labels["replica"] != "7" || res[0].Name != pods[2].Name || res[1].Labels["replica"] != "3" {
		t.Errorf("got %s with %v and %s with %v, want %s with replica 7 and %s with replica 3",
			res[0].Name, res[0].Labels, res[1].Name, res[1].Labels, pods[2].Name, pods[1].Name)
	}
	// Nil envs give every pod a nil env, outside a scheduler; an empty chain copies the pods.
	res, errs = o.ApplyEach(context.Background(), pods[:2], nil)
	if errs[0] != nil || errs[1] != nil || res[0].Labels["replica"] != "None" || res[1].Labels["replica"] != "None" {
		t.Errorf("nil envs: got %v, %v and labels %v, %v, want replica None twice", errs[0], errs[1], res[0].Labels, res[1].Labels)
	}
	res, errs = engine.Chain{}.ApplyEach(context.Background(), pods[:1], envs[:1])
	if errs[0] != nil || res[0] == pods[0] || !cmp.Equal(res[0], pods[0]) {
		t.Errorf("empty chain: got %v, %v, want a copy of the pod", res[0], errs[0])
	}
}

// TestApplyEachMemoryLimit checks that a pod that kills its worker in the middle of a batch
// gets a memory error naming the overlay, and that the pods before and after it still get
// their results; and that a batch in which every pod kills its worker gets an error for each.
func TestApplyEachMemoryLimit(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	bomb := compile(t, "def overlay(pod, ctx):\n"+
		"    if ctx.replica_id in (2, 3):\n"+
		"        s = \"ab\" * 1024\n"+
		"        for i in range(40):\n"+
		"            s += s\n"+
		"    pod[\"metadata\"][\"labels\"] = {\"r\": str(ctx.replica_id)}\n", workerOptions(pool))
	pods, envs := eachInput(6)
	got, errs := bomb.ApplyEach(context.Background(), pods, envs)
	for i := range pods {
		if i == 2 || i == 3 {
			var lim *engine.LimitError
			if !errors.As(errs[i], &lim) || lim.Limit != engine.LimitMemory || got[i] != nil {
				t.Errorf("pod %d: got %v, want a memory LimitError", i, errs[i])
			} else if want := "overlay.star: exceeded the memory limit of 128Mi"; errs[i].Error() != want {
				t.Errorf("pod %d: got %q, want %q", i, errs[i], want)
			}
			continue
		}
		if errs[i] != nil || got[i].Labels["r"] != fmt.Sprint(i) {
			t.Errorf("pod %d: got %v, error %v, want label r: %d", i, got[i], errs[i], i)
		}
	}
	if s := pool.Stats(); s.Started != 3 || s.Alive != 1 {
		t.Errorf("stats = %+v, want 3 workers started (the first, then one after each death), 1 alive", s)
	}

	all := compile(t, "def overlay(pod):\n    s = \"ab\" * 1024\n    for i in range(40):\n        s += s\n", workerOptions(pool))
	_, errs = all.ApplyEach(context.Background(), pods[:3], nil)
	for i, err := range errs {
		var lim *engine.LimitError
		if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
			t.Errorf("pod %d: got %v, want a memory LimitError", i, err)
		}
	}
	// ApplyBatch stops at the first pod that kills its worker.
	before := pool.Stats().Started
	if _, err := all.ApplyBatch(context.Background(), pods[:3], nil); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Errorf("ApplyBatch: got %v, want a memory limit error", err)
	}
	if s := pool.Stats(); s.Started-before > 1 {
		t.Errorf("ApplyBatch started %d workers, want at most 1", s.Started-before)
	}
}

// TestApplyEachContext checks that a cancelled context fails every pod of a batch.
func TestApplyEachContext(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	loop := compile(t, "def overlay(pod):\n    for i in range(1 << 60):\n        pass\n", &engine.Options{
		Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20, Timeout: time.Minute, MaxSteps: 1 << 62})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	pods, _ := eachInput(3)
	_, errs := loop.ApplyEach(ctx, pods, nil)
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("pod %d: got %v, want context.Canceled", i, err)
		}
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

// TestApplyEachRepeated applies a chain to pods and ctx values that repeat, the same pointers
// and equal copies, which the protocol encodes and decodes once, in process and in a worker.
func TestApplyEachRepeated(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	p0, p1 := mixedPod(0), mixedPod(3)
	e0 := &engine.Env{ReplicaID: 0, NumReplicas: 2, Scheduler: "kubernetes", Args: map[string]string{"k": "a", "j": "b"}}
	e3 := &engine.Env{ReplicaID: 3, NumReplicas: 2, Scheduler: "kubernetes", Args: map[string]string{"k": "a"}}
	pods := []*corev1.Pod{p0, p0, p1, mixedPod(0), p1, p1, p0, mixedPod(3)}
	envs := []*engine.Env{e0, e0, e3, e0, {ReplicaID: 3, NumReplicas: 2, Scheduler: "kubernetes", Args: map[string]string{"k": "a"}}, e3, e3, e0}
	local := compileEach(t, nil)
	remote := compileEach(t, workerOptions(pool))
	for round := range 2 {
		got, errs := remote.ApplyEach(context.Background(), pods, envs)
		for i := range pods {
			want, werr := local.Apply(context.Background(), pods[i], envs[i])
			sameErrors(t, fmt.Sprint("round ", round, " pod ", i), werr, errs[i])
			if diff := cmp.Diff(want, got[i]); diff != "" {
				t.Errorf("round %d pod %d (-Apply +ApplyEach):\n%s", round, i, diff)
			}
			if i > 0 && got[i] != nil && got[i] == got[i-1] {
				t.Errorf("round %d: pods %d and %d are the same pointer", round, i-1, i)
			}
		}
		// Batches of one pod, and a nil ctx between pods with one.
		for i, pod := range pods {
			env := envs[i]
			if i%3 == 0 {
				env = nil
			}
			want, werr := local.Apply(context.Background(), pod, env)
			got, err := remote.Apply(context.Background(), pod, env)
			sameErrors(t, fmt.Sprint("Apply of pod ", i), werr, err)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Apply of pod %d (-in process +worker):\n%s", i, diff)
			}
		}
	}
	if s := pool.Stats(); s.Started != 1 {
		t.Errorf("stats %+v, want one worker started", s)
	}
}

// TestApplyEachKilledWhileSending kills a worker at the first pod of a batch larger than the
// pipe and buffers between the processes hold, while the parent is still sending the others:
// the first pod gets the limit's error and the others go to another worker.
func TestApplyEachKilledWhileSending(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := workerOptions(pool)
	opts.Timeout = 200 * time.Millisecond
	// One step that outlasts the time limit (or passes the memory limit) at the first pod.
	slow := compile(t, "def overlay(pod, ctx):\n"+
		"    if ctx.replica_id == 0:\n"+
		"        s = set(range(1 << 26))\n"+
		"    pod[\"metadata\"][\"labels\"] = {\"r\": str(ctx.replica_id)}\n", opts)
	const n = 300
	pods, envs := eachInput(n)
	for _, pod := range pods {
		pod.Annotations = map[string]string{"big": strings.Repeat("x", 4<<10)}
	}
	got, errs := slow.ApplyEach(context.Background(), pods, envs)
	var lim *engine.LimitError
	if !errors.As(errs[0], &lim) || lim.Limit != engine.LimitTime && lim.Limit != engine.LimitMemory {
		t.Errorf("pod 0: got %v, want a time (or memory) LimitError", errs[0])
	}
	for i := 1; i < n; i++ {
		if errs[i] != nil || got[i].Labels["r"] != fmt.Sprint(i) || len(got[i].Annotations["big"]) != 4<<10 {
			t.Fatalf("pod %d: got error %v, want label r: %d and the annotation", i, errs[i], i)
		}
	}
	if s := pool.Stats(); s.Started != 2 {
		t.Errorf("stats %+v, want 2 workers started", s)
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

// TestWorkerPrintBounded checks that the print() output the parent receives stays bounded:
// each message is cut, and the output of each pod's apply stops after a total, with a notice.
func TestWorkerPrintBounded(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	var msgs []string
	total := 0
	opts := workerOptions(pool)
	// Each print makes a MiB of garbage: under 128 MiB, a worker starved of processor time by
	// other tests could reach its limit before its collector caught up.
	opts.MaxMemory = 512 << 20
	opts.Print = func(pos syntax.Position, msg string) {
		msgs = append(msgs, msg)
		total += len(msg)
	}
	o := compile(t, "def overlay(pod):\n    s = \"a\" * (1 << 20)\n    for i in range(64):\n        print(s)\n", opts)
	pods := []*corev1.Pod{testPod(), testPod()}
	if _, err := o.ApplyBatch(context.Background(), pods, nil); err != nil {
		t.Fatal(err)
	}
	// Each pod: 16 messages of 64 KiB and their markers, then the notice.
	if bound := len(pods) * (1<<20 + 17*100); total > bound || len(msgs) > len(pods)*17 {
		t.Errorf("received %d bytes in %d messages, want at most %d bytes in %d", total, len(msgs), bound, len(pods)*17)
	}
	notices := 0
	marker := regexp.MustCompile(`^a+\.\.\. \[\d+ bytes cut\]$`)
	for _, msg := range msgs {
		switch {
		case msg == "[print output passed 1048576 bytes; the rest is dropped]":
			notices++
		case len(msg) > 64<<10+100 || !marker.MatchString(msg):
			t.Errorf("got a message of %d bytes ending %q, want 64 KiB and a marker", len(msg), msg[max(0, len(msg)-40):])
		}
	}
	if notices != len(pods) {
		t.Errorf("got %d notices of dropped output, want one for each of %d pods", notices, len(pods))
	}
}

// TestWorkerPrintBeforeDeath checks that print() output reaches the parent even when a later
// step kills the worker.
func TestWorkerPrintBeforeDeath(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	var msgs []string
	opts := workerOptions(pool)
	opts.Print = func(pos syntax.Position, msg string) { msgs = append(msgs, pos.String()+": "+msg) }
	o := compile(t, "def overlay(pod):\n    print(\"before\", pod[\"metadata\"][\"name\"])\n    s = \"ab\" * 1024\n    for i in range(40):\n        s += s\n", opts)
	_, err := o.Apply(context.Background(), testPod(), nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
		t.Fatalf("got %v, want a memory LimitError", err)
	}
	if want := []string{"overlay.star:2:10: before " + testPod().Name}; !slices.Equal(msgs, want) {
		t.Errorf("printed %q, want %q", msgs, want)
	}
}

// TestWorkerScripts checks that a worker holds at most a few compiled scripts: a worker given
// many, each of which holds a large module, stays within its memory limit, and applies a
// script it has forgotten after the parent sends it again.
func TestWorkerScripts(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := workerOptions(pool) // 128Mi
	opts.Loader = engine.FSLoader(fstest.MapFS{"big.star": {Data: []byte("big = \"x\" * (1 << 20)\n")}})
	// 96 scripts holding 1 MiB each would take 96 MiB, and the collector about twice that.
	var overlays []*engine.Overlay
	for i := range 96 {
		src := fmt.Sprintf("load(\"big.star\", \"big\")\ndef overlay(pod):\n    pod[\"metadata\"][\"labels\"] = {\"n\": \"%d\", \"len\": str(len(big))}\n", i)
		overlays = append(overlays, compile(t, src, opts))
	}
	for round := range 2 {
		for i, o := range overlays {
			got, err := o.Apply(context.Background(), testPod(), nil)
			if err != nil {
				t.Fatalf("round %d, overlay %d: %v", round, i, err)
			}
			if got.Labels["n"] != fmt.Sprint(i) || got.Labels["len"] != fmt.Sprint(1<<20) {
				t.Errorf("round %d, overlay %d: labels %v", round, i, got.Labels)
			}
		}
	}
	if s := pool.Stats(); s.Started != 1 {
		t.Errorf("stats %+v, want one worker started", s)
	}
}

// TestWorkerCrowded checks that an overlay that passes the memory limit only beside the
// scripts its worker holds runs again in a worker of its own: two overlays whose modules each
// take much of the limit both apply, in turn, in a pool of one worker.
func TestWorkerCrowded(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := workerOptions(pool) // 128Mi
	opts.Loader = engine.FSLoader(fstest.MapFS{
		"a.star": {Data: []byte("big = \"a\" * (40 << 20)\n")},
		"b.star": {Data: []byte("big = \"b\" * (40 << 20)\n")},
	})
	var overlays []*engine.Overlay
	for _, m := range []string{"a", "b"} {
		src := fmt.Sprintf("load(\"%s.star\", \"big\")\ndef overlay(pod):\n    pod[\"metadata\"][\"labels\"] = {\"m\": big[:1], \"len\": str(len(big))}\n", m)
		overlays = append(overlays, compile(t, src, opts))
	}
	for i := range 4 {
		got, err := overlays[i%2].Apply(context.Background(), testPod(), nil)
		if err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
		if want := map[string]string{"m": "ab"[i%2 : i%2+1], "len": fmt.Sprint(40 << 20)}; !cmp.Equal(got.Labels, want) {
			t.Errorf("apply %d: labels %v, want %v", i, got.Labels, want)
		}
	}
	t.Logf("stats %+v", pool.Stats())
}

// TestWorkerCrowdedPrints checks that a pod whose overlay kills a worker that holds another
// script, and so applies again in a worker of its own, prints once: what it printed in the
// first worker is dropped.
func TestWorkerCrowdedPrints(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := workerOptions(pool)
	var msgs []string
	opts.Print = func(pos syntax.Position, msg string) { msgs = append(msgs, msg) }
	other := compile(t, "def overlay(pod):\n    return pod\n", opts)
	bomb := compile(t, "def overlay(pod):\n    print(\"before\")\n    s = \"ab\" * 1024\n    for i in range(40):\n        s += s\n", opts)
	if _, err := other.Apply(context.Background(), testPod(), nil); err != nil {
		t.Fatal(err)
	}
	msgs = nil
	_, err := bomb.Apply(context.Background(), testPod(), nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
		t.Fatalf("got %v, want a memory LimitError", err)
	}
	if want := []string{"before"}; !slices.Equal(msgs, want) {
		t.Errorf("printed %q, want %q", msgs, want)
	}
}

// TestWorkerPoolConcurrentDeaths applies good overlays and memory bombs at once through one
// pool: every good pod gets its result, every bomb the memory limit, and the pool never has
// more workers alive than its size, nor any alive after Close.
func TestWorkerPoolConcurrentDeaths(t *testing.T) {
	const size, goroutines, rounds = 2, 8, 3
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: size})
	opts := workerOptions(pool)
	chain := compileChain(t, opts)
	bomb := compile(t, "def overlay(pod):\n    s = \"ab\"\n    for i in range(40):\n        s += s\n", opts)
	want := expectedChain(t)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*rounds)
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				if (g+r)%3 == 0 {
					_, err := bomb.Apply(context.Background(), testPod(), nil)
					var lim *engine.LimitError
					if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
						errs <- fmt.Errorf("bomb: got %v, want the memory limit", err)
					}
					continue
				}
				i := g*rounds + r
				got, err := chain.Apply(context.Background(), mixedPod(i), &engine.Env{ReplicaID: i, Scheduler: "kubernetes"})
				if err != nil {
					errs <- fmt.Errorf("pod %d: %v", i, err)
				} else if diff := cmp.Diff(want(i), got); diff != "" {
					errs <- fmt.Errorf("pod %d (-in-process +worker):\n%s", i, diff)
				}
				if s := pool.Stats(); s.Alive > size {
					errs <- fmt.Errorf("stats = %+v, want at most %d workers alive", s, size)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := pool.Stats(); s.Started <= size {
		t.Errorf("stats = %+v, want more than %d workers started: the bombs kill theirs", s, size)
	}
	pool.Close()
	if s := pool.Stats(); s.Alive != 0 {
		t.Errorf("stats after Close = %+v, want no workers alive", s)
	}
}

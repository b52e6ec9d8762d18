package engine_test

// This file tests a pool of workers shared by overlays and goroutines: concurrent applies,
// the scripts a worker holds, and workers that die of what other scripts hold.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

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

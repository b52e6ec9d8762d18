package engine_test

// This file tests ApplyEach and ApplyBatch in worker processes: batches of pods and their ctx
// values, against one apply per pod, and the pods that kill their worker.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

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

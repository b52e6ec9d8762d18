package webhook

// The tests of this file check that a rule's overlays in trouble (a memory bomb, a loop, an
// overlay past its admission's deadline) fail that rule's admissions alone, and cost no
// worker more than they must.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/starpod/starpod/engine"
	admissionv1 "k8s.io/api/admission/v1"
)

// TestMemoryBombIsolated: with worker processes, a rule whose overlay exhausts its memory
// fails its own requests with the limit named, while another rule's requests, sent at the
// same time, are admitted, also while the bomb's workers die one after another.
func TestMemoryBombIsolated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	f := newFixture(t, besideBomb(), &Options{
		// The bomb has all the time it could take on a loaded machine to reach its memory limit.
		Engine:         engine.Options{Isolation: engine.WorkerProcess, MaxMemory: 128 << 20, Timeout: 2 * time.Minute},
		WorkersPerRule: 1,
		RequestTimeout: 3 * time.Minute,
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			// One bomb after another: the rule's workers die in a row, and their
			// replacements wait for the backoff, which the admissions wait for.
			for range 3 {
				resp := f.review(podRequest(t, strings.Replace(trainerPod, "namespace: ml", "namespace: bad", 1)))
				if resp.Allowed || !strings.Contains(resp.Result.Message, "exceeded the memory limit of 128Mi") {
					t.Errorf("bomb: got %+v, want denied with the memory limit", resp.Result)
				}
			}
		})
	}
	for i := range 20 {
		req := podRequest(t, strings.Replace(trainerPod, "trainer-0", fmt.Sprintf("trainer-%d", i), 1))
		pod, _ := patched(t, req, f.review(req))
		if len(pod.Spec.Tolerations) != 1 {
			t.Errorf("pod %d not mutated while the bomb ran: %v", i, pod.Spec.Tolerations)
		}
	}
	wg.Wait()
}

// TestSlowRuleIsolated: a rule whose overlay runs to its time limit has its admissions wait
// for its own workers, in order; another rule's admissions are served meanwhile.
func TestSlowRuleIsolated(t *testing.T) {
	f := newFixture(t, map[string]string{
		"config.yaml": `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: slow
  match: {namespaces: [bad]}
  overlays: [loop.star]
- name: gpu
  match: {namespaces: [ml]}
  overlays: [gpu.star]
`,
		"loop.star": "def overlay(pod):\n    for i in range(1 << 40):\n        pass\n",
		"gpu.star":  gpuOverlay,
	}, &Options{MaxInFlight: 8, WorkersPerRule: 2, RequestTimeout: time.Minute,
		Engine: engine.Options{MaxSteps: 1 << 62, Timeout: 500 * time.Millisecond}})
	bad := podRequest(t, strings.Replace(trainerPod, "namespace: ml", "namespace: bad", 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	messages := map[string]int{}
	for range 6 {
		wg.Go(func() {
			resp := f.review(bad)
			msg := "allowed"
			if !resp.Allowed {
				msg = resp.Result.Message
				if strings.Contains(msg, "wall time") || strings.Contains(msg, "time limit") {
					msg = "time limit"
				}
			}
			mu.Lock()
			messages[msg]++
			mu.Unlock()
		})
	}
	q := f.srv.cur.Load().rules[0].queue
	for {
		if running, waiting := q.stats(); running == 2 && waiting > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	req := podRequest(t, trainerPod)
	if pod, _ := patched(t, req, f.review(req)); len(pod.Spec.Tolerations) != 1 {
		t.Errorf("the other rule's pod was not mutated while the slow rule ran")
	}
	wg.Wait()
	if messages["time limit"] != 6 || len(messages) != 1 {
		t.Errorf("slow rule's answers: %v, want all 6 stopped by the overlay's time limit, none refused", messages)
	}
}

// besideBomb returns the files of a config whose rule "bomb" (namespace bad) runs a memory bomb
// and whose rule "gpu" (namespace ml) runs the GPU overlay.
func besideBomb() map[string]string {
	return map[string]string{
		"config.yaml": `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: bomb
  match: {namespaces: [bad]}
  overlays: [bomb.star]
- name: gpu
  match: {namespaces: [ml]}
  overlays: [gpu.star]
`,
		"bomb.star": "def overlay(pod):\n    s = 'a' * ((1 << 30) - 1)\n",
		"gpu.star":  gpuOverlay,
	}
}

// TestQueuedAdmissionDeadline: with every worker busy (one, running an overlay that loops
// until its time limit, long after), an admission whose deadline passes while it waits for a
// worker is answered then, as its rule's onError says, and the busy worker runs on.
func TestQueuedAdmissionDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	t.Cleanup(func() { pool.Close() })
	f := newFixture(t, map[string]string{
		"config.yaml": `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: hold
  match: {namespaces: [hold]}
  overlays: [loop.star]
- name: strict
  match: {namespaces: [strict]}
  overlays: [gpu.star]
  onError: Fail
- name: lenient
  match: {namespaces: [lenient]}
  overlays: [gpu.star]
  onError: Ignore
`,
		"loop.star": "def overlay(pod):\n    for i in range(1 << 40):\n        pass\n",
		"gpu.star":  gpuOverlay,
	}, &Options{
		Engine:     engine.Options{Isolation: engine.WorkerProcess, MaxSteps: 1 << 62, Timeout: 10 * time.Minute},
		sharedPool: pool,
	})
	c := f.srv.cur.Load()
	in := func(ns string) *admissionv1.AdmissionRequest {
		return podRequest(t, strings.Replace(trainerPod, "namespace: ml", "namespace: "+ns, 1))
	}

	// The loop takes the only worker, with no deadline of its own until the test ends.
	holdCtx, stopHold := context.WithCancel(context.Background())
	held := make(chan *result, 1)
	go func() { held <- admit(holdCtx, c, in("hold")) }()
	defer func() {
		stopHold()
		<-held
	}()
	for pool.Stats().Idle > 0 {
		time.Sleep(time.Millisecond)
	}

	for _, ns := range []string{"strict", "lenient"} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		res := admit(ctx, c, in(ns))
		cancel()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("%s: the admission returned before its deadline: %+v", ns, res.resp)
		}
		want := "starpod rule " + ns + ": "
		switch ns {
		case "strict":
			if res.resp.Allowed || res.resp.Result == nil || !strings.HasPrefix(res.resp.Result.Message, want) ||
				!strings.Contains(res.resp.Result.Message, context.DeadlineExceeded.Error()) {
				t.Errorf("onError Fail: got %+v, want denied by the deadline", res.resp)
			}
		case "lenient":
			if !res.resp.Allowed || res.resp.Patch != nil || len(res.resp.Warnings) != 1 || !strings.HasPrefix(res.resp.Warnings[0], want) ||
				!strings.Contains(res.resp.Warnings[0], context.DeadlineExceeded.Error()) {
				t.Errorf("onError Ignore: got %+v, want allowed unchanged, with the deadline in a warning", res.resp)
			}
		}
	}
	select {
	case res := <-held:
		t.Fatalf("the loop's admission ended while the others waited: %+v", res.resp)
	default:
	}
	if s := pool.Stats(); s.Started != 1 || s.Alive != 1 {
		t.Errorf("worker stats %+v, want the one worker, alive and busy", s)
	}
}

// TestOverlayPastDeadline: an overlay that outlasts its admission's deadline, in a worker, is
// stopped there in the worker, which goes back to its pool: the admission is answered as its
// rule's onError says, with the deadline in the message, no worker is restarted, and the
// rule's next admission is served by the same worker.
func TestOverlayPastDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	f := newFixture(t, map[string]string{
		"config.yaml": `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: slow
  match: {namespaces: [bad, ml]}
  overlays: [slow.star]
`,
		"slow.star": `def overlay(pod):
    if pod["metadata"]["namespace"] == "bad":
        for i in range(1 << 40):
            pass
    pod["metadata"]["labels"]["seen"] = "yes"
`,
	}, &Options{WorkersPerRule: 1, RequestTimeout: 2 * time.Second,
		Engine: engine.Options{Isolation: engine.WorkerProcess, MaxSteps: 1 << 62, Timeout: 10 * time.Minute}})
	started := f.srv.workerStats().Started
	q := f.srv.cur.Load().rules[0].queue

	bad := podRequest(t, strings.Replace(trainerPod, "namespace: ml", "namespace: bad", 1))
	begin := time.Now()
	resp := f.review(bad)
	if elapsed := time.Since(begin); elapsed > 30*time.Second {
		t.Errorf("the admission took %v, want its answer at its deadline of 2s, not at the overlay's time limit", elapsed)
	}
	if resp.Allowed || resp.Result == nil || !strings.HasPrefix(resp.Result.Message, "starpod rule slow: ") ||
		!strings.Contains(resp.Result.Message, "the caller's deadline passed") {
		t.Errorf("got %+v, want denied by the deadline", resp)
	}
	if running, waiting := q.stats(); running != 0 || waiting != 0 {
		t.Errorf("the queue has %d running and %d waiting, want its turn given back", running, waiting)
	}
	if s := f.srv.workerStats(); s.Started != started || s.Alive != 1 {
		t.Errorf("worker stats %+v, want the %d started and one alive: no restart", s, started)
	}

	req := podRequest(t, trainerPod)
	if pod, _ := patched(t, req, f.review(req)); pod.Labels["seen"] != "yes" {
		t.Errorf("the rule's next admission was not served: labels %v", pod.Labels)
	}
	if s := f.srv.workerStats(); s.Started != started {
		t.Errorf("worker stats %+v, want the %d started: the next admission had the same worker", s, started)
	}
}

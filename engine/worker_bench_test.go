package engine_test

// This file defines the benchmarks of applies through worker processes, next to the
// in-process BenchmarkApply: one pod per round trip, and batches of pods per round trip
// (reported per pod). Besides the time, each reports the CPU time per op of the test process
// (parent-cpu-ns/op) and of its worker (worker-cpu-ns/op), which a busy machine disturbs less.

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

// benchWorkerOverlay compiles the benchmark overlay in a worker of a pool of one and applies it
// once. The returned function, called after the loop, closes the pool and reports the CPU time
// of both processes per op.
func benchWorkerOverlay(b *testing.B) (*engine.Overlay, *corev1.Pod, func()) {
	self, children := cpuTimes()
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	b.Cleanup(func() { pool.Close() })
	o, err := engine.Compile(context.Background(), "overlay.star", benchOverlay(b), &engine.Options{Isolation: engine.WorkerProcess, Workers: pool})
	if err != nil {
		b.Fatal(err)
	}
	pod := benchPod(b)
	if _, err := o.Apply(context.Background(), pod, nil); err != nil { // start the worker
		b.Fatal(err)
	}
	return o, pod, func() {
		b.StopTimer()
		pool.Close()
		self2, children2 := cpuTimes()
		if n := b.N; n > 0 {
			b.ReportMetric(float64(self2-self)/float64(n), "parent-cpu-ns/op")
			b.ReportMetric(float64(children2-children)/float64(n), "worker-cpu-ns/op")
		}
	}
}

// BenchmarkApplyWorker applies the overlay to one pod per round trip to a worker.
func BenchmarkApplyWorker(b *testing.B) {
	o, pod, report := benchWorkerOverlay(b)
	defer report()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Apply(context.Background(), pod, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyWorkerBatch applies the overlay to 64 pods per round trip; ns/op is per pod.
func BenchmarkApplyWorkerBatch(b *testing.B) {
	const batch = 64
	o, pod, report := benchWorkerOverlay(b)
	defer report()
	pods := make([]*corev1.Pod, batch)
	for i := range pods {
		pods[i] = pod
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%batch == 0 {
			if _, err := o.ApplyBatch(context.Background(), pods, nil); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
}

// BenchmarkApplyEachWorker applies the overlay to 64 pods per round trip, each with its own
// ctx, as the scheduler does with the replicas of a role; ns/op is per pod.
func BenchmarkApplyEachWorker(b *testing.B) {
	const batch = 64
	o, pod, report := benchWorkerOverlay(b)
	defer report()
	pods := make([]*corev1.Pod, batch)
	envs := make([]*engine.Env, batch)
	for i := range pods {
		pods[i] = pod
		envs[i] = &engine.Env{AppID: "bench", Role: "trainer", ReplicaID: i, NumReplicas: batch, Scheduler: "kubernetes"}
	}
	benchApplyEach(b, o, pods, envs)
}

// BenchmarkApplyEachWorkerDistinct is BenchmarkApplyEachWorker with 64 pods that differ (in
// name and a label, as the replicas of a role do), so that the protocol encodes and decodes
// each of them; ns/op is per pod.
func BenchmarkApplyEachWorkerDistinct(b *testing.B) {
	const batch = 64
	o, pod, report := benchWorkerOverlay(b)
	defer report()
	pods := make([]*corev1.Pod, batch)
	envs := make([]*engine.Env, batch)
	for i := range pods {
		pods[i] = pod.DeepCopy()
		pods[i].Name = fmt.Sprintf("%s-%d", pod.Name, i)
		if pods[i].Labels == nil {
			pods[i].Labels = make(map[string]string)
		}
		pods[i].Labels["replica"] = fmt.Sprint(i)
		envs[i] = &engine.Env{AppID: "bench", Role: "trainer", ReplicaID: i, NumReplicas: batch, Scheduler: "kubernetes"}
	}
	benchApplyEach(b, o, pods, envs)
}

// benchApplyEach applies o to pods, each with its env, in one call every len(pods) rounds of
// the benchmark, so that ns/op is per pod.
func benchApplyEach(b *testing.B, o *engine.Overlay, pods []*corev1.Pod, envs []*engine.Env) {
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%len(pods) == 0 {
			_, errs := o.ApplyEach(context.Background(), pods, envs)
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		n++
	}
}

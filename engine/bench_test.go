package engine_test

// This file defines the in-process benchmarks of the engine: an apply of the GPU overlay to the
// shared training pod (testdata/pods/training.yaml) against the floor it is measured by, a
// strict JSON round trip of the same pod. scripts/bench.sh prints them side by side.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/starpod/starpod/engine"
)

// benchPod returns the shared training pod.
func benchPod(b *testing.B) *corev1.Pod {
	b.Helper()
	return engine.ReadTestPod(b, filepath.Join("..", "testdata", "pods", "training.yaml"))
}

// benchOverlay returns the source of the GPU overlay example.
func benchOverlay(b *testing.B) []byte {
	b.Helper()
	src, err := os.ReadFile(filepath.Join("..", "examples", "gpu-tolerations", "overlay.star"))
	if err != nil {
		b.Fatal(err)
	}
	return src
}

// BenchmarkApply applies the GPU overlay, compiled once, to the training pod.
func BenchmarkApply(b *testing.B) {
	pod := benchPod(b)
	o, err := engine.Compile(context.Background(), "overlay.star", benchOverlay(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Apply(ctx, pod, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyParallel is BenchmarkApply from every CPU at once, with one compiled overlay.
func BenchmarkApplyParallel(b *testing.B) {
	pod := benchPod(b)
	o, err := engine.Compile(context.Background(), "overlay.star", benchOverlay(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := o.Apply(ctx, pod, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkJSONRoundTrip is the floor BenchmarkApply is measured against: json.Marshal of the
// pod and a strict unmarshal of the text into a new pod.
func BenchmarkJSONRoundTrip(b *testing.B) {
	pod := benchPod(b)
	b.ReportAllocs()
	for b.Loop() {
		data, err := json.Marshal(pod)
		if err != nil {
			b.Fatal(err)
		}
		var out corev1.Pod
		strict, err := sigsjson.UnmarshalStrict(data, &out)
		if err := errors.Join(append(strict, err)...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoMutation is the physical floor: a deep copy and the overlay's change written in Go.
func BenchmarkGoMutation(b *testing.B) {
	pod := benchPod(b)
	b.ReportAllocs()
	for b.Loop() {
		p := pod.DeepCopy()
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector["cloud.example.com/pool"] = "gpu-a100"
		found := false
		for _, t := range p.Spec.Tolerations {
			if t.Key == "nvidia.com/gpu" && t.Operator == corev1.TolerationOpExists && t.Effect == corev1.TaintEffectNoSchedule {
				found = true
			}
		}
		if !found {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
				Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
	}
}

// BenchmarkCompile compiles the GPU overlay and runs its top level, as every run does once.
func BenchmarkCompile(b *testing.B) {
	src := benchOverlay(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.Compile(context.Background(), "overlay.star", src, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyVsJSON interleaves an apply and a JSON round trip of the training pod in
// every iteration and reports the ratio of their times, which stays meaningful on a machine
// whose load changes during the run.
func BenchmarkApplyVsJSON(b *testing.B) {
	pod := benchPod(b)
	o, err := engine.Compile(context.Background(), "overlay.star", benchOverlay(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var apply, roundTrip time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := o.Apply(ctx, pod, nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		data, err := json.Marshal(pod)
		if err != nil {
			b.Fatal(err)
		}
		var out corev1.Pod
		strict, err := sigsjson.UnmarshalStrict(data, &out)
		if err := errors.Join(append(strict, err)...); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		apply += t1.Sub(t0)
		roundTrip += t2.Sub(t1)
	}
	b.ReportMetric(float64(apply)/float64(roundTrip), "apply/json")
	b.ReportMetric(float64(apply.Microseconds())/float64(b.N), "apply-µs/op")
	b.ReportMetric(float64(roundTrip.Microseconds())/float64(b.N), "json-µs/op")
}

// BenchmarkApplyInvalid applies an overlay whose result is invalid: the apply, and the apply
// again with write tracking that finds the line that wrote the bad value.
func BenchmarkApplyInvalid(b *testing.B) {
	pod := benchPod(b)
	src := append(benchOverlay(b), "\ndef bad(pod):\n    pod[\"spec\"][\"restartPolicy\"] = \"Sometimes\"\n"...)
	src = []byte(strings.Replace(string(src), "def overlay(pod", "def overlay0(pod", 1))
	src = append(src, "\ndef overlay(pod):\n    overlay0(pod)\n    bad(pod)\n"...)
	o, err := engine.Compile(context.Background(), "overlay.star", src, &engine.Options{Validation: engine.ValidatePod})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Apply(ctx, pod, nil); err == nil {
			b.Fatal("got no error")
		}
	}
}

// BenchmarkExplain explains the apply of BenchmarkApply: the apply, the apply again with
// write tracking, and the comparison of the pods. Starpod's target is at most three times
// BenchmarkApply.
func BenchmarkExplain(b *testing.B) {
	pod := benchPod(b)
	o, err := engine.Compile(context.Background(), "overlay.star", benchOverlay(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, changes, err := o.Explain(ctx, pod, nil); err != nil || len(changes) == 0 {
			b.Fatal(err, changes)
		}
	}
}

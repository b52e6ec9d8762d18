package convert

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The benchmarks convert the shared training pod (testdata/pods/training.yaml). The goal is
// ToStarlark + Decode costing less than BenchmarkJSONRoundTrip.

func BenchmarkToStarlark(b *testing.B) {
	pod := trainingPod(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToStarlark(pod); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	x, err := ToStarlark(trainingPod(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var pod corev1.Pod
		if errs, err := Decode(x, &pod, nil, nil); err != nil || len(errs) > 0 {
			b.Fatal(err, errs)
		}
	}
}

// BenchmarkDecodeLimit is BenchmarkDecode with a size limit, which adds the size count.
func BenchmarkDecodeLimit(b *testing.B) {
	x, err := ToStarlark(trainingPod(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var pod corev1.Pod
		if errs, err := Decode(x, &pod, nil, &Options{MaxBytes: 1 << 20}); err != nil || len(errs) > 0 {
			b.Fatal(err, errs)
		}
	}
}

// BenchmarkJSONRoundTrip is the floor to beat: json.Marshal and strict unmarshal of the pod.
func BenchmarkJSONRoundTrip(b *testing.B) {
	pod := trainingPod(b)
	b.ReportAllocs()
	for b.Loop() {
		data, err := json.Marshal(pod)
		if err != nil {
			b.Fatal(err)
		}
		var out corev1.Pod
		if err := strictUnmarshal(data, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToGo converts the Starlark form of the pod to untyped JSON data.
func BenchmarkToGo(b *testing.B) {
	x, err := ToStarlark(trainingPod(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToGo(x, nil); err != nil {
			b.Fatal(err)
		}
	}
}

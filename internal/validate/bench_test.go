package validate

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// BenchmarkPod checks the training pod of the test data as a pod template, with a cache of the
// names seen, as the overlays of a role's replicas check theirs.
func BenchmarkPod(b *testing.B) {
	data, err := os.ReadFile("../../testdata/pods/training.yaml")
	if err != nil {
		b.Fatal(err)
	}
	pod := new(corev1.Pod)
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		b.Fatal(err)
	}
	opts := &Options{Template: true, Cache: &Cache{}}
	b.ReportAllocs()
	for b.Loop() {
		if errs := Pod(pod, opts); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

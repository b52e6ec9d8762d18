package workload

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestUnchanged(t *testing.T) {
	in := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "a",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	for _, tc := range []struct {
		name string
		edit func(p *corev1.Pod)
		want bool
	}{
		{"same", func(p *corev1.Pod) {}, true},
		{"a quantity written another way", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1000m")
		}, true},
		{"an empty map where there was none", func(p *corev1.Pod) { p.Labels = map[string]string{} }, true},
		{"a toleration", func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu"}} }, false},
		{"a label", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
		{"an empty node selector where there was none", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{} }, true},
		{"a node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"pool": "gpu"} }, false},
		{"an annotation with an empty value", func(p *corev1.Pod) { p.Annotations = map[string]string{"a": ""} }, false},
		{"the scheduler", func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }, false},
		{"a container's image", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "b" }, false},
		{"a volume", func(p *corev1.Pod) { p.Spec.Volumes = []corev1.Volume{{Name: "v"}} }, false},
	} {
		out := in.DeepCopy()
		tc.edit(out)
		if got := Unchanged(in, out); got != tc.want {
			t.Errorf("%s: Unchanged = %v, want %v", tc.name, got, tc.want)
		}
		// Unchanged is semantic equality, whatever fields it compares first.
		if got, want := Unchanged(in, out), apiequality.Semantic.DeepEqual(in, out); got != want {
			t.Errorf("%s: Unchanged = %v, but apiequality.Semantic.DeepEqual = %v", tc.name, got, want)
		}
	}
}

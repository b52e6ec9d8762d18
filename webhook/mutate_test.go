package webhook

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodsEqual checks that the pods' encodings say what apimachinery's semantic equality
// says of the differences an overlay's round trip can make, and see a change of any field.
func TestPodsEqual(t *testing.T) {
	podsEqual := func(a, b []*corev1.Pod) bool { return sameEncodings(encodePods(a), encodePods(b)) }
	base := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"b": "2", "a": "1"},
				CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}},
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*corev1.Pod)
		equal bool
	}{
		{"same", func(*corev1.Pod) {}, true},
		{"a quantity in another form", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2000m")
		}, true},
		{"a time in another zone", func(p *corev1.Pod) {
			p.CreationTimestamp = metav1.NewTime(p.CreationTimestamp.In(time.FixedZone("x", 3600)))
		}, true},
		{"an empty list for none", func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{} }, true},
		{"an empty map for none", func(p *corev1.Pod) { p.Annotations = map[string]string{} }, true},
		{"another quantity", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2001m")
		}, false},
		{"another label", func(p *corev1.Pod) { p.Labels["a"] = "x" }, false},
		{"a toleration", func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Key: "k"}} }, false},
		{"an empty container", func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{}) }, false},
	} {
		b := base()
		tc.edit(b)
		if got := podsEqual([]*corev1.Pod{base()}, []*corev1.Pod{b}); got != tc.equal {
			t.Errorf("%s: podsEqual = %v, want %v", tc.name, got, tc.equal)
		}
	}
	if podsEqual([]*corev1.Pod{base()}, []*corev1.Pod{base(), base()}) {
		t.Error("podsEqual of one pod and two = true")
	}
}

package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/stream"
)

// TestPodDefaultsText checks that EncodePod, which removes the defaults in the JSON text
// where it can, prints what removing them from the untyped data prints.
func TestPodDefaultsText(t *testing.T) {
	withResources := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	}
	for _, tc := range []struct {
		name string
		doc  map[string]any // the pod's document, for PodDefaultsOf
		edit func(*corev1.Pod)
		text bool // whether the text path applies
	}{
		{"no status, empty resources", map[string]any{}, nil, false},
		{"no status, resources", map[string]any{}, withResources, true},
		{"status held", map[string]any{"status": map[string]any{}}, withResources, true},
		{"status set", map[string]any{}, func(p *corev1.Pod) {
			withResources(p)
			p.Status.Phase = corev1.PodRunning
		}, true},
		{"resources held", map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "c", "resources": map[string]any{}}}}}, nil, false},
		{"resources in a name", map[string]any{}, func(p *corev1.Pod) {
			withResources(p)
			p.Annotations = map[string]string{`"resources":{}`: `"resources":{}`}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
			pod.Name = "p"
			if tc.edit != nil {
				tc.edit(pod)
			}
			d := convert.PodDefaultsOf(tc.doc)
			data, err := json.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			want, err := stream.JSONToYAML(data, d.Remove)
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodePod(pod, d, "yaml")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if _, ok := removeText(data, d); ok != tc.text {
				t.Errorf("removeText: got %v, want %v", ok, tc.text)
			}
		})
	}
}

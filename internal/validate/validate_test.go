package validate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type problem struct {
	Type  field.ErrorType
	Field string
}

func problems(errs field.ErrorList) []problem {
	var got []problem
	for _, e := range errs {
		got = append(got, problem{e.Type, e.Field})
	}
	return got
}

func goodPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1ObjectMeta("trainer", "ml"),
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Volumes:       []corev1.Volume{{Name: "data"}},
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox",
				Env:          []corev1.EnvVar{{Name: "RANK", Value: "0"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				},
			}},
		},
	}
}

// TestPod checks the checks that package scheduler's tests do not: the name and namespace of
// a pod but not of a template, env names, and an image for every container. The others are
// tested one at a time in scheduler's TestValidatePod, through the scheduler's use of Pod.
func TestPod(t *testing.T) {
	for _, test := range []struct {
		name     string
		template bool
		change   func(*corev1.Pod)
		want     []problem
	}{
		{"good", false, func(*corev1.Pod) {}, nil},
		{"name and namespace", false, func(p *corev1.Pod) { p.Name, p.Namespace = "Trainer_1", "ML" }, []problem{
			{field.ErrorTypeInvalid, "metadata.name"},
			{field.ErrorTypeInvalid, "metadata.namespace"},
		}},
		{"template names are not checked", true, func(p *corev1.Pod) { p.Name, p.Namespace = "Trainer_1", "ML" }, nil},
		{"restartPolicy", true, func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			[]problem{{field.ErrorTypeNotSupported, "spec.restartPolicy"}}},
		{"container name", false, func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Side_Car" },
			[]problem{{field.ErrorTypeInvalid, "spec.containers[0].name"}}},
		{"no image", false, func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar"})
		}, []problem{{field.ErrorTypeRequired, "spec.containers[1].image"}}},
		{"env names", false, func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: ""}, corev1.EnvVar{Name: "A=B"})
		}, []problem{
			{field.ErrorTypeRequired, "spec.containers[0].env[1].name"},
			{field.ErrorTypeInvalid, "spec.containers[0].env[2].name"},
		}},
		{"no containers", false, func(p *corev1.Pod) { p.Spec.Containers = nil },
			[]problem{{field.ErrorTypeRequired, "spec.containers"}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			pod := goodPod()
			test.change(pod)
			for _, cache := range []*Cache{nil, {}} {
				got := problems(Pod(pod, &Options{Template: test.template, Cache: cache}))
				if diff := cmp.Diff(test.want, got); diff != "" {
					t.Errorf("errors mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestSkipLabels checks that a label in SkipLabels is not checked, unless its value differs.
func TestSkipLabels(t *testing.T) {
	pod := goodPod()
	pod.Labels = map[string]string{"id": "Bad Id!", "team": "a b"}
	got := problems(Pod(pod, &Options{SkipLabels: map[string]string{"id": "Bad Id!", "team": "a"}}))
	want := []problem{{field.ErrorTypeInvalid, "metadata.labels[team]"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}

func metav1ObjectMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}

// Unnamed forbids a template a name and a namespace other than those it came with; Template
// alone does not check them.
func TestUnnamed(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace = "web", "prod"
	pod.Spec.Containers = []corev1.Container{{Name: "c", Image: "i"}}
	if errs := Pod(pod, &Options{Template: true}); len(errs) != 0 {
		t.Fatalf("Template: got %v, want none", errs)
	}
	var got []string
	for _, e := range Pod(pod, &Options{Template: true, Unnamed: true}) {
		got = append(got, e.Error())
	}
	want := []string{
		`metadata.name: Forbidden: a pod template has no name: got "web"`,
		`metadata.namespace: Forbidden: a pod template has no namespace: got "prod"`,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("Unnamed (-want +got):\n%s", d)
	}
	if errs := Pod(pod, &Options{Template: true, Unnamed: true, InName: "web", InNamespace: "prod"}); len(errs) != 0 {
		t.Fatalf("Unnamed with the name and namespace it came with: got %v, want none", errs)
	}
}

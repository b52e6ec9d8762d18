package convert

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"
)

// starlarkJSONDecode decodes JSON text with Starlark's json.decode.
func starlarkJSONDecode(t testing.TB, text []byte) starlark.Value {
	t.Helper()
	thread := &starlark.Thread{Name: "json"}
	x, err := starlark.Call(thread, starjson.Module.Members["decode"], starlark.Tuple{starlark.String(text)}, nil)
	if err != nil {
		t.Fatalf("json.decode: %v", err)
	}
	return x
}

// trainingPod reads the shared fixture pod.
func trainingPod(t testing.TB) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data, err = yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	pod := new(corev1.Pod)
	if err := strictUnmarshal(data, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// richPod returns a pod that uses every kind of tricky value a pod can hold.
func richPod() *corev1.Pod {
	created := metav1.NewTime(time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC))
	grace := int64(30)
	deleted := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:                       "rich",
			Namespace:                  "default",
			Labels:                     map[string]string{"z": "last", "a": "first", "m": "<&>"},
			Annotations:                map[string]string{"note": "line\nbreak \"quoted\" \\ \t\u2028 é"},
			CreationTimestamp:          created,
			DeletionTimestamp:          &deleted,
			DeletionGracePeriodSeconds: &grace,
			OwnerReferences:            []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "j", UID: "u-1"}},
			Finalizers:                 []string{},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager:    "starpod",
				Operation:  metav1.ManagedFieldsOperationApply,
				Time:       &created,
				FieldsType: "FieldsV1",
				FieldsV1:   &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:z":{},"f:a":{}}},"f:n":[1,2.5,-3e+30,null,true]}`)},
			}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "c",
				Image: "busybox",
				Env:   []corev1.EnvVar{{Name: "EMPTY"}, {Name: "X", Value: "1"}},
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 0}},
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("1500m"),
						corev1.ResourceMemory: resource.MustParse("1.5Gi"),
						"nvidia.com/gpu":      resource.MustParse("8"),
						"example.com/big":     resource.MustParse("1e3"),
					},
					Requests: corev1.ResourceList{},
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds:    10,
					SuccessThreshold: 0,
				},
				SecurityContext: &corev1.SecurityContext{Privileged: new(bool)},
			}},
			Volumes: []corev1.Volume{
				{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: new(resource.MustParse("64Gi"))}}},
				{Name: "empty", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			NodeSelector: map[string]string{},
			Overhead:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")},
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			StartTime: &created,
			Conditions: []corev1.PodCondition{{
				Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created,
			}},
		},
	}
}

// randomPods returns n pods filled at random with seed, with the types that have their own
// JSON form filled with values that survive a JSON round trip.
func randomPods(seed int64, n int) []*corev1.Pod {
	f := podFiller(randfill.NewWithSeed(seed))
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = new(corev1.Pod)
		f.Fill(pods[i])
	}
	return pods
}

// podFiller sets up f to fill pods.
func podFiller(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			switch c.Intn(3) {
			case 0:
				*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
			case 1:
				*q = *resource.NewMilliQuantity(c.Int63n(1e6), resource.DecimalSI)
			default:
				*q = *resource.NewScaledQuantity(c.Int63n(1000), resource.Scale(c.Intn(10)))
			}
		},
		func(x *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*x = intstr.FromInt32(c.Int31())
			} else {
				*x = intstr.FromString(c.String(0))
			}
		},
		func(x *metav1.Time, c randfill.Continue) {
			*x = metav1.Unix(c.Int63n(4e9), 0).Rfc3339Copy()
		},
		func(x *metav1.MicroTime, c randfill.Continue) {
			*x = metav1.NewMicroTime(time.Unix(c.Int63n(4e9), c.Int63n(1e9)).Truncate(time.Microsecond))
		},
		func(x *metav1.FieldsV1, c randfill.Continue) {
			x.Raw = []byte(`{"f:spec":{"f:x":{}},"n":[1,2.5]}`)
		},
	)
}

// strictUnmarshal decodes JSON text as the Kubernetes API server does: case-sensitively, with
// no unknown or duplicate fields.
func strictUnmarshal(data []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// jsonRoundTrip returns pod after json.Marshal and strict unmarshal.
func jsonRoundTrip(t testing.TB, pod *corev1.Pod) (*corev1.Pod, []byte) {
	t.Helper()
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	out := new(corev1.Pod)
	if err := strictUnmarshal(data, out); err != nil {
		t.Fatalf("strict unmarshal: %v", err)
	}
	return out, data
}

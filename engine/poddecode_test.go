package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// trainingPod returns the training pod of the test data.
func trainingPod(t testing.TB) *corev1.Pod {
	t.Helper()
	return readTestPod(t, filepath.Join("..", "testdata", "pods", "training.yaml"))
}

// readTestPod returns the pod of a YAML file, decoded strictly. The tests of package
// engine_test have it as ReadTestPod.
func readTestPod(t testing.TB, file string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pod := new(corev1.Pod)
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// encodePod returns the body of a pod frame after its ctx: a pod message of pod's kind,
// apiVersion and protobuf encoding.
func encodePod(t testing.TB, pod *corev1.Pod) []byte {
	t.Helper()
	var e podEncoder
	if err := e.encode(pod); err != nil {
		t.Fatal(err)
	}
	return append(appendKind(nil, pod.Kind, pod.APIVersion, len(e.proto)), e.proto...)
}

// replicaPods returns pods like the replicas of a role: the training pod with other names and
// labels, then with another spec, then with a status, then the first again.
func replicaPods(t testing.TB) []*corev1.Pod {
	base := trainingPod(t)
	var pods []*corev1.Pod
	for i := range 3 {
		p := base.DeepCopy()
		p.Name = base.Name + "-" + string(rune('a'+i))
		p.Labels = map[string]string{"replica": p.Name}
		pods = append(pods, p)
	}
	other := pods[2].DeepCopy()
	other.Spec.Containers[0].Args = append(other.Spec.Containers[0].Args, "--rank=3")
	status := other.DeepCopy()
	status.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"}
	empty := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}}
	spec := &corev1.Pod{Spec: *base.Spec.DeepCopy()}
	return append(pods, other, other, status, status.DeepCopy(), pods[0], empty, spec, pods[1], empty, pods[2])
}

// TestPodDecoder decodes a run of pods with a worker's decoder and a parent's, and checks each
// pod against the generated decoder's, and that what is taken from the pod before is shared
// by a worker's decoder and copied by a parent's.
func TestPodDecoder(t *testing.T) {
	pods := replicaPods(t)
	for _, copy := range []bool{false, true} {
		d := &podDecoder{copy: copy}
		var wants, gots []*corev1.Pod
		for i, pod := range pods {
			data := encodePod(t, pod)
			want, err := decodePod(data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.decode(data)
			if err != nil {
				t.Fatalf("copy %v, pod %d: %v", copy, i, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("copy %v, pod %d (-generated +podDecoder):\n%s", copy, i, diff)
			}
			if i > 0 && cmp.Equal(pods[i-1].Spec, pod.Spec) && len(pod.Spec.Containers) > 0 {
				shared := &got.Spec.Containers[0] == &gots[i-1].Spec.Containers[0]
				if shared == copy {
					t.Errorf("copy %v, pod %d: spec shared with the pod before: %v", copy, i, shared)
				}
			}
			wants, gots = append(wants, want), append(gots, got)
		}
		if copy {
			checkOwned(t, wants, gots)
		}
	}
}

// checkOwned checks that the pods a parent's decoder returned in one call are their caller's:
// changing one in every part changes no other.
func checkOwned(t *testing.T, wants, gots []*corev1.Pod) {
	t.Helper()
	for i := range gots {
		scribble(gots[i])
		for j := i + 1; j < len(gots); j++ {
			if diff := cmp.Diff(wants[j], gots[j]); diff != "" {
				t.Fatalf("pod %d changed with pod %d (-want +got):\n%s", j, i, diff)
			}
		}
	}
}

// scribble changes every part of pod in place.
func scribble(pod *corev1.Pod) {
	pod.Name = "scribbled"
	if pod.Labels != nil {
		pod.Labels["scribbled"] = "yes"
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Name = "scribbled"
		if c.Resources.Limits != nil {
			c.Resources.Limits["cpu"] = resource.MustParse("99")
		}
	}
	pod.Status.PodIP = "scribbled"
}

// TestPodDecoderForget checks that a parent's decoder decodes a pod again after forget, even
// one encoded as the last one was.
func TestPodDecoderForget(t *testing.T) {
	pod := trainingPod(t)
	data := encodePod(t, pod)
	d := &podDecoder{copy: true}
	first, err := d.decode(data)
	if err != nil {
		t.Fatal(err)
	}
	scribble(first)
	d.forget()
	again, err := d.decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pod, again); diff != "" {
		t.Errorf("after forget (-want +got):\n%s", diff)
	}
}

// TestPodDecoderEncodings checks pods encoded otherwise than Marshal does (a part twice, a
// field the Pod message lacks, a part of another wire type, a cut) against the generated
// decoder.
func TestPodDecoderEncodings(t *testing.T) {
	pod := trainingPod(t)
	var e podEncoder
	if err := e.encode(pod); err != nil {
		t.Fatal(err)
	}
	spans, ok := splitPod(e.proto)
	if !ok || !spans[podMetadata-1].ok || !spans[podSpec-1].ok {
		t.Fatalf("splitting the training pod: got %+v, %v, want its metadata and spec", spans, ok)
	}
	meta := e.proto[spans[podMetadata-1].start:spans[podMetadata-1].end]
	record := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	other := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 7)
	cases := map[string][]byte{
		"marshal":           e.proto,
		"metadata twice":    append(append([]byte{}, e.proto...), record(podMetadata, meta)...),
		"unknown field":     append(append([]byte{}, e.proto...), other...),
		"metadata a varint": append(protowire.AppendVarint(protowire.AppendTag(nil, podMetadata, protowire.VarintType), 1), e.proto...),
		"empty":             nil,
		"empty parts":       append(record(podStatus, nil), record(podMetadata, nil)...),
		"cut":               e.proto[:len(e.proto)/2],
		"bad metadata":      record(podMetadata, []byte{0xff, 0xff}),
	}
	for name, proto := range cases {
		data := append(appendKind(nil, "Pod", "v1", len(proto)), proto...)
		want, wantErr := decodePod(data)
		for _, copy := range []bool{false, true} {
			d := &podDecoder{copy: copy}
			// Once with nothing to reuse, and once after the training pod, with its parts.
			for _, before := range []bool{false, true} {
				d.forget()
				if before {
					if _, err := d.decode(encodePod(t, pod)); err != nil {
						t.Fatal(err)
					}
				}
				got, err := d.decode(data)
				if (err != nil) != (wantErr != nil) {
					t.Errorf("%s, copy %v, after a pod %v: got error %v, want %v", name, copy, before, err, wantErr)
					continue
				}
				if diff := cmp.Diff(want, got); err == nil && diff != "" {
					t.Errorf("%s, copy %v, after a pod %v (-generated +podDecoder):\n%s", name, copy, before, diff)
				}
			}
		}
	}
}

// FuzzPodDecoder decodes two encodings in turn, with a worker's decoder and a parent's, and
// checks each answer against the generated decoder's, and a parent's answers for owned.
func FuzzPodDecoder(f *testing.F) {
	pods := replicaPods(f)
	for i := 1; i < len(pods); i++ {
		f.Add(encodePod(f, pods[i-1]), encodePod(f, pods[i]))
	}
	f.Add([]byte{0}, []byte(strings.Repeat("\x00", 4)))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, copy := range []bool{false, true} {
			d := &podDecoder{copy: copy}
			var wants, gots []*corev1.Pod
			for i, data := range [][]byte{a, b, a, b, b} {
				want, wantErr := decodePod(data)
				got, err := d.decode(data)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("copy %v, decode %d: got error %v, want %v", copy, i, err, wantErr)
				}
				if err != nil {
					continue
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("copy %v, decode %d (-generated +podDecoder):\n%s", copy, i, diff)
				}
				wants, gots = append(wants, want), append(gots, got)
			}
			if copy {
				checkOwned(t, wants, gots)
			}
		}
	})
}

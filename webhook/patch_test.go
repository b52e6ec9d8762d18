package webhook

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	jsonpatch5 "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
)

func TestPatchKeepsUnknownFields(t *testing.T) {
	raw := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"futureField":{"a":1},"containers":[{"name":"c","image":"i"}]}}`)
	obj, err := decodeObject("Pod", "", raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := obj.encode()
	p := obj.pods()[0].DeepCopy()
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": mustQuantity("8")}
	obj.setPods([]*corev1.Pod{p})
	after, _ := obj.encode()
	patch, err := makePatch(raw, before, after)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"add","path":"/spec/containers/0/resources","value":{"limits":{"nvidia.com/gpu":"8"}}}]`
	if string(patch) != want {
		t.Errorf("patch = %s, want %s (raw has no resources, and its unknown field stays)", patch, want)
	}
}

// TestPatchOrder: the patch of a change is always the same, and removes from and appends to
// long lists apply.
func TestPatchOrder(t *testing.T) {
	mk := func(n int) []byte {
		var items []string
		for i := range n {
			items = append(items, fmt.Sprintf(`{"name":"c%d","image":"i"}`, i))
		}
		return []byte(`{"metadata":{"name":"p","labels":{"a":"1"}},"spec":{"containers":[` + strings.Join(items, ",") + `]}}`)
	}
	for _, tc := range []struct{ from, to []byte }{
		{mk(3), mk(12)},
		{mk(12), mk(2)},
	} {
		to := bytes.Replace(tc.to, []byte(`"a":"1"`), []byte(`"a":"2","b":"3","c":"4"`), 1)
		var first []byte
		for i := range 20 {
			patch, err := makePatch(tc.from, tc.from, to)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = patch
				p, err := jsonpatch5.DecodePatch(patch)
				if err != nil {
					t.Fatal(err)
				}
				got, err := p.Apply(tc.from)
				if err != nil {
					t.Fatalf("patch %s: %v", patch, err)
				}
				if !jsonpatch5.Equal(got, to) {
					t.Errorf("patch %s gives %s, want %s", patch, got, to)
				}
			} else if !bytes.Equal(patch, first) {
				t.Fatalf("patch %d differs:\n%s\n%s", i, patch, first)
			}
		}
	}
}

package convert

import (
	"encoding/json"
	"github.com/starpod/starpod/internal/fast"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// tree is a recursive type used by no other test, so that its encoder and decoder are made
// while several goroutines race to use them.
type tree struct {
	Name string           `json:"name"`
	Kids []tree           `json:"kids,omitempty"`
	Next *tree            `json:"next,omitempty"`
	ByID map[string]*tree `json:"byID,omitempty"`
}

func TestConcurrentUse(t *testing.T) {
	v := &tree{Name: "root", Kids: []tree{{Name: "a", Next: &tree{Name: "b"}}}, ByID: map[string]*tree{"x": {Name: "x"}}}
	data, _ := json.Marshal(v)
	want := starlarkJSONDecode(t, data).String()
	pod := trainingPod(t)
	untyped := untypedJSON(t, data)

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			x, err := ToStarlark(v)
			if err != nil {
				t.Error(err)
				return
			}
			if got := x.String(); got != want {
				t.Errorf("ToStarlark = %s, want %s", got, want)
			}
			var back tree
			if errs, err := Decode(x, &back, nil, nil); err != nil || len(errs) > 0 {
				t.Errorf("Decode: %v %v", err, errs)
			}
			if diff := cmp.Diff(v, &back); diff != "" {
				t.Errorf("Decode(ToStarlark(v)) mismatch (-want +got):\n%s", diff)
			}

			px, err := ToStarlark(pod)
			if err != nil {
				t.Error(err)
				return
			}
			var got corev1.Pod
			if errs, err := Decode(px, &got, nil, &Options{MaxBytes: 1 << 20}); err != nil || len(errs) > 0 {
				t.Errorf("Decode: %v %v", err, errs)
			}
			if !apiequality.Semantic.DeepEqual(pod, &got) {
				t.Errorf("pod changed in a round trip")
			}

			var decoded tree
			if !fast.Decode(untyped, &decoded) {
				t.Errorf("the fast path declines a tree")
			} else if diff := cmp.Diff(v, &decoded); diff != "" {
				t.Errorf("fast.Decode mismatch (-want +got):\n%s", diff)
			}
		})
	}
	wg.Wait()
}

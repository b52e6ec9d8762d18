package stream

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBlock checks that a Block prints as the items it stands for would print in place, both
// when the fast printer prints the rest and when the rest takes the YAML library (a long
// value folded at column 80, a non-ASCII string).
func TestBlock(t *testing.T) {
	long := strings.Repeat("a long value with spaces ", 8)
	items := []any{
		map[string]any{"name": "a", "args": []any{"x", long}},
		map[string]any{"name": "ünï", "n": 1},
	}
	for name, meta := range map[string]map[string]any{
		"fast":    {"name": "x"},
		"library": {"name": "x", "annotations": map[string]any{"a": long, "b": "ünïcödé ✓"}},
	} {
		t.Run(name, func(t *testing.T) {
			whole := map[string]any{"kind": "Job", "metadata": meta,
				"spec": map[string]any{"queue": "q", "tasks": items, "zz": long}}
			want, err := MarshalYAML(whole)
			if err != nil {
				t.Fatal(err)
			}
			// Each item printed alone at its place, as the only item of spec.tasks.
			var block Block
			for _, item := range items {
				text, err := MarshalYAML(map[string]any{"spec": map[string]any{"tasks": []any{item}}})
				if err != nil {
					t.Fatal(err)
				}
				block = append(block, text[len("spec:\n  tasks:\n"):])
			}
			got, err := JSONToYAML([]byte(`{"kind":"Job","spec":{"queue":"q","zz":"`+long+`"},"metadata":`+string(mustJSON(t, meta))+`}`), func(v any) {
				v.(map[string]any)["spec"].(map[string]any)["tasks"] = block
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("(-whole +with a block):\n%s", diff)
			}
		})
	}
	// Where no block can stand.
	_, err := JSONToYAML([]byte(`{"a":[1]}`), func(v any) {
		v.(map[string]any)["a"] = []any{Block{[]byte("- x\n")}, "ünï"}
	})
	if !errors.Is(err, ErrBlock) {
		t.Errorf("a block in a sequence: got %v, want ErrBlock", err)
	}
}

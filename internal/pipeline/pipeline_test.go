package pipeline

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/starpod/starpod/engine"
)

// TestDocWriterKeepsNothing checks that a docWriter keeps none of the memory it is given: the
// memory of a batch's output is used again once written, also when the first JSON document
// waits for the second to know whether a List is written.
func TestDocWriterKeepsNothing(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var out bytes.Buffer
		w := &docWriter{w: &out, format: format}
		for _, doc := range []string{`{"a": 1}`, `{"b": 2}`} {
			data := []byte(doc + "\n")
			if err := w.writeRaw(data); err != nil {
				t.Fatal(err)
			}
			copy(data, strings.Repeat("x", len(data))) // used again
		}
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "x") || !strings.Contains(out.String(), `"a": 1`) {
			t.Errorf("%s: wrote %q, want both documents as given", format, out.String())
		}
	}
}

func TestHeadComment(t *testing.T) {
	for _, test := range []struct{ raw, want string }{
		{"# Source: a/templates/d.yaml\napiVersion: v1\n", "# Source: a/templates/d.yaml\n"},
		{"\n# one\n  # two\nkind: Pod\n# not at the head\n", "\n# one\n  # two\n"},
		{"kind: Pod\n", ""},
		{"# only a comment", ""},
	} {
		if got := string(headComment([]byte(test.raw))); got != test.want {
			t.Errorf("headComment(%q) = %q, want %q", test.raw, got, test.want)
		}
	}
}

// TestLasting checks that Options.Lasting is called once in a run of more than two batches,
// and not in a run of one.
func TestLasting(t *testing.T) {
	ctx := context.Background()
	overlay, err := engine.Compile(ctx, "o.star", []byte("def overlay(pod):\n    pod[\"metadata\"][\"labels\"] = {\"a\": \"b\"}\n    return pod\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: i\n"
	for _, test := range []struct{ pods, want int }{{1, 0}, {3 * batchSize, 1}} {
		calls := 0
		p := New(Options{Chain: engine.Chain{overlay}, Stdin: strings.NewReader(strings.Repeat(pod+"---\n", test.pods)),
			Lasting: func() { calls++ }})
		var out bytes.Buffer
		if err := p.Run(ctx, []string{"-"}, &out); err != nil {
			t.Fatal(err)
		}
		if calls != test.want || p.Pods() != int64(test.pods) || strings.Count(out.String(), "a: b") != test.pods {
			t.Errorf("%d pods: Lasting called %d times, %d pods applied; want %d calls, %d pods", test.pods, calls, p.Pods(), test.want, test.pods)
		}
	}
}

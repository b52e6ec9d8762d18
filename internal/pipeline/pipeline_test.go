package pipeline

import (
	"bytes"
	"strings"
	"testing"
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

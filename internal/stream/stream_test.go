package stream

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readAll returns the documents of a stream as (line, kind) pairs, or the error.
func readAll(t testing.TB, text string) ([]*Document, error) {
	t.Helper()
	r := NewReader("in.yaml", strings.NewReader(text))
	var docs []*Document
	for {
		d, err := r.Next()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, d)
	}
}

func TestYAMLDocuments(t *testing.T) {
	docs, err := readAll(t, `# leading comment
---
apiVersion: v1
kind: Pod
metadata: {name: a}
--- # a separator with a comment
---
# only a comment

---
kind: ConfigMap
data: {a: "1"}
---`)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Index, Line int
		Kind        string
	}
	var list []got
	for _, d := range docs {
		_, kind := d.Kind()
		list = append(list, got{d.Index, d.Line, kind})
	}
	want := []got{{0, 3, "Pod"}, {1, 11, "ConfigMap"}}
	if diff := cmp.Diff(want, list); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if string(docs[1].Raw) != "kind: ConfigMap\ndata: {a: \"1\"}\n" {
		t.Errorf("raw = %q", docs[1].Raw)
	}
	if docs[0].JSON {
		t.Error("YAML document marked as JSON")
	}
}

func TestJSONStream(t *testing.T) {
	docs, err := readAll(t, "\n  {\"kind\": \"Pod\", \"spec\": {\"priority\": 12345678901}}\n{\"kind\": \"Service\"}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || !docs[0].JSON {
		t.Fatalf("got %d documents", len(docs))
	}
	if _, kind := docs[1].Kind(); kind != "Service" {
		t.Errorf("kind = %q", kind)
	}
	spec := docs[0].Object.(map[string]any)["spec"].(map[string]any)
	if n, ok := spec["priority"].(interface{ String() string }); !ok || n.String() != "12345678901" {
		t.Errorf("numbers must keep their text: got %#v", spec["priority"])
	}
}

func TestErrors(t *testing.T) {
	for _, test := range []struct{ in, want string }{
		{"kind: Pod\nmetadata:\n  labels: [x\n", "in.yaml:"},
		{"a: 1\n---\nkind: Pod\nmetadata:\n  name: a\n   bad: indent\n", "in.yaml:6"},
		{"a: 1\na: 2\n", `in.yaml:2`},
		{"{\"kind\": \"Pod\"", "in.yaml: invalid JSON"},
	} {
		_, err := readAll(t, test.in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: got %v, want *Error", test.in, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), test.want) {
			t.Errorf("%q: got %q, want prefix %q", test.in, err, test.want)
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "# nothing\n", "---\n---\n"} {
		docs, err := readAll(t, in)
		if err != nil || len(docs) != 0 {
			t.Errorf("%q: got %d documents, %v", in, len(docs), err)
		}
	}
}

// FuzzReader checks that no input makes the reader panic or loop, and that every document
// it returns carries a line inside the input.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\nkind: ConfigMap\n",
		"{\"kind\": \"Pod\"}\n{\"kind\": \"List\", \"items\": []}",
		"---\n# c\n---\na: [1, 2, {b: c}]\n",
		"a: &x 1\nb: *x\n",
		"a:\n  - b\n  -c: d\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		lines := strings.Count(in, "\n") + 1
		r := NewReader("fuzz", strings.NewReader(in))
		for i := 0; i < 10000; i++ {
			d, err := r.Next()
			if err != nil {
				return
			}
			if d.Line < 1 || d.Line > lines {
				t.Fatalf("document %d at line %d of a %d-line input", d.Index, d.Line, lines)
			}
		}
		t.Fatal("too many documents")
	})
}

// TestLongLines checks lines longer than the reader's buffer, a separator among them.
func TestLongLines(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	text := "a: " + long + "\n---" + strings.Repeat(" ", 100<<10) + "\nb: 1\n---\n# " + long + "\n"
	docs, err := readAll(t, text)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2", len(docs))
	}
	if got := docs[0].Object.(map[string]any)["a"]; got != long {
		t.Errorf("a: got %d bytes, want %d", len(got.(string)), len(long))
	}
	if docs[1].Line != 3 {
		t.Errorf("second document: got line %d, want 3", docs[1].Line)
	}
}

// TestNextText checks that NextText leaves parsing to Parse, which reports empty documents
// and errors with the file's line.
func TestNextText(t *testing.T) {
	r := NewReader("in.yaml", strings.NewReader("a: 1\n---\nnull\n---\n# c\n---\nb: [1\n"))
	var got []string
	for {
		d, err := r.NextText()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ok, err := d.Parse()
		switch {
		case err != nil:
			got = append(got, fmt.Sprintf("%d: %v", d.Index, err))
		case !ok:
			got = append(got, fmt.Sprintf("%d: line %d empty", d.Index, d.Line))
		default:
			got = append(got, fmt.Sprintf("%d: line %d %v", d.Index, d.Line, d.Object))
		}
	}
	want := []string{
		"0: line 1 map[a:1]",
		"1: line 3 empty",
		"2: in.yaml:7: yaml: did not find expected ',' or ']'",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

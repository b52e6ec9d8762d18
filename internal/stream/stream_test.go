package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/starpod/starpod/internal/fast"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goyaml "go.yaml.in/yaml/v2"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
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
		// Neither JSON nor YAML: the first value of a stream that is not JSON is YAML.
		{"{\"kind\": \"Pod\"", "in.yaml:1: yaml: did not find expected ',' or '}'"},
		{"{\"a\": 1}\n{\"b\": 2}\n\n  {\"c\" 3}", "in.yaml:4:8: invalid JSON: invalid character '3' after object key"},
		{"[1]\n[2]\n[3] x", "in.yaml:3:5: invalid JSON: invalid character 'x' looking for beginning of value"},
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

// FuzzReader checks that no input makes the reader panic or loop, that every document it
// returns carries a line inside the input, that it splits a YAML stream as Kubernetes'
// YAMLReader does (kubectl's), and that no document it parses holds a second YAML document,
// which the YAML parser would leave out.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n---\nkind: ConfigMap\n",
		"{\"kind\": \"Pod\"}\n{\"kind\": \"List\", \"items\": []}",
		"---\n# c\n---\na: [1, 2, {b: c}]\n",
		"a: &x 1\nb: *x\n",
		"a:\n  - b\n  -c: d\n",
		"--- {kind: ConfigMap}\n--- {kind: Pod}\n",
		"--- null\napiVersion: v1\nkind: Pod\n",
		"---\nnull\n---\nkind: Pod\n",
		"a: 1\n...\nkind: Pod\n",
		"a: 1\n...\n# c\n---\n--- !!map\n--- |\n  x\n",
		"a: 1\r--- \rkind: Pod\r\n---\r\nb: 2\r\n",
		"{a: 1}\nkind: Pod\n---\n'x'\nb: 2\n---\n  a: 1\nb: 2\n",
		"{\"a\": 1}\n---\nb: 2\n",
		"%YAML 1.1\n---\na: 1\n...\n%TAG ! x\n",
		"a: |\n  ---\n  ...\nb: \"x\n---\n\"\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		lines := strings.Count(in, "\n") + 1
		r := NewReader("fuzz", strings.NewReader(in))
		var texts []string // the YAML documents, as the YAMLReader gives them
		var splitErr error
		for i := 0; ; i++ {
			if i == 10000 {
				t.Fatal("too many documents")
			}
			d, err := r.NextText()
			if err == io.EOF {
				break
			}
			if err != nil {
				splitErr = err
				break
			}
			if d.Line < 1 || d.Line > lines {
				t.Fatalf("document %d at line %d of a %d-line input", d.Index, d.Line, lines)
			}
			if !d.JSON {
				texts = append(texts, lineText(d.Raw))
			}
			ok, err := d.Parse()
			if !d.JSON {
				// The library paths alone (fast.Off) read the same content, or refuse it too.
				lib := NewText(d.File, d.Index, d.Line, d.Raw, 0)
				fast.Off = true
				libOK, libErr := lib.Parse()
				fast.Off = false
				if (err == nil) != (libErr == nil) || ok != libOK {
					t.Fatalf("document %d: Parse gives %v, %v; with fast.Off %v, %v\n%q", d.Index, ok, err, libOK, libErr, d.Raw)
				}
				if diff := cmp.Diff(lib.Object, d.Object); err == nil && diff != "" {
					t.Fatalf("document %d: (-fast.Off +Parse)\n%s", d.Index, diff)
				}
			}
			if err == nil && ok && !d.JSON {
				// The document is one YAML document, and nothing follows it.
				dec := goyaml.NewDecoder(strings.NewReader(string(d.Raw)))
				var first, second any
				if err := dec.Decode(&first); err != nil && err != io.EOF {
					t.Fatalf("document %d: Parse took a text the YAML parser refuses: %v\n%q", d.Index, err, d.Raw)
				}
				if err := dec.Decode(&second); err != io.EOF {
					t.Fatalf("document %d: Parse took a text that holds a second document (%v)\n%q", d.Index, err, d.Raw)
				}
				// Its content is what sigs.k8s.io/yaml reads, by whichever parser Parse took.
				want, err := viaJSON(d.Raw)
				if err != nil {
					t.Fatalf("document %d: Parse took a text sigs.k8s.io/yaml refuses: %v\n%q", d.Index, err, d.Raw)
				}
				if diff := cmp.Diff(want, d.Object); diff != "" {
					t.Fatalf("document %d: (-sigs.k8s.io/yaml +Parse)\n%s", d.Index, diff)
				}
			}
		}
		if trimmed := strings.TrimLeft(in, " \t\r\n"); strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
			return // a JSON stream, or one that turns to YAML after its first or second value
		}
		// The YAMLReader splits the same documents, and refuses the same separators.
		kr := k8syaml.NewYAMLReader(bufio.NewReader(strings.NewReader(in)))
		var want []string
		var wantErr error
		for {
			doc, err := kr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				wantErr = err
				break
			}
			// The YAMLReader keeps the separator that starts a document, where the
			// Reader drops every separator.
			if bytes.HasPrefix(doc, separator) {
				doc = doc[bytes.IndexByte(doc, '\n')+1:]
			}
			if !isBlank(doc) {
				want = append(want, string(doc))
			}
		}
		if diff := cmp.Diff(want, texts); diff != "" {
			t.Errorf("documents differ from the YAMLReader's (-want +got):\n%s", diff)
		}
		if (wantErr == nil) != (splitErr == nil) {
			t.Errorf("YAMLReader error %v, Reader error %v", wantErr, splitErr)
		}
	})
}

// lineText returns text as the YAMLReader gives it: its lines ended by \n, without the \r
// of a \r\n.
func lineText(text []byte) string {
	var b strings.Builder
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
			line = bytes.TrimSuffix(line, []byte("\r"))
		} else {
			text = nil
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
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

// BenchmarkReader reads a stream of 1,000 training pods, splitting it (NextText) and then
// parsing every document as well (Next), in YAML and in JSON; ns/op is per stream.
func BenchmarkReader(b *testing.B) {
	pod := mustRead(b, filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	var obj any
	if err := yaml.Unmarshal(pod, &obj); err != nil {
		b.Fatal(err)
	}
	podJSON, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	var yamlStream, jsonStream bytes.Buffer
	for i := range 1000 {
		if i > 0 {
			yamlStream.WriteString("---\n")
		}
		yamlStream.Write(pod)
		jsonStream.Write(podJSON)
		jsonStream.WriteByte('\n')
	}
	for _, format := range []struct {
		name string
		data []byte
	}{{"yaml", yamlStream.Bytes()}, {"json", jsonStream.Bytes()}} {
		for _, parse := range []bool{false, true} {
			name := format.name + "/split"
			if parse {
				name = format.name + "/parse"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(format.data)))
				for b.Loop() {
					r := NewReader("bench", bytes.NewReader(format.data))
					n := 0
					for {
						var err error
						if parse {
							_, err = r.Next()
						} else {
							_, err = r.NextText()
						}
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						n++
					}
					if n != 1000 {
						b.Fatalf("got %d documents, want 1000", n)
					}
				}
			})
		}
	}
}

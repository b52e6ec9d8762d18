package stream

// This file tests how the Reader splits streams, as Kubernetes' YAMLReader and
// YAMLOrJSONDecoder do, and its limits.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/internal/bound"
)

// parseAll reads a stream with NextText and parses every document, as apply does, and
// returns one line for each document: its index, line, whether it is JSON and its content,
// or "null" for a document that parses to nothing. It stops at the first error.
func parseAll(t testing.TB, opts ReaderOptions, text string) ([]string, error) {
	t.Helper()
	r := opts.NewReader("in.yaml", strings.NewReader(text))
	var got []string
	for {
		d, err := r.NextText()
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			return got, err
		}
		ok, err := d.Parse()
		if err != nil {
			return got, err
		}
		content := fmt.Sprint(d.Object)
		if !ok {
			content = "null"
		}
		kind := "yaml"
		if d.JSON {
			kind = "json"
		}
		got = append(got, fmt.Sprintf("%d: line %d %s %s", d.Index, d.Line, kind, content))
	}
}

// TestSeparators checks the document separators of YAML streams, as kubectl reads them, and
// the other document markers, which must never hide a document.
func TestSeparators(t *testing.T) {
	for _, test := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"inline document", "--- {kind: ConfigMap}\n--- {kind: Pod}\n", nil,
			`in.yaml:1: invalid YAML document separator "--- {kind: ConfigMap}": a line that starts with "---" separates documents, and may hold only spaces and a comment after it`},
		{"inline null", "kind: ConfigMap\n--- null\napiVersion: v1\nkind: Pod\n", nil,
			`in.yaml:2: invalid YAML document separator "--- null"`},
		{"block scalar", "--- |\n  text\n", nil, `in.yaml:1: invalid YAML document separator "--- |"`},
		{"tag", "a: 1\n--- !!map\nb: 2\n", nil, `in.yaml:2: invalid YAML document separator "--- !!map"`},
		{"four dashes", "a: 1\n----\n", nil, `in.yaml:2: invalid YAML document separator "----"`},
		{"dashes and text", "---x: 1\n", nil, `in.yaml:1: invalid YAML document separator "---x: 1"`},
		{"long line", "--- " + strings.Repeat("x", 200), nil, `in.yaml:1: invalid YAML document separator "--- xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."`},
		{"separators", "---\na: 1\n--- # comment\nb: 2\n---\t\r\nc: 3\n---#c\nd: 4\n---", []string{
			"0: line 2 yaml map[a:1]", "1: line 4 yaml map[b:2]", "2: line 6 yaml map[c:3]", "3: line 8 yaml map[d:4]"}, ""},
		{"indented dashes", "a: |\n  --- {x}\nb:\n - --- c\n", []string{"0: line 1 yaml map[a:--- {x}\n b:[--- c]]"}, ""},
		// A document that parses to nothing is kept, for apply to pass through.
		{"null documents", "---\nnull\n---\n~\n---\n# only a comment\n---\n!!null\n---\nkind: Pod\n", []string{
			"0: line 2 yaml null", "1: line 4 yaml null", "2: line 8 yaml null", "3: line 10 yaml map[kind:Pod]"}, ""},
		{"end marker", "a: 1\n...\n# comment\n...\n---\nb: 2\n...", []string{"0: line 1 yaml map[a:1]", "1: line 6 yaml map[b:2]"}, ""},
		{"content after end marker", "a: 1\n...\nkind: Pod\n", nil,
			`in.yaml:1: document 1: holds more than one YAML document; separate documents with a line "---"`},
		// kubectl leaves out the directive; it belongs to the next document.
		{"directive after end marker", "a: 1\n...\n%YAML 1.1\n---\nb: 2\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		// The root of a document may end before the text: the YAML parser sees the rest as
		// a second document, which kubectl leaves out unseen.
		{"after a flow mapping", "{kind: ConfigMap}\napiVersion: v1\nkind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"after a flow sequence", "# c\n[a]\nkind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"after an indented mapping", "  kind: ConfigMap\napiVersion: v1\nkind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"after a plain scalar", "foo\n# c\nkind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"after a quoted scalar", "'foo'\nkind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"after a block scalar", "|\n  text\nkind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"roots to the end", "- a\n- b\n---\n{a: 1,\n b: 2}\n---\n\"a\": 1\nb: 2\n---\n  a: 1\n  b: 2\n---\nplain\n text\n---\n&x a: 1\n", []string{
			"0: line 1 yaml [a b]", "1: line 4 yaml map[a:1 b:2]", "2: line 7 yaml map[a:1 b:2]", "3: line 10 yaml map[a:1 b:2]",
			"4: line 13 yaml plain text", "5: line 16 yaml map[a:1]"}, ""},
		{"directive in a document", "a: 1\n%YAML 1.1\nkind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"carriage return", "a: 1\r--- {kind: Pod}\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"carriage returns", "a: 1\r...\r---\rkind: Pod\r", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"next line", "a: 1\u0085---\u0085kind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"line separator", "a: 1\u2028---\u2028kind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"paragraph separator", "a: 1\u2029---\u2029kind: Pod\n", nil, "in.yaml:1: document 1: holds more than one YAML document"},
		{"CRLF", "a: 1\r\n---\r\nb: 2\r\n", []string{"0: line 1 yaml map[a:1]", "1: line 3 yaml map[b:2]"}, ""},
		{"explicit start in CRLF", "a: 1\r\n---\r\nb: 2\r\n...\r\n", []string{"0: line 1 yaml map[a:1]", "1: line 3 yaml map[b:2]"}, ""},
		{"byte order mark", "\ufeff---\na: 1\n", []string{"0: line 1 yaml map[a:1]"}, ""},
	} {
		t.Run(test.name, func(t *testing.T) { checkStream(t, test.in, test.want, test.err) })
	}
}

// TestJSONStreams checks JSON streams and their turning into YAML, as with Kubernetes'
// YAMLOrJSONDecoder: if the first or second value of a stream that starts like JSON is not
// JSON, the stream is YAML from there on.
func TestJSONStreams(t *testing.T) {
	for _, test := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"values", "{\"a\": 1}\n\n  {\"b\":\n 2} [3]\"x\" 4 null\n", []string{
			"0: line 1 json map[a:1]", "1: line 3 json map[b:2]", "2: line 4 json [3]", "3: line 4 json x", "4: line 4 json 4", "5: line 4 json <nil>"}, ""},
		{"escapes", `{"a": "\"}\\"} {"b": "]"}`, []string{`0: line 1 json map[a:"}\]`, "1: line 1 json map[b:]]"}, ""},
		{"YAML flow", "{a: 1}\n---\n{b: 2}\n", []string{"0: line 1 yaml map[a:1]", "1: line 3 yaml map[b:2]"}, ""},
		{"YAML after JSON", "{\"a\": 1}\n---\nb: 2\n", []string{"0: line 1 json map[a:1]", "1: line 3 yaml map[b:2]"}, ""},
		{"YAML on the same line", "{\"a\": 1} {b: 2}\nc: 3\n", []string{"0: line 1 json map[a:1]"},
			"in.yaml:1: document 2: holds more than one YAML document"},
		{"YAML after two values", "{\"a\": 1}\n{\"b\": 2}\n---\nc: 3\n", []string{"0: line 1 json map[a:1]", "1: line 2 json map[b:2]"},
			"in.yaml:3:2: invalid JSON: invalid character '-' in numeric literal"},
		{"truncated", "{\"a\": 1}\n{\"b\": 2}\n{\"c\": [3,\n", []string{"0: line 1 json map[a:1]", "1: line 2 json map[b:2]"},
			"in.yaml:3: invalid JSON: unexpected EOF"},
		{"stray bracket", "{\"a\": 1}\n[2]\n]", []string{"0: line 1 json map[a:1]", "1: line 2 json [2]"},
			"in.yaml:3:1: invalid JSON: invalid character ']' looking for beginning of value"},
		{"long number", "{\"a\": " + strings.Repeat("1", 1000) + "}\n{\"a\": 1" + strings.Repeat("0", 1000) + "}",
			[]string{"0: line 1 json map[a:" + strings.Repeat("1", 1000) + "]"},
			"in.yaml:2: document 2: holds a number longer than the limit of 1000 digits"},
	} {
		t.Run(test.name, func(t *testing.T) { checkStream(t, test.in, test.want, test.err) })
	}
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// endless repeats a text for ever.
type endless struct {
	text []byte
	i    int
}

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = e.text[e.i%len(e.text)]
		e.i++
	}
	return len(p), nil
}

// TestDocumentLimit checks that a document larger than the limit is refused while the stream
// is split, before more than the limit and a buffer of it is read, whatever its lines.
func TestDocumentLimit(t *testing.T) {
	const limit = 100 << 10
	opts := ReaderOptions{MaxDocumentBytes: limit}
	head := "apiVersion: v1\nkind: Pod\n"
	for _, test := range []struct {
		name string
		in   io.Reader
		want string
	}{
		{"one line", io.MultiReader(strings.NewReader("a: 1\n---\n"+head+"metadata: {name: "), &endless{text: []byte("x")}),
			"in.yaml:3: document 2: the document is larger than the limit of 100Ki"},
		{"short lines", io.MultiReader(strings.NewReader(head+"args:\n"), &endless{text: []byte("- x\n")}),
			"in.yaml:1: document 1: the document is larger than the limit of 100Ki"},
		{"comments", &endless{text: []byte("# nothing\n")}, "in.yaml:1: document 1: the document is larger than the limit of 100Ki"},
		{"separator", io.MultiReader(strings.NewReader("---"), &endless{text: []byte(" ")}),
			"in.yaml:1: document 1: the document is larger than the limit of 100Ki"},
		{"JSON", io.MultiReader(strings.NewReader(`{"a": 1} {"metadata": {"name": "`), &endless{text: []byte("x")}),
			"in.yaml:1: document 2: the document is larger than the limit of 100Ki"},
		{"JSON lines", io.MultiReader(strings.NewReader("[\n"), &endless{text: []byte("\"x\",\n")}),
			"in.yaml:1: document 1: the document is larger than the limit of 100Ki"},
		{"JSON string", io.MultiReader(strings.NewReader(`{"a": 1}`+"\n\n\""), &endless{text: []byte("x")}),
			"in.yaml:3: document 2: the document is larger than the limit of 100Ki"},
	} {
		t.Run(test.name, func(t *testing.T) {
			in := &countingReader{r: test.in}
			r := opts.NewReader("in.yaml", in)
			var err error
			for err == nil {
				_, err = r.NextText()
			}
			var size *bound.SizeError
			if !errors.As(err, &size) || err.Error() != test.want {
				t.Fatalf("got %v, want %s", err, test.want)
			}
			if in.n > limit+2*(64<<10) {
				t.Errorf("read %d bytes for a limit of %d", in.n, limit)
			}
		})
	}
	// A document of exactly the limit is read; with a byte more it is refused.
	for _, extra := range []int{0, 1} {
		doc := "a: " + strings.Repeat("x", limit-len("a: \n")+extra) + "\n"
		for _, text := range []string{doc, "b: 1\n---\n" + doc + "---\nc: 1\n", "# c\n---\n" + doc} {
			docs, err := parseAll(t, opts, text)
			if (err != nil) != (extra == 1) {
				t.Errorf("document of the limit and %d: got %d documents, %v", extra, len(docs), err)
			}
		}
	}
}

// TestInputLimit checks the limit of a stream's size, and of streams read one after another.
func TestInputLimit(t *testing.T) {
	text := "a: 1\n---\nb: 2\n" // 14 bytes
	for _, test := range []struct {
		limit, offset int64
		err           string
	}{
		{14, 0, ""},
		{13, 0, "in.yaml:3: the input is larger than the limit of 13"},
		{24, 10, ""},
		{23, 10, "in.yaml:3: the input is larger than the limit of 23"},
		{1 << 10, 1020, "in.yaml:1: the input is larger than the limit of 1Ki"},
	} {
		r := ReaderOptions{MaxInputBytes: test.limit, InputOffset: test.offset}.NewReader("in.yaml", strings.NewReader(text))
		var err error
		n := 0
		for err == nil {
			if _, err = r.Next(); err == nil {
				n++
			}
		}
		if test.err == "" {
			if err != io.EOF || n != 2 || r.InputOffset() != test.offset+14 {
				t.Errorf("limit %d after %d: got %d documents, %v, offset %d", test.limit, test.offset, n, err, r.InputOffset())
			}
			continue
		}
		var size *bound.SizeError
		if !errors.As(err, &size) || err.Error() != test.err {
			t.Errorf("limit %d after %d: got %v, want %s", test.limit, test.offset, err, test.err)
		}
	}
	// An endless stream stops at the limit.
	in := &countingReader{r: &endless{text: []byte("a: 1\n---\n")}}
	r := ReaderOptions{MaxInputBytes: 1 << 20}.NewReader("in.yaml", in)
	var err error
	for err == nil {
		_, err = r.NextText()
	}
	var size *bound.SizeError
	if !errors.As(err, &size) || in.n > 1<<20+1 {
		t.Errorf("endless stream: got %v after %d bytes", err, in.n)
	}
}

// TestAliasLimit checks that the content of a document with its aliases expanded is held to
// the document limit, at a cost within the limit, and that the YAML parser's own limit of
// aliases stays.
func TestAliasLimit(t *testing.T) {
	anchor := strings.Repeat("x", 1<<20)
	var aliases strings.Builder
	for range 10000 {
		aliases.WriteString("*a, ")
	}
	level := func(name, of string, n int) string {
		return fmt.Sprintf("%s: &%s [%s*%s]\n", name, name, strings.Repeat("*"+of+", ", n-1), of)
	}
	for _, test := range []struct {
		name, doc string
		limit     int64
		err       string
	}{
		{"many aliases", "a: &a " + anchor + "\nargs: [" + aliases.String() + "]\n", 0,
			"in.yaml:1: document 1: the document with its aliases expanded is larger than the limit of 3Mi"},
		{"aliases of aliases", "a: &a " + strings.Repeat("x", 10<<10) + "\n" + level("b", "a", 30) + level("c", "b", 30), 0,
			"in.yaml:1: document 1: the document with its aliases expanded is larger than the limit of 3Mi"},
		{"merge keys", "a: &a {x: " + strings.Repeat("x", 1<<10) + "}\n" + "b: [" + strings.Repeat("{<<: *a}, ", 200) + "]\n", 100 << 10,
			"in.yaml:1: document 1: the document with its aliases expanded is larger than the limit of 100Ki"},
		{"within the limit", "a: &a " + strings.Repeat("x", 1<<10) + "\nargs: [" + strings.Repeat("*a, ", 90) + "]\n", 100 << 10, ""},
		{"excessive aliasing", "a: &a [x]\n" + level("b", "a", 40) + level("c", "b", 40) + level("d", "c", 40), 0,
			"in.yaml:1: yaml: document contains excessive aliasing"},
	} {
		t.Run(test.name, func(t *testing.T) {
			start := time.Now()
			_, err := parseAll(t, ReaderOptions{MaxDocumentBytes: test.limit}, test.doc)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if test.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != test.err {
				t.Fatalf("got %v, want %s", err, test.err)
			}
		})
	}
}

// TestSizerUnderText checks that the size counted of a document without aliases stays under
// the size of its text, so that its limit is that of the text.
func TestSizerUnderText(t *testing.T) {
	pod := mustRead(t, "../../testdata/pods/training.yaml")
	for _, doc := range append(untypedCases, string(pod), "[a,b,c]", "{a: b, c: d}", "- a\n- b\n", "a:\nb:\nc:\n") {
		if !strings.HasSuffix(doc, "\n") {
			doc += "\n" // as split from a stream
		}
		if _, err := yamlToUntyped([]byte(doc), int64(len(doc))); errors.Is(err, errExpanded) {
			t.Errorf("%q: counted more than its %d bytes", doc, len(doc))
		}
	}
	var long bytes.Buffer
	for i := range 10000 {
		fmt.Fprintf(&long, "k%d: v\n", i)
	}
	if _, err := yamlToUntyped(long.Bytes(), int64(long.Len())); err != nil {
		t.Error(err)
	}
}

// TestHostileStreams reads every stream of testdata/hostile-input/stream as apply does, and
// checks that it fails with the error of its "# want: " line, having allocated less than
// 64 MiB.
func TestHostileStreams(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "hostile-input", "stream")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no streams: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data := mustRead(t, file)
			want, _, ok := strings.Cut(strings.TrimPrefix(string(data), "# want: "), "\n")
			if !ok || !strings.HasPrefix(string(data), "# want: ") {
				t.Fatal(`no "# want: " line`)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r := NewReader(name, bytes.NewReader(data))
			var err error
			for err == nil {
				var d *Document
				if d, err = r.NextText(); err == nil {
					_, err = d.Parse()
				}
			}
			runtime.ReadMemStats(&after)
			if err == io.EOF || err.Error() != want {
				t.Errorf("got %v, want %s", err, want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

// checkStream reads the stream in and checks its documents against want and its error
// against the prefix wantErr ("" for none).
func checkStream(t *testing.T, in string, want []string, wantErr string) {
	t.Helper()
	got, err := parseAll(t, ReaderOptions{}, in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("got error %v", err)
	case wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), wantErr)):
		t.Errorf("got error %v, want %s", err, wantErr)
	}
}

// TestSplitAcrossBuffers checks the documents of a long stream, many of which cross the end
// of the reader's buffer or are larger than it, against a split of the text line by line:
// the reader takes a document whole from its buffer when it can (nextBuffered), and line by
// line when not, and both must give the same texts, lines and indexes.
func TestSplitAcrossBuffers(t *testing.T) {
	separators := []string{"---\n", "--- # next\n", "---   \n", "---\t\n"}
	var text strings.Builder
	type doc struct {
		line int
		raw  string
	}
	var want []doc
	line := 1
	for i := range 400 {
		if i > 0 {
			text.WriteString(separators[i%len(separators)])
			line++
		}
		if i%37 == 5 {
			text.WriteString("# only a comment\n\n")
			line += 2
			continue // a blank document: skipped
		}
		var d strings.Builder
		fmt.Fprintf(&d, "kind: ConfigMap\nmetadata:\n  name: d%d\ndata:\n", i)
		for j := range (i * 7919) % 3000 { // up to ~90 KiB, past the buffer's 64 KiB
			fmt.Fprintf(&d, "  k%d: \"%s\"\n", j, strings.Repeat("v", j%20))
		}
		if i%11 == 3 {
			d.WriteString("--text-that-is-no-separator: x\n")
		}
		want = append(want, doc{line, d.String()})
		line += strings.Count(d.String(), "\n")
		text.WriteString(d.String())
	}
	r := NewReader("in.yaml", strings.NewReader(text.String()))
	for i := 0; ; i++ {
		d, err := r.NextText()
		if err == io.EOF {
			if i != len(want) {
				t.Fatalf("got %d documents, want %d", i, len(want))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) {
			t.Fatalf("got more than %d documents", len(want))
		}
		if d.Index != i || d.Line != want[i].line || string(d.Raw) != want[i].raw {
			t.Fatalf("document %d: got index %d, line %d, %d bytes; want line %d, %d bytes", i, d.Index, d.Line, len(d.Raw), want[i].line, len(want[i].raw))
		}
	}
}

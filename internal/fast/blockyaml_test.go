package fast

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// blockCases are documents of the subset parseBlockYAML takes, and of forms next to it that
// it must leave to the library, or read alike.
var blockCases = []string{
	"a: b\n",
	"a: 1\nb: 0\nc: 01\nd: 123456789012345678\ne: 1234567890123456789\nf: -1\ng: +1\nh: 1.5\n",
	"a: yes\nb: No\nc: ON\nd: off\ne: y\nf: N\ng: true\nh: FALSE\ni: null\nj: ~\nk:\nl: Null\nm: yES\n",
	"a: -m\nb: --x=1\nc: -\nd: - x\ne: -i\nf: 2.4.1-cuda12.4\ng: 100Gi\nh: 1e3\ni: 0x1F\nj: 1_000\n",
	"a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\nc: 2001-x\nd: 12:30\ne: .inf\nf: .hidden\ng: .5\n",
	"a: \"x\"\nb: 'y'\nc: 'it''s'\nd: \"a #b\"\ne: \"a\\nb\"\nf: \"\"\ng: ''\nh: \"x\" # c\ni: \"x\"y\n",
	"a: [x, \"y\", 'z', 1, yes]\nb: []\nc: {}\nd: [ ]\ne: [a, ]\nf: [a: b]\ng: [[a]]\nh: {a: b}\ni: [- a]\nj: [a #b]\n",
	"a: b # comment\nc: d#e\nf: # null\ng:\n  # c\n  h: i\n",
	"a:\n- b\n- c\nd:\n  - e\n  -   f: g\n      h: i\n  - j: k\n    l:\n    - m\n",
	"a:\n-\n- b\n-\n  c: d\n- - e\n",
	"a: b\n  c\n",
	"a:\n- b\n  c\n",
	"a:\n  b\n",
	"a:\n  b: 1\n c: 2\n",
	"a:\n  - b\n  c: 1\n",
	"a: 1\na: 2\n",
	"- a\n",
	"  a: 1\nb: 2\n",
	"a: b: c\n",
	"a: b:\n",
	"a:b\n",
	"yes: 1\n",
	"1: a\n",
	"-a: 1\n-: 2\n",
	"_a: 1\n/b: 2\n.c: 3\n",
	"a: &x 1\nb: *x\n",
	"a: !!str 1\n",
	"a: |\n  x\n",
	"a: >\n  x\n",
	"a: \tb\n",
	"a: b\r\n",
	"a: é\n",
	"a: b\n...\n",
	"a: b\n%x\n",
	"a: <<\n",
	"a: @x\n",
	"a: `x\n",
	"a: x]\nb: x,y\nc: x}\n",
	"a: x - y\nb: x ? y\nc: x | y\n",
	"? a\n: b\n",
	"a:\n  b:\n    c:\n      d: [1]\n  e: f\ng: h\n",
	"a: {b: c, d: 1, e: \"x\", f: 'y', g: yes, h: null}\nb: {}\nc: { }\nd: {b: c} # x\n",
	"a: {b: c, b: d}\nb: {b: }\nc: {b}\nd: {b: c,}\ne: {b:c}\nf: {yes: 1}\ng: {b: {c: d}}\nh: {b: [c]}\ni: {b: -1}\n",
	"- {name: a, image: i, num_replicas: 1000, resource: {cpu: 1}}\n",
	"a:\n- {name: a, image: i}\n- {b: 'it''s', c: \"a, b\"}\n",
	"a: 'x''y'''''\nb: ''''\nc: '''\nd: 'x'''\n",
}

// blockSeeds returns blockCases, the documents of stream's FuzzReader corpus and
// the documents of the YAML files under testdata and examples of the module.
func blockSeeds(t testing.TB) []string {
	t.Helper()
	seeds := append([]string(nil), blockCases...)
	corpus, err := filepath.Glob(filepath.Join("..", "stream", "testdata", "fuzz", "FuzzReader", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range corpus {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if q, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					seeds = append(seeds, strings.Split(s, "\n---\n")...)
				}
			}
		}
	}
	for _, dir := range []string{"testdata", "examples"} {
		err := filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			seeds = append(seeds, strings.Split(string(data), "\n---\n")...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return seeds
}

// TestBlockYAMLSameAsJSON checks that what parseBlockYAML takes, it reads as
// sigs.k8s.io/yaml does, and that it takes the shared training pod, so that the fast path
// is the one manifests take.
func TestBlockYAMLSameAsJSON(t *testing.T) {
	taken := 0
	for _, doc := range blockSeeds(t) {
		checkBlockYAML(t, []byte(doc))
		if _, ok := parseBlockYAML([]byte(doc), math.MaxInt64); ok {
			taken++
		}
	}
	t.Logf("parseBlockYAML took %d of %d documents", taken, len(blockSeeds(t)))
	pod, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := parseBlockYAML(pod, math.MaxInt64); !ok {
		t.Errorf("parseBlockYAML declines the training pod")
	}
	checkBlockYAML(t, pod)
	for _, doc := range []string{"a: b\n", "a: [x]\n", "a:\n- b\n", "a: {b: c}\n"} {
		if _, ok := parseBlockYAML([]byte(doc), math.MaxInt64); !ok {
			t.Errorf("parseBlockYAML declines %q", doc)
		}
	}
}

// checkBlockYAML checks that parseBlockYAML declines doc or reads it as sigs.k8s.io/yaml does,
// and that its size count stays within the sizer's.
func checkBlockYAML(t *testing.T, doc []byte) {
	t.Helper()
	got, ok := parseBlockYAML(doc, math.MaxInt64)
	if !ok {
		return
	}
	want, err := viaJSON(doc)
	if err != nil {
		t.Errorf("%q: parseBlockYAML took a document sigs.k8s.io/yaml refuses: %v", doc, err)
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%q: (-sigs.k8s.io/yaml +parseBlockYAML)\n%s", doc, diff)
	}
	// At the sizer's count exactly, both take it; one byte less, both refuse.
	size := untypedSize(got)
	if _, ok := parseBlockYAML(doc, size); !ok {
		t.Errorf("%q: parseBlockYAML declines at the size the sizer counts, %d", doc, size)
	}
	if _, ok := parseBlockYAML(doc, size-1); ok {
		t.Errorf("%q: parseBlockYAML takes it at one byte under the sizer's count, %d", doc, size)
	}
}

// untypedSize returns the size of untyped data as the sizer counts that of the same data
// from the YAML parser.
func untypedSize(v any) int64 {
	switch v := v.(type) {
	case map[string]any:
		n := int64(1)
		for k, x := range v {
			n += int64(len(k)) + untypedSize(x)
		}
		return n
	case []any:
		n := int64(1)
		for _, x := range v {
			n += untypedSize(x)
		}
		return n
	case string:
		return 1 + int64(len(v))
	case json.Number:
		return 1 + int64(len(v))
	}
	return 1
}

// FuzzBlockYAML compares parseBlockYAML with sigs.k8s.io/yaml on every document it takes.
func FuzzBlockYAML(f *testing.F) {
	for _, doc := range blockSeeds(f) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if strings.Count(doc, "\n") > 200 {
			return
		}
		checkBlockYAML(t, []byte(doc))
	})
}

// viaJSON is what the parser replaces: YAML to JSON text, and the text decoded.
func viaJSON(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

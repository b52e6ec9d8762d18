package fast

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"
	goyaml "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// A fuzzReader makes untyped JSON data of fuzz bytes.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// fuzzPieces are parts of strings that YAML and JSON treat specially.
var fuzzPieces = []string{"a", "Z", "y", "n", "o", "true", "null", "~", "0", "1", "9", "10", "0x", "e3",
	".", "-", "--", "---", "_", "/", "=", ":", ": ", " ", "  ", "#", " #", "'", "\"", "\\", ",",
	"[", "]", "{", "}", "&", "*", "!", "|", ">", "<", "%", "@", "`", "?", "+", "<<", "é", "✓",
	"\t", "\n", "\r", "\x01", "\u2028", "\x7f", "2001-12-14", "1:20", "image.example.com/x:1.2",
	"word", "--flag=value", "a01", "a1", "a10", "A", "_x", "metadata", "spec", "containers"}

// str returns a string of pieces, of raw fuzz bytes, or a long string with spaces.
func (r *fuzzReader) str() string {
	var b strings.Builder
	for range r.next() % 6 {
		switch c := r.next(); {
		case c < 200:
			b.WriteString(fuzzPieces[int(c)%len(fuzzPieces)])
		case c < 240:
			for range c % 8 {
				b.WriteByte(r.next())
			}
		default:
			b.WriteString(strings.Repeat("word ", int(c%40)))
		}
	}
	return b.String()
}

// value returns untyped JSON data of at most depth levels.
func (r *fuzzReader) value(depth int) any {
	c := r.next()
	if depth <= 0 {
		c = 2 + c%6
	}
	switch c % 10 {
	case 0, 1:
		m := map[string]any{}
		for range r.next() % 6 {
			m[r.str()] = r.value(depth - 1)
		}
		return m
	case 2, 3:
		s := []any{}
		for range r.next() % 5 {
			s = append(s, r.value(depth-1))
		}
		return s
	case 4:
		numbers := []string{"0", "-3", "42", "-0", "9223372036854775807", "9223372036854775808",
			"-9223372036854775808", "-9223372036854775809", "18446744073709551616", "1.5", "1e21", "-2.5E-3"}
		return json.Number(numbers[int(r.next())%len(numbers)])
	case 5:
		return r.next()%2 == 0
	case 6:
		return nil
	default:
		return r.str()
	}
}

// checkJSONToYAML checks JSONToYAML, with and without pruning, on the JSON text of the data
// the fuzz bytes b make, against sigs.k8s.io/yaml.Marshal; and that the transcoder prints
// what emitYAML prints. It reports whether the transcoder printed the data.
func checkJSONToYAML(t *testing.T, b []byte) bool {
	r := &fuzzReader{b}
	v := r.value(5)
	if r.next()%2 == 0 {
		v = map[string]any{"k": v}
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, prune := range []bool{false, true} {
		u := untyped(t, data)
		if prune {
			pruneUntyped(u)
		}
		got, err := testJSONToYAML(data, prune)
		if err != nil {
			t.Fatalf("JSONToYAML(%s, prune %v): %v", data, prune, err)
		}
		want, err := yaml.Marshal(u)
		if err != nil {
			// sigs.k8s.io/yaml reads the JSON text as YAML, which may not hold some
			// characters (DEL, C1 controls) that JSON leaves unescaped.
			continue
		}
		if !keysOrdered(u) || bytes.Contains(data, []byte("\u0085")) {
			// Compare with the library's emitter given the data as it is and keys in
			// sortKeys' order, where sigs.k8s.io/yaml does not print the data one way:
			// - the library's key order is not transitive on some map's keys, so its text
			//   depends on Go's map order;
			// - it reads the JSON text as YAML, where U+0085 (NEL) in a string is a line
			//   break that it folds to a space, changing the string.
			if want, err = goyaml.Marshal(yamlNumbers(u)); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Fatalf("JSONToYAML(%s, prune %v) differs from yaml.Marshal (-want +got):\n%s", data, prune, diff)
		}
		if !prune {
			got, err := testJSONToYAML(data, false)
			if err != nil || string(got) != string(want) {
				t.Fatalf("testJSONToYAML(%s, false) = %q, %v, want %q", data, got, err, want)
			}
		}
	}
	_, ok := transcode(nil, data, false)
	return ok
}

// keysOrdered reports whether the YAML library's key order is transitive on the keys of
// each map in the untyped data v, so that the library's text of v does not depend on the
// order it finds the keys in.
func keysOrdered(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k, x := range v {
			if !keysOrdered(x) {
				return false
			}
			keys = append(keys, k)
		}
		sortKeys(keys, func(k string) string { return k })
		for i := range keys {
			for j := i + 1; j < len(keys); j++ {
				if !keyLess(keys[i], keys[j]) {
					return false
				}
			}
		}
	case []any:
		for _, x := range v {
			if !keysOrdered(x) {
				return false
			}
		}
	}
	return true
}

// TestKeyCycle checks that keys on which the YAML library's order is not transitive print in
// one order, whatever order they come in, and in an order the library may print them in.
func TestKeyCycle(t *testing.T) {
	// "a01" < "a10" (1 < 10), "a10" < "a1b" (a digit before a letter), "a1b" < "a01" (the
	// same number, with fewer digits).
	keys := []string{"a01", "a10", "a1b", "b"}
	m := map[string]any{}
	for i, k := range keys {
		m[k] = i
	}
	if keysOrdered(m) {
		t.Fatalf("keysOrdered(%v) = true, want false", keys)
	}
	library := map[string]bool{}
	for range 100 {
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		library[string(out)] = true
	}
	want, err := testMarshalYAML(m)
	if err != nil {
		t.Fatal(err)
	}
	if !library[string(want)] {
		t.Errorf("MarshalYAML(%v) = %q, which sigs.k8s.io/yaml never printed in 100 runs: %q", m, want, slices.Sorted(maps.Keys(library)))
	}
	permutations := [][]int{{0, 1, 2, 3}, {0, 2, 1, 3}, {1, 0, 2, 3}, {1, 2, 0, 3}, {2, 0, 1, 3}, {2, 1, 0, 3}, {3, 2, 1, 0}}
	for _, p := range permutations {
		var b strings.Builder
		b.WriteByte('{')
		for i, j := range p {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%d", keys[j], j)
		}
		b.WriteByte('}')
		data := []byte(b.String())
		for _, prune := range []bool{false, true} {
			if got, err := testJSONToYAML(data, prune); err != nil || string(got) != string(want) {
				t.Errorf("JSONToYAML(%s, prune %v) = %q, %v, want %q", data, prune, got, err, want)
			}
		}
		if got, err := testViaUntyped(data); err != nil || string(got) != string(want) {
			t.Errorf("JSONToYAML(%s) through untyped values = %q, %v, want %q", data, got, err, want)
		}
		// The YAML library itself, as the emitters fall back to it.
		if got, err := goyaml.Marshal(yamlNumbers(untyped(t, data))); err != nil || string(got) != string(want) {
			t.Errorf("goyaml.Marshal(yamlNumbers(%s)) = %q, %v, want %q", data, got, err, want)
		}
	}
}

// untyped returns the untyped data of the JSON text data.
func untyped(t *testing.T, data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// pruneUntyped is prune, written as plainly as it can be: it deletes the null members of
// the maps in v, and then the members whose value is a map that held something before
// and nothing after.
func pruneUntyped(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == nil {
				delete(v, k)
				continue
			}
			if m, ok := x.(map[string]any); ok && len(m) > 0 {
				pruneUntyped(m)
				if len(m) == 0 {
					delete(v, k)
				}
				continue
			}
			pruneUntyped(x)
		}
	case []any:
		for _, x := range v {
			pruneUntyped(x)
		}
	}
}

// FuzzJSONToYAML checks JSONToYAML against sigs.k8s.io/yaml.Marshal on data made of fuzz
// bytes. TestJSONToYAMLRandom runs it on a few thousand random inputs.
func FuzzJSONToYAML(f *testing.F) {
	for _, seed := range []string{"", "\x00\x05\x01\x02", "\x01\x03\x07\x01\x00", "\x00\x04\xf0\x09\x03\x04\x05\x06"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkJSONToYAML(t, b) })
}

// TestJSONToYAMLRandom runs the fuzz check on random inputs, and checks that the transcoder
// prints many of them (floats, non-ASCII and multi-line strings make it decline).
func TestJSONToYAMLRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 5000
	printed := 0
	for range n {
		b := make([]byte, r.IntN(200))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if checkJSONToYAML(t, b) {
			printed++
		}
	}
	t.Logf("transcoded %d of %d", printed, n)
	if printed < n/4 {
		t.Errorf("the transcoder printed %d of %d inputs, want at least a quarter", printed, n)
	}
}

// TestJSONToYAMLObjects checks JSONToYAML, with and without pruning, on the training pod, the
// jobs of the llama-ft example and of the scheduler's golden files, and each task of these
// jobs as the scheduler prints it, and that none of them needs the slow path.
func TestJSONToYAMLObjects(t *testing.T) {
	texts := map[string][]byte{}
	pod := trainingPod(t)
	texts["training pod"] = mustJSON(t, pod)

	jobFiles := []string{filepath.Join("..", "..", "examples", "llama-ft", "expected.yaml")}
	goldens, err := filepath.Glob(filepath.Join("..", "..", "scheduler", "testdata", "build", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	jobFiles = append(jobFiles, goldens...)
	jobs := 0
	for _, file := range jobFiles {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(file, ".txtar") {
			data = nil
			for _, f := range txtar.Parse(mustRead(t, file)).Files {
				if f.Name == "want.yaml" {
					data = f.Data
				}
			}
			if data == nil {
				continue
			}
		}
		var head struct{ Kind string }
		if err := yaml.Unmarshal(data, &head); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if head.Kind != "Job" {
			// A JobSet: its JSON as the API server would hold it, untyped.
			var obj map[string]any
			if err := yaml.UnmarshalStrict(data, &obj); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			texts[file] = mustJSON(t, obj)
			continue
		}
		job := new(vcbatch.Job)
		if err := yaml.UnmarshalStrict(data, job); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		jobs++
		texts[file] = mustJSON(t, job)
		for i := range job.Spec.Tasks {
			// As the scheduler prints a task on its own.
			task := `{"spec":{"tasks":[` + string(mustJSON(t, &job.Spec.Tasks[i])) + `]}}`
			texts[file+": task "+job.Spec.Tasks[i].Name] = []byte(task)
		}
	}
	if jobs < 5 {
		t.Fatalf("found %d jobs, want the llama-ft job and the golden ones", jobs)
	}
	for name, data := range texts {
		for _, prune := range []bool{false, true} {
			u := untyped(t, data)
			if prune {
				pruneUntyped(u)
			}
			want, err := yaml.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			got, err := testJSONToYAML(data, prune)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s, prune %v: JSONToYAML differs from yaml.Marshal (-want +got):\n%s", name, prune, diff)
			}
			if _, ok := transcode(nil, data, prune); !ok {
				t.Errorf("%s, prune %v: the transcoder declined it", name, prune)
			}
		}
	}
}

// TestPrune checks pruning on a case of each kind, through the transcoder and the slow path
// (a float makes the transcoder decline).
func TestPrune(t *testing.T) {
	const in = `{"a":null,"b":{"c":null,"d":{"e":null}},"f":{},"g":[null,{"h":null},{}],"i":{"j":1,"k":null},"x":%s}`
	const want = "f: {}\ng:\n- null\n- {}\n- {}\ni:\n  j: 1\nx: %s\n"
	for _, x := range []string{"2", "2.5"} {
		got, err := testJSONToYAMLPrune([]byte(strings.ReplaceAll(in, "%s", x)))
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.ReplaceAll(want, "%s", x); string(got) != want {
			t.Errorf("x %s: got\n%s\nwant\n%s", x, got, want)
		}
	}
	for in, want := range map[string]string{
		`{"a":{"b":null}}`:                        "{}\n",
		`{"a":1,"a":null}`:                        "{}\n", // the last of duplicates counts, as in encoding/json
		`{"a":null,"a":1}`:                        "a: 1\n",
		`[{"a":null,"b":1,"a":null}]`:             "- b: 1\n",
		`[{"a":null,"b":{"c":null},"d":1,"e":2}]`: "- d: 1\n  e: 2\n",
	} {
		got, err := testJSONToYAMLPrune([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q, %v, want %q", in, got, err, want)
		}
	}
}

// TestTranscodeDeclines checks that the transcoder declines text it cannot print, and that
// JSONToYAML still prints it or fails as before.
func TestTranscodeDeclines(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"a"}`, `{"a":1,}`, `[1 2]`, `"a"`, `1`, `tru`, `[1] `, ` [1]`, `{"a": 1}`, `[01]`,
		`[1.]`, `[-]`, `[1e]`, `["a` + "\x01" + `"]`, `["\x"]`, `["\u12"]`, `{"é":1}`, `{"\u00e9":1}`,
		`{"a":1,"a":2}`, strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2),
	} {
		if out, ok := transcode(nil, []byte(in), false); ok {
			t.Errorf("transcode(%q) = %q, want it declined", in, out)
		}
	}
	for in, want := range map[string]string{
		`{"a": 1}`:           "a: 1\n",
		`[1.5]`:              "- 1.5\n",
		`["\u003c\/\"\\"]`:   "- </\"\\\n",
		`{"a":1,"a":2}`:      "a: 2\n",
		`{"\u0061\u00e9":1}`: "aé: 1\n",
	} {
		got, err := testJSONToYAML([]byte(in), false)
		if err != nil || string(got) != want {
			t.Errorf("JSONToYAML(%s) = %q, %v, want %q", in, got, err, want)
		}
	}
	if _, err := testJSONToYAML([]byte(`{"a":}`), false); err == nil {
		t.Errorf("JSONToYAML of bad JSON succeeded, want an error")
	}
}

// TestSlowScalar checks scalars that the transcoder has the YAML library print, at several
// depths, against sigs.k8s.io/yaml.
func TestSlowScalar(t *testing.T) {
	long := strings.Repeat("word ", 20)
	for _, scalar := range []string{`1.5`, `-2e-7`, `1e400`, `"é"`, `"a\nb"`, `"a\n"`, `"\u2028"`, `"\t"`,
		`"` + long + `"`, `"` + long + `\n` + long + `"`, `"a\n\n"`, `"\n\n"`, `"  lead"`, `"é` + long + `"`} {
		for _, doc := range []string{`[%s]`, `{"k":%s}`, `{"a":{"bb":[{"x":1,"ccc":%s,"d":[[%s]]}]},"z":%s}`,
			`[[{"k":[%s,{"j":%s}]}]]`} {
			data := []byte(strings.ReplaceAll(doc, "%s", scalar))
			want, err := yaml.JSONToYAML(data)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := transcode(nil, data, false)
			if !ok {
				t.Errorf("transcode(%s) declined", data)
			} else if ok && string(got) != string(want) {
				t.Errorf("transcode(%s) differs from sigs.k8s.io/yaml (-want +got):\n%s", data, cmp.Diff(string(want), string(got)))
			}
		}
	}
}

// TestKeyLessASCII checks the ASCII order of keys against the order written with runes.
func TestKeyLessASCII(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const chars = "aAzZ019_-./0"
	key := func() string {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = chars[r.IntN(len(chars))]
		}
		return string(b)
	}
	for range 100000 {
		a, b := key(), key()
		if got, want := keyLessASCII(a, b), keyLessRunes(a, b); got != want {
			t.Fatalf("keyLessASCII(%q, %q) = %v, want %v", a, b, got, want)
		}
	}
}

// trainingPod returns the training pod of testdata/pods.
func trainingPod(tb testing.TB) *corev1.Pod {
	pod := new(corev1.Pod)
	readYAML(tb, filepath.Join("..", "..", "testdata", "pods", "training.yaml"), pod)
	return pod
}

func readYAML(t testing.TB, file string, v any) {
	if err := yaml.UnmarshalStrict(mustRead(t, file), v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func mustRead(t testing.TB, file string) []byte {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustJSON(t *testing.T, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// BenchmarkJSONToYAML measures printing the JSON text of the training pod as YAML, straight
// from the text and through untyped values, as it is and with scalars the YAML library prints.
func BenchmarkJSONToYAML(b *testing.B) {
	pod := trainingPod(b)
	plain, err := json.Marshal(pod)
	if err != nil {
		b.Fatal(err)
	}
	// The pod with scalars that the YAML library prints: a script, a long and a non-ASCII
	// annotation and a float.
	c := &pod.Spec.Containers[0]
	c.Command = []string{"bash", "-c", "set -e\nfor i in 1 2 3; do\n  echo \"step $i\"\ndone\n"}
	pod.Annotations = map[string]string{"note": strings.Repeat("a long note ", 10), "owner": "José"}
	scripted, err := json.Marshal(pod)
	if err != nil {
		b.Fatal(err)
	}
	scripted = bytes.Replace(scripted, []byte(`"metadata":{`), []byte(`"metadata":{"weight":0.5,`), 1)
	for _, bench := range []struct {
		name string
		data []byte
	}{{"pod", plain}, {"script", scripted}} {
		want, err := yaml.JSONToYAML(bench.data)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := testJSONToYAML(bench.data, false); err != nil || string(got) != string(want) {
			b.Fatalf("%s: got %q, %v, want %q", bench.name, got, err, want)
		}
		b.Run(bench.name+"/text", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := testJSONToYAML(bench.data, false); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bench.name+"/library", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := yaml.JSONToYAML(bench.data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// testJSONToYAML is stream.YAMLOptions.JSONToYAML as it was before fast paths went behind
// stream: the transcoder, or the YAML library given the untyped data.
func testJSONToYAML(data []byte, prune bool) ([]byte, error) {
	if out, ok := transcode(nil, data, prune); ok {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if prune {
		pruneUntyped(v)
	}
	return goyaml.Marshal(yamlNumbers(v))
}

// testJSONToYAMLPrune is testJSONToYAML with pruning.
func testJSONToYAMLPrune(data []byte) ([]byte, error) { return testJSONToYAML(data, true) }

// testViaUntyped prints data through its untyped values with the YAML library.
func testViaUntyped(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return goyaml.Marshal(yamlNumbers(v))
}

// testMarshalYAML is testJSONToYAML of the JSON text of v.
func testMarshalYAML(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return testJSONToYAML(data, false)
}

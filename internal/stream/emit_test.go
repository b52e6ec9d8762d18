package stream

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	goyaml "go.yaml.in/yaml/v2"
)

// randomString returns a string of pieces that YAML treats specially, or a long one.
func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "y", "n", "o", "true", "null", "~", "0", "1", "9", "10", "0x", "e3",
		".", "-", "--", "---", "_", "/", "=", ":", ": ", " ", "  ", "#", " #", "'", "\"", "\\", ",",
		"[", "]", "{", "}", "&", "*", "!", "|", ">", "%", "@", "`", "?", "+", "<<", "é", "\t", "\n",
		"2001-12-14", "1:20", "image.example.com/x:1.2", "word", "--flag=value"}
	if r.IntN(20) == 0 {
		return strings.Repeat("word ", 5+r.IntN(30))
	}
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// randomValue returns untyped JSON data of at most depth levels.
func randomValue(r *rand.Rand, depth int) any {
	n := r.IntN(10)
	if depth == 0 {
		n = 4 + r.IntN(6)
	}
	switch n {
	case 0, 1:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth-1)
		}
		return m
	case 2, 3:
		s := []any{}
		for range r.IntN(4) {
			s = append(s, randomValue(r, depth-1))
		}
		return s
	case 4:
		return json.Number([]string{"0", "-3", "42", "9223372036854775808", "1.5", "1e21", "-0"}[r.IntN(7)])
	case 5:
		return r.IntN(2) == 0
	case 6:
		return nil
	default:
		return randomString(r)
	}
}

// TestEmitYAMLSameAsLibrary checks emitYAML against the YAML library on random data, and
// that it declines little beyond what it must.
func TestEmitYAMLSameAsLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	emitted := 0
	for i := range 20000 {
		v := map[string]any{"k": randomValue(r, 4)}
		if i%2 == 0 {
			v = map[string]any{randomString(r): randomValue(r, 4), "b": []any{randomValue(r, 3), randomValue(r, 3)}}
		}
		got, ok := emitYAML(nil, v)
		if !ok {
			continue
		}
		emitted++
		want, err := goyaml.Marshal(yamlNumbers(v))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("emitYAML(%#v):\n%s\nwant:\n%s", v, got, want)
		}
	}
	t.Logf("emitted %d", emitted)
	if emitted < 5000 {
		t.Errorf("emitYAML wrote %d of 20000 values, want at least 5000", emitted)
	}
}

// TestIsPlainSameAsLibrary checks that the YAML library writes as they are the strings
// isPlain says it does, and, for strings of letters, only those: every way of writing the
// words it reads as bools or null, and all strings of one or two letters.
func TestIsPlainSameAsLibrary(t *testing.T) {
	var strs []string
	for _, w := range []string{"y", "yes", "n", "no", "true", "false", "on", "off", "null", "name", "team", "tcp", "never", "one", "nil"} {
		for mask := range 1 << len(w) {
			b := []byte(w)
			for i := range b {
				if mask&(1<<i) != 0 {
					b[i] -= 'a' - 'A'
				}
			}
			strs = append(strs, string(b))
		}
	}
	letters := "abnoNOtTfFyYzZ"
	for i := range len(letters) {
		strs = append(strs, letters[i:i+1])
		for j := range len(letters) {
			strs = append(strs, letters[i:i+1]+letters[j:j+1])
		}
	}
	strs = append(strs, "yes1", "no-", "on.x", "off/", "nullx", "truee", "n:", "o:x", "a.b_c/d-e=f:g", "Never",
		"/", "//", "/a", "/yes", "/1", "/a:b", "/a:", "/:", "/-", "/.", "/etc/train/config.yaml", "/a=b_c.d")
	for _, s := range strs {
		if s != "" && !isPlain(s) && s[0] == '/' && s[len(s)-1] != ':' {
			t.Errorf("isPlain(%q) = false, want true", s)
		}
	}
	for _, s := range strs {
		data, err := goyaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		plain := string(data) == s+"\n"
		if got := isPlain(s); got && !plain || !got && plain && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
			t.Errorf("isPlain(%q) = %v, but the YAML library writes %q", s, got, data)
		}
	}
}

// TestAppendScalarTextSameAsLibrary checks appendScalarText against the YAML library for
// strings of digits, which it quotes without asking the library, and a few others.
func TestAppendScalarTextSameAsLibrary(t *testing.T) {
	strs := []string{"0", "00", "08", "0123", "1", "29500", "18446744073709551616", "1e3", "1_0", "-1", "a1", "1a", "/x"}
	for _, n := range []int{19, 20, 40, 299, 300, 301, 320, 400} {
		strs = append(strs, strings.Repeat("9", n), "0"+strings.Repeat("7", n-1))
	}
	for _, s := range strs {
		data, err := goyaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendScalarText([]byte("x"), s, 0)
		if ok && string(got[1:])+"\n" != string(data) {
			t.Errorf("appendScalarText(%q) = %q, but the YAML library writes %q", s, got[1:], data)
		}
		if !ok && quotesDigits(s) {
			t.Errorf("appendScalarText(%q) fails", s)
		}
	}
}

func TestKeyOrder(t *testing.T) {
	keys := []string{"a10", "a9", "a", "B", "b", "_x", "1", "10", "2", "a01", "a1", "x-y", "x.y", "xy"}
	m := map[string]any{}
	for _, k := range keys {
		m[k] = json.Number("1")
	}
	got, ok := emitYAML(nil, m)
	want, err := goyaml.Marshal(yamlNumbers(m))
	if err != nil {
		t.Fatal(err)
	}
	if !ok || string(got) != string(want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestParseJSONSameAsDecoder checks parseJSON against encoding/json on the text json.Marshal
// writes of random data.
func TestParseJSONSameAsDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		data, err := json.Marshal(randomValue(r, 4))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		got, ok := parseJSON(data)
		if !ok {
			t.Fatalf("parseJSON(%s) failed", data)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("parseJSON(%s): (-want +got)\n%s", data, diff)
		}
	}
	for _, bad := range []string{"", "{", `{"a"}`, `{"a":1,}`, "[1 2]", `"a`, "tru", "[1] "} {
		if _, ok := parseJSON([]byte(bad)); ok {
			t.Errorf("parseJSON(%q) succeeded, want failure", bad)
		}
	}
}

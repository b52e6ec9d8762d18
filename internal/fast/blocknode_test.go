package fast

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

// TestCutLine checks cutLine, which tests eight bytes at a time, against a byte-by-byte
// search, with every byte at every place of texts of several lengths.
func TestCutLine(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for i := 0; i < n; i++ {
			for c := 0; c < 256; c++ {
				text := bytes.Repeat([]byte("a"), n)
				text[i] = byte(c)
				wantLine, wantRest, wantOK := text, []byte(nil), true
				if c < ' ' || c > '~' {
					wantLine, wantRest, wantOK = text[:i], text[i+1:], c == '\n'
				}
				line, rest, ok := cutLine(text)
				if !bytes.Equal(line, wantLine) || !bytes.Equal(rest, wantRest) || ok != wantOK {
					t.Errorf("cutLine(%q) = %q, %q, %v, want %q, %q, %v", text, line, rest, ok, wantLine, wantRest, wantOK)
				}
			}
		}
	}
	if line, rest, ok := cutLine([]byte("ab\n\x00")); string(line) != "ab" || string(rest) != "\x00" || !ok {
		t.Errorf("cutLine(\"ab\\n\\x00\") = %q, %q, %v", line, rest, ok)
	}
}

// TestIndexPair checks indexPair against bytes.Index.
func TestIndexPair(t *testing.T) {
	for _, text := range []string{"", " ", "#", " #", "a #", "a# #", "##  #", "a#b", "a: b", "::", "a:b: c", "x  "} {
		for _, pair := range []string{" #", ": "} {
			if got, want := indexPair([]byte(text), pair[0], pair[1]), bytes.Index([]byte(text), []byte(pair)); got != want {
				t.Errorf("indexPair(%q, %q) = %d, want %d", text, pair, got, want)
			}
		}
	}
}

// TestBlockNodeTurns checks that ReadBlockYAML declines a document whose reader leaves a
// node unread or reads one out of turn, and that a node reads only as its kind.
func TestBlockNodeTurns(t *testing.T) {
	doc := []byte("a: b\nc:\n  d: [1, x]\ne:\n- f\n")
	for name, read := range map[string]func(BlockNode) bool{
		"root unread": func(BlockNode) bool { return true },
		"value unread": func(root BlockNode) bool {
			return root.Entries(func(string, BlockNode) bool { return true })
		},
		"read twice": func(root BlockNode) bool {
			return root.Entries(func(_ string, v BlockNode) bool {
				_, ok := v.Untyped()
				_, again := v.Untyped()
				return ok && again
			})
		},
		"read late": func(root BlockNode) bool {
			var first BlockNode
			n := 0
			return root.Entries(func(_ string, v BlockNode) bool {
				if n++; n == 1 {
					first = v
					return true
				}
				_, ok := first.Untyped()
				return ok
			})
		},
	} {
		if ReadBlockYAML(doc, math.MaxInt64, read) {
			t.Errorf("%s: ReadBlockYAML takes it", name)
		}
	}
	kinds := map[string]BlockKind{}
	ok := ReadBlockYAML(doc, math.MaxInt64, func(root BlockNode) bool {
		return root.Entries(func(key string, v BlockNode) bool {
			kinds[key] = v.Kind()
			if _, isScalar := v.Scalar(); isScalar != (v.Kind() == BlockScalar) {
				return false
			}
			if v.Kind() == BlockScalar {
				return !v.Items(func(BlockNode) bool { return true })
			}
			if _, isString := v.Str(); isString || v.Null() {
				return false
			}
			_, ok := v.Untyped()
			return ok
		})
	})
	if !ok || kinds["a"] != BlockScalar || kinds["c"] != BlockMapping || kinds["e"] != BlockSequence {
		t.Errorf("ReadBlockYAML: %v, kinds %v", ok, kinds)
	}
}

// TestReadBlockYAMLOneDocument checks that ReadBlockYAML, which does not call oneDocument,
// takes only texts that oneDocument takes, and reads them as parseBlockYAML does.
func TestReadBlockYAMLOneDocument(t *testing.T) {
	docs := append(blockSeeds(t), "...k: v\n", "a: 1\n...k: v\n", "-k: 1\n", ".k: 1\n", "a: 1\n%x: 2\n",
		"a: b\n...\n", "a: b\n... # c\n", "%YAML 1.1\n---\na: b\n", "a: b\r\n", "# c\n  a: b\n")
	for _, doc := range docs {
		var got any
		took := ReadBlockYAML([]byte(doc), math.MaxInt64, func(root BlockNode) (ok bool) {
			got, ok = root.Untyped()
			return ok
		})
		if !took {
			continue
		}
		if !oneDocument([]byte(doc)) {
			t.Errorf("%q: ReadBlockYAML takes a text that oneDocument refuses", doc)
			continue
		}
		want, ok := parseBlockYAML([]byte(doc), math.MaxInt64)
		if !ok || !reflect.DeepEqual(want, got) {
			t.Errorf("%q: ReadBlockYAML reads %v, parseBlockYAML %v (%v)", doc, got, want, ok)
		}
	}
}

// TestBlockYAMLSigns checks that parseBlockYAML reads plain scalars that start with a sign
// as sigs.k8s.io/yaml does, and takes those that cannot be numbers, as command-line flags.
func TestBlockYAMLSigns(t *testing.T) {
	for _, v := range []string{"-c", "-i", "-p", "-o", "-x", "+x", "--", "-+1", "+-1", "-_1", "+_1", "-.5", "-.inf", "+.inf",
		"-0b1", "-0x1F", "-1e3", "-1_000", "-e", "-E1", "-n", "-N", "-y", "-Y", "-nan", "-inf", "-Infinity", "-0o7", "-1.5.2"} {
		doc := []byte("a: " + v + "\nb: [" + v + "]\nc:\n- " + v + "\n")
		checkBlockYAML(t, doc)
		if _, ok := parseBlockYAML(doc, math.MaxInt64); !ok && len(v) > 1 && !numberAfterSign[v[1]] {
			t.Errorf("%q: parseBlockYAML declines it", doc)
		}
	}
}

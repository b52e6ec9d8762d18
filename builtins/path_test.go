package builtins

import (
	"errors"
	"reflect"
	"testing"
)

func TestParsePath(t *testing.T) {
	for _, test := range []struct {
		path  string
		want  []step
		canon string
	}{
		{"", nil, ""},
		{".", nil, ""},
		{"spec", []step{{kind: fieldStep, name: "spec"}}, "spec"},
		{".spec.containers", []step{{kind: fieldStep, name: "spec"}, {kind: fieldStep, name: "containers"}}, "spec.containers"},
		{"[2]", []step{{kind: indexStep, index: 2}}, "[2]"},
		{"a[-1][007]", []step{{kind: fieldStep, name: "a"}, {kind: indexStep, index: -1}, {kind: indexStep, index: 7}}, "a[-1][7]"},
		{"a[*]", []step{{kind: fieldStep, name: "a"}, {kind: allStep}}, "a[*]"},
		{`m["app.kubernetes.io/name"]`, []step{{kind: fieldStep, name: "m"}, {kind: fieldStep, name: "app.kubernetes.io/name"}}, `m["app.kubernetes.io/name"]`},
		{`m['x']`, []step{{kind: fieldStep, name: "m"}, {kind: fieldStep, name: "x"}}, `m.x`},
		{`['a\'b\\']`, []step{{kind: fieldStep, name: `a'b\`}}, `["a'b\\"]`},
		{`c[name=trainer]`, []step{{kind: fieldStep, name: "c"}, {kind: selectStep, name: "name", value: "trainer"}}, `c[name=trainer]`},
		{`c[name="a b"]`, []step{{kind: fieldStep, name: "c"}, {kind: selectStep, name: "name", value: "a b", quoted: true}}, `c[name="a b"]`},
		{`c[name=a b]`, []step{{kind: fieldStep, name: "c"}, {kind: selectStep, name: "name", value: "a b"}}, `c[name=a b]`},
		{`c["0"=1]`, []step{{kind: fieldStep, name: "c"}, {kind: selectStep, name: "0", value: "1"}}, `c["0"=1]`},
		{`c["a.b"="x"]`, []step{{kind: fieldStep, name: "c"}, {kind: selectStep, name: "a.b", value: "x", quoted: true}}, `c["a.b"="x"]`},
		{`c[k=a=b]`, []step{{kind: fieldStep, name: "c"}, {kind: selectStep, name: "k", value: "a=b"}}, `c[k=a=b]`},
		{`-0.$x`, []step{{kind: fieldStep, name: "-0"}, {kind: fieldStep, name: "$x"}}, `-0.$x`},
	} {
		got, err := parsePath(test.path)
		if err != nil {
			t.Errorf("parsePath(%q): %v", test.path, err)
			continue
		}
		if !reflect.DeepEqual(got, test.want) {
			t.Errorf("parsePath(%q) = %+v, want %+v", test.path, got, test.want)
		}
		if canon := formatPath(got); canon != test.canon {
			t.Errorf("formatPath(parsePath(%q)) = %q, want %q", test.path, canon, test.canon)
		}
	}
}

func TestParsePathErrors(t *testing.T) {
	for _, test := range []struct {
		path string
		col  int
		msg  string
	}{
		{"spec.containers[", 16, `unclosed "["`},
		{"a..b", 3, `got '.' after ".", want field name (quote other keys: ["a/b"])`},
		{"a.", 3, `got end of path after ".", want field name (quote other keys: ["a/b"])`},
		{"..", 2, `got '.', want field name or "["`},
		{" a", 1, `got ' ', want field name or "["`},
		{"a b", 2, `got ' ', want "." or "["`},
		{"a[x]", 3, `got [x], want [x=value], or ["x"] for a key`},
		{"a[x!", 4, `got '!', want "]"`},
		{"a[x", 2, `unclosed "["`},
		{"a[1", 2, `unclosed "["`},
		{`a["x`, 3, `unclosed string`},
		{`a[x="y`, 5, `unclosed string`},
		{"a[]", 3, `got ']' after "[", want index, "*", key=value or quoted key`},
		{"a[x=[]", 5, `got '[' after "=", want value`},
		{"a[--1]", 3, `got "-", want index`},
		{"\xff", 1, `got '�', want field name or "["`},
	} {
		_, err := parsePath(test.path)
		var pe *pathError
		if !errors.As(err, &pe) {
			t.Errorf("parsePath(%q): got %v, want *pathError", test.path, err)
			continue
		}
		if pe.col != test.col || pe.msg != test.msg {
			t.Errorf("parsePath(%q): got column %d %q, want column %d %q", test.path, pe.col, pe.msg, test.col, test.msg)
		}
	}
}

// FuzzParsePath checks that parsePath never panics, that its errors point into the path,
// and that the canonical form of a path parses to the same steps.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"", ".", "spec.containers[name=trainer].env[0].value", `metadata.labels["app.kubernetes.io/name"]`,
		"[*]", "[-1]", `a['b\'c']`, `a["k"="v"]`, "a[k=v w]", "spec.containers[",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		steps, err := parsePath(text)
		if err != nil {
			var pe *pathError
			if !errors.As(err, &pe) {
				t.Fatalf("parsePath(%q): got %T, want *pathError", text, err)
			}
			if pe.col < 1 || pe.col > len(text)+1 {
				t.Fatalf("parsePath(%q): column %d outside 1..%d", text, pe.col, len(text)+1)
			}
			return
		}
		canon := formatPath(steps)
		again, err := parsePath(canon)
		if err != nil {
			t.Fatalf("parsePath(%q) = %+v, whose form %q does not parse: %v", text, steps, canon, err)
		}
		if !reflect.DeepEqual(steps, again) {
			t.Fatalf("parsePath(%q) = %+v, but its form %q parses to %+v", text, steps, canon, again)
		}
	})
}

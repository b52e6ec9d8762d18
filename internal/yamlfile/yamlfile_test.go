package yamlfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type config struct {
	Name    string            `yaml:"name"`
	Count   int               `yaml:"count"`
	Ratio   float64           `yaml:"ratio"`
	On      *bool             `yaml:"on"`
	Tags    []string          `yaml:"tags"`
	Labels  map[string]string `yaml:"labels"`
	Args    map[string]any    `yaml:"args"`
	Nested  *config           `yaml:"nested"`
	Skipped string            `yaml:"-"`
}

func TestDecodeFile(t *testing.T) {
	data := "name: a\ncount: 3\nratio: 2\non: true\ntags: [x, y]\nlabels: {k: v}\n" +
		"args: {env: {A: 'x,LOGLEVEL=DEBUG', B: '0,1'}, n: 1, f: 1.5, b: false, l: [1, two], z: null}\nnested: {name: b}\n"
	var got config
	if err := DecodeFile("c.yaml", []byte(data), &got, nil); err != nil {
		t.Fatal(err)
	}
	on := true
	want := config{Name: "a", Count: 3, Ratio: 2, On: &on, Tags: []string{"x", "y"}, Labels: map[string]string{"k": "v"},
		Args: map[string]any{"env": map[string]any{"A": "x,LOGLEVEL=DEBUG", "B": "0,1"}, "n": int64(1), "f": 1.5,
			"b": false, "l": []any{int64(1), "two"}, "z": nil},
		Nested: &config{Name: "b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestDecodeFileErrors(t *testing.T) {
	for _, test := range []struct {
		data string
		opts *Options
		want string
	}{
		{"nmae: a\n", nil, `c.yaml:1:1: nmae: unknown field; did you mean "name"?`},
		{"name: a\nname: b\n", nil, `c.yaml:2:1: name: "name" given twice`},
		{"count: x\ntags: 3\n", nil, "c.yaml:1:8: count: got string, want int\nc.yaml:2:7: tags: got int, want list"},
		{"name: 3\n", nil, "c.yaml:1:7: name: got int, want string (quote the value)"},
		{"nested: {nested: {cuont: 1}}\n", nil, `c.yaml:1:19: nested.nested.cuont: unknown field; did you mean "count"?`},
		{"labels: {k: [1]}\n", nil, "c.yaml:1:13: labels[k]: got list, want string"},
		{"count: 99999999999999999999\n", nil, "c.yaml:1:8: count: got float, want int"},
		{"ratio: .nan\n", nil, `c.yaml:1:8: ratio: got ".nan", got a number that is not finite, want a finite number`},
		{"name: [\n", nil, "c.yaml:1:1: did not find expected node content"},
		{"name: a\n---\nname: b\n", nil, "c.yaml:2:1: got several YAML documents, want one"},
		{"", &Options{What: "app spec", NoEmpty: true}, "c.yaml: got an empty file, want an app spec"},
		{"name: " + strings.Repeat("a", 100) + "\n", &Options{MaxBytes: 64}, "c.yaml: the config is larger than the limit of 64"},
	} {
		var c config
		err := DecodeFile("c.yaml", []byte(test.data), &c, test.opts)
		var ferr *Error
		if !errors.As(err, &ferr) {
			t.Errorf("DecodeFile(%.40q) = %v, want an *Error", test.data, err)
			continue
		}
		if got := err.Error(); got != test.want {
			t.Errorf("DecodeFile(%.40q):\n got %s\nwant %s", test.data, got, test.want)
		}
	}
}

func TestDecodeFileEmpty(t *testing.T) {
	c := config{Name: "kept"}
	for _, data := range []string{"", "# only a comment\n", "null\n"} {
		if err := DecodeFile("c.yaml", []byte(data), &c, nil); err != nil || c.Name != "kept" {
			t.Errorf("DecodeFile(%q) = %v, name %q; want nil, name kept", data, err, c.Name)
		}
	}
}

// TestAliasBound checks that a small file whose aliases stand for a huge value is refused
// for its aliases, with the one error, however the aliases nest.
func TestAliasBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: &a " + strings.Repeat("x", 1000) + "\nargs:\n")
	for i := range 200_000 {
		fmt.Fprintf(&b, "  k%d: *a\n", i)
	}
	nest := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
		"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	var short strings.Builder
	short.WriteString("name: &a x\nargs:\n")
	for i := range 200_000 {
		fmt.Fprintf(&short, "  k%d: *a\n", i)
	}
	for _, test := range []struct{ data, want string }{
		{short.String(), "alias *a: aliases add more than the limit of 100000 values"},
		{b.String(), "c.yaml:8390:10: args[k8387]: the values add up to more than 8Mi of text here (aliases repeat them)"},
		{"args:\n" + indent(nest), "alias *c: aliases add more than the limit of 10000 values"},
		{"args: &r {x: *r}\n", "alias *r: stands for a value that contains it"},
	} {
		var c config
		err := DecodeFile("c.yaml", []byte(test.data), &c, &Options{MaxBytes: 8 << 20})
		if test.want == "" {
			if err != nil {
				t.Errorf("DecodeFile(%.40q) = %v, want nil", test.data, err)
			}
			continue
		}
		var ferr *Error
		if !errors.As(err, &ferr) || len(ferr.Errors) != 1 || !strings.Contains(err.Error(), test.want) {
			t.Errorf("DecodeFile(%.40q) = %.300v, want one error containing %q", test.data, err, test.want)
		}
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// TestQuote checks that errors quote long values cut short, never inside a rune.
func TestQuote(t *testing.T) {
	long := strings.Repeat("é", MaxQuoted) // two bytes each
	for _, test := range []struct{ in, want string }{
		{"short", `"short"`},
		{strings.Repeat("a", MaxQuoted), `"` + strings.Repeat("a", MaxQuoted) + `"`},
		{strings.Repeat("a", MaxQuoted+1), `"` + strings.Repeat("a", MaxQuoted) + `"... (257 bytes)`},
		{"a" + long, `"a` + strings.Repeat("é", MaxQuoted/2-1) + `"... (513 bytes)`},
	} {
		if got := Quote(test.in); got != test.want {
			t.Errorf("Quote(%.20q...) = %.40s..., want %.40s...", test.in, got, test.want)
		}
	}
}

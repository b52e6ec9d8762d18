package stream

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestJSONSize checks that JSONSize counts the length of json.Marshal's text, for values of
// every kind of type and strings of every escape, and declines what json.Marshal fails on.
func TestJSONSize(t *testing.T) {
	one := 1
	var cyclic struct{ Self any }
	cyclic.Self = &cyclic
	for _, tc := range []struct {
		name     string
		v        any
		declined bool
	}{
		{"all", typedSample(), false},
		{"zero", &typedAll{}, false},
		{"value", *typedSample(), false},
		{"map", map[string]any{"a": []any{}, "b": typedSample(), "c": nil}, false},
		{"nested maps", nestedMaps(3, 20), false},
		{"nil", nil, false},
		{"nil pointer", (*typedAll)(nil), false},
		{"slice", []*int{nil, &one}, false},
		{"escapes", map[string]string{
			"<a&b>":  "\"q\" \\ \b\f\n\r\t \x00\x1f\x7f",
			"é":      "é \u2028 \u2029 \xff\xfe ok \xe2\x80",
			"plain":  "nginx",
			"":       "",
			"html\n": "<script>&amp;</script>",
		}, false},
		{"floats", &struct {
			A, B, C, D, E float64
			F, G          float32
		}{1, -0.5, 1e-7, 123456789, math.Copysign(0, -1), 1e20, 3.4e38}, false},
		{"marshalers", &struct {
			J  typedJSON
			Js []typedJSON
		}{typedJSON{` { "a" : [ 1 , "<\u2028>" ] } `}, []typedJSON{{`"x&y"`}, {`null`}, {`1e400`}}}, false},
		{"long", &struct{ S string }{strings.Repeat("words & more ", 100)}, false},
		{"NaN", &struct{ F float64 }{math.NaN()}, true},
		{"bad JSON", &struct{ J typedJSON }{typedJSON{`{`}}, true},
		{"cycle", &cyclic, true},
		{"string option", &struct {
			N int `json:"n,string"`
		}{1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := JSONSize(tc.v)
			if ok == tc.declined {
				t.Fatalf("declined: got %v, want %v", !ok, tc.declined)
			}
			if !ok {
				return
			}
			data, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatalf("json.Marshal fails (%v), JSONSize counts %d", err, got)
			}
			if got != int64(len(data)) {
				t.Errorf("got %d, want %d, the length of %s", got, len(data), data)
			}
			checkPrintedSize(t, tc.v)
		})
	}
}

// checkPrintedSize checks that YAMLOptions.MarshalTypedYAMLSize, pruned or not, prints v as
// YAMLOptions.MarshalTypedYAML does and counts the length of json.Marshal's text of it, if it
// prints v; and that it prints what MarshalTypedYAML prints.
func checkPrintedSize(t *testing.T, v any) {
	t.Helper()
	for _, opts := range []YAMLOptions{{}, {Prune: true}} {
		text, size, ok := opts.MarshalTypedYAMLSize(v)
		want, wantOK := opts.MarshalTypedYAML(v)
		if ok != wantOK || string(text) != string(want) {
			t.Errorf("prune %v: MarshalTypedYAMLSize prints %q (%v), MarshalTypedYAML %q (%v)", opts.Prune, text, ok, want, wantOK)
		}
		if !ok {
			continue
		}
		data, err := json.Marshal(v)
		if err != nil || size != int64(len(data)) {
			t.Errorf("prune %v: MarshalTypedYAMLSize counts %d, json.Marshal gives %d bytes (error %v): %s", opts.Prune, size, len(data), err, data)
		}
	}
}

// BenchmarkJSONSize measures JSONSize against len(json.Marshal) of the sample value.
func BenchmarkJSONSize(b *testing.B) {
	v := typedSample()
	v.JSON = typedJSON{`{"a":1}`}
	b.Run("count", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := JSONSize(v); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package stream

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type typedInner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

type TypedEmbedded struct {
	E  string `json:"e"`
	E2 *int   `json:"e2,omitempty"`
}

type typedUnexported struct {
	U string `json:"u"`
}

// typedJSON writes its own JSON text, with spaces json.Marshal takes out.
type typedJSON struct{ text string }

func (j typedJSON) MarshalJSON() ([]byte, error) {
	if j.text == "" {
		return []byte("null"), nil
	}
	return []byte(j.text), nil
}

// typedPtrJSON has MarshalJSON on its pointer only: json.Marshal calls it where the value
// is addressable, and encodes the struct elsewhere (in a map).
type typedPtrJSON struct{ X int }

func (j *typedPtrJSON) MarshalJSON() ([]byte, error) { return []byte(`"ptr"`), nil }

type typedText int

func (t typedText) MarshalText() ([]byte, error) { return []byte("text: " + string(rune('a'+t))), nil }

type typedZero struct{ n int }

func (z typedZero) IsZero() bool { return z.n < 0 }

type typedAll struct {
	TypedEmbedded
	*typedInner
	typedUnexported
	Named      TypedEmbedded             `json:"named"`
	Untagged   int                       // named by the field
	Ignored    int                       `json:"-"`
	Dash       int                       `json:"-,"`
	Odd        string                    `json:"odd key: yes"`
	F64        float64                   `json:"f64"`
	F32        float32                   `json:"f32"`
	U64        uint64                    `json:"u64"`
	I8         int8                      `json:"i8"`
	Bool       bool                      `json:"bool"`
	Bytes      []byte                    `json:"bytes"`
	NilBytes   []byte                    `json:"nilBytes"`
	Strs       []string                  `json:"strs"`
	NilStrs    []string                  `json:"nilStrs"`
	EmptyStrs  []string                  `json:"emptyStrs,omitempty"`
	Arr        [2]int                    `json:"arr"`
	Nested     [][]int                   `json:"nested"`
	Map        map[string]int            `json:"map"`
	NilMap     map[string]int            `json:"nilMap"`
	EmptyMap   map[string]int            `json:"emptyMap"`
	Structs    map[string]typedInner     `json:"structs"`
	Ptr        *typedInner               `json:"ptr"`
	NilPtr     *typedInner               `json:"nilPtr"`
	Empty      struct{}                  `json:"empty"`
	Iface      any                       `json:"iface"`
	NilIface   any                       `json:"nilIface"`
	JSON       typedJSON                 `json:"json"`
	JSONs      []typedJSON               `json:"jsons"`
	PtrJSON    typedPtrJSON              `json:"ptrJSON"`
	PtrJSONs   map[string]typedPtrJSON   `json:"ptrJSONs"`
	Text       typedText                 `json:"text"`
	Time       time.Time                 `json:"time"`
	ZeroTime   time.Time                 `json:"zeroTime,omitzero"`
	Zero       typedZero                 `json:"zero,omitzero"`
	NotZero    typedZero                 `json:"notZero,omitzero"`
	OmitStruct typedInner                `json:"omitStruct,omitempty"`
	Digits     map[string]string         `json:"digits"`
	Seqs       []map[string][]typedInner `json:"seqs"`
	Long       string                    `json:"long"`
	Lines      string                    `json:"lines"`
	Unicode    string                    `json:"unicode"`
}

func typedSample() *typedAll {
	two := 2
	return &typedAll{
		TypedEmbedded:   TypedEmbedded{E: "e", E2: &two},
		typedInner:      &typedInner{A: 1},
		typedUnexported: typedUnexported{U: "u"},
		Untagged:        3, Ignored: 4, Dash: 5, Odd: "yes",
		F64: 1e21, F32: 0.1, U64: math.MaxUint64, I8: -8, Bool: true,
		Bytes: []byte("bytes\x00"), Strs: []string{"a", "", "on", "1.5"}, EmptyStrs: []string{},
		Arr: [2]int{1, 2}, Nested: [][]int{{1}, {}, nil},
		Map: map[string]int{"b": 1, "a": 2, "": 3, "a b": 4}, EmptyMap: map[string]int{},
		Structs: map[string]typedInner{"x": {}, "y": {A: 1, B: "b"}},
		Ptr:     &typedInner{B: "null"},
		Iface:   map[string]any{"k": []any{1.5, "v", nil, true, map[string]any{}}},
		JSON:    typedJSON{`{ "z": [1, 2.5, {"a": null}], "a": "s p a c e" }`},
		JSONs:   []typedJSON{{`null`}, {`"s"`}, {`[]`}, {`{}`}, {`3`}, {`1e400`}, {` [ {"a": 1} ] `}},
		PtrJSON: typedPtrJSON{1}, PtrJSONs: map[string]typedPtrJSON{"p": {2}},
		Text: 1, Time: time.Date(2026, 12, 1, 0, 0, 0, 5, time.UTC),
		Zero: typedZero{-1}, NotZero: typedZero{1},
		Digits: map[string]string{"a1": "1", "a01": "2", "a10": "3", "a2": "4"},
		Seqs:   []map[string][]typedInner{{"s": {{A: 1}, {B: "b"}}}, {}},
		Long:   strings.Repeat("long words ", 10), Lines: "two\nlines\n", Unicode: "é \u2028",
	}
}

// nestedMaps returns maps of width members nested depth deep, whose printing takes more
// slots than the printer starts with.
func nestedMaps(depth, width int) map[string]any {
	m := make(map[string]any)
	for i := range width {
		k := strings.Repeat("k", i%5+1) + strings.Repeat("0", i/5)
		if depth == 0 {
			m[k] = i
		} else if i%3 == 0 {
			m[k] = nestedMaps(depth-1, width)
		} else {
			m[k] = map[string]string{k: k}
		}
	}
	return m
}

// TestMarshalTypedYAML checks that MarshalTypedYAML prints what MarshalYAML prints, for
// values of every kind of type, and declines what it says it declines.
func TestMarshalTypedYAML(t *testing.T) {
	big := 0.0
	for _, tc := range []struct {
		name     string
		v        any
		declined bool
	}{
		{"all", typedSample(), false},
		{"zero", &typedAll{}, false},
		{"map", map[string]any{"a": []any{}, "b": typedSample()}, false},
		{"empty map", map[string]int{}, false},
		{"nested maps", nestedMaps(3, 40), false},
		{"struct", *typedSample(), false},
		{"floats", &struct {
			A, B, C, D, E float64
			F, G          float32
		}{1, -0.5, 1e-7, 123456789, math.Copysign(0, -1), 1e20, 3.4e38}, false},
		{"non-ASCII key", map[string]int{"é": 1}, true},
		{"long key", map[string]int{strings.Repeat("k", 130): 1}, true},
		{"not UTF-8", &struct{ S string }{"\xff \n"}, true},
		{"NaN", &struct{ F float64 }{math.NaN() + big}, true},
		{"string option", &struct {
			N int `json:"n,string"`
		}{1}, true},
		{"clashing names", &struct {
			TypedEmbedded
			E string `json:"e"`
		}{}, true},
		{"bad JSON", &struct{ J typedJSON }{typedJSON{`{`}}, true},
		{"nil", (*typedAll)(nil), true},
		{"slice", []int{1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkTyped(t, tc.v, tc.declined)
			checkPrintedSize(t, tc.v)
		})
	}
}

// checkTyped checks that MarshalTypedYAML prints v as MarshalYAML does, or declines it if
// declined is set.
func checkTyped(t *testing.T, v any, declined bool) {
	t.Helper()
	got, ok := MarshalTypedYAML(v)
	if ok == declined {
		t.Fatalf("declined: got %v, want %v", !ok, declined)
	}
	if !ok {
		return
	}
	want, err := MarshalYAML(v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestMarshalTypedYAMLPrune checks that YAMLOptions.MarshalTypedYAML prints, pruned, what
// YAMLOptions.JSONToYAML prints of the JSON text: null members left out, and objects that
// only nulls filled, where they are members; objects empty to begin with, and items of a
// sequence, stay.
func TestMarshalTypedYAMLPrune(t *testing.T) {
	type leaf struct {
		P *int            `json:"p"`
		S []string        `json:"s"`
		M map[string]int  `json:"m"`
		I any             `json:"i"`
		J *typedJSON      `json:"j"`
		E struct{}        `json:"e"`
		O *int            `json:"o,omitempty"`
		N map[string]*int `json:"n,omitempty"`
	}
	type doc struct {
		A     int              `json:"a"`
		Null  *leaf            `json:"null"`
		Nulls leaf             `json:"nulls"` // only nulls, and e: {}
		Only  struct{ P *int } `json:"only"`  // only a null: left out
		Items []leaf           `json:"items"`
		Ptrs  []*leaf          `json:"ptrs"`
		Map   map[string]*leaf `json:"map"`
		Empty struct{}         `json:"empty"`
		Z     string           `json:"z"`
	}
	one := 1
	sample := typedSample()
	sample.JSON = typedJSON{`{ "z": [1, 2.5, {"a": 1}], "a": "s p a c e" }`} // see the end
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"zero", &doc{}},
		{"filled", &doc{
			A:     1,
			Items: []leaf{{}, {P: &one}, {S: []string{}}},
			Ptrs:  []*leaf{nil, {M: map[string]int{}}},
			Map:   map[string]*leaf{"a": nil, "b": {}, "c": {I: 1}},
			Z:     "null",
		}},
		{"only nulls", &struct{ Only struct{ P *int } }{}},
		{"map of nils", map[string]*int{"a": nil, "b": &one}},
		{"sample", sample},
		{"nested maps", nestedMaps(3, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := YAMLOptions{Prune: true}
			got, ok := opts.MarshalTypedYAML(tc.v)
			if !ok {
				t.Fatal("declined")
			}
			data, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			want, err := opts.JSONToYAML(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			checkPrintedSize(t, tc.v)
			// Without prune, the same as MarshalTypedYAML.
			got, ok = YAMLOptions{}.MarshalTypedYAML(tc.v)
			want, _ = MarshalTypedYAML(tc.v)
			if !ok || string(got) != string(want) {
				t.Errorf("without prune: got %q, want %q", got, want)
			}
		})
	}
	// A MarshalJSON whose object holds a null: the transcoder prunes it.
	if _, ok := (YAMLOptions{Prune: true}).MarshalTypedYAML(&struct{ J typedJSON }{typedJSON{`{"a":null}`}}); ok {
		t.Error("a MarshalJSON object holding a null is printed, want it declined")
	}
}

// TestMarshalTypedYAMLOmit checks that the structs of omitEmpty are left out where they are
// empty members, as a JSONToYAML edit that deletes them prints them; items of a sequence
// stay.
func TestMarshalTypedYAMLOmit(t *testing.T) {
	type doc struct {
		Status typedInner   `json:"status"`
		Items  []typedInner `json:"items"`
		Other  typedInner   `json:"other"`
	}
	for _, d := range []*doc{
		{Items: []typedInner{{}, {A: 1}, {}}},
		{Status: typedInner{A: 1}, Items: []typedInner{{}}},
	} {
		omit := []any{&d.Status, &d.Items[0], &d.Other.A} // a pointer to an int is no struct
		if _, ok := MarshalTypedYAML(d, omit...); ok {
			t.Errorf("%+v: a pointer to an int is not declined", d)
		}
		omit = omit[:2]
		got, ok := MarshalTypedYAML(struct{ D *doc }{d}, omit...)
		if !ok {
			t.Fatalf("%+v: declined", d)
		}
		data, err := json.Marshal(struct{ D *doc }{d})
		if err != nil {
			t.Fatal(err)
		}
		want, err := JSONToYAML(data, func(v any) {
			m := v.(map[string]any)["D"].(map[string]any)
			if len(m["status"].(map[string]any)) == 0 {
				delete(m, "status")
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%+v: (-want +got)\n%s", d, diff)
		}
	}
}

// typedTree is a recursive type used by no other test, so that its table is made while
// several goroutines race to use it.
type typedTree struct {
	Name string                `json:"name"`
	Kids []typedTree           `json:"kids,omitempty"`
	Next *typedTree            `json:"next,omitempty"`
	ByID map[string]*typedTree `json:"byID,omitempty"`
	Any  any                   `json:"any,omitempty"`
}

func TestMarshalTypedYAMLConcurrent(t *testing.T) {
	v := &typedTree{Name: "root", Kids: []typedTree{{Name: "a", Next: &typedTree{Name: "b"}}},
		ByID: map[string]*typedTree{"x": {Name: "x", Any: typedTree{Name: "in any"}}, "y": nil}}
	want, err := MarshalYAML(v)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				got, ok := MarshalTypedYAML(v)
				if !ok {
					t.Error("declined")
					return
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("(-want +got)\n%s", diff)
					return
				}
			}
		})
	}
	wg.Wait()
}

// typedOuter embeds a struct through a pointer that embeds another by value, so that the
// offsets of its fields add up across both.
type typedOuter struct {
	Pad string `json:"pad"`
	*typedMiddle
}

type typedMiddle struct {
	M int64 `json:"m"`
	typedInner
	TypedEmbedded
}

// typedEmpties has a field with omitempty of each kind that omitempty tests, and of omitzero.
type typedEmpties struct {
	S    string            `json:"s,omitempty"`
	B    bool              `json:"b,omitempty"`
	I8   int8              `json:"i8,omitempty"`
	I16  int16             `json:"i16,omitempty"`
	I32  int32             `json:"i32,omitempty"`
	I64  int64             `json:"i64,omitempty"`
	U    uint              `json:"u,omitempty"`
	U16  uint16            `json:"u16,omitempty"`
	F32  float32           `json:"f32,omitempty"`
	F64  float64           `json:"f64,omitempty"`
	P    *int              `json:"p,omitempty"`
	Any  any               `json:"any,omitempty"`
	Err  error             `json:"err,omitempty"`
	Sl   []int             `json:"sl,omitempty"`
	Arr0 [0]int            `json:"arr0,omitempty"`
	Arr  [1]int            `json:"arr,omitempty"`
	M    map[string]int    `json:"m,omitempty"`
	MS   map[string]string `json:"ms,omitempty"`
	St   typedInner        `json:"st,omitempty"`
	Z    int               `json:"z,omitzero"`
	ZS   typedInner        `json:"zs,omitzero"`
}

// typedAddr holds values of a type whose MarshalJSON is on its pointer where encoding/json
// finds them not addressable: in arrays in maps, and in structs in interfaces.
type typedAddr struct {
	Arrays map[string][2]typedPtrJSON `json:"arrays"`
	Iface  any                        `json:"iface"`
	Ptr    any                        `json:"ptr"`
	Slices map[string][]typedPtrJSON  `json:"slices"`
}

// TestMarshalTypedYAMLLayout checks the printer's walk by offsets: through embedded structs
// by pointer and by value, each test of omitempty on empty and other values, and whether
// values are addressable.
func TestMarshalTypedYAMLLayout(t *testing.T) {
	one := 1
	self := new(any)
	*self = self
	for _, tc := range []struct {
		name     string
		v        any
		declined bool
	}{
		{"embedded", &typedOuter{Pad: "x", typedMiddle: &typedMiddle{M: 7, typedInner: typedInner{A: 1, B: "b"}, TypedEmbedded: TypedEmbedded{E: "e", E2: &one}}}, false},
		{"nil embedded", &typedOuter{Pad: "x"}, false},
		{"embedded in a slice", &struct{ O []typedOuter }{[]typedOuter{{}, {typedMiddle: &typedMiddle{M: -1}}}}, false},
		{"empties", &typedEmpties{}, false},
		{"non-empties", &typedEmpties{S: "s", B: true, I8: -1, I16: 300, I32: -70000, I64: 1 << 40, U: 1, U16: 2,
			F32: float32(math.Copysign(0, -1)), F64: math.Copysign(0, -1), P: &one, Any: 0, Err: errors.New("e"),
			Sl: []int{}, Arr: [1]int{0}, M: map[string]int{}, MS: map[string]string{}, St: typedInner{}, Z: 1, ZS: typedInner{A: 1}}, false},
		{"full maps", &typedEmpties{M: map[string]int{"b": 2, "a": 1}, MS: map[string]string{"k": "v", "on": "off", "a b": "x y"}}, false},
		{"map values", map[string]typedEmpties{"x": {S: "s"}, "y": {}}, false},
		{"not addressable", &typedAddr{
			Arrays: map[string][2]typedPtrJSON{"a": {{1}, {2}}},
			Iface:  typedAll{PtrJSON: typedPtrJSON{3}},
			Ptr:    &typedAll{PtrJSON: typedPtrJSON{4}},
			Slices: map[string][]typedPtrJSON{"s": {{5}}},
		}, false},
		{"pointer to pointer", func() any { p := &typedInner{A: 1}; return &p }(), false},
		{"maps of new types", &struct {
			A map[string]int8
			B map[string]uint16
			C map[string][]string
			D map[string]map[string]bool
			E map[string]float32
		}{map[string]int8{"a": -1}, map[string]uint16{}, map[string][]string{"c": {"x"}, "d": nil},
			map[string]map[string]bool{"d": {"t": true}, "e": nil}, map[string]float32{"f": 0.5}}, false},
		{"interface cycle", map[string]any{"x": self}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // the second time with the printer's slots made
				checkTyped(t, tc.v, tc.declined)
			}
		})
	}
}

// typedRecA and typedRecB hold each other, B holding A by value, so that the table of B is
// made while that of A is in the making.
type typedRecA struct {
	B *typedRecB `json:"b,omitempty"`
}

type typedRecB struct {
	A typedRecA `json:"a"`
	N int       `json:"num"`
}

// TestMarshalTypedYAMLOmitInTheMaking checks that a struct of omitEmpty is left out where its
// field's table was made while the struct's own was in the making.
func TestMarshalTypedYAMLOmitInTheMaking(t *testing.T) {
	v := &typedRecA{B: &typedRecB{N: 1}}
	got, ok := MarshalTypedYAML(v, &v.B.A)
	if !ok {
		t.Fatal("declined")
	}
	if want := "b:\n  num: 1\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// typedSplit has the member to split at in the middle of its keys, in a struct whose first
// field shares its address with the struct.
type typedSplit struct {
	Zeta  string         `json:"zeta"`
	Head  typedSplitHead `json:"head"`
	Alpha *string        `json:"alpha"`
}

type typedSplitHead struct {
	Items []typedInner    `json:"items,omitempty"`
	Last  map[string]int  `json:"last,omitempty"`
	First typedInner      `json:"first"`
	Nulls map[string]*int `json:"nulls,omitempty"`
}

func TestMarshalTypedYAMLSplit(t *testing.T) {
	full := &typedSplit{Zeta: "z", Head: typedSplitHead{
		Items: []typedInner{{A: 1, B: "one"}, {A: 2}},
		Last:  map[string]int{"x": 1}, First: typedInner{A: 3}, Nulls: map[string]*int{"n": nil}}}
	for _, prune := range []bool{false, true} {
		o := YAMLOptions{Prune: prune}
		whole, ok := o.MarshalTypedYAML(full)
		if !ok {
			t.Fatal("printing the whole value: declined")
		}
		for _, empty := range []bool{false, true} {
			v := *full
			if empty {
				v.Head.Items = nil // present all the same
			}
			before, after, ok := o.MarshalTypedYAMLSplit(&v, &v.Head.Items)
			if !ok {
				t.Fatalf("prune %v, empty %v: declined", prune, empty)
			}
			if !strings.HasSuffix(string(before), "\n  items:\n") {
				t.Errorf("prune %v, empty %v: before ends %q, want the key's line", prune, empty, before)
			}
			// The items printed where the split is make the whole text.
			items := whole[len(before) : len(whole)-len(after)]
			if got := string(before) + string(items) + string(after); got != string(whole) {
				t.Errorf("prune %v, empty %v: split text\n%s|%s\nwant\n%s", prune, empty, before, after, whole)
			}
			if !strings.HasPrefix(string(items), "  - a: 1\n") {
				t.Errorf("prune %v: items %q, want them at the key's column", prune, items)
			}
		}
	}
	// The first field of a struct: the struct itself, at the same address, is not split.
	v := *full
	before, after, ok := YAMLOptions{}.MarshalTypedYAMLSplit(&v, &v.Head.Items)
	if !ok || !strings.Contains(string(before), "head:\n") || strings.Count(string(before)+string(after), "head:") != 1 || !strings.HasSuffix(string(before), "  items:\n") {
		t.Errorf("split at a struct's first field: got %v,\n%s|%s", ok, before, after)
	}
	// With the struct of omitEmpty left out, and no member to split at.
	v.Head.First = typedInner{}
	if _, _, ok := (YAMLOptions{}).MarshalTypedYAMLSplit(&v, &v.Alpha, &v.Head.First); !ok {
		t.Error("split with omitEmpty: declined")
	}
	other := []typedInner{}
	for _, at := range []any{nil, &other, (*[]typedInner)(nil), v.Head.Items} {
		if _, _, ok := (YAMLOptions{}).MarshalTypedYAMLSplit(&v, at); ok {
			t.Errorf("split at %T %v, not a member of v: got ok", at, at)
		}
	}
	// The printer is left as it was: the next text is whole.
	if text, ok := (YAMLOptions{}).MarshalTypedYAML(full); !ok || !strings.Contains(string(text), "items:\n  - a: 1") {
		t.Errorf("after a split: got %v,\n%s", ok, text)
	}
}

type typedLazyOuter struct {
	In *typedLazyMid `json:"in,omitempty"`
}

type typedLazyMid struct {
	Deep typedLazyDeep `json:"deep"`
}

type typedLazyDeep struct {
	X int `json:"x"`
}

// TestTypedInfoLazy checks that the members of a struct are found when a value of it is first
// printed or sized, not when a type that reaches it is.
func TestTypedInfoLazy(t *testing.T) {
	found := func() bool {
		_, ok := typeInfos.m.Load(reflect.TypeFor[typedLazyDeep]())
		return ok
	}
	if _, ok := MarshalTypedYAML(&typedLazyOuter{}); !ok {
		t.Fatal("declined")
	}
	if _, ok := JSONSize(&typedLazyOuter{}); !ok {
		t.Fatal("JSONSize declined")
	}
	if found() {
		t.Fatal("typedLazyDeep's members found for a value that has none")
	}
	text, ok := MarshalTypedYAML(&typedLazyOuter{In: &typedLazyMid{Deep: typedLazyDeep{X: 3}}})
	if !ok || string(text) != "in:\n  deep:\n    x: 3\n" {
		t.Errorf("got %v, %q", ok, text)
	}
	if !found() {
		t.Error("typedLazyDeep's members not found once printed")
	}
}

package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkLikeJSON checks that ToStarlark(v) equals Starlark's json.decode of json.Marshal(v),
// including the order of dict keys.
func checkLikeJSON(t *testing.T, name string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: json.Marshal: %v", name, err)
	}
	want := starlarkJSONDecode(t, data)
	got, err := ToStarlark(v)
	if err != nil {
		t.Fatalf("%s: ToStarlark: %v", name, err)
	}
	if eq, err := starlark.EqualDepth(got, want, 1000); err != nil || !eq {
		t.Errorf("%s: ToStarlark differs from json.decode(json.Marshal(v)) (err %v): %s", name, err, firstDiff(got.String(), want.String()))
		return
	}
	// String shows dict keys in insertion order, and ints and floats apart.
	if got, want := got.String(), want.String(); got != want {
		t.Errorf("%s: ToStarlark differs from json.decode(json.Marshal(v)): %s", name, firstDiff(got, want))
	}
}

func TestToStarlarkPods(t *testing.T) {
	checkLikeJSON(t, "training", trainingPod(t))
	checkLikeJSON(t, "rich", richPod())
	checkLikeJSON(t, "rich value", *richPod()) // not addressable
	checkLikeJSON(t, "empty", &corev1.Pod{})
	for i, pod := range randomPods(1, 300) {
		checkLikeJSON(t, fmt.Sprintf("random pod %d", i), pod)
	}
}

type Inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

type Embedded struct {
	E  string `json:"e"`
	A  int    `json:"a"` // hidden by Inner.A? no: depth 1 vs Kinds.A at depth 0
	EE int
}

type PtrEmbedded struct {
	P string `json:"p"`
}

type zeroer struct{ N int }

func (z zeroer) IsZero() bool { return z.N == 7 }

type ptrZeroer struct{ N int }

func (z *ptrZeroer) IsZero() bool { return z.N == 7 }

type textKey struct{ a, b string }

func (k textKey) MarshalText() ([]byte, error) { return []byte(k.a + "/" + k.b), nil }

func (k *textKey) UnmarshalText(b []byte) error {
	a, b2, ok := strings.Cut(string(b), "/")
	if !ok {
		return errors.New("no slash in key")
	}
	k.a, k.b = a, b2
	return nil
}

type Kinds struct {
	Embedded
	*PtrEmbedded
	A        int               `json:"a"`
	Skip     string            `json:"-"`
	Dash     string            `json:"-,"`
	NoTag    string            //
	Empty    string            `json:",omitempty"`
	I8       int8              `json:"i8"`
	U64      uint64            `json:"u64"`
	F32      float32           `json:"f32"`
	F64      []float64         `json:"f64"`
	Bytes    []byte            `json:"bytes"`
	NilBytes []byte            `json:"nilBytes"`
	Arr      [2]byte           `json:"arr"`
	NilMap   map[string]int    `json:"nilMap"`
	NilSlice []string          `json:"nilSlice"`
	EmptyMap map[string]int    `json:"emptyMap,omitempty"`
	IntKeys  map[int]string    `json:"intKeys"`
	UintKeys map[uint8]bool    `json:"uintKeys"`
	TextKeys map[textKey]int   `json:"textKeys"`
	Any      any               `json:"any"`
	AnyNil   any               `json:"anyNil"`
	AnyMap   map[string]any    `json:"anyMap"`
	Ptr      *Inner            `json:"ptr"`
	NilPtr   *Inner            `json:"nilPtr,omitempty"`
	Struct   Inner             `json:"struct,omitempty"`
	Zero     zeroer            `json:"zero,omitzero"`
	NotZero  zeroer            `json:"notZero,omitzero"`
	PZero    ptrZeroer         `json:"pzero,omitzero"`
	ZeroPtr  *zeroer           `json:"zeroPtr,omitzero"`
	Plain    Inner             `json:"plain,omitzero"`
	Time     time.Time         `json:"time"`
	Addr     netip.Addr        `json:"addr"`
	Dur      time.Duration     `json:"dur"`
	Quoted   int               `json:"quoted,string"`
	QStr     string            `json:"qstr,string"`
	QPtr     *bool             `json:"qptr,string"`
	Bad      string            `json:"bad"`
	RawMsg   json.RawMessage   `json:"raw"`
	Nested   map[string][]bool `json:"nested"`
}

func TestToStarlarkKinds(t *testing.T) {
	yes := true
	v := &Kinds{
		Embedded:    Embedded{E: "e", A: 99, EE: 2},
		PtrEmbedded: &PtrEmbedded{P: "p"},
		A:           1,
		Skip:        "skip",
		Dash:        "dash",
		NoTag:       "notag",
		I8:          -8,
		U64:         math.MaxUint64,
		F32:         0.1,
		F64:         []float64{0, -0.0, 1, 1.5, 1e20, 1e21, 123456789012345678, 1e-7, 0.000001, -2.5e-300, math.MaxFloat64},
		Bytes:       []byte("hello\x00\xff"),
		Arr:         [2]byte{1, 2},
		EmptyMap:    map[string]int{},
		IntKeys:     map[int]string{10: "ten", -1: "minus", 2: "two"},
		UintKeys:    map[uint8]bool{255: true, 0: false},
		TextKeys:    map[textKey]int{{"b", "x"}: 1, {"a", "y"}: 2},
		Any:         map[string]any{"z": 1, "a": []any{1.5, "s", nil, true}},
		AnyMap:      map[string]any{"n": json.Number("12"), "f": 2.0},
		Ptr:         &Inner{A: 3},
		Zero:        zeroer{N: 7},
		NotZero:     zeroer{N: 0},
		PZero:       ptrZeroer{N: 7},
		ZeroPtr:     &zeroer{N: 7},
		Time:        time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Addr:        netip.MustParseAddr("10.0.0.1"),
		Dur:         time.Second,
		Quoted:      42,
		QStr:        "a<b\"",
		QPtr:        &yes,
		Bad:         "bad \xff\xfe utf-8 \xe2\x82",
		RawMsg:      json.RawMessage(` {"b": [1, 2.0], "a": "\u00e9\n"} `),
		Nested:      map[string][]bool{"x": nil, "y": {true}},
	}
	checkLikeJSON(t, "kinds", v)
	checkLikeJSON(t, "kinds value", *v)
	checkLikeJSON(t, "zero kinds", &Kinds{})
	floats32 := []float32{0, 1, 0.1, 123456789, 16777216, 16777216 * 3, 1e10, 3.4e38, 1e-7, -2.5}
	checkLikeJSON(t, "float32s", &floats32)
	for _, x := range []any{nil, 1, "s", 1.0, 2.5, []int(nil), map[string]int{"b": 1, "a": 2}, &[]string{"x"}, json.Number("3")} {
		checkLikeJSON(t, fmt.Sprintf("%#v", x), x)
	}
}

// ptrMarshaler has a MarshalJSON method on its pointer type only, which encoding/json calls
// only for addressable values.
type ptrMarshaler struct{ N int }

func (*ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"ptr"`), nil }

type ptrTexter struct{ N int }

func (*ptrTexter) MarshalText() ([]byte, error) { return []byte("text"), nil }

type Addressing struct {
	Field    ptrMarshaler                     `json:"field"`
	Slice    []ptrMarshaler                   `json:"slice"`
	Array    [1]ptrMarshaler                  `json:"array"`
	Map      map[string]ptrMarshaler          `json:"map"`
	MapPtr   map[string]*ptrMarshaler         `json:"mapPtr"`
	MapIn    map[string]struct{ P ptrTexter } `json:"mapIn"`
	MapArray map[string][1]ptrTexter          `json:"mapArray"`
	Any      any                              `json:"any"`
	Text     ptrTexter                        `json:"text"`
}

func TestToStarlarkAddressability(t *testing.T) {
	v := &Addressing{
		Field:    ptrMarshaler{1},
		Slice:    []ptrMarshaler{{2}},
		Array:    [1]ptrMarshaler{{3}},
		Map:      map[string]ptrMarshaler{"b": {4}, "a": {5}},
		MapPtr:   map[string]*ptrMarshaler{"a": {6}, "nil": nil},
		MapIn:    map[string]struct{ P ptrTexter }{"a": {ptrTexter{7}}},
		MapArray: map[string][1]ptrTexter{"a": {{8}}},
		Any:      ptrMarshaler{9},
		Text:     ptrTexter{10},
	}
	checkLikeJSON(t, "addressable", v)
	checkLikeJSON(t, "not addressable", *v)
}

type Ambiguous struct {
	A1
	A2
	Name string `json:"name"`
}
type A1 struct {
	W int `json:"W"` // tagged: wins over A2.W
	Y int `json:"y"`
	Z int // ambiguous with A2.Z: dropped
}
type A2 struct {
	W int
	Y int
	Z int
}

func TestToStarlarkEmbeddingRules(t *testing.T) {
	checkLikeJSON(t, "ambiguous", &Ambiguous{A1: A1{1, 2, 3}, A2: A2{4, 5, 6}, Name: "n"})
}

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("boom") }

type badJSON struct{}

func (badJSON) MarshalJSON() ([]byte, error) { return []byte(`{"a":`), nil }

func TestToStarlarkErrors(t *testing.T) {
	type S struct {
		F float64            `json:"f"`
		L []map[string]any   `json:"l"`
		M map[string]failing `json:"m"`
		B *badJSON           `json:"b,omitempty"`
		N json.Number        `json:"n"`
	}
	type Ch struct {
		Ch chan int `json:"ch,omitempty"` // never empty: json fails even on nil
	}
	type Fn struct {
		Fn []func() `json:"fn"`
	}
	for _, test := range []struct {
		v      any
		path   string
		detail string
	}{
		{&S{F: math.NaN()}, "f", "got NaN, want finite float"},
		{&S{L: []map[string]any{{}, {"k": math.Inf(-1)}}}, "l[1][k]", "got -Inf, want finite float"},
		{&S{M: map[string]failing{"x": {}}}, "m[x]", "error calling MarshalJSON for type convert.failing: boom"},
		{&S{B: &badJSON{}}, "b", "error calling MarshalJSON for type *convert.badJSON: invalid JSON: unexpected EOF"},
		{&S{N: "12x"}, "n", `invalid number literal "12x"`},
		{&Ch{}, "ch", "unsupported type chan int"},
		{&Fn{Fn: []func(){nil, nil}}, "fn[0]", "unsupported type func()"},
		{map[bool]int{true: 1}, "<nil>", "unsupported type map[bool]int"},
	} {
		_, err := ToStarlark(test.v)
		var ferr *field.Error
		if !errors.As(err, &ferr) {
			t.Errorf("ToStarlark(%#v) error = %v, want *field.Error", test.v, err)
			continue
		}
		if ferr.Type != field.ErrorTypeInvalid || ferr.Field != test.path || ferr.Detail != test.detail {
			t.Errorf("ToStarlark(%#v) error = %s at %q: %q, want Invalid at %q: %q", test.v, ferr.Type, ferr.Field, ferr.Detail, test.path, test.detail)
		}
		if _, jerr := json.Marshal(test.v); jerr == nil {
			t.Errorf("json.Marshal(%#v) succeeded, but ToStarlark failed", test.v)
		}
	}
}

// TestToStarlarkFresh checks that results are unfrozen and not shared between calls.
func TestToStarlarkFresh(t *testing.T) {
	pod := trainingPod(t)
	x, _ := ToStarlark(pod)
	y, _ := ToStarlark(pod)
	d := x.(*starlark.Dict)
	if err := d.SetKey(starlark.String("extra"), starlark.None); err != nil {
		t.Fatalf("result is not mutable: %v", err)
	}
	if y.(*starlark.Dict).Len() == d.Len() {
		t.Errorf("two results share a dict")
	}
}

// firstDiff shows where got and want first differ.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	start := max(0, i-80)
	return fmt.Sprintf("at byte %d:\n got ...%s\nwant ...%s", i, got[start:min(len(got), i+80)], want[start:min(len(want), i+80)])
}

type lazyOuter struct {
	In *lazyMid `json:"in,omitempty"`
}

type lazyMid struct {
	Deep lazyDeep `json:"deep"`
}

type lazyDeep struct {
	X int `json:"x"`
}

// TestLazyStructCodecs checks that the encoder and decoder of a struct make those of its
// fields' types only once they encode or decode one of its values: a pod's type reaches
// hundreds of types that its values leave empty.
func TestLazyStructCodecs(t *testing.T) {
	deep := reflect.TypeFor[lazyDeep]()
	made := func(cache *sync.Map) bool {
		_, ok := cache.Load(deep)
		return ok
	}
	x, err := ToStarlark(&lazyOuter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(x, new(lazyOuter), nil, nil); err != nil {
		t.Fatal(err)
	}
	if made(&encoderCache) || made(&decoderCache) {
		t.Fatalf("with no lazyMid value: encoder of lazyDeep made %v, decoder %v, want neither", made(&encoderCache), made(&decoderCache))
	}
	x, err = ToStarlark(&lazyOuter{In: &lazyMid{Deep: lazyDeep{X: 7}}})
	if err != nil {
		t.Fatal(err)
	}
	var back lazyOuter
	if errs, err := Decode(x, &back, nil, nil); err != nil || len(errs) > 0 {
		t.Fatal(errs, err)
	}
	if back.In == nil || back.In.Deep.X != 7 {
		t.Errorf("round trip: got %+v", back.In)
	}
	if !made(&encoderCache) || !made(&decoderCache) {
		t.Errorf("after a lazyMid value: encoder of lazyDeep made %v, decoder %v, want both", made(&encoderCache), made(&decoderCache))
	}
}

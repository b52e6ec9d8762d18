package convert

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// eval evaluates a Starlark expression.
func eval(t testing.TB, expr string) starlark.Value {
	t.Helper()
	thread := &starlark.Thread{Name: "test"}
	v, err := starlark.EvalOptions(&syntax.FileOptions{}, thread, "expr.star", expr, nil)
	if err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

func TestToGo(t *testing.T) {
	huge, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	for _, test := range []struct {
		expr string
		want any
	}{
		{`None`, nil},
		{`True`, true},
		{`False`, false},
		{`"héllo"`, "héllo"},
		{`42`, int64(42)},
		{`-9223372036854775808`, int64(math.MinInt64)},
		{`123456789012345678901234567890`, huge},
		{`1.5`, 1.5},
		{`[1, "a", None]`, []any{int64(1), "a", nil}},
		{`(1, 2)`, []any{int64(1), int64(2)}},
		{`[]`, []any{}},
		{`{}`, map[string]any{}},
		{`{"b": {"c": [True]}, "a": 1.0}`, map[string]any{"a": 1.0, "b": map[string]any{"c": []any{true}}}},
	} {
		got, err := ToGo(eval(t, test.expr), nil)
		if err != nil {
			t.Errorf("ToGo(%s): %v", test.expr, err)
			continue
		}
		if diff := cmp.Diff(test.want, got, cmp.Comparer(func(x, y *big.Int) bool { return x.Cmp(y) == 0 })); diff != "" {
			t.Errorf("ToGo(%s) mismatch (-want +got):\n%s", test.expr, diff)
		}
	}
}

func TestToGoErrors(t *testing.T) {
	for _, test := range []struct {
		expr   string // x is a self-referencing list, d a self-referencing dict
		path   string
		detail string
	}{
		{`float("nan")`, "x", "got nan, want finite float"},
		{`[1, float("+inf")]`, "x[1]", "got +inf, want finite float"},
		{`{"a": {1: 2}}`, "x[a]", "got int key, want string"},
		{`{"a": len}`, "x[a]", "got builtin_function_or_method, want dict, list, string, int, float, bool or None"},
		{`[lambda: 1]`, "x[0]", "got function, want dict, list, string, int, float, bool or None"},
		{`{"a": set()}`, "x[a]", "got set, want dict, list, string, int, float, bool or None"},
		{`cycle_list`, "x[1]", "value contains itself"},
		{`cycle_dict`, "x[k][0]", "value contains itself"},
		{`deep`, "x" + strings.Repeat("[0]", maxDepth), "nested too deeply"},
		{`deep_tuple`, "x" + strings.Repeat("[0]", maxDepth), "nested too deeply"},
	} {
		thread := &starlark.Thread{Name: "test"}
		env, err := starlark.ExecFileOptions(&syntax.FileOptions{}, thread, "setup.star", `
cycle_list = [1]
cycle_list.append(cycle_list)
cycle_dict = {}
cycle_dict["k"] = (cycle_dict,)
def nest(n):
    v = []
    for _ in range(n):
        v = [v]
    return v
deep = nest(1001)
def nest_tuple(n):
    v = ()
    for _ in range(n):
        v = (v,)
    return v
deep_tuple = nest_tuple(100000)
`, nil)
		if err != nil {
			t.Fatal(err)
		}
		x, err := starlark.EvalOptions(&syntax.FileOptions{Set: true}, thread, "expr.star", test.expr, env)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ToGo(x, field.NewPath("x"))
		var ferr *field.Error
		if !errors.As(err, &ferr) {
			t.Errorf("ToGo(%s) error = %v, want *field.Error", test.expr, err)
			continue
		}
		if ferr.Field != test.path || ferr.Detail != test.detail {
			t.Errorf("ToGo(%s) error at %q: %q, want at %q: %q", test.expr, ferr.Field, ferr.Detail, test.path, test.detail)
		}
	}
}

func TestFromGo(t *testing.T) {
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	for _, test := range []struct {
		v    any
		want string // Starlark repr
	}{
		{nil, `None`},
		{true, `True`},
		{"x", `"x"`},
		{map[string]any{"b": 1, "a": []any{int8(-1), uint64(math.MaxUint64), float32(0.5)}}, `{"a": [-1, 18446744073709551615, 0.5], "b": 1}`},
		{[]any{}, `[]`},
		{map[string]any{}, `{}`},
		{int16(3), `3`},
		{int32(3), `3`},
		{int64(math.MinInt64), `-9223372036854775808`},
		{uint(7), `7`},
		{uint8(7), `7`},
		{uint16(7), `7`},
		{uint32(7), `7`},
		{uintptr(7), `7`},
		{2.0, `2`},
		{2.5, `2.5`},
		{float32(0.1), `0.1`},
		{1e21, `1e+21`},
		{-0.0, `0`},
		{json.Number("12"), `12`},
		{json.Number("-12345678901234567890123"), `-12345678901234567890123`},
		{json.Number("1.25"), `1.25`},
		{json.Number("1e2"), `100.0`},
		{huge, `-123456789012345678901234567890`},
	} {
		got, err := FromGo(test.v)
		if err != nil {
			t.Errorf("FromGo(%#v): %v", test.v, err)
			continue
		}
		if got.String() != test.want {
			t.Errorf("FromGo(%#v) = %s, want %s", test.v, got, test.want)
		}
	}
}

func TestFromGoErrors(t *testing.T) {
	for _, test := range []struct {
		v    any
		want string
	}{
		{math.NaN(), "got NaN, want finite float"},
		{[]any{math.Inf(1)}, "at index 0: got +Inf, want finite float"},
		{map[string]any{"a": struct{}{}}, `in key "a": got struct {}, want JSON data`},
		{map[string]string{}, "got map[string]string, want JSON data"},
		{json.Number("1e999"), "got 1e999, want finite float"},
		{json.Number("x"), `got "x", want number`},
	} {
		_, err := FromGo(test.v)
		if err == nil || err.Error() != test.want {
			t.Errorf("FromGo(%#v) error = %v, want %q", test.v, err, test.want)
		}
	}
}

// TestToGoFromGo checks that FromGo and ToGo are inverses on JSON data, and that FromGo sorts
// map keys.
func TestToGoFromGo(t *testing.T) {
	const text = `{"z": [1, 2.5, "s", null, true, {"y": {}, "x": []}], "a": -3}`
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	x, err := FromGo(v)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := x.String(), `{"a": -3, "z": [1, 2.5, "s", None, True, {"x": [], "y": {}}]}`; got != want {
		t.Errorf("FromGo = %s, want %s", got, want)
	}
	back, err := ToGo(x, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": int64(-3), "z": []any{int64(1), 2.5, "s", nil, true, map[string]any{"x": []any{}, "y": map[string]any{}}}}
	// Floats that JSON writes as integers come back as ints.
	for _, f := range []float64{3, 3.5} {
		x, err := FromGo(map[string]any{"f": f})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(map[string]any{"f": f})
		if got, want := x.String(), starlarkJSONDecode(t, data).String(); got != want {
			t.Errorf("FromGo(%v) = %s, want %s as json.decode(json.Marshal) gives", f, got, want)
		}
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("ToGo(FromGo(v)) mismatch (-want +got):\n%s", diff)
	}
}

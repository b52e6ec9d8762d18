package convert

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestQuantityBounds checks that a quantity whose text would keep resource.ParseQuantity
// busy (for ever, for an exponent near 2^31) is refused at once with a field error, on
// both ways into a pod: from untyped data (FromGo, as engine.DecodePod does) and from
// Starlark values.
func TestQuantityBounds(t *testing.T) {
	digits := strings.Repeat("9", 300001)
	bigInt, _ := new(big.Int).SetString(digits, 10)
	const path = "spec.containers[0].resources.limits[cpu]"
	for _, test := range []struct {
		name string
		cpu  any // untyped data
		want string
	}{
		{"exponent", "9e2147483647", `Invalid value: "9e2147483647": quantity exponent 2147483647 is out of range [-100, 100]`},
		{"negative exponent", "1e-2147483648", `Invalid value: "1e-2147483648": quantity exponent -2147483648 is out of range [-100, 100]`},
		{"exponent in a number", json.Number("9e2147483647"), ""}, // not a finite float: FromGo refuses it
		{"long string", digits, "Invalid value: quantity of 300001 characters is longer than the limit of 64"},
		{"long number", json.Number(digits), "Invalid value: quantity of 300001 characters is longer than the limit of 64"},
		{"big int", bigInt, "Invalid value: quantity of 300001 characters is longer than the limit of 64"},
		// ParseQuantity sees the text of JSON, escapes and all, without its spaces.
		{"escaped", "9\x01" + strings.Repeat("9", 60), `Invalid value: "9\x01` + strings.Repeat("9", 60) + `": quantity of 67 characters is longer than the limit of 64`},
		{"spaces", "  " + digits + "  ", "Invalid value: quantity of 300001 characters is longer than the limit of 64"},
	} {
		t.Run(test.name, func(t *testing.T) {
			obj := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
				"name": "c", "resources": map[string]any{"limits": map[string]any{"cpu": test.cpu}}}}}}
			start := time.Now()
			x, err := FromGo(obj)
			if err != nil {
				if test.want == "" {
					return
				}
				t.Fatal(err)
			}
			var pod corev1.Pod
			errs, err := Decode(x, &pod, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if len(errs) != 1 || errs[0].Type != field.ErrorTypeInvalid || errs[0].Field != path {
				t.Fatalf("got %v, want one field.Invalid at %s", errs, path)
			}
			if got := errs[0].ErrorBody(); got != test.want {
				t.Errorf("got %q, want %q", got, test.want)
			}
		})
	}
}

// TestQuantityValid checks that the bounds keep every quantity a pod may hold, in each form,
// as strict JSON decoding reads it.
func TestQuantityValid(t *testing.T) {
	for _, x := range []starlark.Value{
		starlark.String("1"), starlark.String("500m"), starlark.String("1.5Gi"), starlark.String("1e3"),
		starlark.String("2E"), starlark.String(" 1Ki "), starlark.String("1e100"), starlark.String("1e-100"),
		starlark.MakeInt(2), starlark.MakeInt64(9223372036854775807), starlark.Float(1.5), starlark.None,
	} {
		dict := starlark.NewDict(1)
		dict.SetKey(starlark.String("cpu"), x)
		var got corev1.ResourceList
		errs, err := Decode(dict, &got, nil, nil)
		if err != nil || len(errs) > 0 {
			t.Errorf("%v: %v %v", x, err, errs)
			continue
		}
		var want corev1.ResourceList
		text := "{\"cpu\": " + x.String() + "}"
		if x == starlark.None {
			text = `{"cpu": null}`
		}
		if err := strictUnmarshal([]byte(text), &want); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if w, g := want[corev1.ResourceCPU], got[corev1.ResourceCPU]; w.Cmp(g) != 0 {
			t.Errorf("%v: got %v, want %v", x, g.String(), w.String())
		}
	}
	// The quantities of a pod's worth of fields go through the same decoder.
	var q resource.Quantity
	if errs, _ := Decode(starlark.String("9e2147483647"), &q, field.NewPath("overhead"), nil); len(errs) != 1 || errs[0].Field != "overhead" {
		t.Errorf("a bare Quantity: got %v", errs)
	}
}

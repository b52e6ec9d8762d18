package builtins

// This file defines the quantity module, over Kubernetes resource quantities.

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Quantity is a Starlark module of functions over Kubernetes resource quantities
// (k8s.io/apimachinery resource.Quantity), such as "500m", "2" or "8Gi". Every quantity
// argument is a string or an int, and every quantity result is a string in canonical form.
// The module defines the following functions:
//
//	parse(q) - Returns the canonical form of the quantity q.
//	cmp(a, b) - Returns -1, 0 or 1 as the quantity a is less than, equal to or greater than b.
//	eq(a, b) - Reports whether the quantities a and b are equal, whatever their units.
//	lt(a, b) - Reports whether the quantity a is less than b.
//	le(a, b) - Reports whether the quantity a is less than or equal to b.
//	gt(a, b) - Reports whether the quantity a is greater than b.
//	ge(a, b) - Reports whether the quantity a is greater than or equal to b.
//	max(q, *more) - Returns the largest of the quantities, in canonical form.
//	min(q, *more) - Returns the smallest of the quantities, in canonical form.
//	add(a, b) - Returns a + b.
//	sub(a, b) - Returns a - b.
//	mul(q, n) - Returns q * n, for an int or float n.
//	format(q, unit, precision=None) - Returns q written in unit, exactly, or rounded up to precision decimal places.
//	value(q, unit="") - Returns q as a number of units: an int if it is whole, else a float.
var Quantity = &starlarkstruct.Module{
	Name: "quantity",
	Members: starlark.StringDict{
		"parse":  starlark.NewBuiltin("quantity.parse", quantityParse),
		"cmp":    starlark.NewBuiltin("quantity.cmp", quantityCmp),
		"eq":     starlark.NewBuiltin("quantity.eq", quantityCompare(func(c int) bool { return c == 0 })),
		"lt":     starlark.NewBuiltin("quantity.lt", quantityCompare(func(c int) bool { return c < 0 })),
		"le":     starlark.NewBuiltin("quantity.le", quantityCompare(func(c int) bool { return c <= 0 })),
		"gt":     starlark.NewBuiltin("quantity.gt", quantityCompare(func(c int) bool { return c > 0 })),
		"ge":     starlark.NewBuiltin("quantity.ge", quantityCompare(func(c int) bool { return c >= 0 })),
		"max":    starlark.NewBuiltin("quantity.max", quantityExtreme(1)),
		"min":    starlark.NewBuiltin("quantity.min", quantityExtreme(-1)),
		"add":    starlark.NewBuiltin("quantity.add", quantityAdd),
		"sub":    starlark.NewBuiltin("quantity.sub", quantitySub),
		"mul":    starlark.NewBuiltin("quantity.mul", quantityMul),
		"format": starlark.NewBuiltin("quantity.format", quantityFormat),
		"value":  starlark.NewBuiltin("quantity.value", quantityValue),
	},
}

// quantityArg is an Unpacker of a quantity argument: a string that resource.ParseQuantity
// accepts, or an int.
type quantityArg struct{ q resource.Quantity }

func (p *quantityArg) Unpack(v starlark.Value) error {
	switch v := v.(type) {
	case starlark.String:
		q, err := resource.ParseQuantity(string(v))
		if err != nil {
			return fmt.Errorf("got %q, want a quantity such as \"500m\", \"2\" or \"8Gi\"", string(v))
		}
		if !inRange(&q) {
			return fmt.Errorf("got %q, want a quantity within ±(2^63-1)", string(v))
		}
		p.q = q
		return nil
	case starlark.Int:
		i, ok := v.Int64()
		if !ok {
			return fmt.Errorf("got %s, want a quantity that fits in 64 bits", v)
		}
		p.q = *resource.NewQuantity(i, resource.DecimalSI)
		return nil
	}
	return fmt.Errorf("got %s, want string or int (a quantity)", v.Type())
}

// quantityParse implements quantity.parse(q).
func quantityParse(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var q quantityArg
	if err := unpackArgs(b.Name(), args, kwargs, "q", &q); err != nil {
		return nil, err
	}
	return starlark.String(canonical(&q.q)), nil
}

// quantityCmp implements quantity.cmp(a, b).
func quantityCmp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, y quantityArg
	if err := unpackArgs(b.Name(), args, kwargs, "a", &x, "b", &y); err != nil {
		return nil, err
	}
	return starlark.MakeInt(x.q.Cmp(y.q)), nil
}

// quantityCompare returns the implementation of a comparison of two quantities: eq, lt, le,
// gt or ge, as holds says of the result of a.Cmp(b).
func quantityCompare(holds func(int) bool) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x, y quantityArg
		if err := unpackArgs(b.Name(), args, kwargs, "a", &x, "b", &y); err != nil {
			return nil, err
		}
		return starlark.Bool(holds(x.q.Cmp(y.q))), nil
	}
}

// quantityExtreme returns the implementation of quantity.max (sign 1) or quantity.min (sign
// -1): the first of its arguments that no later one exceeds in that direction.
func quantityExtreme(sign int) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(kwargs) > 0 {
			k, _ := starlark.AsString(kwargs[0][0])
			return nil, fmt.Errorf("%s: unexpected keyword argument %s", b.Name(), k)
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("%s: got no quantities, want at least one", b.Name())
		}
		var best quantityArg
		for i, v := range args {
			var q quantityArg
			if err := q.Unpack(v); err != nil {
				return nil, fmt.Errorf("%s: argument %d: %v", b.Name(), i+1, err)
			}
			if i == 0 || q.q.Cmp(best.q)*sign > 0 {
				best = q
			}
		}
		return starlark.String(canonical(&best.q)), nil
	}
}

// quantityAdd implements quantity.add(a, b).
func quantityAdd(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, y quantityArg
	if err := unpackArgs(b.Name(), args, kwargs, "a", &x, "b", &y); err != nil {
		return nil, err
	}
	x.q.Add(y.q)
	return result(b, &x.q)
}

// quantitySub implements quantity.sub(a, b).
func quantitySub(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, y quantityArg
	if err := unpackArgs(b.Name(), args, kwargs, "a", &x, "b", &y); err != nil {
		return nil, err
	}
	x.q.Sub(y.q)
	return result(b, &x.q)
}

// quantityMul implements quantity.mul(q, n).
func quantityMul(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var q quantityArg
	var n starlark.Value
	if err := unpackArgs(b.Name(), args, kwargs, "q", &q, "n", &n); err != nil {
		return nil, err
	}
	r, err := inUnit(&q.q, "")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	switch n := n.(type) {
	case starlark.Int:
		r.Mul(r, new(big.Rat).SetInt(n.BigInt()))
	case starlark.Float:
		f, ok := new(big.Rat).SetString(strconv.FormatFloat(float64(n), 'f', -1, 64))
		if !ok {
			return nil, errorf(b, "for parameter n: got %s, want finite number", n)
		}
		r.Mul(r, f)
	default:
		return nil, errorf(b, "for parameter n: got %s, want int or float", n.Type())
	}
	product, err := resource.ParseQuantity(exactString(r))
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	product.Format = q.q.Format // 8Gi * 2 is 16Gi, not 17179869184
	return result(b, &product)
}

// maxQuantity is the largest magnitude a quantity can have: Kubernetes caps larger ones.
var maxQuantity = new(big.Rat).SetInt64(math.MaxInt64)

// inRange reports whether |q| is at most maxQuantity.
func inRange(q *resource.Quantity) bool {
	r, _ := inUnit(q, "")
	return new(big.Rat).Abs(r).Cmp(maxQuantity) <= 0
}

// result returns the canonical form of q, the result of b, or an error if it is out of range.
func result(b *starlark.Builtin, q *resource.Quantity) (starlark.Value, error) {
	if !inRange(q) {
		r, _ := inUnit(q, "")
		return nil, errorf(b, "result %s is out of range ±(2^63-1)", exactString(r))
	}
	return starlark.String(canonical(q)), nil
}

// canonical returns the canonical form of q in its format. Unlike q.String, it never reuses
// the text q was parsed from (ParseQuantity("20000000000000000000000").String() is "20").
func canonical(q *resource.Quantity) string {
	return resource.NewDecimalQuantity(*q.AsDec(), q.Format).String()
}

// units maps each unit suffix to its value.
var units = func() map[string]*big.Rat {
	u := map[string]*big.Rat{"": big.NewRat(1, 1)}
	pow := func(base, exp int64) *big.Int { return new(big.Int).Exp(big.NewInt(base), big.NewInt(exp), nil) }
	for i, s := range []string{"k", "M", "G", "T", "P", "E"} {
		u[s] = new(big.Rat).SetInt(pow(10, int64(3*(i+1))))
	}
	for i, s := range []string{"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"} {
		u[s] = new(big.Rat).SetInt(pow(2, int64(10*(i+1))))
	}
	for i, s := range []string{"m", "u", "n"} {
		u[s] = new(big.Rat).SetFrac(big.NewInt(1), pow(10, int64(3*(i+1))))
	}
	return u
}()

// unitNames lists the units in the order error messages give them.
var unitNames = []string{"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}

// inUnit returns q / unit as an exact fraction.
func inUnit(q *resource.Quantity, unit string) (*big.Rat, error) {
	u, ok := units[unit]
	if !ok {
		return nil, fmt.Errorf("for parameter unit: got %q, want one of %s%s", unit, strings.Join(quoteAll(unitNames), ", "), didYouMean(unit, unitNames))
	}
	d := q.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	scale := int64(d.Scale())
	if scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(scale), nil)))
	} else if scale < 0 {
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(-scale), nil)))
	}
	return r.Quo(r, u), nil
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// quantityFormat implements quantity.format(q, unit, precision=None).
func quantityFormat(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var q quantityArg
	var unit string
	var precision starlark.Value = starlark.None
	if err := unpackArgs(b.Name(), args, kwargs, "q", &q, "unit", &unit, "precision?", &precision); err != nil {
		return nil, err
	}
	r, err := inUnit(&q.q, unit)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	switch p := precision.(type) {
	case starlark.NoneType:
	case starlark.Int:
		n, ok := p.Int64()
		if !ok || n < 0 || n > 30 {
			return nil, errorf(b, "for parameter precision: got %s, want 0 to 30", p)
		}
		// Round away from zero, as Kubernetes rounds quantities up.
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil)
		num := new(big.Int).Mul(r.Num(), scale)
		quo, rem := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
		if rem.Sign() > 0 {
			quo.Add(quo, big.NewInt(1))
		} else if rem.Sign() < 0 {
			quo.Sub(quo, big.NewInt(1))
		}
		r.SetFrac(quo, scale)
	default:
		return nil, errorf(b, "for parameter precision: got %s, want int or None", precision.Type())
	}
	return starlark.String(exactString(r) + unit), nil
}

// exactString returns r in decimal, exactly, without trailing zeros. The denominator of r
// must have no prime factors but 2 and 5, as quantities, units and float factors ensure.
func exactString(r *big.Rat) string {
	den := new(big.Int).Set(r.Denom())
	twos := int(den.TrailingZeroBits())
	den.Rsh(den, uint(twos))
	fives := 0
	five, m := big.NewInt(5), new(big.Int)
	for den.Cmp(big.NewInt(1)) > 0 {
		q, mod := new(big.Int).QuoRem(den, five, m)
		if mod.Sign() != 0 {
			break
		}
		den = q
		fives++
	}
	s := r.FloatString(max(twos, fives))
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// quantityValue implements quantity.value(q, unit="").
func quantityValue(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var q quantityArg
	var unit string
	if err := unpackArgs(b.Name(), args, kwargs, "q", &q, "unit?", &unit); err != nil {
		return nil, err
	}
	r, err := inUnit(&q.q, unit)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	if r.IsInt() {
		return starlark.MakeBigInt(r.Num()), nil
	}
	f, _ := r.Float64()
	return starlark.Float(f), nil
}

var quantityDocs = []Doc{{
	Name:    "quantity.parse",
	Params:  "(q)",
	Summary: "Returns the canonical form of the quantity q.",
	Example: `quantity.parse("1536Mi")`,
	Result:  `"1536Mi"`,
}, {
	Name:    "quantity.cmp",
	Params:  "(a, b)",
	Summary: "Returns -1, 0 or 1 as the quantity a is less than, equal to or greater than b.",
	Example: `quantity.cmp("1Gi", "1024Mi")`,
	Result:  `0`,
}, {
	Name:    "quantity.eq",
	Params:  "(a, b)",
	Summary: "Reports whether the quantities a and b are equal, whatever their units.",
	Example: `quantity.eq("1Gi", "1024Mi")`,
	Result:  `True`,
}, {
	Name:    "quantity.lt",
	Params:  "(a, b)",
	Summary: "Reports whether the quantity a is less than b.",
	Example: `quantity.lt("500m", "1")`,
	Result:  `True`,
}, {
	Name:    "quantity.le",
	Params:  "(a, b)",
	Summary: "Reports whether the quantity a is less than or equal to b.",
	Example: `quantity.le("1G", "1Gi")`,
	Result:  `True`,
}, {
	Name:    "quantity.gt",
	Params:  "(a, b)",
	Summary: "Reports whether the quantity a is greater than b.",
	Example: `quantity.gt("2Gi", "2G")`,
	Result:  `True`,
}, {
	Name:    "quantity.ge",
	Params:  "(a, b)",
	Summary: "Reports whether the quantity a is greater than or equal to b.",
	Example: `quantity.ge("1", "1000m")`,
	Result:  `True`,
}, {
	Name:    "quantity.max",
	Params:  "(q, *more)",
	Summary: "Returns the largest of the quantities, in canonical form.",
	Example: `quantity.max("16Gi", "20G", "8Gi")`,
	Result:  `"20G"`,
}, {
	Name:    "quantity.min",
	Params:  "(q, *more)",
	Summary: "Returns the smallest of the quantities, in canonical form.",
	Example: `quantity.min("500m", 1)`,
	Result:  `"500m"`,
}, {
	Name:    "quantity.add",
	Params:  "(a, b)",
	Summary: "Returns a + b.",
	Example: `quantity.add("1Gi", "512Mi")`,
	Result:  `"1536Mi"`,
}, {
	Name:    "quantity.sub",
	Params:  "(a, b)",
	Summary: "Returns a - b.",
	Example: `quantity.sub("2", "500m")`,
	Result:  `"1500m"`,
}, {
	Name:    "quantity.mul",
	Params:  "(q, n)",
	Summary: "Returns q * n, for an int or float n.",
	Example: `quantity.mul("8Gi", 2)`,
	Result:  `"16Gi"`,
}, {
	Name:    "quantity.format",
	Params:  "(q, unit, precision=None)",
	Summary: "Returns q written in unit, exactly, or rounded up to precision decimal places.",
	Notes:   "unit is one of `\"\"`, `n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`, `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.",
	Example: `quantity.format("1G", "Gi", precision = 2)`,
	Result:  `"0.94Gi"`,
}, {
	Name:    "quantity.value",
	Params:  `(q, unit="")`,
	Summary: "Returns q as a number of units: an int if it is whole, else a float.",
	Example: `quantity.value("2Gi", "Mi")`,
	Result:  `2048`,
}}

package component

// This file defines the conversion of a component's result into the YAML of an app spec.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxResultDepth bounds the nesting of a component's result, which may hold itself.
const maxResultDepth = 64

// maxResultValues bounds the values of a component's result, so that a result that repeats a
// large value many times cannot make the YAML of the app grow without bound.
const maxResultValues = 1 << 20

// resultNode converts v, a component's result, into a YAML node, keeping the order of its
// dicts (the order of env entries, say). Strings, ints, floats, bools, None, lists, tuples and
// dicts of string keys are allowed; an error names the field path of anything else.
func resultNode(v starlark.Value, p *field.Path, depth int, count *int) (*yaml.Node, error) {
	*count++
	if depth > maxResultDepth {
		return nil, field.Invalid(p, nil, fmt.Sprintf("nested deeper than %d levels (does a value hold itself?)", maxResultDepth))
	}
	if *count > maxResultValues {
		return nil, field.TooMany(p, *count, maxResultValues)
	}
	scalar := func(tag, s string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return scalar("!!null", "null"), nil
	case starlark.Bool:
		return scalar("!!bool", strconv.FormatBool(bool(v))), nil
	case starlark.Int:
		return scalar("!!int", v.String()), nil
	case starlark.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, field.Invalid(p, v.String(), "want a finite number")
		}
		return scalar("!!float", strconv.FormatFloat(f, 'g', -1, 64)), nil
	case starlark.String:
		return scalar("!!str", string(v)), nil
	case starlark.Indexable: // list, tuple
		if _, ok := v.(starlark.String); ok {
			break
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i := 0; i < v.Len(); i++ {
			c, err := resultNode(v.Index(i), p.Index(i), depth+1, count)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case *starlark.Dict:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, kv := range v.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, field.Invalid(p, kv[0].String(), fmt.Sprintf("got %s key, want string", article(kv[0].Type())))
			}
			kp := field.NewPath(string(k))
			if p != nil {
				kp = p.Child(string(k))
			}
			c, err := resultNode(kv[1], kp, depth+1, count)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, scalar("!!str", string(k)), c)
		}
		return n, nil
	}
	return nil, field.Invalid(p, v.String(), fmt.Sprintf("got %s, want a dict, list, string, number, bool or None", article(v.Type())))
}

// article returns the type name with its indefinite article: "an int", "a function".
func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

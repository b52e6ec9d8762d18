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

	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/scheduler"
)

// maxResultDepth bounds the nesting of a component's result, which may hold itself.
const maxResultDepth = 64

// maxResultValues bounds the values of a component's result, so that a result that repeats a
// large value many times cannot make the YAML of the app grow without bound.
const maxResultValues = 1 << 20

// MaxResultBytes bounds the text of a component's result (its strings, keys and numbers, as
// they are converted): the limit of an app spec file, since the result is decoded as one.
// A result that repeats one large string many times is refused as it is converted, before
// any YAML of it is written.
const MaxResultBytes = scheduler.MaxSpecFile

// A resultBudget counts what the conversion of a result has made so far.
type resultBudget struct {
	values int   // the values converted
	bytes  int64 // the bytes of their text
}

// resultNode converts v, a component's result, into a YAML node, keeping the order of its
// dicts (the order of env entries, say). Strings, ints, floats, bools, None, lists, tuples and
// dicts of string keys are allowed; an error names the field path of anything else.
func resultNode(v starlark.Value, p *field.Path, depth int, b *resultBudget) (*yaml.Node, error) {
	b.values++
	if depth > maxResultDepth {
		return nil, field.Invalid(p, nil, fmt.Sprintf("nested deeper than %d levels (does a value hold itself?)", maxResultDepth))
	}
	if b.values > maxResultValues {
		return nil, field.TooMany(p, b.values, maxResultValues)
	}
	var tooLarge error
	scalar := func(tag, s string) *yaml.Node {
		b.bytes += int64(len(s))
		if b.bytes > MaxResultBytes && tooLarge == nil {
			tooLarge = fmt.Errorf("at %s: larger than the limit of %s of an app spec", p, bound.FormatSize(MaxResultBytes))
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s}
	}
	leaf := func(tag, s string) (*yaml.Node, error) {
		n := scalar(tag, s)
		return n, tooLarge
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return leaf("!!null", "null")
	case starlark.Bool:
		return leaf("!!bool", strconv.FormatBool(bool(v)))
	case starlark.Int:
		return leaf("!!int", v.String())
	case starlark.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, field.Invalid(p, v.String(), "want a finite number")
		}
		return leaf("!!float", strconv.FormatFloat(f, 'g', -1, 64))
	case starlark.String:
		return leaf("!!str", string(v))
	case starlark.Indexable: // list, tuple
		if _, ok := v.(starlark.String); ok {
			break
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for i := 0; i < v.Len(); i++ {
			c, err := resultNode(v.Index(i), p.Index(i), depth+1, b)
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
			c, err := resultNode(kv[1], kp, depth+1, b)
			if err != nil {
				return nil, err
			}
			key := scalar("!!str", string(k))
			if tooLarge != nil {
				return nil, tooLarge
			}
			n.Content = append(n.Content, key, c)
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

package yamlfile

// This file defines the strict decoder that turns a YAML node tree into Go values,
// collecting every problem with its field path and position.

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/spell"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Decoder decodes YAML nodes into Go values strictly: unknown keys, duplicate keys and
// values of the wrong type are errors. It records the position of every value it decodes,
// so that later checks can report line:col for a field path, and bounds what aliases add to
// the tree it was made for. Make one with [NewDecoder].
type Decoder struct {
	// Hooks decode the values of the types they name in place of the decoder, such as a
	// mapping kept as an ordered list. A hook records positions and errors through the
	// decoder's methods.
	Hooks map[reflect.Type]func(d *Decoder, node *yaml.Node, v reflect.Value, path *field.Path)

	// MaxText bounds the bytes of the scalars decoded, counting a scalar each time an alias
	// repeats it: a long string and thousands of aliases to it are cheap to count as values
	// but would be copied wherever the values go. 0 means DefaultMaxBytes.
	MaxText  int
	textUsed int

	errs FieldErrors
	pos  map[string]Position // field path → position of its value
	// tainted holds the paths whose decoded values are not what the user meant: values of
	// the wrong type, and the fields that misspelt keys were probably meant to set.
	// Checks at or under them would only repeat the decoding error.
	tainted map[string]bool

	// What aliases add is bounded (see AliasFactor): sizes counts what each alias stands
	// for, aliasLimit is the budget and aliasNote says how it came about; aliasUsed is
	// what the aliases decoded so far added, and aliasDepth how many aliases the value
	// being decoded is inside. Once the budget is spent, stopped ends the decoding.
	sizes      aliasSizes
	aliasLimit int
	aliasNote  string
	aliasUsed  int
	aliasDepth int
	aliasAt    *yaml.Node // the outermost alias being decoded, where its errors are
	stopped    bool
}

// NewDecoder returns a decoder for the tree root of a file of the kind what (such as
// "spec" or "config", for errors).
func NewDecoder(root *yaml.Node, what string) *Decoder {
	d := &Decoder{pos: make(map[string]Position)}
	d.aliasLimit, d.aliasNote = aliasBudget(countNodes(root), what)
	return d
}

// Errors returns the problems found so far, in the order found.
func (d *Decoder) Errors() FieldErrors { return d.errs }

// Stopped reports whether the aliases' budget was spent: the decoding stopped half-way, and
// the one error is the alias's.
func (d *Decoder) Stopped() bool { return d.stopped }

// Positions returns the position of each field path decoded, for [PositionOf].
func (d *Decoder) Positions() map[string]Position { return d.pos }

// Add records an error at the position of node.
func (d *Decoder) Add(node *yaml.Node, err *field.Error) {
	d.errs = append(d.errs, &FieldError{Pos: nodePos(node), Err: err})
	if err.Type == field.ErrorTypeTypeInvalid || err.Type == field.ErrorTypeInvalid {
		d.taint(err.Field)
	}
}

// AddAt records an error found after decoding, at the position of its field's value, unless
// it is at or under a value that already had a decoding error, which it would only repeat.
func (d *Decoder) AddAt(err *field.Error) {
	if !d.isTainted(err.Field) {
		d.errs = append(d.errs, &FieldError{Pos: PositionOf(d.pos, err.Field), Err: err})
	}
}

// SetPosition records the position of the value at path, for a hook.
func (d *Decoder) SetPosition(path *field.Path, node *yaml.Node) {
	d.pos[path.String()] = nodePos(node)
}

func (d *Decoder) taint(p string) {
	if d.tainted == nil {
		d.tainted = make(map[string]bool)
	}
	d.tainted[p] = true
}

// isTainted reports whether the path p is at or under a tainted path: whether p or one of
// its prefixes that ends before a '.' or a '[' is tainted, or the root is.
func (d *Decoder) isTainted(p string) bool {
	if len(d.tainted) == 0 {
		return false
	}
	if d.tainted[rootPath] {
		return true
	}
	for {
		if d.tainted[p] {
			return true
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// PositionOf returns the position of the value at the field path p in pos, or of its
// nearest ancestor that has one.
func PositionOf(pos map[string]Position, p string) Position {
	for {
		if at, ok := pos[p]; ok {
			return at
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return pos[rootPath]
		}
		p = p[:i]
	}
}

// Follow returns the node that node stands for if it is an alias, and node itself if not.
// The values an alias adds count against the budget when it is not itself inside an alias,
// whose count includes them; once the budget is spent, Follow reports the alias and stops
// the decoding.
func (d *Decoder) Follow(node *yaml.Node, path *field.Path) (*yaml.Node, bool) {
	if node.Kind != yaml.AliasNode {
		return node, true
	}
	if node.Alias == nil {
		d.Add(node, field.Invalid(path, nil, "got an alias to nothing"))
		return nil, false
	}
	if d.aliasDepth == 0 {
		d.aliasUsed += d.sizes.expanded(node.Alias)
		if d.aliasUsed > d.aliasLimit {
			detail := fmt.Sprintf("alias *%s: aliases add more than the limit of %d values%s",
				node.Value, d.aliasLimit, d.aliasNote)
			if d.sizes.cyclic[node.Alias] {
				detail = fmt.Sprintf("alias *%s: stands for a value that contains it", node.Value)
			}
			// What was found so far is mostly what the aliases repeat where they do not
			// fit: the file is refused for its aliases alone.
			d.errs = d.errs[:0]
			d.Add(node, LimitError(field.ErrorTypeTooMany, path, detail))
			d.stopped = true
			return nil, false
		}
	}
	return node.Alias, true
}

func nodePos(node *yaml.Node) Position {
	if node == nil {
		return Position{}
	}
	return Position{Line: node.Line, Col: node.Column}
}

var anyType = reflect.TypeFor[any]()

// Decode decodes node into v, rooted at path. It decodes structs (their fields named by
// yaml tags; a field without one, or tagged "-", is not read), pointers, slices, maps with
// string keys, strings, bools, ints, float64 and any, which gets untyped values: string,
// int64, float64, bool, nil, []any and map[string]any. A null node leaves v unchanged.
func (d *Decoder) Decode(node *yaml.Node, v reflect.Value, path *field.Path) {
	if d.stopped {
		return
	}
	if node.Kind == yaml.AliasNode {
		target, ok := d.Follow(node, path)
		if !ok {
			return
		}
		if d.aliasDepth == 0 {
			d.aliasAt = node
		}
		d.aliasDepth++
		d.Decode(target, v, path)
		d.aliasDepth--
		return
	}
	d.pos[path.String()] = nodePos(node)
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return
	}
	if hook := d.Hooks[v.Type()]; hook != nil {
		hook(d, node, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.Decode(node, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		d.decodeStruct(node, v, path)
	case reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			d.Add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want list", KindName(node))))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(node.Content), len(node.Content))
		for i, item := range node.Content {
			d.Decode(item, s.Index(i), path.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			d.Add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want mapping", KindName(node))))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(node.Content)/2)
		d.EachKey(node, path, path.Key, func(key string, _, val *yaml.Node) {
			elem := reflect.New(v.Type().Elem()).Elem()
			d.Decode(val, elem, path.Key(key))
			m.SetMapIndex(reflect.ValueOf(key), elem)
		})
		v.Set(m)
	case reflect.Interface:
		if v.Type() != anyType {
			panic(fmt.Sprintf("yamlfile: cannot decode into %s", v.Type()))
		}
		if x, ok := d.untyped(node, path); ok && x != nil {
			v.Set(reflect.ValueOf(x))
		}
	case reflect.String:
		if s, ok := d.Scalar(node, path, "!!str", "string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if s, ok := d.Scalar(node, path, "!!bool", "bool"); ok {
			var b bool
			if err := node.Decode(&b); err != nil {
				d.Add(node, field.Invalid(path, s, "not a valid bool"))
				return
			}
			v.SetBool(b)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if i, ok := d.integer(node, path); ok {
			if v.OverflowInt(i) {
				d.Add(node, field.Invalid(path, node.Value, "integer out of range"))
				return
			}
			v.SetInt(i)
		}
	case reflect.Float64:
		if f, ok := d.number(node, path); ok {
			v.SetFloat(f)
		}
	default:
		panic(fmt.Sprintf("yamlfile: cannot decode into %s", v.Type()))
	}
}

// integer decodes an !!int scalar.
func (d *Decoder) integer(node *yaml.Node, path *field.Path) (int64, bool) {
	s, ok := d.Scalar(node, path, "!!int", "int")
	if !ok {
		return 0, false
	}
	var i int64
	if err := node.Decode(&i); err != nil {
		d.Add(node, field.Invalid(path, s, "integer out of range"))
		return 0, false
	}
	return i, true
}

// number decodes an !!int or !!float scalar as a finite float64.
func (d *Decoder) number(node *yaml.Node, path *field.Path) (float64, bool) {
	if node.Kind == yaml.ScalarNode && node.Tag == "!!int" {
		i, ok := d.integer(node, path)
		return float64(i), ok
	}
	s, ok := d.Scalar(node, path, "!!float", "number")
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.Add(node, field.Invalid(path, s, "got a number that is not finite, want a finite number"))
		return 0, false
	}
	return f, true
}

// untyped decodes node into string, int64, float64, bool, nil, []any or map[string]any.
func (d *Decoder) untyped(node *yaml.Node, path *field.Path) (any, bool) {
	switch node.Kind {
	case yaml.SequenceNode:
		list := make([]any, len(node.Content))
		for i, item := range node.Content {
			d.Decode(item, reflect.ValueOf(&list[i]).Elem(), path.Index(i))
		}
		return list, true
	case yaml.MappingNode:
		m := make(map[string]any, len(node.Content)/2)
		d.EachKey(node, path, path.Key, func(key string, _, val *yaml.Node) {
			var x any
			d.Decode(val, reflect.ValueOf(&x).Elem(), path.Key(key))
			m[key] = x
		})
		return m, true
	}
	switch node.Tag {
	case "!!str":
		return node.Value, d.text(node, path)
	case "!!int":
		return d.integer(node, path)
	case "!!float":
		return d.number(node, path)
	case "!!bool":
		var b bool
		if err := node.Decode(&b); err != nil {
			d.Add(node, field.Invalid(path, node.Value, "not a valid bool"))
			return nil, false
		}
		return b, d.text(node, path)
	}
	d.Add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want a string, number, bool, list or mapping", KindName(node))))
	return nil, false
}

// Scalar checks that node is a scalar with the given tag and returns its text; want names
// the type wanted, for the error.
func (d *Decoder) Scalar(node *yaml.Node, path *field.Path, tag, want string) (string, bool) {
	if node.Kind != yaml.ScalarNode || node.Tag != tag {
		detail := fmt.Sprintf("got %s, want %s", KindName(node), want)
		if want == "string" && node.Kind == yaml.ScalarNode {
			detail += " (quote the value)"
		}
		d.Add(node, field.TypeInvalid(path, nil, detail))
		return "", false
	}
	return node.Value, d.text(node, path)
}

// text counts the text of the scalar node against MaxText; once it is passed, text reports
// the value and stops the decoding.
func (d *Decoder) text(node *yaml.Node, path *field.Path) bool {
	limit := d.MaxText
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	d.textUsed += len(node.Value)
	if d.textUsed <= limit {
		return true
	}
	at := node
	if d.aliasDepth > 0 {
		at = d.aliasAt
	}
	d.errs = d.errs[:0]
	d.Add(at, LimitError(field.ErrorTypeTooLong, path, fmt.Sprintf(
		"the values add up to more than %s of text here (aliases repeat them)", bound.FormatSize(int64(limit)))))
	d.stopped = true
	return false
}

// EachKey calls f for each key of the mapping node, with the key's node and the value's,
// reporting non-string and duplicate keys. keyPath gives the path of a key's value.
func (d *Decoder) EachKey(node *yaml.Node, path *field.Path, keyPath func(string) *field.Path, f func(key string, keyNode, val *yaml.Node)) {
	seen := make(map[string]bool)
	for i := 0; i+1 < len(node.Content) && !d.stopped; i += 2 {
		k, val := node.Content[i], node.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			d.Add(k, field.TypeInvalid(path, nil, fmt.Sprintf("got %s key, want string", KindName(k))))
			continue
		}
		if seen[k.Value] {
			d.Add(k, field.Duplicate(keyPath(k.Value), k.Value))
			continue
		}
		seen[k.Value] = true
		f(k.Value, k, val)
	}
}

// decodeStruct decodes a mapping into a struct whose fields carry yaml tags.
func (d *Decoder) decodeStruct(node *yaml.Node, v reflect.Value, path *field.Path) {
	if node.Kind != yaml.MappingNode {
		d.Add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want mapping", KindName(node))))
		return
	}
	t := v.Type()
	fields := make(map[string]int)
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
		names = append(names, name)
	}
	d.EachKey(node, path, func(key string) *field.Path { return child(path, key) }, func(key string, keyNode, val *yaml.Node) {
		i, ok := fields[key]
		if !ok {
			d.Add(keyNode, UnknownField(path, key, names))
			if near := spell.Nearest(key, names); near != "" {
				d.taint(child(path, near).String())
			}
			return
		}
		d.Decode(val, v.Field(i), child(path, key))
	})
}

// UnknownField returns the error for an unknown key of the mapping at path whose known keys
// are names, with a did-you-mean hint.
func UnknownField(path *field.Path, key string, names []string) *field.Error {
	p := child(path, key)
	detail := "unknown field"
	if near := spell.Nearest(key, names); near != "" {
		detail += fmt.Sprintf("; did you mean %q?", near)
	}
	return field.Forbidden(p, detail)
}

// KindName describes a node for "got X, want Y" messages.
func KindName(node *yaml.Node) string {
	switch node.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		switch node.Tag {
		case "!!str":
			return "string"
		case "!!int":
			return "int"
		case "!!float":
			return "float"
		case "!!bool":
			return "bool"
		case "!!null":
			return "null"
		}
		return "scalar " + node.Tag
	}
	return "alias"
}

// child returns the path of a struct field; a nil path is the root.
func child(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

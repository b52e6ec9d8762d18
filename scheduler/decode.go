package scheduler

// This file defines the strict decoder that turns a YAML node tree into the spec types,
// collecting every problem with its field path and position.

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/starpod/starpod/internal/spell"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// decoder decodes YAML nodes into Go values strictly: unknown keys, duplicate keys and
// values of the wrong type are errors. It records the position of every value it decodes,
// so that later validation can report line:col for a field path.
type decoder struct {
	errs FieldErrors
	pos  map[string]Position // field path → position of its value
	// tainted holds the paths whose decoded values are not what the user meant: values of
	// the wrong type, and the fields that misspelt keys were probably meant to set.
	// Validation errors at or under them would only repeat the decoding error.
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
	stopped    bool
}

// add records an error at the position of node.
func (d *decoder) add(node *yaml.Node, err *field.Error) {
	d.errs = append(d.errs, &FieldError{Pos: nodePos(node), Err: err})
	if err.Type == field.ErrorTypeTypeInvalid || err.Type == field.ErrorTypeInvalid {
		d.taint(err.Field)
	}
}

func (d *decoder) taint(p string) {
	if d.tainted == nil {
		d.tainted = make(map[string]bool)
	}
	d.tainted[p] = true
}

// rootPath is the printed form of the root's field path.
var rootPath = (*field.Path)(nil).String()

// isTainted reports whether the path p is at or under a tainted path: whether p or one of
// its prefixes that ends before a '.' or a '[' is tainted, or the root is.
func (d *decoder) isTainted(p string) bool {
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

// follow returns the node that node stands for if it is an alias, and node itself if not.
// The values an alias adds count against the budget when it is not itself inside an alias,
// whose count includes them; once the budget is spent, follow reports the alias and stops
// the decoding.
func (d *decoder) follow(node *yaml.Node, path *field.Path) (*yaml.Node, bool) {
	if node.Kind != yaml.AliasNode {
		return node, true
	}
	if node.Alias == nil {
		d.add(node, field.Invalid(path, nil, "got an alias to nothing"))
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
			// fit: the spec is refused for its aliases alone.
			d.errs = d.errs[:0]
			d.add(node, limitError(field.ErrorTypeTooMany, path, detail))
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

var envVarsType = reflect.TypeFor[[]EnvVar]()

// decode decodes node into the value v points to, rooted at path.
// A null node leaves v unchanged.
func (d *decoder) decode(node *yaml.Node, v reflect.Value, path *field.Path) {
	if d.stopped {
		return
	}
	if node.Kind == yaml.AliasNode {
		target, ok := d.follow(node, path)
		if !ok {
			return
		}
		d.aliasDepth++
		d.decode(target, v, path)
		d.aliasDepth--
		return
	}
	d.pos[path.String()] = nodePos(node)
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return
	}
	if v.Type() == envVarsType {
		d.decodeEnv(node, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		d.decode(node, p.Elem(), path)
		v.Set(p)
	case reflect.Struct:
		d.decodeStruct(node, v, path)
	case reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			d.add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want list", kindName(node))))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(node.Content), len(node.Content))
		for i, item := range node.Content {
			d.decode(item, s.Index(i), path.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			d.add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want mapping", kindName(node))))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(node.Content)/2)
		d.eachKey(node, path, path.Key, func(key string, _, val *yaml.Node) {
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(val, elem, path.Key(key))
			m.SetMapIndex(reflect.ValueOf(key), elem)
		})
		v.Set(m)
	case reflect.String:
		if s, ok := d.scalar(node, path, "!!str", "string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if s, ok := d.scalar(node, path, "!!bool", "bool"); ok {
			var b bool
			if err := node.Decode(&b); err != nil {
				d.add(node, field.Invalid(path, s, "not a valid bool"))
				return
			}
			v.SetBool(b)
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if s, ok := d.scalar(node, path, "!!int", "int"); ok {
			var i int64
			if err := node.Decode(&i); err != nil || v.OverflowInt(i) {
				d.add(node, field.Invalid(path, s, "integer out of range"))
				return
			}
			v.SetInt(i)
		}
	case reflect.Float64:
		if node.Kind == yaml.ScalarNode && node.Tag == "!!int" {
			var i int64
			if err := node.Decode(&i); err != nil {
				d.add(node, field.Invalid(path, node.Value, "integer out of range"))
				return
			}
			v.SetFloat(float64(i))
			return
		}
		if s, ok := d.scalar(node, path, "!!float", "number"); ok {
			f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				d.add(node, field.Invalid(path, s, "got a number that is not finite, want a finite number"))
				return
			}
			v.SetFloat(f)
		}
	default:
		panic(fmt.Sprintf("scheduler: cannot decode into %s", v.Type()))
	}
}

// scalar checks that node is a scalar with the given tag and returns its text.
func (d *decoder) scalar(node *yaml.Node, path *field.Path, tag, want string) (string, bool) {
	if node.Kind != yaml.ScalarNode || node.Tag != tag {
		detail := fmt.Sprintf("got %s, want %s", kindName(node), want)
		if want == "string" && node.Kind == yaml.ScalarNode {
			detail += " (quote the value)"
		}
		d.add(node, field.TypeInvalid(path, nil, detail))
		return "", false
	}
	return node.Value, true
}

// eachKey calls f for each key of the mapping node, with the key's node and the value's,
// reporting non-string and duplicate keys. keyPath gives the path of a key's value.
func (d *decoder) eachKey(node *yaml.Node, path *field.Path, keyPath func(string) *field.Path, f func(key string, keyNode, val *yaml.Node)) {
	seen := make(map[string]bool)
	for i := 0; i+1 < len(node.Content) && !d.stopped; i += 2 {
		k, val := node.Content[i], node.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			d.add(k, field.TypeInvalid(path, nil, fmt.Sprintf("got %s key, want string", kindName(k))))
			continue
		}
		if seen[k.Value] {
			d.add(k, field.Duplicate(keyPath(k.Value), k.Value))
			continue
		}
		seen[k.Value] = true
		f(k.Value, k, val)
	}
}

// decodeStruct decodes a mapping into a struct whose fields carry yaml tags.
func (d *decoder) decodeStruct(node *yaml.Node, v reflect.Value, path *field.Path) {
	if node.Kind != yaml.MappingNode {
		d.add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want mapping", kindName(node))))
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
	d.eachKey(node, path, func(key string) *field.Path { return child(path, key) }, func(key string, keyNode, val *yaml.Node) {
		i, ok := fields[key]
		if !ok {
			d.add(keyNode, unknownField(path, key, names))
			if near := spell.Nearest(key, names); near != "" {
				d.taint(child(path, near).String())
			}
			return
		}
		d.decode(val, v.Field(i), child(path, key))
	})
}

// unknownField returns the error for an unknown key, with a did-you-mean hint.
func unknownField(path *field.Path, key string, names []string) *field.Error {
	p := child(path, key)
	detail := "unknown field"
	if near := spell.Nearest(key, names); near != "" {
		detail += fmt.Sprintf("; did you mean %q?", near)
	}
	return field.Forbidden(p, detail)
}

// decodeEnv decodes a mapping of names to strings into []EnvVar, keeping the order.
func (d *decoder) decodeEnv(node *yaml.Node, v reflect.Value, path *field.Path) {
	if node.Kind != yaml.MappingNode {
		d.add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want mapping", kindName(node))))
		return
	}
	var env []EnvVar
	d.eachKey(node, path, path.Key, func(key string, _, val *yaml.Node) {
		val, ok := d.follow(val, path.Key(key))
		if !ok {
			return
		}
		d.pos[path.Key(key).String()] = nodePos(val)
		if s, ok := d.scalar(val, path.Key(key), "!!str", "string"); ok {
			env = append(env, EnvVar{Name: key, Value: s})
		}
	})
	v.Set(reflect.ValueOf(env))
}

// kindName describes a node for "got X, want Y" messages.
func kindName(node *yaml.Node) string {
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

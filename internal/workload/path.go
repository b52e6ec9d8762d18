package workload

// This file defines template paths (spec.tasks[*].template) and the rules that name them.

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Path names where pod templates sit in an object: field names separated by dots, "[*]"
// after a field for every item of a list, and "*" in place of a field name for every value of
// a map. For example spec.tasks[*].template, or spec.pytorchReplicaSpecs.*.template.
type Path struct {
	text  string
	steps []step
}

// A step of a Path: a field, every item of a list, or every value of a map.
type step struct {
	field string // the field's name; empty for items and values
	items bool   // every item of a list
	any   bool   // every value of a map
}

// String returns the path as it was parsed.
func (p Path) String() string { return p.text }

// ParsePath parses a template path.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, fmt.Errorf("empty path")
	}
	p := Path{text: s}
	for i, part := range strings.Split(s, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if rest != "" || strings.Contains(part, "[") {
			rest = "[" + rest
		}
		switch {
		case name == "*":
			p.steps = append(p.steps, step{any: true})
		case name == "":
			return Path{}, fmt.Errorf("path %q: element %d: got an empty field name, want a name or *", s, i+1)
		case strings.ContainsAny(name, "]*"):
			return Path{}, fmt.Errorf("path %q: element %d: got %q, want a field name, * or NAME[*]", s, i+1, part)
		default:
			p.steps = append(p.steps, step{field: name})
		}
		for rest != "" {
			if !strings.HasPrefix(rest, "[*]") {
				return Path{}, fmt.Errorf("path %q: element %d: got %q, want [*] after a field name", s, i+1, rest)
			}
			p.steps = append(p.steps, step{items: true})
			rest = rest[len("[*]"):]
		}
	}
	return p, nil
}

// A Rule says where the pod templates of the objects of one kind sit: Group and Kind match
// an object's apiVersion (its group, any version) and kind; each of Paths names templates.
type Rule struct {
	Group string // "" for the core group
	Kind  string
	Paths []Path
}

// ParseRule parses a rule written GROUP/KIND=PATH (as the --pod-template flag takes it), for
// example example.com/Trainer=spec.workers[*].template. For a kind of the core group, write
// KIND=PATH or /KIND=PATH.
func ParseRule(s string) (Rule, error) {
	gk, path, ok := strings.Cut(s, "=")
	if !ok {
		return Rule{}, fmt.Errorf("rule %q: got no =, want GROUP/KIND=PATH", s)
	}
	group, kind, ok := strings.Cut(gk, "/")
	if !ok {
		group, kind = "", gk
	}
	if kind == "" || strings.ContainsAny(kind, "/ ") {
		return Rule{}, fmt.Errorf("rule %q: got kind %q, want GROUP/KIND=PATH", s, kind)
	}
	p, err := ParsePath(path)
	if err != nil {
		return Rule{}, fmt.Errorf("rule %q: %v", s, err)
	}
	return Rule{Group: group, Kind: kind, Paths: []Path{p}}, nil
}

// String returns the rule as ParseRule reads it (one rule a path).
func (r Rule) String() string {
	paths := make([]string, len(r.Paths))
	for i, p := range r.Paths {
		paths[i] = r.Group + "/" + r.Kind + "=" + p.String()
	}
	return strings.Join(paths, " ")
}

// groupOf returns the group of an apiVersion: "apps" of apps/v1, "" of v1.
func groupOf(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// A found template: the map that holds it and where it is.
type found struct {
	m    map[string]any
	path *field.Path
}

// walk returns the maps at p in v, whose path is at; a value of the wrong type on the way is
// a field error. A missing field or an empty list holds no template.
func (p Path) walk(v any, at *field.Path) ([]found, field.ErrorList) {
	var out []found
	var errs field.ErrorList
	var rec func(v any, at *field.Path, steps []step)
	rec = func(v any, at *field.Path, steps []step) {
		if v == nil {
			return
		}
		if len(steps) == 0 {
			m, ok := v.(map[string]any)
			if !ok {
				errs = append(errs, field.Invalid(at, typeName(v), "got "+typeName(v)+", want a pod template (object)"))
				return
			}
			out = append(out, found{m, at})
			return
		}
		s := steps[0]
		switch {
		case s.items:
			l, ok := v.([]any)
			if !ok {
				errs = append(errs, field.Invalid(at, typeName(v), "got "+typeName(v)+", want list"))
				return
			}
			for i, x := range l {
				rec(x, at.Index(i), steps[1:])
			}
		default:
			m, ok := v.(map[string]any)
			if !ok {
				errs = append(errs, field.Invalid(at, typeName(v), "got "+typeName(v)+", want object"))
				return
			}
			if s.any {
				for _, k := range sortedKeys(m) {
					rec(m[k], at.Key(k), steps[1:])
				}
				return
			}
			rec(m[s.field], at.Child(s.field), steps[1:])
		}
	}
	rec(v, at, p.steps)
	return out, errs
}

// typeName names the JSON type of untyped data.
func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case nil:
		return "null"
	default:
		return "number"
	}
}

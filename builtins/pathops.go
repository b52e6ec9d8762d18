package builtins

// This file defines get, put and remove, which follow a path (see path.go) into a value.

import (
	"fmt"
	"sort"

	"go.starlark.net/starlark"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// get implements get(value, path, default=None).
//
// It returns the value that path selects, or default if a part of it is missing (a missing
// key, an index out of range, no matching item, or None on the way). If the path has a [*],
// get returns the list of every value selected, skipping missing ones. A step that does not
// fit the value (a field of a list) is an error.
func get(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var value, dflt starlark.Value = nil, starlark.None
	var text string
	if err := unpackArgs(b.Name(), args, kwargs, "value", &value, "path", &text, "default?", &dflt); err != nil {
		return nil, err
	}
	steps, err := parsePath(text)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	var out []starlark.Value
	if err := getAll(value, steps, nil, &out); err != nil {
		return nil, errorf(b, "%v", err)
	}
	if hasAll(steps) {
		return starlark.NewList(out), nil
	}
	if len(out) == 0 {
		return dflt, nil
	}
	return out[0], nil
}

// hasAll reports whether steps has a [*].
func hasAll(steps []step) bool {
	for _, s := range steps {
		if s.kind == allStep {
			return true
		}
	}
	return false
}

// getAll appends to out every value that steps select in x, which is at path p.
func getAll(x starlark.Value, steps []step, p *field.Path, out *[]starlark.Value) error {
	if len(steps) == 0 {
		*out = append(*out, x)
		return nil
	}
	if x == starlark.None {
		return nil
	}
	s, rest := steps[0], steps[1:]
	if s.kind == fieldStep {
		d, ok := x.(*starlark.Dict)
		if !ok {
			return stepError(p, x, s)
		}
		v, found, err := d.Get(starlark.String(s.name))
		if err != nil || !found {
			return nil
		}
		return getAll(v, rest, childPath(p, s.name), out)
	}
	l, ok := x.(starlark.Indexable)
	if _, isStr := x.(starlark.String); !ok || isStr {
		return stepError(p, x, s)
	}
	for _, i := range items(l, s) {
		if err := getAll(l.Index(i), rest, p.Index(i), out); err != nil {
			return err
		}
	}
	return nil
}

// items returns the indexes of the items of l that the list step s selects.
func items(l starlark.Indexable, s step) []int {
	n := l.Len()
	switch s.kind {
	case indexStep:
		i := s.index
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return nil
		}
		return []int{i}
	case allStep:
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all
	}
	var match []int
	for i := range n {
		if matches(l.Index(i), s) {
			match = append(match, i)
		}
	}
	return match
}

// matches reports whether x is a dict whose field s.name is s.value: a string equal to it or,
// when the value is bare, a number or bool that prints as it.
func matches(x starlark.Value, s step) bool {
	d, ok := x.(*starlark.Dict)
	if !ok {
		return false
	}
	v, found, _ := d.Get(starlark.String(s.name))
	if !found {
		return false
	}
	switch v := v.(type) {
	case starlark.String:
		return string(v) == s.value
	case starlark.Int, starlark.Float, starlark.Bool:
		return !s.quoted && v.String() == s.value
	}
	return false
}

// stepError reports a step that does not fit the value x at p.
func stepError(p *field.Path, x starlark.Value, s step) error {
	want := "list"
	if s.kind == fieldStep {
		want = "dict"
	}
	return fmt.Errorf("%sgot %s, want %s for %s", at(p), x.Type(), want, formatPath([]step{s}))
}

// childPath returns the path of the field name of a dict at p.
func childPath(p *field.Path, name string) *field.Path {
	if isName(name) {
		return p.Child(name)
	}
	return p.Key(name)
}

// put implements put(value, path, v).
//
// It sets what path selects to v, in place, creating missing dicts (and replacing None) on
// the way. Every item a [*] or a selector selects is set; a selector that matches nothing, or
// an index out of range, is an error, but a [*] over an empty or missing list does nothing.
func put(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var value, v starlark.Value
	var text string
	if err := unpackArgs(b.Name(), args, kwargs, "value", &value, "path", &text, "v", &v); err != nil {
		return nil, err
	}
	steps, err := parsePath(text)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	if len(steps) == 0 {
		return nil, errorf(b, "got empty path, want a field or an index to set")
	}
	if err := putAll(value, steps, nil, v); err != nil {
		return nil, errorf(b, "%v", err)
	}
	return starlark.None, nil
}

// putAll sets what steps select in x, which is at path p, to v.
func putAll(x starlark.Value, steps []step, p *field.Path, v starlark.Value) error {
	s, rest := steps[0], steps[1:]
	if s.kind == fieldStep {
		d, ok := x.(*starlark.Dict)
		if !ok {
			return stepError(p, x, s)
		}
		cp := childPath(p, s.name)
		k := starlark.String(s.name)
		if len(rest) == 0 {
			if err := d.SetKey(k, v); err != nil {
				return fmt.Errorf("%s%v", at(p), err)
			}
			return nil
		}
		child, found, _ := d.Get(k)
		if !found || child == starlark.None {
			switch rest[0].kind {
			case allStep:
				return nil // no items to set
			case indexStep, selectStep:
				return fmt.Errorf("%s: no item %s: the list is missing", cp, formatPath(rest[:1]))
			}
			child = new(starlark.Dict)
			if err := d.SetKey(k, child); err != nil {
				return fmt.Errorf("%s%v", at(p), err)
			}
		}
		return putAll(child, rest, cp, v)
	}
	l, ok := x.(*starlark.List)
	if !ok {
		return stepError(p, x, s)
	}
	idx := items(l, s)
	if len(idx) == 0 && s.kind != allStep {
		return noItem(p, l, s)
	}
	for _, i := range idx {
		if len(rest) == 0 {
			if err := l.SetIndex(i, v); err != nil {
				return fmt.Errorf("%s%v", at(p), err)
			}
			continue
		}
		if err := putAll(l.Index(i), rest, p.Index(i), v); err != nil {
			return err
		}
	}
	return nil
}

// noItem reports that the index or selector s selects no item of the list l at p.
func noItem(p *field.Path, l *starlark.List, s step) error {
	if s.kind == indexStep {
		return fmt.Errorf("%sindex %d out of range: the list has %d items", at(p), s.index, l.Len())
	}
	// Suggest a value the items have.
	var values []string
	for i := range l.Len() {
		if d, ok := l.Index(i).(*starlark.Dict); ok {
			if v, found, _ := d.Get(starlark.String(s.name)); found {
				if str, ok := starlark.AsString(v); ok {
					values = append(values, str)
				} else {
					values = append(values, v.String())
				}
			}
		}
	}
	sort.Strings(values)
	return fmt.Errorf("%sno item matches %s%s", at(p), formatPath([]step{s}), didYouMean(s.value, values))
}

// remove implements remove(value, path).
//
// It removes what path selects, in place: a key of a dict, or items of a list (every item a
// [*] or a selector selects). It returns whether it removed anything; a missing path is not
// an error.
func remove(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var value starlark.Value
	var text string
	if err := unpackArgs(b.Name(), args, kwargs, "value", &value, "path", &text); err != nil {
		return nil, err
	}
	steps, err := parsePath(text)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	if len(steps) == 0 {
		return nil, errorf(b, "got empty path, want a field or an index to remove")
	}
	removed, err := removeAll(value, steps, nil)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	return starlark.Bool(removed), nil
}

// removeAll removes what steps select in x, which is at path p, and reports whether it
// removed anything.
func removeAll(x starlark.Value, steps []step, p *field.Path) (bool, error) {
	if x == starlark.None {
		return false, nil
	}
	s, rest := steps[0], steps[1:]
	if s.kind == fieldStep {
		d, ok := x.(*starlark.Dict)
		if !ok {
			return false, stepError(p, x, s)
		}
		k := starlark.String(s.name)
		if len(rest) == 0 {
			_, found, err := d.Delete(k)
			if err != nil {
				return false, fmt.Errorf("%s%v", at(p), err)
			}
			return found, nil
		}
		child, found, _ := d.Get(k)
		if !found {
			return false, nil
		}
		return removeAll(child, rest, childPath(p, s.name))
	}
	l, ok := x.(*starlark.List)
	if !ok {
		return false, stepError(p, x, s)
	}
	idx := items(l, s)
	if len(rest) > 0 {
		removed := false
		for _, i := range idx {
			r, err := removeAll(l.Index(i), rest, p.Index(i))
			if err != nil {
				return false, err
			}
			removed = removed || r
		}
		return removed, nil
	}
	if len(idx) == 0 {
		return false, nil
	}
	keep := make([]starlark.Value, 0, l.Len()-len(idx))
	for i, j := 0, 0; i < l.Len(); i++ {
		if j < len(idx) && idx[j] == i {
			j++
			continue
		}
		keep = append(keep, l.Index(i))
	}
	if err := l.Clear(); err != nil {
		return false, fmt.Errorf("%s%v", at(p), err)
	}
	for _, v := range keep {
		if err := l.Append(v); err != nil {
			return false, fmt.Errorf("%s%v", at(p), err)
		}
	}
	return true, nil
}

var pathDocs = []Doc{{
	Name:    "get",
	Params:  "(value, path, default=None)",
	Summary: "Returns the value at path, or default if it is missing.",
	Notes: "A missing key, an index out of range, no matching item or a None on the way gives default. With a " +
		"`[*]` in the path, get returns the list of every value found. A step that does not fit the value " +
		"(a field of a list) is an error.",
	Example: `pod = {"spec": {"containers": [{"name": "trainer", "env": [{"name": "RANK", "value": "0"}]}]}}
get(pod, "spec.containers[name=trainer].env[0].value")`,
	Result: `"0"`,
}, {
	Name:    "put",
	Params:  "(value, path, v)",
	Summary: "Sets the value at path to v in place, creating missing dicts.",
	Notes: "Every item that a `[*]` or a `[k=v]` selects is set. A selector that matches nothing or an index " +
		"out of range is an error (with a did-you-mean), while a `[*]` over a missing or empty list does nothing.",
	Example: `pod = {"metadata": {}}
put(pod, 'metadata.labels["app.kubernetes.io/name"]', "trainer")
pod`,
	Result: `{"metadata": {"labels": {"app.kubernetes.io/name": "trainer"}}}`,
}, {
	Name:    "remove",
	Params:  "(value, path)",
	Summary: "Removes what path names in place, and returns whether anything was removed.",
	Notes:   "It removes a dict key, or every list item that the last step selects. A missing path is not an error.",
	Example: `pod = {"spec": {"containers": [{"name": "a", "env": [{"name": "X"}, {"name": "Y"}]}]}}
remove(pod, "spec.containers[*].env[name=X]")
pod`,
	Result: `{"spec": {"containers": [{"name": "a", "env": [{"name": "Y"}]}]}}`,
}}

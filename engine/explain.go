package engine

// This file defines explanations: which line of which overlay changed which field of a pod.

import (
	"context"
	"encoding/json"
	"fmt"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/convert"
)

// A Change is one field of a pod that an overlay changed: the old and the new value, in the
// JSON shape of the pod (map[string]any, []any, string, int64, float64, bool), and where the
// overlay wrote it. Old is nil for a field the overlay added, New for one it removed.
type Change struct {
	Overlay string          // the overlay's name
	Path    string          // the field path, e.g. spec.containers[0].env[2] or metadata.labels[team]
	Old     any             // the value before, nil if the field was absent
	New     any             // the value after, nil if the overlay removed the field
	Pos     syntax.Position // the statement or helper call that last wrote it; invalid if unknown
}

// String gives the change as one line: the position that wrote it (the overlay's name when
// unknown), the field path, and the old and new values as compact JSON, "(none)" if absent.
func (c Change) String() string {
	pos := c.Overlay
	if c.Pos.IsValid() {
		pos = c.Pos.String()
	}
	return fmt.Sprintf("%s: %s: %s -> %s", pos, c.Path, formatValue(c.Old), formatValue(c.New))
}

// formatValue writes a value of a Change as compact JSON, and an absent one as "(none)".
func formatValue(v any) string {
	if v == nil {
		return "(none)"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// Explain applies the overlay to pod as Apply does, and also returns every field the overlay
// changed, in the order of the input's fields and then of those the overlay added, each with
// the statement or helper call that last wrote it: a helper (merge, set_env, ...) counts at
// its caller's line, a function of a loaded module at its own line, and a value copied into
// a new dict (by merge, patch, ...) where it was written. It costs about three plain
// applies (BenchmarkExplain): the apply, the apply again with write tracking on (see
// provenance.go), and the comparison. With [WorkerProcess] isolation the worker explains,
// one pod a round trip. Errors are Apply's.
func (o *Overlay) Explain(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, []Change, error) {
	if r, ok := o.run.(*remote); ok {
		return r.explain(ctx, pod, env)
	}
	return o.explainLocal(ctx, pod, env)
}

// explainLocal is Explain in this process. The pod is converted twice: once for the apply,
// and once to compare the result with, which the apply again with write tracking then takes.
func (o *Overlay) explainLocal(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, []Change, error) {
	before, err := convert.ToStarlark(pod)
	if err != nil {
		return nil, nil, &Error{Overlay: o.name, Err: fmt.Errorf("converting the input pod: %w", err)}
	}
	in, err := convert.ToStarlark(pod)
	if err != nil {
		return nil, nil, &Error{Overlay: o.name, Err: fmt.Errorf("converting the input pod: %w", err)}
	}
	out, err := o.applyValue(ctx, in, env)
	if err != nil {
		return nil, nil, err
	}
	res, err := o.decode(out, pod, env)
	if err != nil {
		if e, ok := err.(*Error); ok && len(e.Fields) > 0 {
			o.attribute(ctx, pod, env, e)
		}
		return nil, nil, err
	}
	var changes []Change
	var cerr error
	diffValues(before, out, func(p *field.Path, old, new starlark.Value) {
		c := Change{Overlay: o.name, Path: p.String()}
		if old != nil {
			if c.Old, err = convert.ToGo(old, p); err != nil && cerr == nil {
				cerr = err
			}
		}
		if new != nil {
			if c.New, err = convert.ToGo(new, p); err != nil && cerr == nil {
				cerr = err
			}
		}
		changes = append(changes, c)
	})
	if cerr != nil {
		return nil, nil, &Error{Overlay: o.name, Err: fmt.Errorf("explaining the result: %w", cerr)}
	}
	if len(changes) == 0 {
		return res, nil, nil
	}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	// The apply again starts from before, which is the input pod still: the comparison is done.
	if writes := o.provenanceFrom(ctx, before, pod, env, paths); writes != nil {
		for i := range changes {
			changes[i].Pos = writes[i].Pos
		}
	}
	return res, changes, nil
}

// Explain applies every overlay of c in order to pod, as Apply does, and returns the changes
// of each in order: a field that several overlays change appears once for each, the last
// giving its final value.
func (c Chain) Explain(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, []Change, error) {
	if len(c) == 0 {
		return pod.DeepCopy(), nil, nil
	}
	var all []Change
	for _, o := range c {
		var changes []Change
		var err error
		if pod, changes, err = o.Explain(ctx, pod, env); err != nil {
			return nil, nil, err
		}
		all = append(all, changes...)
	}
	return pod, all, nil
}

// mapFields are the fields of a pod whose values are maps: their keys are printed as
// [key] in field paths (metadata.labels[team]), as the API server prints them.
var mapFields = map[string]bool{
	"labels": true, "annotations": true, "nodeSelector": true,
	"limits": true, "requests": true, "overhead": true,
}

// A differ compares two pods as Starlark values. It makes the field path of a difference
// only when it finds one.
type differ struct {
	steps  []diffStep
	change func(p *field.Path, old, new starlark.Value)
}

// A diffStep is one step of the path to the values compared: a field, a map key or a list
// index.
type diffStep struct {
	name  string
	index int
	kind  byte // 'f' field, 'k' map key, 'i' list index
}

// path returns the field path of the values compared.
func (d *differ) path() *field.Path {
	var p *field.Path
	for _, st := range d.steps {
		switch {
		case st.kind == 'i':
			p = p.Index(st.index)
		case st.kind == 'k':
			p = p.Key(st.name)
		case p == nil:
			p = field.NewPath(st.name)
		default:
			p = p.Child(st.name)
		}
	}
	return p
}

// diffValues calls change for every difference between a and b, two pods as Starlark values:
// for each key of two dicts and each index of two lists that differ, in the order of a's keys
// and then of those b adds. An absent value is nil.
func diffValues(a, b starlark.Value, change func(p *field.Path, old, new starlark.Value)) {
	d := &differ{change: change}
	d.diff(a, b, false)
}

// diff compares a and b, the values at d.steps; their keys are map keys if inMap.
func (d *differ) diff(a, b starlark.Value, inMap bool) {
	// An absent dict or list is compared as an empty one, so that each entry added or
	// removed is a change of its own.
	switch {
	case a == nil && b != nil:
		a = emptyLike(b)
	case b == nil && a != nil:
		b = emptyLike(a)
	}
	switch x := a.(type) {
	case *starlark.Dict:
		if y, ok := b.(*starlark.Dict); ok {
			kind := byte('f')
			if inMap {
				kind = 'k'
			}
			for _, item := range x.Items() {
				k, ok := item[0].(starlark.String)
				if !ok {
					continue
				}
				v, found, _ := y.Get(k)
				if !found {
					v = nil
				}
				d.entry(diffStep{name: string(k), kind: kind}, item[1], v, found)
			}
			if y.Len() > 0 {
				for _, item := range y.Items() {
					k, ok := item[0].(starlark.String)
					if !ok {
						continue
					}
					if _, found, _ := x.Get(k); !found {
						d.entry(diffStep{name: string(k), kind: kind}, nil, item[1], false)
					}
				}
			}
			return
		}
	case *starlark.List:
		if y, ok := b.(*starlark.List); ok && len(d.steps) > 0 {
			for i := range max(x.Len(), y.Len()) {
				var u, v starlark.Value
				if i < x.Len() {
					u = x.Index(i)
				}
				if i < y.Len() {
					v = y.Index(i)
				}
				d.steps = append(d.steps, diffStep{index: i, kind: 'i'})
				d.diff(u, v, false)
				d.steps = d.steps[:len(d.steps)-1]
			}
			return
		}
	}
	if a == nil || b == nil {
		if a != b {
			d.change(d.path(), a, b)
		}
		return
	}
	if eq, err := starlark.Equal(a, b); err != nil || !eq {
		d.change(d.path(), a, b)
	}
}

// entry compares the entry st of two dicts, u and v; both is whether both hold it.
func (d *differ) entry(st diffStep, u, v starlark.Value, both bool) {
	d.steps = append(d.steps, st)
	if !both && (isEmpty(u) || isEmpty(v)) {
		d.change(d.path(), u, v) // an empty dict or list added or removed: emptyDir: {}
	} else {
		d.diff(u, v, st.kind == 'f' && mapFields[st.name])
	}
	d.steps = d.steps[:len(d.steps)-1]
}

// isEmpty reports whether v is an empty dict or list.
func isEmpty(v starlark.Value) bool {
	switch v := v.(type) {
	case *starlark.Dict:
		return v.Len() == 0
	case *starlark.List:
		return v.Len() == 0
	}
	return false
}

// emptyLike returns an empty dict or list if v is one, and nil otherwise.
func emptyLike(v starlark.Value) starlark.Value {
	switch v.(type) {
	case *starlark.Dict:
		return new(starlark.Dict)
	case *starlark.List:
		return starlark.NewList(nil)
	}
	return nil
}

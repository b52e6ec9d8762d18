package startest

// This file defines the fixtures of workloads: templates_from_yaml, and the workload of a
// ctx, so that a test applies an overlay to a pod template as apply does.

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

// workloadKeys are the keys of ctx.workload, as an overlay sees them.
var workloadKeys = []string{"kind", "api_version", "name", "namespace", "path"}

// workloadFromValue reads the workload of a ctx: None, or a dict or struct of kind,
// api_version, name, namespace and path, each a string and optional but kind.
func workloadFromValue(v starlark.Value) (*engine.Workload, error) {
	var get func(string) (starlark.Value, bool, error)
	var keys []string
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case *starlark.Dict:
		for _, k := range v.Keys() {
			s, ok := starlark.AsString(k)
			if !ok {
				return nil, fmt.Errorf("got %s key, want string", k.Type())
			}
			keys = append(keys, s)
		}
		get = func(k string) (starlark.Value, bool, error) { return v.Get(starlark.String(k)) }
	case *starlarkstruct.Struct:
		keys = v.AttrNames()
		get = func(k string) (starlark.Value, bool, error) {
			x, err := v.Attr(k)
			return x, err == nil, err
		}
	default:
		return nil, fmt.Errorf("got %s, want dict, struct or None", v.Type())
	}
	w := &engine.Workload{}
	fields := map[string]*string{"kind": &w.Kind, "api_version": &w.APIVersion, "name": &w.Name, "namespace": &w.Namespace, "path": &w.Path}
	for _, k := range keys {
		dst, ok := fields[k]
		if !ok {
			return nil, fmt.Errorf("unknown key %q; want kind, api_version, name, namespace or path", k)
		}
		x, _, err := get(k)
		if err != nil {
			return nil, err
		}
		if *dst, err = str(x); err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
	}
	if w.Kind == "" {
		return nil, fmt.Errorf("kind: got none, want the kind of the object the template belongs to (e.g. Deployment)")
	}
	return w, nil
}

// templatesFromYAML implements templates_from_yaml(text).
func templatesFromYAML(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "text", &text); err != nil {
		return nil, err
	}
	doc, err := stream.NewReader(b.Name(), strings.NewReader(text)).Next()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	obj, err := workload.Find(doc.Object, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if len(obj.Templates) == 0 {
		apiVersion, kind := doc.Kind()
		return nil, fmt.Errorf("%s: a %s %s holds no pod and no pod template", b.Name(), apiVersion, kind)
	}
	out := make([]starlark.Value, len(obj.Templates))
	for i, t := range obj.Templates {
		pod, err := convert.ToStarlark(t.Pod)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		var wv starlark.Value = starlark.None
		if w := t.Workload; w != nil {
			d := starlark.NewDict(len(workloadKeys))
			for i, v := range []string{w.Kind, w.APIVersion, w.Name, w.Namespace, w.Path} {
				d.SetKey(starlark.String(workloadKeys[i]), starlark.String(v))
			}
			wv = d
		}
		ctx := starlark.NewDict(1)
		ctx.SetKey(starlark.String("workload"), wv)
		out[i] = starlarkstruct.FromStringDict(starlark.String("template"), starlark.StringDict{"pod": pod, "ctx": ctx})
	}
	return starlark.NewList(out), nil
}

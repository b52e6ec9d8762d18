package builtins

// This file defines patch (RFC 6902 JSON Patch) and strategic_merge (Kubernetes strategic
// merge patch), which work on the JSON form of their arguments.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/convert"
)

// patchOps lists the operations of RFC 6902.
var patchOps = []string{"add", "remove", "replace", "move", "copy", "test"}

// patch implements patch(value, ops).
//
// value is a dict or list; ops is a list of operations, dicts such as {"op": "add", "path":
// "/spec/tolerations/-", "value": {...}}. The ops apply in order, as RFC 6902 says (no
// negative indexes, no creation of missing parents). The result is new, with dict keys
// sorted, and numbers that JSON writes without a fraction (1.0) come back as ints.
func patch(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var value starlark.Value
	var ops *starlark.List
	if err := unpackArgs(b.Name(), args, kwargs, "value", &value, "ops", &ops); err != nil {
		return nil, err
	}
	switch value.(type) {
	case *starlark.Dict, *starlark.List:
	default:
		return nil, errorf(b, "for parameter value: got %s, want dict or list", value.Type())
	}
	doc, err := marshal(value, "value")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	// Decode and check every op before applying any.
	p := make(jsonpatch.Patch, ops.Len())
	for i := range ops.Len() {
		op, err := decodeOp(ops.Index(i))
		if err != nil {
			return nil, errorf(b, "op %d: %v", i, err)
		}
		p[i] = op
	}
	opts := jsonpatch.NewApplyOptions()
	opts.SupportNegativeIndices = false
	opts.EscapeHTML = false
	for i, op := range p {
		doc, err = jsonpatch.Patch{op}.ApplyWithOptions(doc, opts)
		if err != nil {
			path, _ := op.Path()
			return nil, errorf(b, "op %d (%s %s): %v", i, op.Kind(), path, err)
		}
	}
	v, err := unmarshal(doc)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	return v, nil
}

// decodeOp checks one JSON Patch operation and returns it.
func decodeOp(x starlark.Value) (jsonpatch.Operation, error) {
	d, ok := x.(*starlark.Dict)
	if !ok {
		return nil, fmt.Errorf("got %s, want dict", x.Type())
	}
	kind, ok := get1(d, "op").(starlark.String)
	if !ok {
		return nil, fmt.Errorf("got no \"op\" string, want one of %s", quoteList(patchOps))
	}
	if !contains(patchOps, string(kind)) {
		return nil, fmt.Errorf("got op %q, want one of %s%s", string(kind), quoteList(patchOps), didYouMean(string(kind), patchOps))
	}
	want := []string{"op", "path"}
	switch kind {
	case "add", "replace", "test":
		want = append(want, "value")
	case "move", "copy":
		want = append(want, "from")
	}
	for _, k := range want {
		v, found, _ := d.Get(starlark.String(k))
		if !found {
			return nil, fmt.Errorf("%s: got no %q", string(kind), k)
		}
		if k == "path" || k == "from" {
			if _, ok := v.(starlark.String); !ok {
				return nil, fmt.Errorf("%s: %s: got %s, want string (a JSON pointer)", string(kind), k, v.Type())
			}
		}
	}
	for _, k := range d.Keys() {
		if s, ok := k.(starlark.String); !ok || !contains(want, string(s)) {
			return nil, fmt.Errorf("%s: got unexpected field %s, want only %s", string(kind), k, quoteList(want))
		}
	}
	data, err := marshal(d, "")
	if err != nil {
		return nil, err
	}
	var op jsonpatch.Operation
	if err := json.Unmarshal(data, &op); err != nil {
		return nil, err
	}
	return op, nil
}

// quoteList returns "a", "b" or "c".
func quoteList(list []string) string {
	q := quoteAll(list)
	if len(q) < 2 {
		return fmt.Sprint(q)
	}
	s := ""
	for i, x := range q[:len(q)-1] {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s + " or " + q[len(q)-1]
}

// strategicMerge implements strategic_merge(pod, patch).
//
// It applies patch to pod as kubectl and kustomize apply a strategic merge patch to a Pod,
// with its directives ($patch: replace|delete|merge, $retainKeys, $deleteFromPrimitiveList,
// $setElementOrder). The result is new, with dict keys sorted.
func strategicMerge(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pod, patchV *starlark.Dict
	if err := unpackArgs(b.Name(), args, kwargs, "pod", &pod, "patch", &patchV); err != nil {
		return nil, err
	}
	original, err := toGo(pod, "pod")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	p, err := toGo(patchV, "patch")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	out, err := strategicpatch.StrategicMergeMapPatch(original.(map[string]any), p.(map[string]any), &corev1.Pod{})
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	v, err := convert.FromGo(map[string]any(out))
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	return v, nil
}

// toGo converts x, the argument param (or part of one if param is ""), to untyped JSON data.
func toGo(x starlark.Value, param string) (any, error) {
	v, err := convert.ToGo(x, nil)
	if err != nil {
		prefix := ""
		if param != "" {
			prefix = "for parameter " + param + ": "
		}
		var fe *field.Error
		if errors.As(err, &fe) {
			if fe.Field == "" || fe.Field == "<nil>" {
				return nil, fmt.Errorf("%s%s", prefix, fe.Detail)
			}
			return nil, fmt.Errorf("%s%s: %s", prefix, fe.Field, fe.Detail)
		}
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	return v, nil
}

// marshal returns the JSON encoding of x, the argument param.
func marshal(x starlark.Value, param string) ([]byte, error) {
	v, err := toGo(x, param)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// unmarshal decodes JSON text into fresh Starlark values, keeping integers exact.
func unmarshal(data []byte) (starlark.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return convert.FromGo(v)
}

var patchDocs = []Doc{{
	Name:    "patch",
	Params:  "(value, ops)",
	Summary: "Returns a new value with the RFC 6902 JSON Patch ops applied.",
	Notes: "value is a dict or list, and ops a list of operations (add, remove, replace, move, copy, test; " +
		"`/-` appends to a list) applied in order. A failing op is an error that names its index: " +
		"`patch: op 2 (test /spec/x): testing value /spec/x failed: test failed`. As through JSON, the dict keys " +
		"of the result are sorted and floats without a fraction become ints.",
	Example: `patch({"spec": {"tolerations": []}}, [{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "gpu", "operator": "Exists"}}])`,
	Result:  `{"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}`,
}, {
	Name:    "strategic_merge",
	Params:  "(pod, patch)",
	Summary: "Returns a new pod with a Kubernetes strategic merge patch applied, as kubectl and kustomize apply it.",
	Notes: "The Pod schema gives the merge keys, and lists without one are replaced. The directives work: " +
		"`$patch: delete|replace|merge`, `$retainKeys`, `$deleteFromPrimitiveList/<field>`, " +
		"`$setElementOrder/<field>`. The dict keys of the result are sorted.",
	Example: `pod = {"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}
strategic_merge(pod, {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}})`,
	Result: `{"spec": {"containers": [{"image": "a:1", "name": "a"}]}}`,
}}

// Package builtins defines the Starlark helpers that every starpod overlay sees.
//
// An overlay receives the pod as plain Starlark values in JSON shape (dict, list, str, int,
// float, bool, None), so pod["spec"]["containers"][0]["env"] is a list of dicts. The helpers
// below edit such values. To give a script all of them, pass [Predeclared] (plus the Starlark
// universe, which is never modified) to the interpreter; each call returns a fresh dict.
// To print or check the user reference, use [Docs] or [Reference]; docs/builtins.md is
// generated from it.
//
// Helpers predeclared in every overlay:
//
//	append(list, *items) - Appends items to list (None counts as []) and returns the same list.
//	merge(base, patch, lists="merge", keys=None) - Returns a new deep merge of patch into base.
//	patch(value, ops) - Returns a new value with the RFC 6902 JSON Patch ops applied.
//	strategic_merge(pod, patch) - Returns a new pod with a Kubernetes strategic merge patch applied, as kubectl and kustomize apply it.
//	get(value, path, default=None) - Returns the value at path, or default if it is missing.
//	put(value, path, v) - Sets the value at path to v in place, creating missing dicts.
//	remove(value, path) - Removes what path names in place, and returns whether anything was removed.
//	containers(pod, init=False) - Returns the pod's list of containers (or init containers), creating it if missing.
//	set_env(container, name, value) - Sets the environment variable name of a container, replacing one of that name in place.
//	add_toleration(pod, key, operator="Exists", value=None, effect=None, toleration_seconds=None) - Adds a toleration to the pod unless it has an equal one.
//	add_volume(pod, volume, mount_path, containers=None, read_only=False, sub_path=None) - Adds a volume to the pod and mounts it at mount_path.
//	set_node_selector(pod, key, value) - Sets a node selector label of the pod; None removes it.
//	set_label(pod, key, value) - Sets a label of the pod; None removes it.
//	set_annotation(pod, key, value) - Sets an annotation of the pod; None removes it.
//	set_resources(container, requests=None, limits=None) - Sets resource requests and limits of a container.
//
// Modules:
//
//	quantity.parse(q) - Returns the canonical form of the quantity q.
//	quantity.cmp(a, b) - Returns -1, 0 or 1 as the quantity a is less than, equal to or greater than b.
//	quantity.eq(a, b) - Reports whether the quantities a and b are equal, whatever their units.
//	quantity.lt(a, b) - Reports whether the quantity a is less than b.
//	quantity.le(a, b) - Reports whether the quantity a is less than or equal to b.
//	quantity.gt(a, b) - Reports whether the quantity a is greater than b.
//	quantity.ge(a, b) - Reports whether the quantity a is greater than or equal to b.
//	quantity.max(q, *more) - Returns the largest of the quantities, in canonical form.
//	quantity.min(q, *more) - Returns the smallest of the quantities, in canonical form.
//	quantity.add(a, b) - Returns a + b.
//	quantity.sub(a, b) - Returns a - b.
//	quantity.mul(q, n) - Returns q * n, for an int or float n.
//	quantity.format(q, unit, precision=None) - Returns q written in unit, exactly, or rounded up to precision decimal places.
//	quantity.value(q, unit="") - Returns q as a number of units: an int if it is whole, else a float.
//	yaml.encode(x) - Returns x as a YAML document, with dict keys sorted.
//	yaml.decode(s) - Returns the value of the YAML document s, with dict keys sorted and whole numbers as ints.
//	json - The go.starlark.net/lib/json module: encode, decode, encode_indent, indent.
//	math - The go.starlark.net/lib/math module: ceil, floor, round, sqrt, pow, log, pi, ...
//	struct(**kwargs) - Returns an immutable struct with the given fields (go.starlark.net/starlarkstruct).
//
// Builtins are named as scripts call them ("merge", "quantity.add"), and every error a
// builtin returns starts with that name. All helpers are pure and deterministic: their only
// effects are on the values passed to them, and only the ones documented to work in place
// change their arguments.
package builtins

import (
	"go.starlark.net/lib/json"
	"go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// Predeclared returns a fresh dict of every helper and module, for a script's predeclared
// names. The caller may add to it or change it.
func Predeclared() starlark.StringDict {
	return starlark.StringDict{
		"append":            starlark.NewBuiltin("append", append_),
		"merge":             starlark.NewBuiltin("merge", merge),
		"patch":             starlark.NewBuiltin("patch", patch),
		"strategic_merge":   starlark.NewBuiltin("strategic_merge", strategicMerge),
		"get":               starlark.NewBuiltin("get", get),
		"put":               starlark.NewBuiltin("put", put),
		"remove":            starlark.NewBuiltin("remove", remove),
		"containers":        starlark.NewBuiltin("containers", containers),
		"set_env":           starlark.NewBuiltin("set_env", setEnv),
		"add_toleration":    starlark.NewBuiltin("add_toleration", addToleration),
		"add_volume":        starlark.NewBuiltin("add_volume", addVolume),
		"set_node_selector": starlark.NewBuiltin("set_node_selector", setNodeSelector),
		"set_label":         starlark.NewBuiltin("set_label", setLabel),
		"set_annotation":    starlark.NewBuiltin("set_annotation", setAnnotation),
		"set_resources":     starlark.NewBuiltin("set_resources", setResources),

		"quantity": Quantity,
		"yaml":     YAML,
		"json":     json.Module,
		"math":     math.Module,
		"struct":   starlark.NewBuiltin("struct", starlarkstruct.Make),
	}
}

// append_ implements append(list, *items).
func append_(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var list starlark.Value
	head := args
	if len(head) > 1 {
		head = head[:1]
	}
	if err := unpackArgs(b.Name(), head, kwargs, "list", &list); err != nil {
		return nil, err
	}
	var l *starlark.List
	switch x := list.(type) {
	case starlark.NoneType:
		l = starlark.NewList(nil)
	case *starlark.List:
		l = x
	default:
		return nil, errorf(b, "for parameter list: got %s, want list or None", list.Type())
	}
	for _, item := range args[len(head):] {
		if err := l.Append(item); err != nil {
			return nil, errorf(b, "%v", err)
		}
	}
	return l, nil
}

var appendDocs = []Doc{{
	Name:    "append",
	Params:  "(list, *items)",
	Summary: "Appends items to list (None counts as []) and returns the same list.",
	Notes: "It extends a list that may be missing in one line, and fails on a frozen list. It appends whatever " +
		"the list holds, so an overlay that runs twice appends twice: to add an item only once, use `merge`, " +
		"`set_env`, `add_toleration` or `add_volume`.",
	Example: `pod = {"spec": {}}
pod["spec"]["tolerations"] = append(pod["spec"].get("tolerations"), {"key": "gpu", "operator": "Exists"})
pod`,
	Result: `{"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}`,
}}

var libraryDocs = []Doc{{
	Name:    "json",
	Summary: "The go.starlark.net/lib/json module: encode, decode, encode_indent, indent.",
	Example: `json.encode({"a": [1, 2]})`,
	Result:  `'{"a":[1,2]}'`,
}, {
	Name:    "math",
	Summary: "The go.starlark.net/lib/math module: ceil, floor, round, sqrt, pow, log, pi, ...",
	Example: `math.ceil(1.2)`,
	Result:  `2`,
}, {
	Name:    "struct",
	Params:  "(**kwargs)",
	Summary: "Returns an immutable struct with the given fields (go.starlark.net/starlarkstruct).",
	Example: `struct(a = 1, b = "x").b`,
	Result:  `"x"`,
}}

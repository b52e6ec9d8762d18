package builtins

// This file defines the yaml module.

import (
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/internal/stream"
)

// YAML is a Starlark module of YAML functions, through sigs.k8s.io/yaml: values pass through
// their JSON form, as Kubernetes reads and writes YAML. The module defines the following
// functions:
//
//	encode(x) - Returns x as a YAML document, with dict keys sorted.
//	decode(s) - Returns the value of the YAML document s, with dict keys sorted and whole numbers as ints.
var YAML = &starlarkstruct.Module{
	Name: "yaml",
	Members: starlark.StringDict{
		"encode": starlark.NewBuiltin("yaml.encode", yamlEncode),
		"decode": starlark.NewBuiltin("yaml.decode", yamlDecode),
	},
}

// yamlEncode implements yaml.encode(x).
func yamlEncode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	if err := unpackArgs(b.Name(), args, kwargs, "x", &x); err != nil {
		return nil, err
	}
	data, err := marshal(x, "x")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	// The text of sigs.k8s.io/yaml, but the same every time: see stream.JSONToYAML.
	out, err := stream.JSONToYAML(data, nil)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	return starlark.String(out), nil
}

// yamlDecode implements yaml.decode(s).
func yamlDecode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var s string
	if err := unpackArgs(b.Name(), args, kwargs, "s", &s); err != nil {
		return nil, err
	}
	data, err := yaml.YAMLToJSONStrict([]byte(s))
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	v, err := unmarshal(data)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	return v, nil
}

var yamlDocs = []Doc{{
	Name:    "yaml.encode",
	Params:  "(x)",
	Summary: "Returns x as a YAML document, with dict keys sorted.",
	Example: `yaml.encode({"b": [1, "x"], "a": True})`,
	Result:  `"a: true\nb:\n- 1\n- x\n"`,
}, {
	Name:    "yaml.decode",
	Params:  "(s)",
	Summary: "Returns the value of the YAML document s, with dict keys sorted and whole numbers as ints.",
	Notes:   "Duplicate keys are an error.",
	Example: `yaml.decode("b: 1\na: [x, 2.5]\n")`,
	Result:  `{"a": ["x", 2.5], "b": 1}`,
}}

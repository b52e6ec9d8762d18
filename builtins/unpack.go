package builtins

// This file defines how builtins unpack their arguments.

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"
)

// unpackArgs unpacks the arguments of the builtin fnname as starlark.UnpackArgs does. A keyword
// argument that names no parameter is reported with the nearest parameter, as in
// `add_toleration: unexpected keyword argument "efect" (did you mean "effect"?)`:
// UnpackArgs's own hint looks at only some of the parameters.
func unpackArgs(fnname string, args starlark.Tuple, kwargs []starlark.Tuple, pairs ...any) error {
	err := starlark.UnpackArgs(fnname, args, kwargs, pairs...)
	if err == nil || len(kwargs) == 0 {
		return err
	}
	params := make([]string, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		if name, ok := pairs[i].(string); ok {
			params = append(params, strings.TrimRight(name, "?"))
		}
	}
	for _, kv := range kwargs {
		name, _ := starlark.AsString(kv[0])
		if !slices.Contains(params, name) {
			return fmt.Errorf("%s: unexpected keyword argument %q%s", fnname, name, didYouMean(name, params))
		}
	}
	return err
}

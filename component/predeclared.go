package component

// This file defines the names components see besides the overlay helpers: named_resources,
// macros and shlex.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/starpod/starpod/builtins"
	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/internal/yamlfile"
	"github.com/starpod/starpod/scheduler"
)

// predeclared returns the frozen names a component file sees: the overlay helpers,
// named_resources (the builtin ones with extra added), named_resource, macros and shlex.
func predeclared(extra map[string]scheduler.Resource) starlark.StringDict {
	d := builtins.Predeclared()
	res := NamedResources()
	for k, r := range extra {
		res[k] = r
	}
	dict := resourceDict(res)
	d["named_resources"] = dict
	d["named_resource"] = starlark.NewBuiltin("named_resource", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var name string
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &name); err != nil {
			return nil, err
		}
		if v, found, _ := dict.Get(starlark.String(name)); found {
			return v, nil
		}
		names := make([]string, 0, len(res))
		for k := range res {
			names = append(names, k)
		}
		sort.Strings(names)
		msg := fmt.Sprintf("%s: unknown named resource %s", b.Name(), yamlfile.Quote(name))
		if near := spell.Nearest(name, names); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		return nil, &argError{msg: msg}
	})
	d["macros"] = starlarkstruct.FromStringDict(starlark.String("macros"), starlark.StringDict{
		"app_id":       starlark.String("${app_id}"),
		"replica_id":   starlark.String("${replica_id}"),
		"num_replicas": starlark.String("${num_replicas}"),
		"rank0_env":    starlark.String("${rank0_env}"),
	})
	d["shlex"] = Shlex
	d["usage_error"] = starlark.NewBuiltin("usage_error", usageErrorBuiltin)
	d.Freeze()
	return d
}

// resourceDict returns the named resources as a Starlark dict of dicts in the shape of an
// app's resource.
func resourceDict(res map[string]scheduler.Resource) *starlark.Dict {
	m := make(map[string]any, len(res))
	for k, r := range res {
		data, _ := json.Marshal(r) // a Resource always encodes
		var x any
		_ = json.Unmarshal(data, &x)
		m[k] = x
	}
	v, err := convert.FromGo(m)
	if err != nil {
		panic(err) // cannot happen: JSON data from json.Unmarshal
	}
	return v.(*starlark.Dict)
}

// Shlex is the Starlark module shlex:
//
//	shlex.quote(s)     s quoted for a POSIX shell, as Python's shlex.quote
//	shlex.join(args)   each of args quoted, joined with spaces, as Python's shlex.join
var Shlex = &starlarkstruct.Module{
	Name: "shlex",
	Members: starlark.StringDict{
		"quote": starlark.NewBuiltin("shlex.quote", shlexQuote),
		"join":  starlark.NewBuiltin("shlex.join", shlexJoin),
	},
}

func shlexQuote(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var s string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &s); err != nil {
		return nil, err
	}
	return starlark.String(Quote(s)), nil
}

func shlexJoin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var list starlark.Iterable
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &list); err != nil {
		return nil, err
	}
	var out []string
	it := list.Iterate()
	defer it.Done()
	var x starlark.Value
	for i := 0; it.Next(&x); i++ {
		s, ok := starlark.AsString(x)
		if !ok {
			return nil, fmt.Errorf("%s: at index %d: got %s, want string", b.Name(), i, x.Type())
		}
		out = append(out, Quote(s))
	}
	return starlark.String(strings.Join(out, " ")), nil
}

// Quote quotes s for a POSIX shell as Python's shlex.quote does: unchanged if it is not empty
// and has only letters, digits and @%+=:,./-_, otherwise in single quotes, each single quote
// written '"'"'.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// usageErrorBuiltin is usage_error(msg): it stops the component as a bad command line stops
// it, with msg as the message and no traceback: starpod run exits 2.
func usageErrorBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var msg string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &msg); err != nil {
		return nil, err
	}
	return nil, &argError{msg: msg}
}

// An argError is the error of usage_error(msg).
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

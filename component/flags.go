package component

// This file defines the parsing of a component's command line: flags from its signature.

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/internal/spell"
)

// Args are the arguments of one call of a component: what the command line gave, over the
// defaults of the project config, over the function's own defaults.
type Args struct {
	varargs starlark.Tuple
	kwargs  []starlark.Tuple
	// Source says where each parameter's value came from: "command line" or "config"; a
	// parameter not in Source has its default.
	Source map[string]string
}

// ErrHelp is returned by ParseArgs when the arguments ask for help (--help).
var ErrHelp = errors.New("help requested")

// A UsageError is a bad command line of a component: an unknown flag, a bad value, a missing
// required parameter.
type UsageError struct {
	Component string
	Err       error
}

func (e *UsageError) Error() string { return e.Component + ": " + e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ParseArgs parses the command line args of the component, with defaults, the component's
// arguments from the project config (flag name → value, as on the command line), under them.
// Flags are described in the package comment; "--" ends them, and what follows, as every
// argument that is not a flag, goes to *args. It returns ErrHelp for --help, and a
// *UsageError otherwise.
func (c *Component) ParseArgs(args []string, defaults map[string]string) (*Args, error) {
	raw := make(map[string][]string)
	source := make(map[string]string)
	var varargs []string
	byName := make(map[string]*Param)
	for i := range c.Params {
		byName[c.Params[i].Name] = &c.Params[i]
	}
	usage := func(format string, a ...any) error {
		return &UsageError{Component: c.Name, Err: fmt.Errorf(format, a...)}
	}
	// The config's defaults first: each replaces the function's default.
	keys := make([]string, 0, len(defaults))
	for k := range defaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := byName[strings.ReplaceAll(k, "-", "_")]
		if p == nil {
			return nil, usage("config: unknown parameter %q%s", k, c.near(k))
		}
		raw[p.Name] = []string{defaults[k]}
		source[p.Name] = "config"
	}
	fromCLI := make(map[string]bool)
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			varargs = append(varargs, args[i+1:]...)
			break
		}
		if arg == "--help" {
			return nil, ErrHelp
		}
		if len(arg) < 2 || arg[0] != '-' {
			if c.Varargs == nil {
				return nil, usage("unexpected argument %q (the component takes no *args)", arg)
			}
			varargs = append(varargs, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		dashes := len(arg) - len(strings.TrimLeft(arg, "-"))
		p := byName[strings.ReplaceAll(name, "-", "_")]
		if p == nil || dashes > 2 || dashes == 1 && len(p.Name) > 1 {
			if p != nil {
				return nil, usage("unknown flag %s; did you mean %s?", arg[:dashes+len(name)], p.Flag())
			}
			return nil, usage("unknown flag %s%s", arg[:dashes+len(name)], c.near(name))
		}
		if !hasValue {
			if p.Kind == Bool {
				value = "true"
			} else {
				if i+1 >= len(args) {
					return nil, usage("flag %s needs a value (%s)", p.Flag(), p.Kind)
				}
				i++
				value = args[i]
			}
		}
		if !fromCLI[p.Name] || p.Kind != List && p.Kind != Dict {
			raw[p.Name] = nil // the command line replaces the config's value
		}
		fromCLI[p.Name] = true
		raw[p.Name] = append(raw[p.Name], value)
		source[p.Name] = "command line"
	}

	a := &Args{Source: source}
	var missing []string
	for i := range c.Params {
		p := &c.Params[i]
		vals, ok := raw[p.Name]
		if !ok {
			if p.Required {
				missing = append(missing, p.Flag())
			}
			continue
		}
		v, err := p.value(vals)
		if err != nil {
			return nil, usage("%s: %v", p.Flag(), err)
		}
		a.kwargs = append(a.kwargs, starlark.Tuple{starlark.String(p.Name), v})
	}
	if len(missing) > 0 {
		return nil, usage("missing required flag%s %s", plural(len(missing)), strings.Join(missing, ", "))
	}
	if len(varargs) > 0 && c.Varargs == nil {
		return nil, usage("unexpected arguments after --: the component takes no *args")
	}
	for _, s := range varargs {
		a.varargs = append(a.varargs, starlark.String(s))
	}
	return a, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// near returns "; did you mean --x?" for the flag nearest name, or "".
func (c *Component) near(name string) string {
	var names []string
	for _, p := range c.Params {
		names = append(names, p.Name)
	}
	if n := spell.Nearest(strings.ReplaceAll(name, "-", "_"), names); n != "" {
		p := Param{Name: n}
		return fmt.Sprintf("; did you mean %s?", p.Flag())
	}
	return ""
}

// value converts the command line values of p (one, or several for a repeated list or dict)
// into a Starlark value.
func (p *Param) value(vals []string) (starlark.Value, error) {
	last := vals[len(vals)-1]
	switch p.Kind {
	case Int:
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("got %q, want an int", last)
		}
		return starlark.MakeInt64(n), nil
	case Float:
		f, err := strconv.ParseFloat(last, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("got %q, want a float", last)
		}
		return starlark.Float(f), nil
	case Bool:
		b, err := strconv.ParseBool(last)
		if err != nil {
			return nil, fmt.Errorf("got %q, want true or false", last)
		}
		return starlark.Bool(b), nil
	case List:
		var items []starlark.Value
		for _, v := range vals {
			for _, s := range strings.Split(v, ",") {
				if s != "" {
					items = append(items, starlark.String(s))
				}
			}
		}
		return starlark.NewList(items), nil
	case Dict:
		d := starlark.NewDict(0)
		for _, v := range vals {
			for _, kv := range strings.Split(v, ",") {
				if kv == "" {
					continue
				}
				k, val, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return nil, fmt.Errorf("got %q, want KEY=VALUE,...", kv)
				}
				d.SetKey(starlark.String(k), starlark.String(val))
			}
		}
		return d, nil
	}
	return starlark.String(last), nil
}

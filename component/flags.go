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
	// ConfigKey is the parameter of the project config's components entry whose value is
	// wrong, if the problem is there rather than on the command line.
	ConfigKey string
}

func (e *UsageError) Error() string {
	if e.ConfigKey != "" {
		return e.Component + ": config: " + e.ConfigKey + ": " + e.Err.Error()
	}
	return e.Component + ": " + e.Err.Error()
}
func (e *UsageError) Unwrap() error { return e.Err }

// ParseArgs parses the command line args of the component, with defaults, the component's
// arguments from the project config (parameter name → value), under them. A config value is
// read as the command line reads a flag's value when it is a string, and taken as it is
// otherwise: a map for a dict parameter stays a map, a list for a list parameter a list.
// Flags are described in the package comment; "--" ends them, and so does the first argument
// that is not a flag or a flag's value: it and all that follow go to *args, as TorchX hands
// them to the script. It returns ErrHelp for --help, and a *UsageError otherwise.
func (c *Component) ParseArgs(args []string, defaults map[string]any) (*Args, error) {
	cli := make(map[string][]string)
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
	fromConfig := make(map[string]starlark.Value)
	keys := make([]string, 0, len(defaults))
	for k := range defaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := byName[strings.ReplaceAll(k, "-", "_")]
		if p == nil {
			return nil, &UsageError{Component: c.Name, ConfigKey: k, Err: fmt.Errorf("unknown parameter%s", c.near(k))}
		}
		v, err := p.configValue(defaults[k])
		if err != nil {
			return nil, &UsageError{Component: c.Name, ConfigKey: k, Err: err}
		}
		fromConfig[p.Name] = v
		source[p.Name] = "config"
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			varargs = append(varargs, args[i+1:]...)
			break
		}
		if arg == "--help" {
			return nil, ErrHelp
		}
		if !isFlag(arg) {
			if c.Varargs == nil {
				return nil, usage("unexpected argument %q (the component takes no *args)", arg)
			}
			// As with TorchX's argparse.REMAINDER: the first positional argument and
			// everything after it, flags included, are the script's.
			varargs = append(varargs, args[i:]...)
			break
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
			switch {
			case p.Kind == Bool && i+1 < len(args) && isBoolWord(args[i+1]):
				// --debug False, as TorchX reads it.
				i++
				value = args[i]
			case p.Kind == Bool:
				value = "true"
			case i+1 >= len(args):
				return nil, usage("flag %s needs a value (%s)", p.Flag(), p.Kind)
			default:
				i++
				value = args[i]
			}
		}
		if p.Kind != List && p.Kind != Dict {
			cli[p.Name] = nil // the last value wins
		}
		cli[p.Name] = append(cli[p.Name], value)
		source[p.Name] = "command line"
	}

	a := &Args{Source: source}
	var missing []string
	values := make([]starlark.Value, len(c.Params))
	for i := range c.Params {
		p := &c.Params[i]
		if vals, ok := cli[p.Name]; ok {
			v, err := p.value(vals)
			if err != nil {
				return nil, usage("%s: %v", p.Flag(), err)
			}
			values[i] = v
		} else if v, ok := fromConfig[p.Name]; ok {
			values[i] = v
		} else if p.Required {
			missing = append(missing, p.Flag())
		}
	}
	if len(missing) > 0 {
		return nil, usage("missing required flag%s %s", plural(len(missing)), strings.Join(missing, ", "))
	}
	if len(varargs) > 0 && c.Varargs == nil {
		return nil, usage("unexpected arguments after --: the component takes no *args")
	}
	// With *args given, the parameters before *args are passed by position, as TorchX calls
	// a component: def serve(model = "gpt2", *args) gets model and then the arguments.
	for i := range c.Params {
		p := &c.Params[i]
		switch {
		case i < c.positional && len(varargs) > 0:
			v := values[i]
			if v == nil {
				v = p.Default
			}
			a.varargs = append(a.varargs, v)
		case values[i] != nil:
			a.kwargs = append(a.kwargs, starlark.Tuple{starlark.String(p.Name), values[i]})
		}
	}
	for _, s := range varargs {
		a.varargs = append(a.varargs, starlark.String(s))
	}
	return a, nil
}

// isFlag reports whether arg is a flag: it begins with '-' and is not a negative number
// (-1, -.5, -1.5), which argparse takes for a positional argument too.
func isFlag(arg string) bool {
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	num := arg[1:]
	if i := strings.IndexByte(num, '.'); i >= 0 {
		if !allDigits(num[:i]) && num[:i] != "" || !allDigits(num[i+1:]) {
			return true
		}
		return false
	}
	return !allDigits(num)
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	return s != "" && strings.TrimLeft(s, "0123456789") == ""
}

// isBoolWord reports whether s is true or false, in any case: the values a bool flag takes
// from the next argument.
func isBoolWord(s string) bool {
	return strings.EqualFold(s, "true") || strings.EqualFold(s, "false")
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
// into a Starlark value, as TorchX decodes them: a bool is true or false in any case; a list
// is split at commas, each item stripped of spaces; a dict is read as TorchX's to_dict does.
func (p *Param) value(vals []string) (starlark.Value, error) {
	last := vals[len(vals)-1]
	switch p.Kind {
	case Int:
		n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("got %q, want an int", last)
		}
		return starlark.MakeInt64(n), nil
	case Float:
		f, err := strconv.ParseFloat(strings.TrimSpace(last), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("got %q, want a float", last)
		}
		return starlark.Float(f), nil
	case Bool:
		b, err := parseBool(last)
		if err != nil {
			return nil, err
		}
		return starlark.Bool(b), nil
	case List:
		var items []starlark.Value
		for _, v := range vals {
			for _, s := range splitList(v) {
				items = append(items, starlark.String(s))
			}
		}
		return starlark.NewList(items), nil
	case Dict:
		d := starlark.NewDict(0)
		for _, v := range vals {
			kvs, err := SplitDict(v)
			if err != nil {
				return nil, err
			}
			for _, kv := range kvs {
				_ = d.SetKey(starlark.String(kv[0]), starlark.String(kv[1]))
			}
		}
		return d, nil
	}
	return starlark.String(last), nil
}

// parseBool reads a bool flag's value: true, false, 1, 0, t, f in any case.
func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(strings.ToLower(strings.TrimSpace(s)))
	if err != nil {
		return false, fmt.Errorf("got %q, want true or false", s)
	}
	return b, nil
}

// splitList splits a list flag's value at commas, each item stripped of spaces; an empty
// value is an empty list. As in TorchX, empty items stay.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	items := strings.Split(s, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// SplitDict reads a dict flag's value, KEY=VALUE pairs, as TorchX's to_dict does: pairs are
// separated by ',' or ';', but only the last one before a KEY=, so that a value may hold
// commas (PATHS=a,b,c,LOGLEVEL=INFO gives PATHS "a,b,c"); keys and values are stripped of
// spaces, and a value ” or "" is empty. Where TorchX fails on a value that holds '='
// (URL=http://x?a=b), the '=' is kept in the value. An empty string gives no pairs.
func SplitDict(s string) ([][2]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var parts []string
	for _, part := range strings.Split(s, "=") {
		if part = strings.TrimSpace(part); part != "" {
			parts = append(parts, part)
		}
	}
	if len(parts) < 2 {
		return nil, fmt.Errorf("got %q, want KEY=VALUE,...", s)
	}
	emptyQuotes := func(v string) string {
		if v == "''" || v == `""` {
			return ""
		}
		return v
	}
	var out [][2]string
	key, val := parts[0], ""
	for i, vk := range parts[1 : len(parts)-1] {
		cut := max(strings.LastIndexByte(vk, ','), strings.LastIndexByte(vk, ';'))
		switch {
		case cut < 0:
			// No separator: the '=' was part of the value.
			val = join(val, vk)
			continue
		case cut == 0 && val == "" || cut == len(vk)-1:
			return nil, fmt.Errorf("got %q, want KEY=VALUE,...: cannot split %q into a value and the next key", s, parts[i+1])
		}
		out = append(out, [2]string{key, emptyQuotes(strings.TrimSpace(join(val, vk[:cut])))})
		key, val = strings.TrimSpace(vk[cut+1:]), ""
	}
	out = append(out, [2]string{key, emptyQuotes(join(val, parts[len(parts)-1]))})
	return out, nil
}

// join joins the parts of a value that held '='.
func join(val, more string) string {
	if val == "" {
		return more
	}
	return val + "=" + more
}

// configValue converts a value of the project config's components section: a string as the
// command line gives it, any other value as it is, a map for a dict and a list for a list.
func (p *Param) configValue(v any) (starlark.Value, error) {
	if s, ok := v.(string); ok {
		return p.value([]string{s})
	}
	kindErr := func() error { return fmt.Errorf("got %s, want %s", yamlType(v), p.Kind) }
	switch p.Kind {
	case Bool:
		if b, ok := v.(bool); ok {
			return starlark.Bool(b), nil
		}
	case Int:
		switch n := v.(type) {
		case int64:
			return starlark.MakeInt64(n), nil
		case int:
			return starlark.MakeInt(n), nil
		case float64:
			if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
				return starlark.MakeInt64(int64(n)), nil
			}
		}
	case Float:
		switch n := v.(type) {
		case int64:
			return starlark.Float(n), nil
		case int:
			return starlark.Float(n), nil
		case float64:
			return starlark.Float(n), nil
		}
	case String:
		if s, ok := scalarText(v); ok {
			return starlark.String(s), nil
		}
	case List:
		items, ok := v.([]any)
		if !ok {
			break
		}
		list := make([]starlark.Value, len(items))
		for i, x := range items {
			s, ok := scalarText(x)
			if !ok {
				return nil, fmt.Errorf("[%d]: got %s, want a string", i, yamlType(x))
			}
			list[i] = starlark.String(s)
		}
		return starlark.NewList(list), nil
	case Dict:
		m, ok := v.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := starlark.NewDict(len(m))
		for _, k := range keys {
			s, ok := scalarText(m[k])
			if !ok {
				return nil, fmt.Errorf("%s: got %s, want a string", k, yamlType(m[k]))
			}
			_ = d.SetKey(starlark.String(k), starlark.String(s))
		}
		return d, nil
	}
	return nil, kindErr()
}

// scalarText returns a scalar of the config as text: "0,1" stays "0,1", 8 is "8".
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case int:
		return strconv.Itoa(v), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	}
	return "", false
}

// yamlType names the type of a config value: "a list", "a map", "a number".
func yamlType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case int, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

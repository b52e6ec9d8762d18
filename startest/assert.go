package startest

// This file defines the assert module that tests see, and how a failed assertion is reported.

import (
	"fmt"
	"regexp"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// callerPos returns the position of the Starlark code that called the running builtin.
func callerPos(thread *starlark.Thread) string {
	pos := thread.CallFrame(1).Pos
	return fmt.Sprintf("%s:%d", pos.Filename(), pos.Line)
}

func (r *runner) failf(thread *starlark.Thread, msg starlark.Value, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if s, ok := msg.(starlark.String); ok && s != "" {
		text = string(s) + ": " + text
	}
	r.fail(callerPos(thread) + ": " + text)
}

func (r *runner) assertModule() *starlarkstruct.Module {
	return &starlarkstruct.Module{
		Name: "assert",
		Members: starlark.StringDict{
			"eq": starlark.NewBuiltin("assert.eq", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
				var got, want, msg starlark.Value = nil, nil, starlark.None
				if err := starlark.UnpackArgs(b.Name(), args, kwargs, "got", &got, "want", &want, "msg?", &msg); err != nil {
					return nil, err
				}
				eq, err := starlark.Equal(got, want)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", b.Name(), err)
				}
				if !eq {
					r.failf(thread, msg, "got %s, want %s", got.String(), want.String())
				}
				return starlark.None, nil
			}),
			"ne": starlark.NewBuiltin("assert.ne", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
				var x, y, msg starlark.Value = nil, nil, starlark.None
				if err := starlark.UnpackArgs(b.Name(), args, kwargs, "x", &x, "y", &y, "msg?", &msg); err != nil {
					return nil, err
				}
				eq, err := starlark.Equal(x, y)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", b.Name(), err)
				}
				if eq {
					r.failf(thread, msg, "got %s, want anything else", x.String())
				}
				return starlark.None, nil
			}),
			"true": starlark.NewBuiltin("assert.true", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
				var cond, msg starlark.Value = nil, starlark.None
				if err := starlark.UnpackArgs(b.Name(), args, kwargs, "cond", &cond, "msg?", &msg); err != nil {
					return nil, err
				}
				if !cond.Truth() {
					r.failf(thread, msg, "got %s, want a true value", cond.String())
				}
				return starlark.None, nil
			}),
			"contains": starlark.NewBuiltin("assert.contains", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
				var container, item, msg starlark.Value = nil, nil, starlark.None
				if err := starlark.UnpackArgs(b.Name(), args, kwargs, "container", &container, "item", &item, "msg?", &msg); err != nil {
					return nil, err
				}
				in, err := starlark.Binary(syntax.IN, item, container)
				if err != nil {
					return nil, fmt.Errorf("%s: %v", b.Name(), err)
				}
				if !in.Truth() {
					r.failf(thread, msg, "%s does not contain %s", container.String(), item.String())
				}
				return starlark.None, nil
			}),
			"fails": starlark.NewBuiltin("assert.fails", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
				var fn starlark.Callable
				var pattern string
				if err := starlark.UnpackArgs(b.Name(), args, kwargs, "fn", &fn, "pattern", &pattern); err != nil {
					return nil, err
				}
				re, err := regexp.Compile(pattern)
				if err != nil {
					return nil, fmt.Errorf("%s: bad pattern: %v", b.Name(), err)
				}
				_, err = starlark.Call(thread, fn, nil, nil)
				switch {
				case err == nil:
					r.failf(thread, starlark.None, "evaluation succeeded unexpectedly (want error matching %q)", pattern)
				case !re.MatchString(err.Error()):
					r.failf(thread, starlark.None, "regular expression (%s) did not match error (%s)", pattern, err.Error())
				}
				return starlark.None, nil
			}),
		},
	}
}

package engine

// This file defines Exec and Module.Call: running the top level of any Starlark file of the
// overlay dialect, and calling one of its functions, under the limits of an overlay.

import (
	"context"
	"time"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/internal/bound"
)

// ExecOptions configures [Exec]. The zero value runs a file as [Compile] runs an overlay's top
// level, with the same predeclared names.
type ExecOptions struct {
	Options // limits, print and loader; Isolation is ignored: modules run in this process

	// Predeclared holds the names the file and the modules it loads see besides the universe.
	// Nil means the helpers that every overlay sees. Its values must be frozen.
	Predeclared starlark.StringDict
}

// A Module is a Starlark file whose top level has run, with its globals frozen. Its functions
// may be called with [Module.Call], each call on a fresh thread under the limits of the
// options it was executed with, from many goroutines at once.
type Module struct {
	o       *Overlay // name, options, threads, loads and errors, as for an overlay
	globals starlark.StringDict
}

// Exec compiles the file src, whose name (used in positions) is name, in the overlay dialect,
// links the modules it loads through opts.Loader, runs its top level and freezes its globals.
// The top levels share one budget of steps and time, as in Compile. It returns an *Error.
func Exec(ctx context.Context, name string, src []byte, opts *ExecOptions) (*Module, error) {
	if opts == nil {
		opts = &ExecOptions{}
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	if int64(len(src)) > bound.MaxScript {
		return nil, &Error{Overlay: name, Err: &bound.SizeError{Name: name, What: "script", Limit: bound.MaxScript}}
	}
	predecl := opts.Predeclared
	if predecl == nil {
		predecl = predeclared
	}
	o := &Overlay{name: name, opts: opts.Options}
	o.run = local{o}
	_, prog, err := compileFile(name, src, predecl)
	if err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	b := o.newBudget()
	o.modules = NewLinker(opts.Loader, &LinkOptions{Predeclared: predecl})
	o.modules.thread = func(string) (*starlark.Thread, func() *LimitError) {
		return o.newThreadWithin(ctx, b)
	}
	if err := o.modules.Link(name, prog); err != nil {
		return nil, err
	}
	thread, stop := o.newThreadWithin(ctx, b)
	globals, err := prog.Init(thread, predecl)
	lim := stop()
	if err != nil {
		return nil, o.evalError(err, thread, lim)
	}
	globals.Freeze()
	return &Module{o: o, globals: globals}, nil
}

// Name returns the name the module was executed with.
func (m *Module) Name() string { return m.o.name }

// Globals returns the module's frozen globals. The caller must not change the dict.
func (m *Module) Globals() starlark.StringDict { return m.globals }

// Call calls fn, usually one of the module's globals, with args and kwargs on a fresh thread
// bounded by the module's step and time limits and by ctx, and returns its result. It returns
// an *Error naming the module, with the Starlark backtrace, and a *LimitError inside it when a
// limit was hit, or a *DeadlineError when ctx's deadline passed.
func (m *Module) Call(ctx context.Context, fn starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if ctx.Err() != nil {
		return nil, &Error{Overlay: m.o.name, Err: ctxError(ctx)}
	}
	began := time.Now()
	thread, stop := m.o.newThread(ctx)
	v, err := starlark.Call(thread, fn, args, kwargs)
	lim := stop()
	if err != nil {
		return nil, m.o.applyError(ctx, err, thread, lim, began)
	}
	return v, nil
}

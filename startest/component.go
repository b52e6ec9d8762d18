package startest

// This file defines the component(name, *argv) fixture: the app a component returns.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/convert"
)

// componentApp implements component(name, *argv): it loads the component name (a builtin such
// as "dist.ddp", or "FILE.star:FUNCTION" with FILE relative to the test file), parses argv as
// "starpod run NAME ARGV..." would, calls it, decodes and checks the app strictly, and returns
// the app as a dict in the shape of an app spec.
func (r *runner) componentApp(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(kwargs) > 0 {
		return nil, fmt.Errorf("%s: unexpected keyword argument %s; give the component's flags as strings, as on the command line", b.Name(), kwargs[0][0])
	}
	if len(args) < 1 {
		return nil, fmt.Errorf("%s: missing argument for name", b.Name())
	}
	var argv []string
	for i, a := range args {
		s, ok := starlark.AsString(a)
		if !ok {
			return nil, fmt.Errorf("%s: argument %d: got %s, want string", b.Name(), i+1, a.Type())
		}
		argv = append(argv, s)
	}
	name := argv[0]
	if file, fn, ok := strings.Cut(name, ".star:"); ok && !filepath.IsAbs(file) {
		name = filepath.Join(filepath.Dir(r.file), file) + ".star:" + fn
	}
	opts := &component.LoadOptions{}
	if r.opts.Engine != nil {
		opts.Engine = engine.Options{MaxSteps: r.opts.Engine.MaxSteps, Timeout: r.opts.Engine.Timeout}
	}
	opts.Engine.Print = r.print
	c, err := component.Load(r.ctx, name, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	cargs, err := c.ParseArgs(argv[1:], nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	app, err := c.App(r.ctx, cargs)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	data, err := json.Marshal(app)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	var x any
	if err := json.Unmarshal(data, &x); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	return convert.FromGo(x)
}

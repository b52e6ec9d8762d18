package component

// This file defines Component: loading a component and calling it to get an app.

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.yaml.in/yaml/v3"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/scheduler"
)

//go:embed builtin/*.star
var builtinFS embed.FS

// builtinFiles lists the builtin component files, without ".star", in the order
// "starpod components" lists them.
var builtinFiles = []string{"dist", "utils"}

// A Component is a Starlark function that returns an app, with the description of its
// parameters that its signature and docstring give.
type Component struct {
	Name        string  // as given: "dist.ddp" or "path/file.star:function"
	Summary     string  // the docstring's first paragraph, on one line
	Description string  // the rest of the docstring before its sections
	Params      []Param // in the order of the signature, *args excluded
	Varargs     *Param  // the *args parameter, if the function has one

	positional int // the parameters before *args, which a call with *args passes by position
	mod        *engine.Module
	fn         *starlark.Function
}

// A Kind is the type of a parameter's values on the command line.
type Kind int

// The kinds of parameters.
const (
	String Kind = iota
	Int
	Float
	Bool
	List // of strings
	Dict // of strings to strings
)

var kindNames = [...]string{"str", "int", "float", "bool", "list", "dict"}

func (k Kind) String() string { return kindNames[k] }

// A Param is one parameter of a component, and so one flag.
type Param struct {
	Name     string
	Kind     Kind
	Default  starlark.Value // nil when the parameter is required
	Help     string         // from the docstring's Args: section
	Required bool
}

// Flag returns the flag as it is written: -j for a one-letter name, --script otherwise.
func (p *Param) Flag() string {
	if len(p.Name) == 1 {
		return "-" + p.Name
	}
	return "--" + p.Name
}

// LoadOptions configures [Load]. The zero value is the safe default.
type LoadOptions struct {
	// Engine bounds the top level of the component's file and each call (steps, time) and
	// receives print(). Its Loader and Isolation are ignored: a file's loads are confined to
	// Root, and components run in this process.
	Engine engine.Options

	// Root is the directory that a user component's load statements must stay inside. Empty
	// means the component file's directory.
	Root string

	// Resources holds named resources to add to the builtin ones, or to replace them.
	Resources map[string]scheduler.Resource
}

// IsComponent reports whether arg names a component rather than an app spec file: a builtin
// name (dist.ddp) or FILE.star:FUNCTION. A name ending in .yaml, .yml or .json, such as
// utils.yaml, is an app spec.
func IsComponent(arg string) bool {
	if file, fn, ok := strings.Cut(arg, ".star:"); ok && file != "" && fn != "" {
		return true
	}
	file, fn, ok := strings.Cut(arg, ".")
	switch fn {
	case "yaml", "yml", "json":
		return false // an app spec such as utils.yaml
	}
	return ok && fn != "" && !strings.ContainsAny(arg, `/\:`) && !strings.Contains(fn, ".") &&
		isBuiltinFile(file)
}

func isBuiltinFile(name string) bool {
	for _, f := range builtinFiles {
		if f == name {
			return true
		}
	}
	return false
}

// Load finds the component name, a builtin name such as "dist.ddp" or
// "path/to/file.star:function", runs its file's top level and describes the function. It
// returns an *engine.Error for a file that does not compile or run, an *fs.PathError for a
// file that cannot be read, and a *NotFoundError for a name that names no component function.
func Load(ctx context.Context, name string, opts *LoadOptions) (*Component, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	var (
		file, fnName string
		src          []byte
		loader       engine.Loader
		dir          = "."
	)
	if path, fn, ok := strings.Cut(name, ".star:"); ok {
		file, fnName = path+".star", fn
		data, err := readFile(file)
		if err != nil {
			return nil, err
		}
		src = data
		dir = filepath.Dir(file)
		root := opts.Root
		if root == "" {
			root = dir
		}
		loader = engine.DirLoader(root)
	} else {
		base, fn, ok := strings.Cut(name, ".")
		if !ok || !isBuiltinFile(base) {
			return nil, &NotFoundError{Name: name, Near: spell.Nearest(name, BuiltinNames())}
		}
		file, fnName = base+".star", fn
		sub, _ := fs.Sub(builtinFS, "builtin")
		data, err := fs.ReadFile(sub, file)
		if err != nil {
			return nil, err
		}
		src = data
		loader = engine.FSLoader(sub)
	}
	eopts := opts.Engine
	eopts.Loader = loader
	eopts.Isolation = engine.InProcess
	mod, err := engine.Exec(ctx, file, src, &engine.ExecOptions{Options: eopts, Predeclared: predeclared(opts.Resources)})
	if err != nil {
		return nil, err
	}
	return describe(name, mod, fnName)
}

// A NotFoundError reports a component name that names no component.
type NotFoundError struct {
	Name string
	Near string // a near name, if any
	Why  string // what was found instead, if anything
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("unknown component %q", e.Name)
	if e.Why != "" {
		msg = fmt.Sprintf("component %q: %s", e.Name, e.Why)
	}
	if e.Near != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Near)
	} else if e.Why == "" {
		msg += fmt.Sprintf("; want a builtin (%s) or FILE.star:FUNCTION", strings.Join(BuiltinNames(), ", "))
	}
	return msg
}

// describe makes the Component of the function fnName of mod.
func describe(name string, mod *engine.Module, fnName string) (*Component, error) {
	g := mod.Globals()
	v, ok := g[fnName]
	if !ok || strings.HasPrefix(fnName, "_") {
		return nil, &NotFoundError{Name: name, Why: fmt.Sprintf("%s has no function %s", mod.Name(), fnName),
			Near: nearFunction(name, fnName, g)}
	}
	fn, ok := v.(*starlark.Function)
	if !ok {
		return nil, &NotFoundError{Name: name, Why: fmt.Sprintf("%s is a %s, want a function", fnName, v.Type())}
	}
	if fn.HasKwargs() {
		return nil, &engine.Error{Overlay: mod.Name(), Pos: fn.Position(),
			Err: fmt.Errorf("component %s has a **%s parameter; components take named parameters and *args only", fnName, paramName(fn, fn.NumParams()-1))}
	}
	doc := parseDoc(fn.Doc())
	c := &Component{Name: name, Summary: doc.summary, Description: doc.description, mod: mod, fn: fn}
	n := fn.NumParams()
	if fn.HasVarargs() {
		n--
	}
	c.positional = n - fn.NumKwonlyParams()
	for i := 0; i < n; i++ {
		pname := paramName(fn, i)
		p := Param{Name: pname, Default: fn.ParamDefault(i), Help: doc.args[pname].help}
		p.Required = p.Default == nil
		p.Kind = kindOf(p.Default, doc.args[pname].typ)
		c.Params = append(c.Params, p)
	}
	if fn.HasVarargs() {
		pname := paramName(fn, n)
		c.Varargs = &Param{Name: pname, Kind: List, Help: doc.args[pname].help}
	}
	return c, nil
}

func paramName(fn *starlark.Function, i int) string {
	name, _ := fn.Param(i)
	return name
}

// nearFunction returns the component name with fnName replaced by the nearest public function
// of g, or "".
func nearFunction(name, fnName string, g starlark.StringDict) string {
	var fns []string
	for k, v := range g {
		if _, ok := v.(*starlark.Function); ok && !strings.HasPrefix(k, "_") {
			fns = append(fns, k)
		}
	}
	sort.Strings(fns)
	near := spell.Nearest(fnName, fns)
	if near == "" {
		return ""
	}
	return strings.TrimSuffix(name, fnName) + near
}

// kindOf returns the kind of a parameter from its default, or from the type its docstring
// names when the default is None or missing.
func kindOf(def starlark.Value, typ string) Kind {
	switch def.(type) {
	case starlark.Int:
		return Int
	case starlark.Float:
		return Float
	case starlark.Bool:
		return Bool
	case *starlark.List, starlark.Tuple:
		return List
	case *starlark.Dict:
		return Dict
	case starlark.String:
		return String
	}
	switch strings.ToLower(strings.TrimPrefix(strings.TrimSuffix(typ, ", optional"), "Optional[")) {
	case "int":
		return Int
	case "float":
		return Float
	case "bool":
		return Bool
	case "list", "list[str]":
		return List
	case "dict", "dict[str, str]":
		return Dict
	}
	return String
}

// BuiltinNames returns the names of the builtin components, sorted.
func BuiltinNames() []string { return builtinList() }

// builtinList returns the public functions of the builtin files as FILE.FUNCTION, found by
// reading the files' top-level def statements.
func builtinList() []string {
	var names []string
	for _, f := range builtinFiles {
		data, _ := builtinFS.ReadFile("builtin/" + f + ".star")
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "def "); ok && !strings.HasPrefix(rest, "_") {
				if i := strings.IndexByte(rest, '('); i > 0 {
					names = append(names, f+"."+rest[:i])
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

// Call calls the component with the arguments args gives and returns what it returned.
// It returns an *engine.Error, or a *UsageError.
// A call that ends with usage_error(msg) returns a *UsageError.
func (c *Component) Call(ctx context.Context, args *Args) (starlark.Value, error) {
	v, err := c.mod.Call(ctx, c.fn, args.varargs, args.kwargs)
	var ae *argError
	if errors.As(err, &ae) {
		return nil, &UsageError{Component: c.Name, Err: errors.New(ae.msg)}
	}
	return v, err
}

// App calls the component with args and decodes the result as an app spec, strictly, with
// scheduler.ParseApp; the app's relative overlay paths are resolved against the component
// file's directory. It returns an *engine.Error if the call fails, and a
// *scheduler.SpecError (with the app decoded as far as it could be) if the result is not a
// valid app, and a *UsageError if the component called usage_error. Each role's env gets
// TORCHX_JOB_ID, as TorchX's runner sets it.
func (c *Component) App(ctx context.Context, args *Args) (*scheduler.App, error) {
	data, err := c.Result(ctx, args)
	if err != nil {
		return nil, err
	}
	return AppFromResult(c.Name, data)
}

// Result calls the component with args and returns its result as the YAML of an app spec,
// within MaxResultBytes of text, for [AppFromResult]. Its errors are those of App but the
// *scheduler.SpecError.
func (c *Component) Result(ctx context.Context, args *Args) ([]byte, error) {
	v, err := c.Call(ctx, args)
	if err != nil {
		return nil, err
	}
	return resultYAML(c.Name, v)
}

// AppFromResult decodes the result of the component name, as Result gives it, strictly with
// scheduler.ParseAppData, as App does: the app's relative overlay paths are resolved against
// the component file's directory, and each role gets TORCHX_JOB_ID.
func AppFromResult(name string, data []byte) (*scheduler.App, error) {
	app, err := scheduler.ParseAppData(name, data)
	if app != nil {
		app.Dir = "."
		if file, _, ok := strings.Cut(name, ".star:"); ok {
			app.Dir = filepath.Dir(file + ".star")
		}
		setJobID(app)
	}
	return app, err
}

// JobIDEnv is the variable that holds the job's handle in every role of a component's app,
// as TorchX's runner sets it for torchx.tracker: JobIDValue, whose ${app_id} is the app id.
const (
	JobIDEnv   = "TORCHX_JOB_ID"
	JobIDValue = "kubernetes://torchx/${app_id}"
)

// setJobID sets JobIDEnv in each role of app, as TorchX's runner does, replacing any value
// the component gave.
func setJobID(app *scheduler.App) {
	for i := range app.Roles {
		r := &app.Roles[i]
		env := r.Env[:0:0]
		for _, e := range r.Env {
			if e.Name != JobIDEnv {
				env = append(env, e)
			}
		}
		r.Env = append(env, scheduler.EnvVar{Name: JobIDEnv, Value: JobIDValue})
	}
}

// ErrNotApp is the cause of the error of a component whose result is not a dict.
var ErrNotApp = errors.New("want a dict in the shape of an app spec")

// resultYAML returns the YAML of v, the result of the component name.
func resultYAML(name string, v starlark.Value) ([]byte, error) {
	if _, ok := v.(*starlark.Dict); !ok {
		return nil, &engine.Error{Overlay: name, Err: fmt.Errorf("the component returned %s, %w", v.Type(), ErrNotApp)}
	}
	n, err := resultNode(v, nil, 0, &resultBudget{})
	if err != nil {
		return nil, &engine.Error{Overlay: name, Err: fmt.Errorf("the component's result: %w", err)}
	}
	return yaml.Marshal(n)
}

// Functions returns the names of the public functions (those whose names do not begin with
// '_') that the Starlark file defines at its top level, sorted, running its top level as Load
// does. It returns an *engine.Error or an *fs.PathError.
func Functions(ctx context.Context, file string, opts *LoadOptions) ([]string, error) {
	mod, err := execFile(ctx, file, opts)
	if err != nil {
		return nil, err
	}
	return publicFunctions(mod, file), nil
}

// LoadFile runs the top level of the Starlark file as Load does and describes each of its
// public functions as a component FILE:FUNCTION, in the order of their names. It returns an
// *engine.Error or an *fs.PathError if the file does not load, and otherwise the components
// and the errors of the functions that are not components (a **kwargs parameter).
func LoadFile(ctx context.Context, file string, opts *LoadOptions) ([]*Component, []error, error) {
	mod, err := execFile(ctx, file, opts)
	if err != nil {
		return nil, nil, err
	}
	var cs []*Component
	var errs []error
	for _, fn := range publicFunctions(mod, file) {
		c, err := describe(file+":"+fn, mod, fn)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cs = append(cs, c)
	}
	return cs, errs, nil
}

// execFile runs the top level of the component file.
func execFile(ctx context.Context, file string, opts *LoadOptions) (*engine.Module, error) {
	if opts == nil {
		opts = &LoadOptions{}
	}
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	root := opts.Root
	if root == "" {
		root = filepath.Dir(file)
	}
	eopts := opts.Engine
	eopts.Loader = engine.DirLoader(root)
	eopts.Isolation = engine.InProcess
	return engine.Exec(ctx, file, data, &engine.ExecOptions{Options: eopts, Predeclared: predeclared(opts.Resources)})
}

// publicFunctions returns the names of the public functions that file itself defines in mod.
func publicFunctions(mod *engine.Module, file string) []string {
	var names []string
	for k, v := range mod.Globals() {
		if f, ok := v.(*starlark.Function); ok && !strings.HasPrefix(k, "_") && f.Position().Filename() == file {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return names
}

// readFile reads a component file within bound.MaxScript. A file it cannot look at is an
// *fs.PathError that says "open", as os.ReadFile's does: to the user, it could not be opened.
func readFile(name string) ([]byte, error) {
	data, err := bound.ReadFile(name, bound.MaxScript, "component file")
	var perr *fs.PathError
	if errors.As(err, &perr) && perr.Op == "stat" {
		err = &fs.PathError{Op: "open", Path: perr.Path, Err: perr.Err}
	}
	return data, err
}

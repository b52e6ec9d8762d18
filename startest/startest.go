// Package startest runs tests of overlays written in Starlark: the files named *_test.star,
// whose functions named test_* check what overlays do to pods.
//
// A test file sees the overlay helpers of package builtins and six more names:
//
//	assert                          checks: assert.eq(got, want, msg=None), assert.ne(a, b, msg=None),
//	                                assert.true(cond, msg=None), assert.contains(container, item, msg=None),
//	                                assert.fails(fn, pattern) (fn() must fail with an error matching pattern)
//	apply(overlay_file, pod, ctx=None)  the pod (a dict) after the overlay in overlay_file (a path relative to
//	                                the test file); ctx is a dict, or a struct such as the ctx an overlay
//	                                receives, of app_id, role, replica_id, num_replicas, scheduler, args
//	                                and workload (a dict or struct of kind, api_version, name, namespace
//	                                and path: the pod is then a pod template, checked as one)
//	pod_from_yaml(text)             the pod a YAML or JSON text describes, checked strictly
//	templates_from_yaml(text)       the pods and pod templates of a manifest (a Pod, a Deployment, a
//	                                CronJob, a Volcano Job, a v1 List...) as apply gives them to overlays:
//	                                a list of structs, each with .pod (a dict) and .ctx (a dict whose
//	                                workload names the object, or None for a bare pod)
//	component(name, *argv)          the app (a dict in the shape of an app spec) that the component
//	                                name (dist.ddp, or FILE.star:FUNCTION relative to the test file)
//	                                returns for the command line flags argv, checked strictly
//
// Without a ctx, or outside a scheduler, the overlay's ctx.replica_id and ctx.num_replicas are
// None; a ctx that gives either without a scheduler is a pod of "starpod run", whose scheduler
// is kubernetes.
//
// A failed check is reported with its position and the test goes on; an error ends the test.
// A failed check at the top level fails the file.
//
// print() writes file:line: message to the log of the running test, as go test's t.Log does:
// the log is shown, indented under the test, when the test fails or with Options.Verbose, and
// printing never fails a test. An overlay that apply() runs prints to the same log. What the
// top level of a file and the modules it loads print is shown when the file fails or with
// Verbose.
//
// A test file may load modules, which see the same names as test files. They are resolved
// relative to the loading file, inside the directory of the test file, run once and frozen by
// an [engine.Linker]; a load cycle fails the file.
//
// To run the tests of some files, use [Run]; to check that a test file compiles, use [Check].
package startest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/builtins"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/convert"
)

// Options configures [Run]. The zero value runs every test quietly with the engine's defaults.
type Options struct {
	Run      *regexp.Regexp  // only tests whose names match; nil runs all
	Verbose  bool            // report each test and what it prints, as go test -v does
	Engine   *engine.Options // options for the overlays that apply() compiles (a nil Loader or Print is set per file)
	MaxSteps uint64          // execution steps of one test function; zero means 10,000,000
	Timeout  time.Duration   // wall time of one test function; zero means 10s
}

// Find returns the *_test.star files that paths name: files as they are, directories searched
// recursively. The result is sorted.
func Find(paths []string) ([]string, error) {
	return FindFiles(paths, "_test.star")
}

// FindFiles returns the files whose names end with suffix that paths name: files as they
// are, directories (DIR or DIR/...) searched recursively, leaving out those whose names
// begin with '.' and testdata. The result is sorted.
func FindFiles(paths []string, suffix string) ([]string, error) {
	seen := make(map[string]bool)
	var files []string
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/...")
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			if !seen[p] {
				seen[p] = true
				files = append(files, p)
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, suffix) && !seen[path] {
				seen[path] = true
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	return files, nil
}

// Run runs the tests of every file, writing a report like go test's to w, and reports
// whether all passed. The end of ctx stops the overlays the tests apply.
func Run(ctx context.Context, files []string, w io.Writer, opts *Options) bool {
	if opts == nil {
		opts = &Options{}
	}
	ok := true
	for _, file := range files {
		if !runFile(ctx, file, w, opts) {
			ok = false
		}
	}
	return ok
}

// runner holds the state of one test file's run.
type runner struct {
	ctx      context.Context
	file     string
	opts     *Options
	overlays map[string]*engine.Overlay

	mu  sync.Mutex // guards log, which overlays may print to from other goroutines
	log *testLog   // of the running test, or of the file's top level
}

// A testLog holds what one test, or the top level of a test file, printed and the checks that
// failed, in order, as go test's t.Log and t.Error do. In verbose mode each line is written
// at once; otherwise the lines are kept for the report of a failure.
type testLog struct {
	w      io.Writer // where lines go at once, or nil
	indent string
	lines  []string
	failed bool
}

// add adds a line. In a test's log the line is indented, and its continuation lines by more
// besides.
func (l *testLog) add(line, more string) {
	if l.indent != "" {
		line = l.indent + strings.ReplaceAll(line, "\n", "\n"+l.indent+more)
	}
	if l.w != nil {
		fmt.Fprintln(l.w, line)
		return
	}
	l.lines = append(l.lines, line)
}

// writeTo writes the lines kept to w.
func (l *testLog) writeTo(w io.Writer) {
	for _, line := range l.lines {
		fmt.Fprintln(w, line)
	}
}

// print adds a line of print() output, at pos, to the running log.
func (r *runner) print(pos syntax.Position, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log.add(fmt.Sprintf("%s:%d: %s", pos.Filename(), pos.Line, msg), "    ")
}

// fail adds a failure to the running log.
func (r *runner) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log.failed = true
	r.log.add(msg, "")
}

// setLog makes l the running log.
func (r *runner) setLog(l *testLog) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = l
}

// runFile runs the tests of file. Without -v, the report of each failed test is kept in a
// buffer, so that when the file fails what its top level printed comes first.
func runFile(ctx context.Context, file string, w io.Writer, opts *Options) bool {
	start := time.Now()
	r := &runner{ctx: ctx, file: file, opts: opts, overlays: make(map[string]*engine.Overlay)}
	var failed bytes.Buffer
	out := io.Writer(&failed)
	top := &testLog{}
	if opts.Verbose {
		out, top.w = w, w
	}
	r.setLog(top)
	failFile := func() bool {
		top.writeTo(w)
		w.Write(failed.Bytes())
		fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", file, time.Since(start).Seconds())
		return false
	}
	fileError := func(err error) bool {
		r.fail(errorText(err))
		return failFile()
	}
	prog, linker, predeclared, err := r.compile()
	if err != nil {
		return fileError(err)
	}
	thread := r.thread()
	thread.Load = linker.Load
	globals, err := prog.Init(thread, predeclared)
	if err != nil {
		return fileError(err)
	}
	if top.failed { // a check at the top level
		return failFile()
	}

	type test struct {
		name string
		fn   *starlark.Function
	}
	var tests []test
	for name, v := range globals {
		if fn, ok := v.(*starlark.Function); ok && strings.HasPrefix(name, "test_") {
			if opts.Run == nil || opts.Run.MatchString(name) {
				tests = append(tests, test{name, fn})
			}
		}
	}
	sort.Slice(tests, func(i, j int) bool {
		pi, pj := tests[i].fn.Position(), tests[j].fn.Position()
		return pi.Line < pj.Line || pi.Line == pj.Line && tests[i].name < tests[j].name
	})

	passed := true
	for _, t := range tests {
		if opts.Verbose {
			fmt.Fprintf(w, "=== RUN   %s\n", t.name)
		}
		tlog := &testLog{indent: "    "}
		if opts.Verbose {
			tlog.w = w
		}
		r.setLog(tlog)
		tstart := time.Now()
		if t.fn.NumParams() != 0 {
			r.fail(fmt.Sprintf("%s: %s takes parameters, want none", t.fn.Position(), t.name))
		} else if _, err := starlark.Call(r.thread(), t.fn, nil, nil); err != nil {
			r.fail(errorText(err))
		}
		r.setLog(top)
		d := time.Since(tstart).Seconds()
		if tlog.failed {
			passed = false
			fmt.Fprintf(out, "--- FAIL: %s (%.2fs)\n", t.name, d)
			tlog.writeTo(out)
		} else if opts.Verbose {
			fmt.Fprintf(w, "--- PASS: %s (%.2fs)\n", t.name, d)
		}
	}
	if !passed {
		return failFile()
	}
	if len(tests) == 0 {
		fmt.Fprintf(w, "ok  \t%s\t%.3fs [no tests to run]\n", file, time.Since(start).Seconds())
		return true
	}
	fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", file, time.Since(start).Seconds())
	return true
}

// Check compiles the test file as Run does before it runs the file: it reads the file, checks
// its syntax and resolves its names (the overlay helpers and assert, apply and pod_from_yaml),
// and loads the modules it loads, which runs their top levels. It runs none of the file's own
// code. It returns an *engine.Error. What the modules print is discarded.
func Check(ctx context.Context, file string, opts *Options) error {
	if opts == nil {
		opts = &Options{}
	}
	r := &runner{ctx: ctx, file: file, opts: opts, overlays: make(map[string]*engine.Overlay)}
	r.setLog(&testLog{w: io.Discard})
	_, _, _, err := r.compile()
	if err != nil {
		var e *engine.Error
		if !errors.As(err, &e) {
			err = &engine.Error{Overlay: file, Err: err}
		}
	}
	return err
}

// compile reads the test file, compiles it with the names test files see, and links the
// modules it loads. It returns the program, the linker that serves its loads, and its
// predeclared names.
func (r *runner) compile() (*starlark.Program, *engine.Linker, starlark.StringDict, error) {
	src, err := bound.ReadFile(r.file, bound.MaxScript, "test file")
	if err != nil {
		return nil, nil, nil, err
	}
	predeclared := r.predeclared()
	// Modules see what test files see, and run like their top level.
	linker := engine.NewLinker(engine.DirLoader(filepath.Dir(r.file)), &engine.LinkOptions{
		Predeclared: predeclared,
		Thread:      func(string) *starlark.Thread { return r.thread() },
	})
	prog, err := linker.Compile(r.file, src)
	if err != nil {
		return nil, nil, nil, err
	}
	return prog, linker, predeclared, nil
}

// predeclared returns the names a test file sees: the overlay helpers, and assert, apply,
// pod_from_yaml, templates_from_yaml and component.
func (r *runner) predeclared() starlark.StringDict {
	predeclared := builtins.Predeclared()
	predeclared["assert"] = r.assertModule()
	predeclared["apply"] = starlark.NewBuiltin("apply", r.apply)
	predeclared["pod_from_yaml"] = starlark.NewBuiltin("pod_from_yaml", podFromYAML)
	predeclared["templates_from_yaml"] = starlark.NewBuiltin("templates_from_yaml", templatesFromYAML)
	predeclared["component"] = starlark.NewBuiltin("component", r.componentApp)
	return predeclared
}

// thread returns a thread bounded by the test limits, whose print() goes to the running log.
func (r *runner) thread() *starlark.Thread {
	t := &starlark.Thread{Name: r.file}
	steps := r.opts.MaxSteps
	if steps == 0 {
		steps = 10_000_000
	}
	t.SetMaxExecutionSteps(steps)
	timeout := r.opts.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	time.AfterFunc(timeout, func() { t.Cancel("time limit exceeded") })
	t.Print = func(t *starlark.Thread, msg string) { r.print(t.CallFrame(1).Pos, msg) }
	return t
}

// errorText formats an error of a test: its position and message, and a backtrace.
func errorText(err error) string {
	var eval *starlark.EvalError
	if errors.As(err, &eval) {
		return eval.Backtrace()
	}
	var e *engine.Error
	if errors.As(err, &e) && e.Backtrace != "" {
		return err.Error() + "\n" + strings.TrimRight(e.Backtrace, "\n")
	}
	return err.Error()
}

// apply implements apply(overlay_file, pod, ctx=None).
func (r *runner) apply(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var file string
	var podv starlark.Value
	var ctxv starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "overlay_file", &file, "pod", &podv, "ctx?", &ctxv); err != nil {
		return nil, err
	}
	o, err := r.overlay(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	pod, err := convert.DecodePodValue(podv)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid pod: %v", b.Name(), err)
	}
	env, err := envFromValue(ctxv)
	if err != nil {
		return nil, fmt.Errorf("%s: ctx: %v", b.Name(), err)
	}
	got, err := o.Apply(r.ctx, pod, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	return convert.ToStarlark(got)
}

// overlay compiles (once per run) the overlay in file, relative to the test file.
func (r *runner) overlay(file string) (*engine.Overlay, error) {
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(r.file), file)
	}
	if o, ok := r.overlays[path]; ok {
		return o, nil
	}
	src, err := bound.ReadFile(path, bound.MaxScript, "script")
	if err != nil {
		return nil, err
	}
	opts := engine.Options{}
	if r.opts.Engine != nil {
		opts = *r.opts.Engine
	}
	if opts.Loader == nil {
		opts.Loader = engine.DirLoader(filepath.Dir(path))
	}
	if opts.Print == nil {
		opts.Print = r.print
	}
	o, err := engine.Compile(r.ctx, path, src, &opts)
	if err != nil {
		return nil, err
	}
	r.overlays[path] = o
	return o, nil
}

// envFromValue reads the ctx argument of apply: None, a dict, or a struct such as the ctx an
// overlay receives, with the fields app_id, role, replica_id, num_replicas, scheduler, args and
// workload, each optional. A replica_id or num_replicas that is not None without a scheduler stands for
// a pod of "starpod run", whose scheduler is kubernetes.
func envFromValue(v starlark.Value) (*engine.Env, error) {
	env := &engine.Env{}
	var fields []string
	var get func(string) (starlark.Value, error)
	switch v := v.(type) {
	case starlark.NoneType:
		return env, nil
	case *starlark.Dict:
		for _, k := range v.Keys() {
			s, ok := starlark.AsString(k)
			if !ok {
				return nil, fmt.Errorf("got %s key, want string", k.Type())
			}
			fields = append(fields, s)
		}
		get = func(k string) (starlark.Value, error) {
			x, _, err := v.Get(starlark.String(k))
			return x, err
		}
	case *starlarkstruct.Struct:
		fields = v.AttrNames()
		get = v.Attr
	default:
		return nil, fmt.Errorf("got %s, want dict, struct or None", v.Type())
	}
	replica := false // a replica_id or num_replicas is given
	for _, k := range fields {
		v, err := get(k)
		if err != nil {
			return nil, err
		}
		switch k {
		case "app_id":
			env.AppID, err = str(v)
		case "role":
			env.Role, err = str(v)
		case "scheduler":
			env.Scheduler, err = str(v)
		case "replica_id", "num_replicas":
			if v == starlark.None {
				break
			}
			replica = true
			n := &env.ReplicaID
			if k == "num_replicas" {
				n = &env.NumReplicas
			}
			if err = starlark.AsInt(v, n); err == nil && *n < 0 {
				err = fmt.Errorf("got %d, want at least 0", *n)
			}
		case "args":
			ad, ok := v.(*starlark.Dict)
			if !ok {
				return nil, fmt.Errorf("args: got %s, want dict", v.Type())
			}
			env.Args = make(map[string]string)
			for _, kv := range ad.Items() {
				ks, ok1 := starlark.AsString(kv[0])
				vs, ok2 := starlark.AsString(kv[1])
				if !ok1 || !ok2 {
					return nil, fmt.Errorf("args: got %s: %s, want string: string", kv[0].Type(), kv[1].Type())
				}
				env.Args[ks] = vs
			}
		case "workload":
			env.Workload, err = workloadFromValue(v)
		default:
			return nil, fmt.Errorf("unknown key %q; want app_id, role, replica_id, num_replicas, scheduler, args or workload", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
	}
	if replica && env.Scheduler == "" {
		env.Scheduler = "kubernetes"
	}
	return env, nil
}

func str(v starlark.Value) (string, error) {
	s, ok := starlark.AsString(v)
	if !ok {
		return "", fmt.Errorf("got %s, want string", v.Type())
	}
	return s, nil
}

// podFromYAML implements pod_from_yaml(text).
func podFromYAML(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "text", &text); err != nil {
		return nil, err
	}
	// Numbers keep their text (json.Number), so integers stay integers.
	j, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var obj any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if m, ok := obj.(map[string]any); ok && m["kind"] != nil && m["kind"] != "Pod" {
		return nil, fmt.Errorf("%s: got a %v, want a Pod; for the pod templates of a workload, as apply gives them to overlays, use templates_from_yaml", b.Name(), m["kind"])
	}
	pod, err := convert.DecodePod(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid pod: %v", b.Name(), err)
	}
	return convert.ToStarlark(pod)
}

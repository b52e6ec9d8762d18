// Package engine compiles and applies starpod overlays: Starlark scripts that define
//
//	def overlay(pod, ctx):
//	    ...
//
// and change a Kubernetes pod.
//
// To compile a script once, use [Compile]; it returns an immutable [*Overlay] that one or many
// goroutines apply at the same time with [Overlay.Apply]. To apply several overlays in order,
// use a [Chain]. To apply an overlay or a chain to many pods, use ApplyBatch, which stops at
// the first pod that fails and says which it is, or ApplyEach, which gives each pod its own
// ctx and its own error ([Chain.ApplyBatch], [Chain.ApplyEach]): with worker processes, each
// makes one round trip per overlay. Each apply makes a fresh starlark.Thread, converts the pod
// into plain Starlark values (dict, list, string, int, float, bool, None in the JSON shape
// users know from YAML), runs the script's top level and then overlay(pod) or
// overlay(pod, ctx), and decodes the result strictly back into a corev1.Pod of kind Pod and
// apiVersion v1.
//
// Scripts run sandboxed: their only predeclared names are the Starlark universe and the helpers
// of package builtins, so they cannot reach files, the environment, the clock, randomness or the
// network. The dialect has no while loops, no recursion and no reassignment of globals. Every
// apply is bounded in execution steps, wall time and the size of the result; the zero
// [Options] gives safe defaults. The same script and pod always give the same pod.
//
// One Starlark step can allocate without bound, and a Go process out of memory dies, so
// in-process overlays are not bounded in memory. With [WorkerProcess] isolation overlays
// compile and apply in worker processes that limit their own memory (see [Isolation],
// [WorkerPool] and [ServeWorkerIfRequested]); a script that exhausts it gets a *LimitError.
// An Overlay applies through one runner, in process or in workers, so that Apply, ApplyBatch
// and ApplyEach are each written once; the worker processes themselves (pool, readiness,
// limits, why one died) are package internal/sandbox's, the server loop and the encoding of
// messages package internal/worker's, and this package defines the requests of overlays and
// their handlers (proto.go, serve.go, remote.go).
//
// Every failure is an [*Error]: it names the overlay, the script position, the Starlark
// backtrace where there is one, and for an invalid result the pod field path of each problem.
// A limit that was hit is a [*LimitError] inside it; use errors.As to find either.
//
// The result is checked strictly against the Pod schema, and with [Options.Validation] also
// as the API server would check it (package internal/validate's checks, which the scheduler
// uses too). Each problem of an invalid result is reported where it was written: the
// statement or helper call that last wrote the offending value, in the script or a module it
// loads, with the Starlark call stack to it ([Error.Writes]); at the overlay's def line only
// when no statement wrote it, the value having come from the input pod, which the message
// then says. This costs nothing when the result is valid: an apply is deterministic, so on an
// invalid result the overlay runs again on the same pod with a hook on every execution step
// that watches the offending paths (provenance.go says how). A failed apply with its run again
// costs about three plain applies (BenchmarkApplyInvalid against BenchmarkApply), and the run
// again is bounded by the same limits; when it cannot attribute a write, the error keeps the
// def line.
//
// To see what an overlay changed and where, use [Overlay.Explain] or [Chain.Explain]: each
// changed field as a [Change], with its old and new value and the line that wrote it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/builtins"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/internal/validate"
)

// fileOptions is the overlay dialect: no while, no recursion, no global reassignment, no
// top-level if/for; sets are allowed.
var fileOptions = &syntax.FileOptions{Set: true}

// predeclared holds the names every script sees besides the universe. Its values are frozen.
var predeclared = func() starlark.StringDict {
	d := builtins.Predeclared()
	d.Freeze()
	return d
}()

// An Overlay is a compiled overlay script. It is immutable and holds no mutable Starlark
// values, so one Overlay may be applied from many goroutines at once.
type Overlay struct {
	name    string
	prog    *starlark.Program
	modules *Linker         // the frozen globals of every module the script loads
	takes   int             // 1 for overlay(pod), 2 for overlay(pod, ctx)
	pos     syntax.Position // where overlay is defined
	opts    Options
	run     runner          // in this process, or in workers
	names   *validate.Cache // the problems of names seen by Options.Validation
}

// A runner applies a compiled overlay to pods: with envs[i] as the ctx of pods[i] when envs is
// not nil, and env for every pod otherwise. It returns a result and an error for each pod; with
// first set, it stops at the first pod that fails and gives the pods after it neither.
type runner interface {
	apply(ctx context.Context, pods []*corev1.Pod, env *Env, envs []*Env, first bool) ([]*corev1.Pod, []error)
}

// local runs an overlay in this process.
type local struct{ o *Overlay }

func (l local) apply(ctx context.Context, pods []*corev1.Pod, env *Env, envs []*Env, first bool) ([]*corev1.Pod, []error) {
	out := make([]*corev1.Pod, len(pods))
	errs := make([]error, len(pods))
	for i, pod := range pods {
		e := env
		if envs != nil {
			e = envs[i]
		}
		out[i], errs[i] = l.o.applyLocal(ctx, pod, e)
		if errs[i] != nil && first {
			break
		}
	}
	return out, errs
}

// Name returns the name the overlay was compiled with, usually its file name.
func (o *Overlay) Name() string { return o.name }

// Validation returns what the overlay checks of the pods it returns (Options.Validation): a
// caller that would check them as much again need not.
func (o *Overlay) Validation() Validation { return o.opts.Validation }

// Compile compiles the overlay script src, whose file name (used in positions) is name.
// It checks the syntax, resolves every name, loads the modules the script loads (each once,
// frozen), runs the top level once and checks that it defines overlay(pod) or
// overlay(pod, ctx). It returns an *Error.
func Compile(ctx context.Context, name string, src []byte, opts *Options) (*Overlay, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	if int64(len(src)) > bound.MaxScript {
		return nil, &Error{Overlay: name, Err: &bound.SizeError{Name: name, What: "script", Limit: bound.MaxScript}}
	}
	if opts.Isolation == WorkerProcess {
		return compileWorker(ctx, name, src, opts)
	}
	o := &Overlay{name: name, opts: *opts, names: &validate.Cache{}}
	o.run = local{o}
	file, prog, err := compileFile(name, src, predeclared)
	if err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	o.prog = prog
	// The modules' top levels and the script's share one budget of steps and time.
	b := o.newBudget()
	o.modules = NewLinker(opts.Loader, &LinkOptions{})
	o.modules.thread = func(string) (*starlark.Thread, func() *LimitError) {
		return o.newThreadWithin(ctx, b)
	}
	if err := o.modules.Link(name, prog); err != nil {
		return nil, err
	}

	// Run the top level once to find the overlay function; each apply runs it again on a
	// fresh thread, so nothing one apply does is seen by the next.
	thread, stop := o.newThreadWithin(ctx, b)
	globals, err := prog.Init(thread, predeclared)
	lim := stop()
	if err != nil {
		return nil, o.evalError(err, thread, lim)
	}
	fn, ok := globals["overlay"]
	if !ok {
		return nil, o.noOverlay(globals)
	}
	f, ok := fn.(*starlark.Function)
	if !ok {
		return nil, &Error{Overlay: name, Pos: binding(file, "overlay"),
			Err: fmt.Errorf("overlay is %s %s, want a function overlay(pod) or overlay(pod, ctx)", article(fn.Type()), fn.Type())}
	}
	n := f.NumParams()
	if f.HasVarargs() || f.HasKwargs() || f.NumKwonlyParams() > 0 || n < 1 || n > 2 {
		return nil, &Error{Overlay: name, Pos: f.Position(),
			Err: fmt.Errorf("overlay has parameters (%s), want (pod) or (pod, ctx)", params(f))}
	}
	o.takes = n
	o.pos = f.Position()
	return o, nil
}

// compileFile parses and resolves one file of the overlay dialect, whose predeclared names
// are those of predecl, and returns its syntax tree too. A syntax error is a syntax.Error and
// resolve errors are a resolveErrors, each worded by explainSyntax and explainResolve.
func compileFile(name string, src []byte, predecl starlark.StringDict) (*syntax.File, *starlark.Program, error) {
	file, prog, err := starlark.SourceProgramOptions(fileOptions, name, src, predecl.Has)
	if err != nil {
		var list resolve.ErrorList
		if errors.As(err, &list) {
			return nil, nil, resolveErrors(explainResolve(file, list, predecl))
		}
		var serr syntax.Error
		if errors.As(err, &serr) {
			serr.Msg = excerpt(serr.Msg)
			return nil, nil, explainSyntax(serr, src)
		}
		return nil, nil, err
	}
	return file, prog, nil
}

// binding returns the position where a top-level statement of file binds the global name:
// the name in an assignment or a load statement, or the def of a function. The dialect
// allows a global one binding, so there is at most one.
func binding(file *syntax.File, name string) syntax.Position {
	var pos syntax.Position
	var lhs func(e syntax.Expr)
	lhs = func(e syntax.Expr) {
		switch e := e.(type) {
		case *syntax.Ident:
			if e.Name == name {
				pos = e.NamePos
			}
		case *syntax.TupleExpr:
			for _, x := range e.List {
				lhs(x)
			}
		case *syntax.ListExpr:
			for _, x := range e.List {
				lhs(x)
			}
		case *syntax.ParenExpr:
			lhs(e.X)
		}
	}
	for _, stmt := range file.Stmts {
		switch stmt := stmt.(type) {
		case *syntax.AssignStmt:
			lhs(stmt.LHS)
		case *syntax.DefStmt:
			if stmt.Name.Name == name {
				pos = stmt.Def
			}
		case *syntax.LoadStmt:
			for _, to := range stmt.To {
				if to.Name == name {
					pos = to.NamePos
				}
			}
		}
	}
	return pos
}

// article returns the indefinite article of a type name: "an" before a vowel, "a" otherwise.
func article(typ string) string {
	if typ != "" && strings.ContainsRune("aeiouAEIOU", rune(typ[0])) {
		return "an"
	}
	return "a"
}

// params formats the parameter list of f.
func params(f *starlark.Function) string {
	var names []string
	for i := 0; i < f.NumParams(); i++ {
		p, _ := f.Param(i)
		switch {
		case f.HasVarargs() && i == f.NumParams()-f.NumKwonlyParams()-1-boolInt(f.HasKwargs()):
			p = "*" + p
		case f.HasKwargs() && i == f.NumParams()-1:
			p = "**" + p
		}
		names = append(names, p)
	}
	return strings.Join(names, ", ")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// noOverlay reports a script without an overlay function, suggesting a near name.
func (o *Overlay) noOverlay(globals starlark.StringDict) error {
	names := globals.Keys() // sorted
	e := &Error{Overlay: o.name}
	if near := spell.Nearest("overlay", names); near != "" {
		if f, ok := globals[near].(*starlark.Function); ok {
			e.Pos = f.Position()
		}
		e.Err = fmt.Errorf("no top-level function named overlay; did you mean %q?", near)
	} else {
		e.Err = errors.New("no top-level function named overlay; define def overlay(pod): or def overlay(pod, ctx):")
	}
	return e
}

// A budget is what is left of the step and time limits to the threads that share them: the
// top levels that Compile runs, one after another.
type budget struct {
	steps    uint64
	deadline time.Time
}

// newBudget returns the whole step and time limits, from now.
func (o *Overlay) newBudget() *budget {
	return &budget{steps: o.opts.maxSteps(), deadline: time.Now().Add(o.opts.timeout())}
}

// newThread returns a thread for one apply bounded by the step and time limits and by ctx.
// The returned stop function must be called when the thread is done; it reports which limit,
// if any, cancelled the thread.
func (o *Overlay) newThread(ctx context.Context) (*starlark.Thread, func() *LimitError) {
	return o.newThreadWithin(ctx, o.newBudget())
}

// newThreadWithin is newThread for a thread that gets what is left of b, and takes what it
// uses from b when it stops.
func (o *Overlay) newThreadWithin(ctx context.Context, b *budget) (*starlark.Thread, func() *LimitError) {
	thread := &starlark.Thread{Name: o.name, Load: o.load}
	if p := o.opts.Print; p != nil {
		thread.Print = func(t *starlark.Thread, msg string) { p(t.CallFrame(1).Pos, msg) }
	} else {
		thread.Print = func(*starlark.Thread, string) {}
	}
	maxSteps := o.opts.maxSteps()
	thread.SetMaxExecutionSteps(b.steps)

	var hit atomic.Pointer[LimitError]
	timeout := o.opts.timeout()
	timer := time.AfterFunc(time.Until(b.deadline), func() {
		hit.CompareAndSwap(nil, &LimitError{Limit: LimitTime, Value: timeout.String()})
		thread.Cancel("time limit exceeded")
	})
	stopCtx := noStop
	if ctx.Done() != nil { // a context that cannot be cancelled needs no watching
		stopCtx = context.AfterFunc(ctx, func() { thread.Cancel(ctx.Err().Error()) })
	}
	return thread, func() *LimitError {
		timer.Stop()
		stopCtx()
		used := min(thread.ExecutionSteps(), b.steps)
		b.steps -= used
		if lim := hit.Load(); lim != nil {
			return lim
		}
		if b.steps == 0 {
			return &LimitError{Limit: LimitSteps, Value: fmt.Sprint(maxSteps)}
		}
		return nil
	}
}

func noStop() bool { return false }

// load serves a load statement during an apply from the modules loaded at compile time.
func (o *Overlay) load(thread *starlark.Thread, module string) (starlark.StringDict, error) {
	return o.modules.Load(thread, module)
}

// Apply runs the overlay on pod and returns the resulting pod; pod itself is not changed.
// env is what the script sees as ctx (nil is the ctx outside a scheduler: empty strings, and
// None for the replica). It returns an *Error; one that ctx's deadline stopped wraps a
// *DeadlineError, also with [WorkerProcess] isolation, where the worker is told the deadline,
// stops there and serves on.
func (o *Overlay) Apply(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, error) {
	if _, ok := o.run.(local); ok {
		return o.applyLocal(ctx, pod, env) // what local.apply does for one pod, without its slices
	}
	pods, errs := o.run.apply(ctx, []*corev1.Pod{pod}, env, nil, true)
	return pods[0], errs[0]
}

// ApplyBatch applies the overlay to each of pods, as Apply does, with env as the ctx of every
// pod, and returns the results in order. It stops at the first pod that fails and returns the
// results of the pods before it and that pod's *Error: len(out) is the index of the pod that
// failed. With [WorkerProcess] isolation all pods go to one worker in one round trip.
func (o *Overlay) ApplyBatch(ctx context.Context, pods []*corev1.Pod, env *Env) ([]*corev1.Pod, error) {
	out, errs := o.run.apply(ctx, pods, env, nil, true)
	for i, err := range errs {
		if err != nil {
			return out[:i], err
		}
	}
	return out, nil
}

// ApplyEach applies the overlay to each of pods, as Apply does, with envs[i] as the ctx of
// pods[i]; nil envs gives every pod a nil env, and otherwise envs must be as long as pods. It
// returns a result and an error for each pod: the resulting pod and a nil error, or a nil pod
// and the *Error that Apply would have returned. With [WorkerProcess] isolation all pods go
// to one worker in one round trip; a pod that kills its worker (by a memory or time limit)
// gets that *Error, wrapping a *LimitError, and the pods after it go on in another worker.
func (o *Overlay) ApplyEach(ctx context.Context, pods []*corev1.Pod, envs []*Env) ([]*corev1.Pod, []error) {
	if envs != nil && len(envs) != len(pods) {
		panic(fmt.Sprintf("engine: ApplyEach of %d pods with %d envs", len(pods), len(envs)))
	}
	return o.run.apply(ctx, pods, nil, envs, false)
}

// applyLocal applies the overlay to one pod in this process.
func (o *Overlay) applyLocal(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, error) {
	// The pod's Starlark values die once the result is decoded: nothing of an apply outlives
	// it but the pod decoded from its result and errors, which hold no Starlark value. Their
	// memory serves the next apply. It is released before attribute applies again, so that
	// what this apply made is garbage then, as it would be without recycling.
	in, release, err := convert.ToStarlarkRecycled(pod)
	if err != nil {
		return nil, &Error{Overlay: o.name, Err: fmt.Errorf("converting the input pod: %w", err)}
	}
	out, err := o.applyValue(ctx, in, env)
	var res *corev1.Pod
	if err == nil {
		res, err = o.decode(out, pod, env)
	}
	release()
	if e, ok := err.(*Error); ok && len(e.Fields) > 0 {
		o.attribute(ctx, pod, env, e) // the apply again, with write tracking: see provenance.go
	}
	return res, err
}

// applyValue runs the script on the Starlark value of a pod and returns the value of the new pod.
func (o *Overlay) applyValue(ctx context.Context, pod starlark.Value, env *Env) (starlark.Value, error) {
	if ctx.Err() != nil {
		return nil, &Error{Overlay: o.name, Err: ctxError(ctx)}
	}
	began := time.Now()
	thread, stop := o.newThread(ctx)
	globals, err := o.prog.Init(thread, predeclared)
	if err != nil {
		return nil, o.applyError(ctx, err, thread, stop(), began)
	}
	fn := globals["overlay"].(*starlark.Function) // checked by Compile; the top level is deterministic
	args := starlark.Tuple{pod}
	if o.takes == 2 {
		args = append(args, env.value())
	}
	res, err := starlark.Call(thread, fn, args, nil)
	if err != nil {
		return nil, o.applyError(ctx, err, thread, stop(), began)
	}
	stop()
	switch res := res.(type) {
	case starlark.NoneType:
		return pod, nil
	case *starlark.Dict:
		return res, nil
	default:
		return nil, &Error{Overlay: o.name, Pos: fn.Position(),
			Err: fmt.Errorf("overlay returned %s, want dict or None", res.Type())}
	}
}

// decode turns the value an overlay returned for the pod in into a pod, strictly. A pod whose
// env names a workload is that workload's pod template, and ValidatePod checks it as
// ValidatePodTemplate, with no name and namespace but those in had.
func (o *Overlay) decode(v starlark.Value, in *corev1.Pod, env *Env) (*corev1.Pod, error) {
	pod := new(corev1.Pod)
	errs, err := convert.Decode(v, pod, nil, &convert.Options{MaxBytes: o.opts.maxResultBytes()})
	if err != nil {
		var size *convert.SizeError
		if errors.As(err, &size) {
			return nil, &Error{Overlay: o.name, Pos: o.pos,
				Err: &LimitError{Limit: LimitResultSize, Value: fmt.Sprintf("%d bytes", size.Limit), Path: size.Path.String()}}
		}
		return nil, &Error{Overlay: o.name, Pos: o.pos, Err: err}
	}
	errs = append(checkKind(pod), errs...)
	if len(errs) == 0 && o.opts.Validation != ValidateSchema {
		template := o.opts.Validation == ValidatePodTemplate || env != nil && env.Workload != nil
		vopts := &validate.Options{Template: template, Cache: o.names}
		if env != nil && env.Workload != nil {
			vopts.Unnamed, vopts.InName, vopts.InNamespace = true, in.Name, in.Namespace
		}
		errs = validate.Pod(pod, vopts)
	}
	if len(errs) > 0 {
		return nil, &Error{Overlay: o.name, Pos: o.pos, Fields: errs}
	}
	return pod, nil
}

// checkKind checks the kind and apiVersion of a pod an overlay returned: an overlay may leave
// them out, which gives Pod and v1, but not change them.
func checkKind(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	check := func(name string, got *string, want string) {
		switch *got {
		case "":
			*got = want
		case want:
		default:
			errs = append(errs, field.Invalid(field.NewPath(name), *got, fmt.Sprintf("got %q, want %q", *got, want)))
		}
	}
	check("kind", &pod.Kind, "Pod")
	check("apiVersion", &pod.APIVersion, "v1")
	return errs
}

// applyError wraps an error of the execution of an apply that began at began, as evalError
// does. When ctx's end stopped it (and no limit did), the cause is the context's: for its
// deadline a *DeadlineError, with the position and backtrace where the script stopped; for a
// cancel, an error wrapping context.Canceled.
func (o *Overlay) applyError(ctx context.Context, err error, thread *starlark.Thread, lim *LimitError, began time.Time) error {
	cerr := ctx.Err()
	switch {
	case cerr == nil || lim != nil:
		return o.evalError(err, thread, lim)
	case errors.Is(cerr, context.DeadlineExceeded):
		e := o.evalError(err, thread, nil)
		deadline, _ := ctx.Deadline()
		e.Err = &DeadlineError{After: max(deadline.Sub(began).Round(time.Millisecond), time.Millisecond)}
		return e
	default:
		return o.evalError(fmt.Errorf("%w: %v", cerr, err), thread, nil) // the cause is the context's, not the EvalError's
	}
}

// evalError wraps an error of Starlark execution.
func (o *Overlay) evalError(err error, thread *starlark.Thread, lim *LimitError) *Error {
	e := &Error{Overlay: o.name, Err: err}
	var eval *starlark.EvalError
	if errors.As(err, &eval) {
		e.Backtrace = backtrace(eval)
		e.Pos = innermost(eval.CallStack)
		e.Err = errors.New(eval.Msg)
		if cause := eval.Unwrap(); cause != nil {
			e.Err = cause
		}
		if hint := evalHint(e.Err.Error()); hint != "" {
			e.Err = fmt.Errorf("%w; %s", e.Err, hint)
		}
	}
	if lim != nil {
		lim.Err = e.Err
		e.Err = lim
	}
	return e
}

// innermost returns the position of the innermost Starlark (not built-in) frame of stack.
func innermost(stack starlark.CallStack) syntax.Position {
	for i := len(stack) - 1; i >= 0; i-- {
		if pos := stack[i].Pos; pos.IsValid() && pos.Filename() != "<builtin>" {
			return pos
		}
	}
	return syntax.Position{}
}

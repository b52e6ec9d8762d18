package main

// This file defines the flags that every command running overlays shares, and how they
// become compiled overlays.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.starlark.net/syntax"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/internal/yamlfile"
)

// overlayFlags are the flags of the commands that run overlays.
type overlayFlags struct {
	scripts  []string
	args     []string
	root     string
	maxSteps uint64
	timeout  time.Duration
	memory   string   // --max-memory
	isolate  string   // --isolation
	ctx      []string // --ctx, of apply
	ctxFile  string   // --ctx-file, of apply

	validation engine.Validation // what the engine checks of each overlay's result
}

// register adds the flags to fs. withScripts says whether --overlay-script is one of them.
func (f *overlayFlags) register(fs *pflag.FlagSet, withScripts bool) {
	if withScripts {
		fs.StringArrayVar(&f.scripts, "overlay-script", nil, "Starlark overlay `FILE` to apply (repeatable; applied in order)")
	}
	fs.StringArrayVar(&f.args, "overlay-arg", nil, "`KEY=VALUE` passed to overlays as ctx.args (repeatable)")
	fs.StringVar(&f.root, "overlay-root", "", "`DIR` that load() may read from (default: the directory of each overlay)")
	stepsVar(fs, &f.maxSteps, "max-steps", engine.DefaultMaxSteps, "execution `STEPS` allowed per overlay apply")
	fs.DurationVar(&f.timeout, "timeout", engine.DefaultTimeout, "wall `TIME` allowed per overlay apply (e.g. 500ms, 10s)")
	fs.StringVar(&f.memory, "max-memory", "512Mi", "memory `SIZE` allowed to the worker process that runs overlays (e.g. 256Mi, 1Gi)")
	fs.StringVar(&f.isolate, "isolation", "worker", "where overlays run, `MODE`: worker (isolated processes with --max-memory) or none (in this process, faster, with no memory limit: for trusted overlays only)")
}

// registerCtx adds --ctx and --ctx-file to fs: the ctx of overlays that run outside a
// scheduler, for apply.
func (f *overlayFlags) registerCtx(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.ctx, "ctx", nil, "`KEY=VALUE` of the ctx overlays see, to try them as replica N of M: app_id, role, replica_id, num_replicas "+
		"or scheduler (repeatable; replica_id and num_replicas go together, and make the scheduler kubernetes unless it is given)")
	fs.StringVar(&f.ctxFile, "ctx-file", "", "YAML `FILE` of the ctx overlays see: app_id, role, replica_id, num_replicas, scheduler and args, "+
		"as in examples/replica-labels/env.yaml (--ctx and --overlay-arg override it)")
}

// overlayArgs parses --overlay-arg values.
func (f *overlayFlags) overlayArgs() (map[string]string, error) {
	m := make(map[string]string, len(f.args))
	for _, kv := range f.args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--overlay-arg %q: got no '=', want KEY=VALUE", kv)
		}
		if _, dup := m[k]; dup {
			return nil, usagef("--overlay-arg %q: key %q given twice", kv, k)
		}
		m[k] = v
	}
	return m, nil
}

// options returns the engine options for the overlay file, printing print() output to the
// app's standard error as file:line: message.
func (f *overlayFlags) options(a *app, file string) (*engine.Options, error) {
	if f.maxSteps == 0 {
		return nil, usagef("--max-steps: got 0, want a positive number")
	}
	if f.timeout <= 0 {
		return nil, usagef("--timeout: got %v, want a positive duration", f.timeout)
	}
	memory, err := memoryFlag(f.memory)
	if err != nil {
		return nil, err
	}
	if _, err := f.overlayArgs(); err != nil {
		return nil, err
	}
	root := f.root
	if root == "" {
		root = filepath.Dir(file)
	} else if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil, usagef("--overlay-root: got %q, want a directory", root)
	}
	opts := &engine.Options{
		MaxSteps: f.maxSteps,
		Timeout:  f.timeout,
		Loader:   engine.DirLoader(root),
		Print:    a.printer(),

		Validation: f.validation,
	}
	switch f.isolate {
	case "worker", "":
		// Overlays run in worker processes, so that no script can exhaust this one's memory.
		opts.Isolation = engine.WorkerProcess
		opts.MaxMemory = memory
		opts.Workers = workerPool()
	case "none":
		opts.Isolation = engine.InProcess
	default:
		return nil, usagef("--isolation: got %q, want worker or none", f.isolate)
	}
	return opts, nil
}

// prestart starts the worker processes of overlays compiled with opts, if they run in workers,
// in the background: they start while scripts compile and inputs are read.
func prestart(opts *engine.Options) {
	if opts.Isolation == engine.WorkerProcess {
		opts.Workers.Prestart(opts)
	}
}

// printer returns the sink for print(): standard error, one line per call.
func (a *app) printer() func(pos syntax.Position, msg string) {
	var mu sync.Mutex
	return func(pos syntax.Position, msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(a.stderr, "%s:%d: %s\n", pos.Filename(), pos.Line, msg)
	}
}

// compile compiles files in order. It reports every file's errors, not only the first.
func (f *overlayFlags) compile(ctx context.Context, a *app, files []string) (engine.Chain, error) {
	var chain engine.Chain
	var errs []string
	for _, file := range files {
		o, err := f.compileFile(ctx, a, file)
		err = scriptFileError(file, err)
		var usage *usageError
		if errors.As(err, &usage) {
			return nil, err
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		chain = append(chain, o)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return chain, nil
}

// scriptFileError returns err, the error of compiling the --overlay-script file, naming the
// flag and where it looked when the file does not exist.
func scriptFileError(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		if filepath.IsAbs(file) {
			return fmt.Errorf("--overlay-script %s: no such file", file)
		}
		return fmt.Errorf("--overlay-script %s: no such file in the working directory, %s", file, workingDir())
	}
	return err
}

func (f *overlayFlags) compileFile(ctx context.Context, a *app, file string) (*engine.Overlay, error) {
	opts, err := f.options(a, file)
	if err != nil {
		return nil, err
	}
	prestart(opts)
	src, err := bound.ReadFile(file, bound.MaxScript, "script")
	if err != nil {
		return nil, err
	}
	return engine.Compile(ctx, file, src, opts)
}

// env returns the ctx of overlays run outside a scheduler: --ctx-file, then --ctx and
// --overlay-arg. Without them ctx.replica_id and ctx.num_replicas are None.
func (f *overlayFlags) env() (*engine.Env, error) {
	args, err := f.overlayArgs()
	if err != nil {
		return nil, err
	}
	c := &ctxSpec{}
	if f.ctxFile != "" {
		if err := c.readFile(f.ctxFile); err != nil {
			return nil, err
		}
	}
	given := make(map[string]bool)
	for _, kv := range f.ctx {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usagef("--ctx %q: got no '=', want KEY=VALUE", kv)
		}
		if given[k] {
			return nil, usagef("--ctx %q: key %q given twice", kv, k)
		}
		given[k] = true
		if err := c.set(k, v); err != nil {
			return nil, usagef("--ctx %s: %v", kv, err)
		}
	}
	if len(args) > 0 && c.args == nil {
		c.args = make(map[string]string, len(args))
	}
	for k, v := range args {
		c.args[k] = v
	}
	env, err := c.env()
	if err != nil {
		return nil, usagef("%v", err)
	}
	return env, nil
}

// ctxKeys are the keys of --ctx, and with args those of --ctx-file.
var ctxKeys = []string{"app_id", "role", "replica_id", "num_replicas", "scheduler"}

// maxCtxFile bounds the size of a --ctx-file.
const maxCtxFile = 1 << 20

// A ctxSpec is a ctx as the command line gives it; a nil field was not given.
type ctxSpec struct {
	appID, role, scheduler *string
	replicaID, numReplicas *int
	args                   map[string]string
}

// set sets the field k to the text v, from --ctx.
func (c *ctxSpec) set(k, v string) error {
	switch k {
	case "app_id":
		c.appID = &v
	case "role":
		c.role = &v
	case "scheduler":
		if v == "" {
			return errors.New(`got "", want a scheduler such as kubernetes`)
		}
		c.scheduler = &v
	case "replica_id", "num_replicas":
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("got %q, want a whole number", v)
		}
		return c.setReplica(k, n)
	case "args":
		return errors.New("the args are --overlay-arg KEY=VALUE")
	default:
		return fmt.Errorf("unknown key %q; want %s%s", k, oneOf(ctxKeys), didYouMean(k, ctxKeys))
	}
	return nil
}

// setReplica sets replica_id or num_replicas (k) to n.
func (c *ctxSpec) setReplica(k string, n int) error {
	least, field := 0, &c.replicaID
	if k == "num_replicas" {
		least, field = 1, &c.numReplicas
	}
	if n < least {
		return fmt.Errorf("got %d, want at least %d", n, least)
	}
	*field = &n
	return nil
}

// ctxFile is the content of a --ctx-file: the keys of --ctx, and args.
type ctxFile struct {
	AppID       *string           `yaml:"app_id"`
	Role        *string           `yaml:"role"`
	ReplicaID   *int              `yaml:"replica_id"`
	NumReplicas *int              `yaml:"num_replicas"`
	Scheduler   *string           `yaml:"scheduler"`
	Args        map[string]string `yaml:"args"`
}

// readFile reads a ctx file: YAML whose keys are those of --ctx and args, a mapping of
// strings to strings, read as app specs are (yamlfile). A null value is a key not given.
func (c *ctxSpec) readFile(file string) error {
	data, err := bound.ReadFile(file, maxCtxFile, "ctx file")
	if err != nil {
		return fmt.Errorf("--ctx-file: %w", err) // a missing file is an error, as a missing -f file is
	}
	var cf ctxFile
	if err := yamlfile.DecodeFile(file, data, &cf, &yamlfile.Options{What: "ctx file", MaxBytes: maxCtxFile}); err != nil {
		return usagef("--ctx-file: %v", err)
	}
	bad := func(format string, args ...any) error {
		return usagef("--ctx-file %s: %s", file, fmt.Sprintf(format, args...))
	}
	for _, kv := range []struct {
		k string
		v *string
	}{{"app_id", cf.AppID}, {"role", cf.Role}, {"scheduler", cf.Scheduler}} {
		if kv.v != nil {
			if err := c.set(kv.k, *kv.v); err != nil {
				return bad("%s: %v", kv.k, err)
			}
		}
	}
	for _, kn := range []struct {
		k string
		n *int
	}{{"replica_id", cf.ReplicaID}, {"num_replicas", cf.NumReplicas}} {
		if kn.n != nil {
			if err := c.setReplica(kn.k, *kn.n); err != nil {
				return bad("%s: %v", kn.k, err)
			}
		}
	}
	if cf.Args != nil {
		c.args = cf.Args
	}
	return nil
}

// env checks the ctx and returns it: replica_id and num_replicas go together, the one below
// the other, and give a scheduler (kubernetes unless one is given); a scheduler needs them.
func (c *ctxSpec) env() (*engine.Env, error) {
	env := &engine.Env{Args: c.args}
	if c.appID != nil {
		env.AppID = *c.appID
	}
	if c.role != nil {
		env.Role = *c.role
	}
	switch {
	case c.replicaID == nil && c.numReplicas == nil:
		if c.scheduler != nil {
			return nil, fmt.Errorf("ctx: scheduler %s without replica_id and num_replicas; under a scheduler a pod is replica N of M: give both", *c.scheduler)
		}
		return env, nil
	case c.numReplicas == nil:
		return nil, fmt.Errorf("ctx: replica_id without num_replicas; a pod is replica N of M: give both, as in --ctx replica_id=%d --ctx num_replicas=%d", *c.replicaID, *c.replicaID+1)
	case c.replicaID == nil:
		return nil, fmt.Errorf("ctx: num_replicas without replica_id; a pod is replica N of M: give both, as in --ctx replica_id=0 --ctx num_replicas=%d", *c.numReplicas)
	case *c.replicaID >= *c.numReplicas:
		return nil, fmt.Errorf("ctx: got replica_id %d of num_replicas %d, want replica_id below num_replicas (replicas count from 0)", *c.replicaID, *c.numReplicas)
	}
	env.ReplicaID, env.NumReplicas, env.Scheduler = *c.replicaID, *c.numReplicas, "kubernetes"
	if c.scheduler != nil {
		env.Scheduler = *c.scheduler
	}
	return env, nil
}

// oneOf lists words as "a, b or c".
func oneOf(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// didYouMean returns ` (did you mean "x"?)` for the candidate nearest to name, or "".
func didYouMean(name string, candidates []string) string {
	if n := spell.Nearest(name, candidates); n != "" && n != name {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

// A stepsValue is the value of a flag that counts execution steps: a positive integer, and
// its error says so rather than strconv's.
type stepsValue struct{ n *uint64 }

func (v stepsValue) String() string {
	if v.n == nil {
		return "0"
	}
	return strconv.FormatUint(*v.n, 10)
}

func (v stepsValue) Set(s string) error {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		// Zero parses, and is refused with the other checks of the flags.
		return fmt.Errorf("got %q, want a positive number of steps, e.g. %d", s, engine.DefaultMaxSteps)
	}
	*v.n = n
	return nil
}

func (v stepsValue) Type() string { return "uint" }

// stepsVar adds a flag of execution steps to fs.
func stepsVar(fs *pflag.FlagSet, p *uint64, name string, value uint64, usage string) {
	*p = value
	fs.Var(stepsValue{p}, name, usage)
}

// sizeFlag parses the value of the size flag name: a positive Kubernetes quantity of bytes
// that fits in an int64. example is a good value, for the message.
func sizeFlag(name, value, example string) (int64, error) {
	q, err := resource.ParseQuantity(value)
	// A fraction of a byte rounds up; a size beyond an int64 is no size.
	if bound.Quantity(value) != nil || err != nil || q.Sign() <= 0 || q.Value() <= 0 ||
		q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.BinarySI)) > 0 {
		return 0, usagef("%s: got %q, want a positive size such as %s", name, value, example)
	}
	return q.Value(), nil
}

// memoryFlag parses the value of --max-memory: a size of at least sandbox.MinMemory, as a
// process cannot start and run a script in less (bad usage, not an overlay's failure).
func memoryFlag(value string) (int64, error) {
	memory, err := sizeFlag("--max-memory", value, "512Mi")
	if err != nil {
		return 0, err
	}
	if memory < sandbox.MinMemory {
		return 0, usagef("--max-memory: got %s, want at least %s, the memory a process that runs scripts needs",
			value, bound.FormatSize(sandbox.MinMemory))
	}
	return memory, nil
}

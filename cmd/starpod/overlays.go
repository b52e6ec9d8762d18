package main

// This file defines the flags that every command running overlays shares, and how they
// become compiled overlays.

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.starlark.net/syntax"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
)

// overlayFlags are the flags of the commands that run overlays.
type overlayFlags struct {
	scripts  []string
	args     []string
	root     string
	maxSteps uint64
	timeout  time.Duration
	memory   string // --max-memory
	isolate  string // --isolation
}

// register adds the flags to fs. withScripts says whether --overlay-script is one of them.
func (f *overlayFlags) register(fs *pflag.FlagSet, withScripts bool) {
	if withScripts {
		fs.StringArrayVar(&f.scripts, "overlay-script", nil, "Starlark overlay `FILE` to apply (repeatable; applied in order)")
	}
	fs.StringArrayVar(&f.args, "overlay-arg", nil, "`KEY=VALUE` passed to overlays as ctx.args (repeatable)")
	fs.StringVar(&f.root, "overlay-root", "", "`DIR` that load() may read from (default: the directory of each overlay)")
	fs.Uint64Var(&f.maxSteps, "max-steps", engine.DefaultMaxSteps, "execution steps allowed per overlay apply")
	fs.DurationVar(&f.timeout, "timeout", engine.DefaultTimeout, "wall time allowed per overlay apply")
	fs.StringVar(&f.memory, "max-memory", "512Mi", "memory `SIZE` allowed to the worker process that runs overlays (e.g. 256Mi, 1Gi)")
	fs.StringVar(&f.isolate, "isolation", "worker", "where overlays run: worker (isolated processes with --max-memory) or none (in this process, faster, with no memory limit: for trusted overlays only)")
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
	memory, err := resource.ParseQuantity(f.memory)
	if err != nil || memory.Sign() <= 0 {
		return nil, usagef("--max-memory: got %q, want a positive size such as 512Mi", f.memory)
	}
	root := f.root
	if root == "" {
		root = filepath.Dir(file)
	}
	opts := &engine.Options{
		MaxSteps: f.maxSteps,
		Timeout:  f.timeout,
		Loader:   engine.DirLoader(root),
		Print:    a.printer(),
	}
	switch f.isolate {
	case "worker", "":
		// Overlays run in worker processes, so that no script can exhaust this one's memory.
		opts.Isolation = engine.WorkerProcess
		opts.MaxMemory = memory.Value()
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
func (f *overlayFlags) compile(a *app, files []string) (engine.Chain, error) {
	var chain engine.Chain
	var errs []string
	for _, file := range files {
		o, err := f.compileFile(a, file)
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

func (f *overlayFlags) compileFile(a *app, file string) (*engine.Overlay, error) {
	opts, err := f.options(a, file)
	if err != nil {
		return nil, err
	}
	prestart(opts)
	src, err := bound.ReadFile(file, bound.MaxScript, "script")
	if err != nil {
		return nil, err
	}
	return engine.Compile(file, src, opts)
}

// env returns the ctx of overlays run outside a scheduler.
func (f *overlayFlags) env() (*engine.Env, error) {
	args, err := f.overlayArgs()
	if err != nil {
		return nil, err
	}
	return &engine.Env{Args: args}, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package scheduler_test

// This file tests that Render gives the same bytes, and the same errors, when the overlays
// apply in workers as when they run in process, and as Build and Marshal give.

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/syntax"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/scheduler"
)

// workerOptions returns engine options with the overlays in a pool of two workers.
func workerOptions(t *testing.T) engine.Options {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 2})
	t.Cleanup(func() { pool.Close() })
	return engine.Options{Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20}
}

// TestRenderWorkersCases renders every case of testdata/build, every app example and the
// benchmark's app of 1,000 replicas with the overlays in workers, and checks that the output
// or the error is the same as in process.
func TestRenderWorkersCases(t *testing.T) {
	cases, err := loadBuildCases(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, &buildCase{name: "bench", dir: filepath.Dir(benchApp), format: "yaml",
		cfg: scheduler.DefaultConfig(), opts: scheduler.BuildOptions{AppID: "bench", OverlayRoot: benchRoot}})
	eopts := workerOptions(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, _ := c.resultOf(t, engine.Options{})
			got, _ := c.resultOf(t, eopts)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("output (-in process +workers):\n%s", diff)
			}
		})
	}
}

// resultOf is c.result of the app file of c, which is app.yaml or the benchmark's.
func (c *buildCase) resultOf(t *testing.T, eopts engine.Options) (string, bool) {
	t.Helper()
	if c.name != "bench" {
		return c.result(eopts)
	}
	opts := c.opts
	opts.Engine = eopts
	got, err := build(benchApp, c.cfg, opts, c.format)
	if err != nil {
		return err.Error(), true
	}
	return got, false
}

// renderErrors renders app with eopts and returns the text of the error that
// starpod run prints: each error, with its overlay's backtrace if it has one; and the output
// of print(), sorted.
func renderErrors(t *testing.T, app *scheduler.App, eopts engine.Options) (string, []string) {
	t.Helper()
	var mu sync.Mutex
	var prints []string
	eopts.Print = func(pos syntax.Position, msg string) {
		mu.Lock()
		defer mu.Unlock()
		prints = append(prints, pos.String()+": "+msg)
	}
	_, err := scheduler.Render(context.Background(), app, scheduler.DefaultConfig(),
		scheduler.BuildOptions{AppID: "w", Engine: eopts, OverlayArgs: map[string]string{"zone": "z1"}}, "yaml")
	var be *scheduler.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BuildError", err)
	}
	var b strings.Builder
	for _, e := range be.Errs {
		b.WriteString(e.Error() + "\n")
		var ee *engine.Error
		if errors.As(e, &ee) && ee.Backtrace != "" {
			b.WriteString(ee.Backtrace + "\n")
		}
	}
	slices.Sort(prints)
	return b.String(), prints
}

// TestRenderWorkersErrors checks that replicas that fail in a worker (an overlay's fail(),
// a field the schema does not know, a pod that validation rejects, a loop past the time
// limit, a name Volcano owns) are reported as in process, with the overlay's backtrace, and
// that what the overlay prints is printed once.
func TestRenderWorkersErrors(t *testing.T) {
	app := writeApp(t, map[string]string{
		"app.yaml": workerApp,
		"ctx.star": "def overlay(pod, ctx):\n    pass\n",
		"fail.star": "def check(id):\n" +
			"    print(\"replica\", id)\n" +
			"    if id in (3, 70, 149):\n" +
			"        fail(\"no replica %d\" % id)\n" +
			"def overlay(pod, ctx):\n" +
			"    check(ctx.replica_id)\n" +
			"    if ctx.replica_id == 100:\n" +
			"        pod[\"spec\"][\"priorty\"] = 1\n" +
			"    if ctx.replica_id == 120:\n" +
			"        pod[\"spec\"][\"containers\"][0][\"name\"] = \"Bad_Name\"\n" +
			"    if ctx.replica_id == 130:\n" +
			"        pod[\"metadata\"][\"name\"] = \"mine\"\n" +
			"    if ctx.replica_id == 140:\n" +
			"        for i in range(1 << 40):\n" +
			"            pass\n",
	})
	limits := engine.Options{Timeout: time.Second, MaxSteps: 1 << 50}
	want, wantPrints := renderErrors(t, app, limits)
	wopts := workerOptions(t)
	wopts.Timeout, wopts.MaxSteps = limits.Timeout, limits.MaxSteps
	got, gotPrints := renderErrors(t, app, wopts)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-in process +workers):\n%s", diff)
	}
	if diff := cmp.Diff(wantPrints, gotPrints); diff != "" {
		t.Errorf("print() output (-in process +workers):\n%s", diff)
	}
	if len(gotPrints) != 150 {
		t.Errorf("got %d lines of print() output, want 150", len(gotPrints))
	}
	for _, s := range []string{"role a replica 3: ", "no replica 149", "Traceback", "priorty", "Bad_Name", "Volcano names the pods", "replica 140: ", "time limit"} {
		if !strings.Contains(got, s) {
			t.Errorf("the errors do not say %q:\n%s", s, got)
		}
	}
}

// TestRenderWorkersMemoryBomb checks that a replica whose overlay kills its worker by taking
// too much memory is reported as Build reports it. The time limit leaves the bomb room to
// reach the memory limit on a busy machine.
func TestRenderWorkersMemoryBomb(t *testing.T) {
	app := writeApp(t, map[string]string{
		"app.yaml": workerApp,
		"ctx.star": "def overlay(pod, ctx):\n    pass\n",
		"fail.star": "def overlay(pod, ctx):\n" +
			"    if ctx.replica_id == 70:\n" +
			"        s = \"x\" * (1 << 20)\n" +
			"        pod[\"keep\"] = [s + str(i) for i in range(4096)]\n",
	})
	eopts := workerOptions(t)
	eopts.Timeout = 2 * time.Minute
	opts := scheduler.BuildOptions{AppID: "w", Engine: eopts}
	_, berr := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), opts)
	_, rerr := scheduler.Render(context.Background(), app, scheduler.DefaultConfig(), opts, "yaml")
	if berr == nil || rerr == nil {
		t.Fatalf("Build gives %v, Render %v: want errors", berr, rerr)
	}
	if diff := cmp.Diff(berr.Error(), rerr.Error()); diff != "" {
		t.Errorf("errors (-Build +Render):\n%s", diff)
	}
	var le *engine.LimitError
	if !errors.As(rerr, &le) || le.Limit != engine.LimitMemory {
		t.Errorf("got %v, want the memory limit's error", rerr)
	}
}

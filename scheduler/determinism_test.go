package scheduler_test

// This file tests determinism across processes: every golden case of testdata/build and
// every app example of ../examples, built determinismRuns times under GOMAXPROCS 1, 2 and 8
// from as many goroutines with its overlays in process, and determinismWorkerRuns times
// more with them in worker processes, in two separate processes, prints one byte-identical
// job (or error text) per case, and that is the case's golden output.

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/exampletest"
	"github.com/starpod/starpod/scheduler"
)

// determinismEnv makes the test binary a determinism child (see TestMain).
const determinismEnv = "STARPOD_SCHEDULER_DETERMINISM_CHILD"

// Each case is built determinismRuns times in process and determinismWorkerRuns times in
// worker processes under each of determinismProcs (fewer under the race detector; see
// determinism_race_test.go).
var determinismProcs = []int{1, 2, 8}

// A buildCase is one golden case of testdata/build, its files written to dir.
type buildCase struct {
	name     string
	dir      string
	cfg      scheduler.Config
	opts     scheduler.BuildOptions
	format   string
	sched    string // the scheduler: "" for kubernetes, or jobset
	wantName string // want.yaml, want.json or want.err
	want     string // the printed job, or the error text
}

// loadBuildCases writes each testdata/build/*.txtar case into its own directory under dir
// and returns the cases in order of file names, and then the app examples of ../examples.
func loadBuildCases(dir string) ([]*buildCase, error) {
	files, err := filepath.Glob("testdata/build/*.txtar")
	if err != nil {
		return nil, err
	}
	var cases []*buildCase
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		c, err := loadBuildCase(file, filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		c.name = name
		cases = append(cases, c)
	}
	// The app examples of the repository, built as TestExamples builds them.
	apps, err := filepath.Glob("../examples/*/app.yaml")
	if err != nil {
		return nil, err
	}
	for _, app := range apps {
		exampleDir, err := filepath.Abs(filepath.Dir(app))
		if err != nil {
			return nil, err
		}
		want, err := os.ReadFile(filepath.Join(exampleDir, "expected.yaml"))
		if err != nil {
			return nil, err
		}
		cases = append(cases, &buildCase{
			name:     "examples/" + filepath.Base(exampleDir),
			dir:      exampleDir,
			cfg:      scheduler.DefaultConfig(),
			opts:     scheduler.BuildOptions{AppID: "demo", OverlayArgs: map[string]string{}},
			format:   "yaml",
			wantName: "expected.yaml",
			want:     string(want),
		})
	}
	return cases, nil
}

// loadBuildCase writes the app and overlays of the txtar file into dir and reads its options
// and its golden output as TestBuild does.
func loadBuildCase(file, dir string) (*buildCase, error) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		return nil, err
	}
	c := &buildCase{dir: dir, format: "yaml", opts: scheduler.BuildOptions{OverlayArgs: map[string]string{}}}
	var options string
	haveWant := false
	for _, f := range ar.Files {
		switch f.Name {
		case "options":
			options = string(f.Data)
			continue
		case "want.yaml", "want.json", "want.err":
			c.wantName, c.want, haveWant = f.Name, string(f.Data), true
			continue
		}
		path := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			return nil, err
		}
	}
	if !haveWant {
		return nil, fmt.Errorf("no want.yaml, want.json or want.err")
	}
	var cfgs []string
	sc := bufio.NewScanner(strings.NewReader(options))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("options: bad line %q", line)
		}
		switch k {
		case "app-id":
			c.opts.AppID = v
		case "cfg":
			cfgs = append(cfgs, v)
		case "overlay":
			c.opts.Overlays = append(c.opts.Overlays, filepath.Join(dir, v))
		case "overlay-arg":
			ak, av, _ := strings.Cut(v, "=")
			c.opts.OverlayArgs[ak] = av
		case "output":
			c.format = v
		case "scheduler":
			c.sched = v
		default:
			return nil, fmt.Errorf("options: unknown key %q", k)
		}
	}
	sched := c.sched
	if sched == "" {
		sched = scheduler.SchedulerKubernetes
	}
	c.cfg, err = scheduler.ParseConfigFor(sched, cfgs)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// run builds and prints the case with eopts; an error gives its text, without the case's
// directory, as in the golden want.err.
func (c *buildCase) run(eopts engine.Options) string {
	got, _ := c.result(eopts)
	return got
}

// result builds and prints the case with eopts, and reports whether the build failed; the
// output is then the error's text, as run gives it.
func (c *buildCase) result(eopts engine.Options) (string, bool) {
	opts := c.opts
	opts.Engine = eopts
	buildFn := build
	if c.sched == scheduler.SchedulerJobSet {
		buildFn = buildJobSet
	}
	got, err := buildFn(filepath.Join(c.dir, "app.yaml"), c.cfg, opts, c.format)
	if err != nil {
		return strings.ReplaceAll(err.Error(), c.dir+string(filepath.Separator), "") + "\n", true
	}
	return got, false
}

// sha256Hex returns the SHA-256 of s in hex.
func sha256Hex(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }

// determinismChild builds every case determinismRuns times in process and
// determinismWorkerRuns times in worker processes under each GOMAXPROCS and prints one line
// per case: its name and the SHA-256 of its output. It returns the process exit code;
// outputs that differ inside the process are an error.
func determinismChild() int {
	dir, err := os.MkdirTemp("", "starpod-determinism-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cases, err := loadBuildCases(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 2})
	defer pool.Close()
	worker := engine.Options{Isolation: engine.WorkerProcess, Workers: pool}
	for _, c := range cases {
		sums := make(map[string]int)
		var mu sync.Mutex
		add := func(kind, out string) {
			mu.Lock()
			sums[kind+" "+sha256Hex(out)]++
			mu.Unlock()
		}
		for _, procs := range determinismProcs {
			runtime.GOMAXPROCS(procs)
			var wg sync.WaitGroup
			for g := range procs {
				wg.Go(func() {
					for i := g; i < determinismRuns; i += procs {
						add("in-process", c.run(engine.Options{}))
					}
					for i := g; i < determinismWorkerRuns; i += procs {
						add("worker", c.run(worker))
					}
				})
			}
			wg.Wait()
		}
		kinds := make(map[string]bool)
		outputs := make(map[string]bool)
		for k := range sums {
			kind, sum, _ := strings.Cut(k, " ")
			kinds[kind], outputs[sum] = true, true
		}
		if len(outputs) != 1 || len(kinds) != 2 {
			fmt.Fprintf(os.Stderr, "%s: got %d different outputs from %d kinds of build in one process, want 1 from 2 (kind SHA-256: runs): %v\n",
				c.name, len(outputs), len(kinds), sums)
			return 1
		}
		var sum string
		for sum = range outputs {
		}
		fmt.Printf("%s %s\n", c.name, sum)
	}
	return 0
}

// TestDeterminismAcrossProcesses checks that every golden case of testdata/build and every
// app example gives one output, its golden output, however often, with whatever GOMAXPROCS,
// isolation and concurrency it is built, in two processes.
func TestDeterminismAcrossProcesses(t *testing.T) {
	cases, err := loadBuildCases(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 5 {
		t.Fatalf("found %d golden cases, want at least 5", len(cases))
	}
	out := exampletest.SameInTwoProcesses(t, determinismEnv)
	got := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, sum, _ := strings.Cut(line, " ")
		got[name] = sum
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.name)
		sum, ok := got[c.name]
		if !ok {
			t.Errorf("%s: no output from the processes", c.name)
			continue
		}
		delete(got, c.name)
		if want := sha256Hex(c.want); sum != want {
			t.Errorf("%s: every build printed SHA-256 %s, want %s, that of the golden output; a build in this process (-want +got):\n%s",
				c.name, sum, want, cmp.Diff(c.want, c.run(engine.Options{})))
		}
	}
	if len(got) > 0 {
		var extra []string
		for name := range got {
			extra = append(extra, name)
		}
		sort.Strings(extra)
		t.Errorf("outputs for %v, want only those of %v", extra, names)
	}
}

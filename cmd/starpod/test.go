package main

// This file defines "starpod test", which runs each test file in a process of its own with a
// memory limit, as a worker runs overlays.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/startest"
)

// exitLimitRefused is the exit code of a test process that could not limit its memory.
const exitLimitRefused = 3

// maxTestStderr bounds what is kept of a test process's standard error: the Go runtime's
// reason for a crash comes first, its goroutine dump after.
const maxTestStderr = 64 << 10

// testFlags are the flags of "starpod test".
type testFlags struct {
	run     string
	verbose bool
	jobs    int
	overlay overlayFlags
}

func newTestCmd(a *app) *cobra.Command {
	var f testFlags
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run the tests of overlays in *_test.star files",
		Long: `Test finds the *_test.star files that the paths name (directories are searched
recursively; the default is the current directory) and runs each function named test_*.

A test file sees the overlay helpers and:
  assert.eq(got, want), assert.ne(a, b), assert.true(cond), assert.contains(container, item),
  assert.fails(fn, pattern)
  apply(overlay_file, pod, ctx=None)   the pod after the overlay (path relative to the test file);
                                       ctx is a dict or a struct of app_id, role, replica_id,
                                       num_replicas, scheduler and args, such as an overlay gets
  pod_from_yaml(text)                  a pod from YAML or JSON text, checked strictly

A test file may load modules relative to itself, inside its directory.

The report reads like go test's: ok or FAIL for each file, file:line: message for each
failure. What print() prints (in a test, or in an overlay it applies) is shown the same way
under the test when the test fails, or with -v; it never fails a test. What a file's top
level prints is shown when the file fails, or with -v. The exit code is 1 if any test failed.

Each test file runs in a process of its own that limits its memory to --max-memory before
it reads the file (--isolation worker, the default). A file whose tests, or the overlays
they apply, pass the limit fails with "--- FAIL: FILE: exceeded the memory limit of SIZE"
and the first line the process wrote to standard error, and the files after it go on. -j
files run at the same time; their reports come in file order. --isolation none runs every
file in this process, with no memory limit: for trusted tests only.`,
		Example: `  starpod test examples/...
  starpod test -run 'test_gpu' -v overlays/
  starpod test --max-memory 1Gi -j 4 overlays/`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			return f.runTests(cmd.Context(), a, paths)
		},
	}
	cmd.Flags().StringVar(&f.run, "run", "", "run only the tests whose names match `REGEXP`")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "report every test, not only failures")
	cmd.Flags().IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "`N` test files to run at the same time, with --isolation worker (reports stay in file order)")
	// The limits are those of the commands that apply overlays; the memory limit and the
	// isolation are of the process that runs a test file.
	overlay := pflag.NewFlagSet("overlay", pflag.ContinueOnError)
	f.overlay.register(overlay, false)
	for _, name := range []string{"max-steps", "timeout", "max-memory", "isolation"} {
		cmd.Flags().AddFlag(overlay.Lookup(name))
	}
	cmd.Flags().Lookup("max-memory").Usage = "memory `SIZE` allowed to the process that runs each test file (e.g. 256Mi, 1Gi)"
	cmd.Flags().Lookup("isolation").Usage = "where test files run, `MODE`: worker (each in a process of its own, with --max-memory) or none (in this process, with no memory limit: for trusted tests only)"
	return cmd
}

// runTests runs the tests of the files that paths name.
func (f *testFlags) runTests(ctx context.Context, a *app, paths []string) error {
	// A test process limits its memory before it reads any script.
	child := sandbox.IsChild()
	if child {
		if err := sandbox.Enter(); err != nil {
			fmt.Fprintln(a.stderr, err)
			return &exitCodeError{exitLimitRefused}
		}
	}
	opts := &startest.Options{Verbose: f.verbose}
	if f.run != "" {
		re, err := regexp.Compile(f.run)
		if err != nil {
			return usagef("-run: %v", err)
		}
		opts.Run = re
	}
	// Check the flags the engine options come from.
	engineOpts, err := f.overlay.options(a, ".")
	if err != nil {
		return err
	}
	if f.jobs < 1 {
		return usagef("-j: got %d, want at least 1", f.jobs)
	}
	opts.Engine = &engine.Options{MaxSteps: f.overlay.maxSteps, Timeout: f.overlay.timeout}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	files, err := startest.Find(paths)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("no *_test.star files in %s", oneOf(paths))
	}
	if child || engineOpts.Isolation == engine.InProcess {
		if !startest.Run(ctx, files, a.stdout, opts) {
			return &exitCodeError{exitError}
		}
		return nil
	}
	ok, err := f.runProcesses(ctx, a, files, engineOpts.MaxMemory)
	if err != nil {
		return err
	}
	if !ok {
		return &exitCodeError{exitError}
	}
	return nil
}

// runProcesses runs each file in a test process of its own, -j at a time, writes their
// reports in file order and reports whether all passed.
func (f *testFlags) runProcesses(ctx context.Context, a *app, files []string, limit int64) (bool, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	run := func(ctx context.Context, file string, stdout, stderr io.Writer) (bool, error) {
		return f.runProcess(ctx, exe, file, limit, stdout, stderr)
	}
	passed := true
	if f.jobs == 1 || len(files) == 1 {
		// One at a time, the report of each goes out as it is written.
		for _, file := range files {
			ok, err := run(ctx, file, a.stdout, a.stderr)
			if err != nil {
				return false, err
			}
			passed = passed && ok
		}
		return passed, nil
	}
	type result struct {
		stdout, stderr bytes.Buffer
		ok             bool
		err            error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan *result, len(files))
	for i := range results {
		results[i] = make(chan *result, 1)
	}
	// Files start in order, at most -j at a time.
	go func() {
		slots := make(chan struct{}, f.jobs)
		for i, file := range files {
			slots <- struct{}{}
			go func() {
				defer func() { <-slots }()
				r := &result{err: ctx.Err()}
				if r.err == nil {
					r.ok, r.err = run(ctx, file, &r.stdout, &r.stderr)
				}
				results[i] <- r
			}()
		}
	}()
	var stop error
	for i := range files {
		r := <-results[i]
		if stop != nil {
			continue // wait for every process to end
		}
		if r.err != nil {
			stop = r.err
			cancel()
			continue
		}
		_, err := a.stdout.Write(r.stdout.Bytes())
		if err == nil {
			_, err = a.stderr.Write(r.stderr.Bytes())
		}
		if err != nil {
			stop = err
			cancel()
			continue
		}
		passed = passed && r.ok
	}
	return passed, stop
}

// runProcess runs the tests of file in a test process that limits its memory to limit,
// writing its report to stdout and what else it writes to stderr, and reports whether they
// passed. When the process dies, it
// writes a failure for the file in the report's format instead of the runtime's crash: of
// the memory limit if that is what it died of, with the first line of the process's standard
// error. It returns an error, and the run stops, if the process cannot start or limit its
// memory.
func (f *testFlags) runProcess(ctx context.Context, exe, file string, limit int64, stdout, stderr io.Writer) (bool, error) {
	start := time.Now()
	// The process runs the file as "--isolation none" does, with the same flags.
	args := []string{"test", "--isolation=none", "--max-steps=" + strconv.FormatUint(f.overlay.maxSteps, 10),
		"--timeout=" + f.overlay.timeout.String()}
	if f.verbose {
		args = append(args, "-v")
	}
	if f.run != "" {
		args = append(args, "--run="+f.run)
	}
	args = append(args, "--", file)
	cmd := sandbox.Command(ctx, limit, exe, args...)
	out := &lineWriter{w: stdout}
	errOut := &headBuffer{max: maxTestStderr}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		return false, fmt.Errorf("%s: starting a test process: %v", file, err)
	}
	if code := cmd.ProcessState.ExitCode(); code == exitOK || code == exitError {
		// The process ran the file and wrote its report.
		_, err := stderr.Write(errOut.Bytes())
		return code == exitOK, err
	}
	if cmd.ProcessState.ExitCode() == exitLimitRefused {
		return false, errors.New(firstLine(errOut.String()))
	}
	// The process died: its report stops where it was, a failure of the file follows.
	var msg string
	if f := cmd.Failure(); f != nil && f.Reason == sandbox.Memory {
		msg = (&engine.Error{Overlay: file, Err: &engine.LimitError{Limit: engine.LimitMemory, Value: bound.FormatSize(limit)}}).Error()
	} else {
		msg = fmt.Sprintf("%s: the test process failed: %s", file, cmd.ProcessState)
	}
	var b strings.Builder
	if !out.atLineStart() {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "--- FAIL: %s\n", msg)
	if line := deathLine(errOut.String()); line != "" {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	fmt.Fprintf(&b, "FAIL\t%s\t%.3fs\n", file, time.Since(start).Seconds())
	_, err := io.WriteString(stdout, b.String())
	return false, err
}

// deathLine returns the line of a dead test process's standard error that says what it died
// of, without the runtime's "fatal error: " in front: the runtime's or the race detector's
// word on the allocation that failed, or else the first line.
func deathLine(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "runtime: out of memory") || strings.Contains(line, "ThreadSanitizer") {
			return line
		}
	}
	return strings.TrimPrefix(firstLine(stderr), "fatal error: ")
}

// firstLine returns the first line of s that is not empty.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// A lineWriter passes what is written on to w and remembers whether it ended a line.
type lineWriter struct {
	w    io.Writer
	last byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.last = p[len(p)-1]
	}
	return l.w.Write(p)
}

// atLineStart reports whether nothing, or a whole line, was written last.
func (l *lineWriter) atLineStart() bool { return l.last == 0 || l.last == '\n' }

// A headBuffer keeps the first max bytes written to it and drops the rest.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.Len(); room > 0 {
		h.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

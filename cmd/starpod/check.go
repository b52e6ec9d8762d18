package main

// This file defines "starpod check", which compiles overlays, and test files as "starpod
// test" compiles them, without running them.

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/startest"
)

func newCheckCmd(a *app) *cobra.Command {
	f := &overlayFlags{}
	cmd := &cobra.Command{
		Use:   "check PATH...",
		Short: "Compile overlays, components and overlay tests without running them",
		Long: `Check compiles each overlay file: syntax, names, loads, the top level, and the
overlay(pod) or overlay(pod, ctx) function. A *_test.star file is checked as starpod test
compiles it, with assert, apply and pod_from_yaml predeclared: syntax, names and loads; its
tests do not run. A *.star file with no top-level "def overlay(" is a component file (or a
module components load): its top level runs as "starpod run FILE.star:FUNCTION" runs it,
with named_resources, macros and shlex predeclared, and each public function is read as a
component, its flags and help. A directory (DIR or DIR/...) stands for the *.star files
under it, as for starpod test. It prints every error and exits 1 if there was any; it
prints nothing when all files are good.

With --isolation worker (the default) no file is parsed in this process: overlays compile in
worker processes, and each test file and component file in a process of its own, limited to
--max-memory.`,
		Example: `  starpod check overlays/*.star
  starpod check examples/components/`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, files []string) error {
			return runCheck(cmd.Context(), a, f, files)
		},
	}
	f.register(cmd.Flags(), false)
	return cmd
}

func runCheck(ctx context.Context, a *app, f *overlayFlags, files []string) error {
	// A check process limits its memory before it reads any file.
	child := sandbox.IsChild()
	if child {
		if err := sandbox.Enter(); err != nil {
			fmt.Fprintln(a.stderr, err)
			return &exitCodeError{exitLimitRefused}
		}
	}
	// A directory stands for the *.star files under it; any other path is checked as a file,
	// which says why it cannot be read.
	paths := files
	files = nil
	for _, p := range paths {
		if fi, err := os.Stat(strings.TrimSuffix(p, "/...")); err != nil || !fi.IsDir() {
			files = append(files, p)
			continue
		}
		found, err := startest.FindFiles([]string{p}, ".star")
		if err != nil {
			return usagef("%v", err)
		}
		if len(found) == 0 {
			return usagef("no *.star files in %s", p)
		}
		files = append(files, found...)
	}
	failed := false
	for _, file := range files {
		var err error
		switch {
		case strings.HasSuffix(file, "_test.star"):
			err = f.checkTestFile(ctx, a, file, child)
		case !isOverlayFile(file):
			err = f.checkComponentFile(ctx, a, file, child)
		default:
			_, err = f.compileFile(ctx, a, file)
		}
		if err != nil {
			if _, ok := err.(*usageError); ok {
				return err
			}
			if _, ok := err.(*exitCodeError); !ok {
				fmt.Fprintln(a.stderr, err)
			}
			failed = true
		}
	}
	if failed {
		return &exitCodeError{exitError}
	}
	return nil
}

// checkTestFile checks the test file: in this process with --isolation none or in a check
// process, and otherwise in a check process of its own, which prints its errors, limited to
// --max-memory. It returns an *exitCodeError when the check process printed the errors.
func (f *overlayFlags) checkTestFile(ctx context.Context, a *app, file string, child bool) error {
	opts, err := f.options(a, file)
	if err != nil {
		return err
	}
	if child || opts.Isolation == engine.InProcess {
		return startest.Check(ctx, file, &startest.Options{Engine: opts})
	}
	return f.checkInProcess(ctx, a, file, opts.MaxMemory, nil)
}

// checkInProcess checks the file in a check process of its own, which prints its errors,
// limited to memory bytes, with the flags more. It returns an *exitCodeError when the check
// process printed the errors.
func (f *overlayFlags) checkInProcess(ctx context.Context, a *app, file string, memory int64, more []string) error {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	args := append([]string{"check", "--isolation=none",
		"--max-steps=" + strconv.FormatUint(f.maxSteps, 10), "--timeout=" + f.timeout.String()}, more...)
	cmd := sandbox.Command(ctx, memory, exe, append(args, "--", file)...)
	// What the process writes to standard error is its errors, unless it dies: then it is
	// the runtime's crash report, and the error is why it died.
	stderr := &headBuffer{max: maxTestStderr}
	cmd.Stdout, cmd.Stderr = a.stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: starting a check process: %v", file, err)
	}
	switch code := cmd.ProcessState.ExitCode(); code {
	case exitOK, exitError, exitLimitRefused:
		if _, err := a.stderr.Write(stderr.Bytes()); err != nil {
			return err
		}
		if code == exitOK {
			return nil
		}
		return &exitCodeError{code}
	}
	if failure := cmd.Failure(); failure != nil && failure.Reason == sandbox.Memory {
		return &engine.Error{Overlay: file, Err: &engine.LimitError{Limit: engine.LimitMemory, Value: bound.FormatSize(memory)}}
	}
	return fmt.Errorf("%s: the check process failed: %s", file, cmd.ProcessState)
}

// topLevelDef finds the top-level function definitions of a Starlark file. It is compiled
// when check first needs it.
var topLevelDef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(`)
})

// isOverlayFile reports whether the file is an overlay: it defines overlay at its top level,
// or a function whose name is near it (overlays, Overlay: compiling it as an overlay says
// what was meant), or it cannot be read (compiling it says why). The file is searched as
// text, not parsed.
func isOverlayFile(file string) bool {
	src, err := bound.ReadFile(file, bound.MaxScript, "script")
	if err != nil {
		return true
	}
	var names []string
	for _, m := range topLevelDef().FindAllSubmatch(src, -1) {
		names = append(names, string(m[1]))
	}
	return spell.Nearest("overlay", names) != ""
}

// checkComponentFile runs the top level of a component file and reads each of its public
// functions as a component, as starpod run does, and prints each problem: in this process
// with --isolation none or in a check process, and otherwise in a check process of its own,
// limited to --max-memory. It returns an *exitCodeError when there was a problem.
func (f *overlayFlags) checkComponentFile(ctx context.Context, a *app, file string, child bool) error {
	opts, err := f.options(a, file)
	if err != nil {
		return err
	}
	if !child && opts.Isolation != engine.InProcess {
		var more []string
		if f.root != "" {
			more = []string{"--overlay-root=" + f.root}
		}
		return f.checkInProcess(ctx, a, file, opts.MaxMemory, more)
	}
	_, errs, err := component.LoadFile(ctx, file, &component.LoadOptions{
		Engine: engine.Options{MaxSteps: opts.MaxSteps, Timeout: opts.Timeout, Print: opts.Print},
		Root:   f.root,
	})
	if err != nil {
		errs = append(errs, err)
	}
	for _, err := range errs {
		fmt.Fprintln(a.stderr, err)
	}
	if len(errs) > 0 {
		return &exitCodeError{exitError}
	}
	return nil
}

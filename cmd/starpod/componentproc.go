package main

// This file defines the component process: a child of starpod, limited to --max-memory, that
// runs the Starlark of components, as worker processes run overlays, so that a component
// cannot exhaust the memory of the starpod process.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/sandbox"
)

// maxComponentOutput bounds what is kept of a component process's standard output: the YAML
// of a result of at most component.MaxResultBytes of text, or a help or a list.
const maxComponentOutput = 16 << 20

// newComponentProcessCmd returns the hidden command a component process runs:
//
//	starpod component-process [--max-steps N] [--timeout D] [--overlay-root DIR] -- app NAME [ARGS...]
//	starpod component-process [--max-steps N] [--timeout D] -- list DIR
//
// "app" writes 'h' and the help, or 'a' and the YAML of the result, to standard output; "list"
// writes the list of components --dir. Errors go to standard error as starpod run and starpod
// components print them, with their exit codes.
func newComponentProcessCmd(a *app) *cobra.Command {
	f := &overlayFlags{}
	cmd := &cobra.Command{
		Use:    "component-process -- (app NAME [ARGS...] | list DIR)",
		Short:  "Run components in a process limited in memory (for starpod itself)",
		Hidden: true,
		Args:   usageArgs(cobra.MinimumNArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The process limits its memory before it reads any file.
			if sandbox.IsChild() {
				if err := sandbox.Enter(); err != nil {
					fmt.Fprintln(a.stderr, err)
					return &exitCodeError{exitLimitRefused}
				}
			}
			ctx := cmd.Context()
			switch args[0] {
			case "list":
				return listComponents(ctx, a, f, args[1])
			case "app":
				project, err := component.LoadConfig()
				if err != nil {
					return printErrors(a, err)
				}
				eopts := &engine.Options{MaxSteps: f.maxSteps, Timeout: f.timeout, Print: a.printer()}
				data, help, err := componentResult(ctx, a, f.root, project, eopts, args[1], args[2:])
				if err != nil {
					if ue, ok := err.(*usageError); ok {
						// As starpod run prints it, which is the command the user ran.
						fmt.Fprintln(a.stderr, err)
						if !ue.hinted {
							fmt.Fprintln(a.stderr, "Run 'starpod run --help' for usage.")
						}
						return &exitCodeError{exitUsage}
					}
					return printErrors(a, err)
				}
				out := append([]byte{'a'}, data...)
				if help != nil {
					out = append([]byte{'h'}, help...)
				}
				_, err = a.stdout.Write(out)
				return err
			}
			return usagef("got %q, want app or list", args[0])
		},
	}
	f.register(cmd.Flags(), false)
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// runComponentProcess runs starpod component-process with args in a child limited to memory
// bytes, passes on what it writes to standard error (its errors and what components print) as
// it writes it, up to maxTestStderr bytes and then its end (see headWriter),
// and returns what it wrote to standard output. If the child failed it returns an
// *exitCodeError with its exit code once its errors are printed, or an *engine.Error naming
// name when it passed the memory limit.
func runComponentProcess(ctx context.Context, a *app, name string, memory int64, args []string) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := sandbox.Command(ctx, memory, exe, append([]string{"component-process"}, args...)...)
	stdout := &headBuffer{max: maxComponentOutput}
	// What components print reaches the user as they print it.
	stderr := &headWriter{w: a.stderr, max: maxTestStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	stderr.finish()
	if err != nil {
		return nil, fmt.Errorf("%s: starting a component process: %v", name, err)
	}
	if failure := cmd.Failure(); failure != nil && failure.Reason == sandbox.Memory {
		return nil, &engine.Error{Overlay: name, Err: &engine.LimitError{Limit: engine.LimitMemory, Value: bound.FormatSize(memory)}}
	}
	switch code := cmd.ProcessState.ExitCode(); code {
	case exitOK, exitError, exitUsage, exitLimitRefused:
		if code != exitOK {
			return stdout.Bytes(), &exitCodeError{code}
		}
		return stdout.Bytes(), nil
	}
	return nil, fmt.Errorf("%s: the component process failed: %s", name, cmd.ProcessState)
}

// headWriter passes the first max bytes written to it on to w as they come, and keeps the
// last max/4 of the rest, which finish passes on after a line that says how much was left
// out: a component that prints without end neither floods the terminal nor hides the error
// its process writes last. It never fails, so that the process whose output it takes is never
// stopped by it.
type headWriter struct {
	w       io.Writer
	max, n  int
	dropped int    // bytes past the head, not kept in last
	last    []byte // the end of what came past the head
}

func (h *headWriter) Write(p []byte) (int, error) {
	n := len(p)
	if room := h.max - h.n; room > 0 {
		q := p[:min(room, len(p))]
		h.n += len(q)
		h.w.Write(q)
		p = p[len(q):]
	}
	h.last = append(h.last, p...)
	if keep := h.max / 4; len(h.last) > keep {
		cut := len(h.last) - keep
		h.dropped += cut
		h.last = append(h.last[:0], h.last[cut:]...)
	}
	return n, nil
}

// finish passes on the end kept, from its first whole line, after a line that says how many
// bytes were left out.
func (h *headWriter) finish() {
	if len(h.last) == 0 {
		return
	}
	last := h.last
	if h.dropped > 0 {
		if i := bytes.IndexByte(last, '\n'); i >= 0 {
			h.dropped += i + 1
			last = last[i+1:]
		}
		fmt.Fprintf(h.w, "\n[%d bytes of output left out]\n", h.dropped)
	}
	h.w.Write(last)
}

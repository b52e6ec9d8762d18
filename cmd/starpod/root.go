package main

// This file defines the root command, exit codes and the registry of subcommands.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, as kubectl, helm and ytt use them.
const (
	exitOK    = 0 // success (or, in a check mode, no difference)
	exitError = 1 // an evaluation, validation or cluster error (or a difference)
	exitUsage = 2 // bad usage
)

// app carries the process's streams to every subcommand.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// commands holds the constructors of the subcommands; each file that defines a command adds
// its constructor from an init function, so commands live in files of their own.
var commands []func(*app) *cobra.Command

// usageError marks an error as bad usage (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitCodeError carries an exit code whose message has already been printed.
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "starpod",
		Short: "Programmable Starlark overlays for Kubernetes pods and jobs",
		Long: `starpod applies Starlark overlays to Kubernetes pods: sandboxed, deterministic,
limited in steps, time and memory, and validated strictly against the Pod schema.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	// Flag errors are usage errors.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err}
	})
	var subs []*cobra.Command
	for _, newCmd := range commands {
		subs = append(subs, newCmd(a))
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	root.AddCommand(subs...)
	return root
}

// run executes the command line args and returns the process exit code. The end of ctx
// stops the command.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(a)
	root.SetArgs(goStyleFlags(args))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var code *exitCodeError
	if errors.As(err, &code) {
		return code.code
	}
	fmt.Fprintln(stderr, err)
	var usage *usageError
	if errors.As(err, &usage) || isCobraUsageError(err) {
		fmt.Fprintln(stderr, "Run 'starpod --help' for usage.")
		return exitUsage
	}
	return exitError
}

// isCobraUsageError reports whether err is cobra's own complaint about the command line,
// which cobra returns as a plain error.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag")
}

// usageArgs wraps a cobra positional-argument check so its error exits 2.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// goStyleFlags lets "starpod test" take go test's single-dash -run flag.
func goStyleFlags(args []string) []string {
	if len(args) == 0 || args[0] != "test" {
		return args
	}
	out := make([]string, len(args))
	for i, arg := range args {
		if arg == "-run" || strings.HasPrefix(arg, "-run=") {
			arg = "-" + arg
		}
		out[i] = arg
	}
	return out
}

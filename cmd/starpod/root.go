package main

// This file defines the root command, exit codes and the registry of subcommands.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/scheduler"
)

// Exit codes, as kubectl, helm and ytt use them.
const (
	exitOK    = 0 // success (or, in a check mode, no difference)
	exitError = 1 // an evaluation, validation or cluster error (or a difference)
	exitUsage = 2 // bad usage
)

// app carries the process's streams to every subcommand.
type app struct {
	stdin         io.Reader
	stdinTerminal bool // stdin is a terminal
	stdout        io.Writer
	stderr        io.Writer
}

// commands holds the constructors of the subcommands, each defined in a file of its own.
var commands = []func(*app) *cobra.Command{
	newApplyCmd, newCheckCmd, newTestCmd, newFnCmd, newBuiltinsCmd,
	newRunCmd, newRunoptsCmd, newComponentsCmd, newComponentProcessCmd,
	newStatusCmd, newDescribeCmd, newLogsCmd, newListCmd, newCancelCmd, newDeleteCmd,
	newWebhookCmd, newVersionCmd, newWorkerCmd,
}

// usageError marks an error as bad usage (exit 2).
type usageError struct {
	err error
	// hinted says the message already says where the help is: no other hint follows it.
	hinted bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit 2).
func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
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
		return &usageError{err: err}
	})
	var subs []*cobra.Command
	for _, newCmd := range commands {
		subs = append(subs, newCmd(a))
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	root.AddCommand(subs...)
	registerCompletions(root)
	refuseUnknownShells(root)
	return root
}

// refuseUnknownShells makes "completion SHELL" of a shell cobra writes no script for bad usage
// (exit 2), rather than cobra's help and exit 0.
func refuseUnknownShells(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sub := range c.Commands() {
			shells = append(shells, sub.Name())
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usagef("completion: got shell %q, want one of %s", args[0], strings.Join(shells, ", "))
		}
	}
}

// outputFormats are the -o values of each command that has -o, for shell completion; the
// first is the default. Each command checks its own value.
var outputFormats = map[string][]string{
	"apply":    {"yaml", "json"},
	"run":      {"yaml", "json"},
	"describe": {"yaml", "json"},
	"status":   {"json"},
	"list":     {"json"},
}

// registerCompletions makes the values of -o and the keys of --cfg complete in the shell, for
// every subcommand of root that has those flags: --cfg completes the run options of the
// scheduler (the cluster commands take only namespace), each followed by "=".
func registerCompletions(root *cobra.Command) {
	for _, cmd := range root.Commands() {
		if cmd.Flags().Lookup("output") != nil {
			formats := outputFormats[cmd.Name()]
			cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
		}
		if cmd.Flags().Lookup("cfg") != nil {
			keys := runOptionKeys()
			if cmd.Name() != "run" {
				keys = keys[:1] // namespace, the only key that finds apps
			}
			cmd.RegisterFlagCompletionFunc("cfg", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				// --cfg takes KEY=VALUE,...: complete the key after the last comma, and
				// nothing in a value.
				before, last := "", toComplete
				if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
					before, last = toComplete[:i+1], toComplete[i+1:]
				}
				if strings.Contains(last, "=") {
					return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
				}
				var out []cobra.Completion
				for _, k := range keys {
					if strings.HasPrefix(k.name, last) {
						out = append(out, cobra.CompletionWithDesc(before+k.name+"=", k.help))
					}
				}
				return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
			})
		}
	}
}

// A runOptionKey is a key of --cfg and its help.
type runOptionKey struct{ name, help string }

// runOptionKeys returns the run options of the scheduler, namespace first.
func runOptionKeys() []runOptionKey {
	var keys []runOptionKey
	for _, o := range scheduler.ConfigOptions {
		k := runOptionKey{o.Name, o.Help}
		if o.Name == "namespace" {
			keys = append([]runOptionKey{k}, keys...)
		} else {
			keys = append(keys, k)
		}
	}
	return keys
}

// annotationServer marks a command that serves until a signal stops it (starpod webhook):
// once it has shut down cleanly, the signal is its normal end, and it exits 0.
const annotationServer = "starpod.dev/server"

// run executes the command line args and returns the process exit code. The end of ctx
// stops the command.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	in := newStopReader(ctx, stdin)
	// Once a signal stops the command, what it would say of its end (a worker killed, a
	// computation cancelled) is the signal's doing: only the line below says so.
	a := &app{stdin: in, stdinTerminal: in.isTerminal(), stdout: &stopWriter{ctx, stdout}, stderr: &stopWriter{ctx, stderr}}
	setFastPaths()
	root := newRootCmd(a)
	root.SetArgs(goStyleFlags(args))
	cmd, err := root.ExecuteContextC(ctx)
	// Every worker the command started has exited before it does.
	closeWorkers()
	if code, sigErr, ok := signalCode(ctx); ok && !(err == nil && cmd != nil && cmd.Annotations[annotationServer] != "") {
		// Whatever the command returned, it stopped because it was told to; but a server
		// that shut down cleanly on a signal ended as it is meant to (Kubernetes stops a
		// pod with SIGTERM).
		path := root.CommandPath()
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "%s: %v\n", path, sigErr)
		return code
	}
	if err == nil {
		return exitOK
	}
	var code *exitCodeError
	if errors.As(err, &code) {
		return code.code
	}
	fmt.Fprintln(stderr, err)
	var usage *usageError
	if errors.As(err, &usage) && usage.hinted {
		return exitUsage
	}
	if usage != nil || isCobraUsageError(err) {
		// Point at the help of the command that was run: its flags are there.
		path := root.CommandPath()
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
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

// usageArgs wraps a cobra positional-argument check so its error exits 2. An argument given
// to a command that takes none is "unexpected", not cobra's "unknown command": the command
// has no subcommands.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			if len(args) > 0 && !cmd.HasSubCommands() && strings.HasPrefix(err.Error(), "unknown command") {
				return unexpectedArgs(cmd, args, "")
			}
			return usagef("%s: %v", cmd.Name(), err)
		}
		return nil
	}
}

// unexpectedArgs returns the usage error of a command given the arguments args, which it
// takes none of, with hint after it.
func unexpectedArgs(cmd *cobra.Command, args []string, hint string) error {
	quoted := make([]string, len(args))
	for i, arg := range args {
		quoted[i] = strconv.Quote(arg)
	}
	s := ""
	if len(args) > 1 {
		s = "s"
	}
	return usagef("%s: unexpected argument%s %s%s", cmd.Name(), s, strings.Join(quoted, " "), hint)
}

// shellQuote quotes s for a POSIX shell, when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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

package main

// This file defines "starpod components", and how "starpod run" calls a component.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/scheduler"
)

func newComponentsCmd(a *app) *cobra.Command {
	var dir string
	f := &overlayFlags{}
	cmd := &cobra.Command{
		Use:   "components [--dir DIR]",
		Short: "List the builtin components, or those of a directory, with their summaries",
		Long: `Components lists the builtin components that "starpod run COMPONENT" runs, each with the
first line of its docstring. With --dir it lists instead the public functions of the *.star
files of DIR (not of its subdirectories, and not of *_test.star files) as FILE.star:FUNCTION.
"starpod run COMPONENT --help" shows a component's flags.`,
		Example: `  starpod components
  starpod components --dir examples/components`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return listComponents(cmd.Context(), a, f, dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "list the components of the *.star files of `DIR`")
	// The files of --dir run as run runs a component: within the same limits.
	limits := pflag.NewFlagSet("limits", pflag.ContinueOnError)
	f.register(limits, false)
	for _, name := range []string{"max-steps", "timeout", "max-memory"} {
		cmd.Flags().AddFlag(limits.Lookup(name))
	}
	cmd.Flags().Lookup("max-memory").Usage = "memory `SIZE` allowed to the process that runs the files of --dir (e.g. 256Mi, 1Gi)"
	return cmd
}

// listComponents lists the builtin components, or those of the files of dir, which run within
// the limits of f.
func listComponents(ctx context.Context, a *app, f *overlayFlags, dir string) error {
	var errs []error
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if dir == "" {
		for _, name := range component.BuiltinNames() {
			c, err := component.Load(ctx, name, nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\n", name, c.Summary)
		}
	} else {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return usagef("--dir: got %q, want a directory", dir)
		}
		if !sandbox.IsChild() {
			// The files are someone's code: they run in a component process, limited in
			// memory, which prints the list and the errors.
			memory, err := memoryFlag(f.memory)
			if err != nil {
				return err
			}
			out, err := runComponentProcess(ctx, a, dir, memory, []string{"--max-steps=" + strconv.FormatUint(f.maxSteps, 10),
				"--timeout=" + f.timeout.String(), "--", "list", dir})
			if _, werr := a.stdout.Write(out); werr != nil {
				return werr
			}
			if err != nil {
				var code *exitCodeError
				if errors.As(err, &code) {
					return err
				}
				return printErrors(a, err)
			}
			return nil
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.star"))
		if err != nil {
			return usagef("--dir: %v", err)
		}
		sort.Strings(files)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.star") {
				continue
			}
			// Each file runs once; a file that does not load, or a function that is no
			// component, is reported, and the others are still listed.
			cs, ferrs, err := component.LoadFile(ctx, file, &component.LoadOptions{
				Engine: engine.Options{MaxSteps: f.maxSteps, Timeout: f.timeout, Print: a.printer()}})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, ferrs...)
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\n", c.Name, c.Summary)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(errs) > 0 {
		return printErrors(a, &multiError{errs})
	}
	return nil
}

// multiError holds several errors that printErrors prints one after another.
type multiError struct{ errs []error }

func (e *multiError) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n")
}

// parseTrailingFlags parses the flags of "starpod run" that follow an app spec: run's flags
// stop at the first argument that is not one, so that the flags after a component are the
// component's. It reports whether it has handled the command (printed the help).
func parseTrailingFlags(cmd *cobra.Command, args []string) (bool, error) {
	if len(args) == 0 {
		return false, nil
	}
	fs := cmd.Flags()
	fs.SetInterspersed(true)
	if err := fs.Parse(args); err != nil {
		return false, &usageError{err: err}
	}
	if help, _ := fs.GetBool("help"); help {
		return true, cmd.Help()
	}
	if rest := fs.Args(); len(rest) > 0 {
		return false, unexpectedArgs(cmd, rest, "")
	}
	return false, nil
}

// componentApp loads the component name, parses its arguments and calls it. With --help among
// the arguments it prints the component's help and reports that the command is done. Bad
// usage is a *usageError; other errors are returned for printErrors, with the app if there is
// one (whose problems Build reports). With --isolation worker the component runs in a
// component process limited to --max-memory (see componentProcess), which prints its own
// errors: the command is then done, with its exit code.
func componentApp(ctx context.Context, a *app, f *runFlags, project *component.Config, eopts *engine.Options, name string, args []string) (*scheduler.App, bool, error) {
	root := f.root
	if root != "" {
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil, false, usagef("--overlay-root: got %q, want a directory", root)
		}
	}
	var data, help []byte
	var err error
	if eopts.Isolation == engine.WorkerProcess && !sandbox.IsChild() {
		child := []string{"--max-steps=" + strconv.FormatUint(eopts.MaxSteps, 10), "--timeout=" + eopts.Timeout.String()}
		if root != "" {
			child = append(child, "--overlay-root="+root)
		}
		child = append(append(child, "--", "app", name), args...)
		var out []byte
		out, err = runComponentProcess(ctx, a, name, eopts.MaxMemory, child)
		if err != nil {
			var code *exitCodeError
			return nil, errors.As(err, &code), err
		}
		kind, body := byte(0), []byte(nil)
		if len(out) > 0 {
			kind, body = out[0], out[1:]
		}
		switch kind {
		case 'h':
			help = body
		case 'a':
			data = body
		default:
			return nil, false, fmt.Errorf("%s: the component process gave no answer", name)
		}
	} else {
		data, help, err = componentResult(ctx, a, root, project, eopts, name, args)
		if err != nil {
			return nil, false, err
		}
	}
	if help != nil {
		_, err := a.stdout.Write(help)
		return nil, true, err
	}
	app, err := component.AppFromResult(name, data)
	return app, false, err
}

// componentResult loads the component name, parses its arguments and calls it, in this
// process: it returns the YAML of its result, or its help for --help. Its errors are as
// componentApp's.
func componentResult(ctx context.Context, a *app, root string, project *component.Config, eopts *engine.Options, name string, args []string) (data, help []byte, err error) {
	c, err := component.Load(ctx, name, &component.LoadOptions{
		Engine:    engine.Options{MaxSteps: eopts.MaxSteps, Timeout: eopts.Timeout, Print: eopts.Print},
		Root:      root,
		Resources: project.NamedResources,
	})
	var nf *component.NotFoundError
	if errors.As(err, &nf) {
		return nil, nil, &usageError{err: err}
	}
	if err != nil {
		return nil, nil, err
	}
	cargs, err := c.ParseArgs(args, project.Components[name])
	if errors.Is(err, component.ErrHelp) {
		var b bytes.Buffer
		c.WriteHelp(&b, "starpod run")
		return nil, b.Bytes(), nil
	}
	var ue *component.UsageError
	if errors.As(err, &ue) && ue.ConfigKey != "" {
		// A bad value in the project config: reported at its line, as the config's other
		// problems are.
		return nil, nil, project.FieldError(field.NewPath("components").Key(name).Key(ue.ConfigKey), ue.Err.Error())
	}
	if err != nil {
		// The component's flags are in its own help, not in run's.
		return nil, nil, componentUsage(err, name)
	}
	data, err = c.Result(ctx, cargs)
	if errors.As(err, &ue) {
		// The component refused its arguments (usage_error): a bad command line, no traceback.
		return nil, nil, componentUsage(ue, name)
	}
	return data, nil, err
}

// componentUsage is the usage error of a component's command line, which points at the
// component's help: its flags are there, not in run's.
func componentUsage(err error, name string) error {
	return &usageError{err: fmt.Errorf("%v\nRun 'starpod run %s --help' for the component's flags.", err, name), hinted: true}
}

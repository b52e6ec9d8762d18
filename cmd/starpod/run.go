package main

// This file defines "starpod run": an app spec in, a Volcano Job out.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/cluster"
	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/scheduler"
)

type runFlags struct {
	overlayFlags
	scheduler  string
	cfg        []string
	dryRun     string
	wait       bool
	kubeconfig string
	context    string
	namespace  string
	output     string
	appID      string
	diff       bool // --diff, with --dry-run
}

func newRunCmd(a *app) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [-s kubernetes|jobset] [--cfg KEY=VALUE,...] [--overlay-script FILE]... [--dry-run] (APP.yaml | COMPONENT [COMPONENT FLAGS] [-- ARGS...])",
		Short: "Run an app of roles as a Volcano Job or a JobSet",
		Long: `Run loads the app spec APP.yaml, builds one pod per replica of each role, applies the
app's overlays, then each role's, then the --overlay-script files, sets starpod's
bookkeeping labels (which overlays cannot change), and makes one Volcano Job of them.

With --dry-run (or --dry-run=client) it prints the Job (sorted keys, no nulls) and never
contacts a cluster; --dry-run=server has the API server check it too, creates nothing,
and prints the Job as the server would store it, as "kubectl create --dry-run=server
-o yaml" does (apiVersion and kind included, managedFields left out); without --dry-run
it submits the Job and prints its handle. Every pod is first checked offline for what the API server would
reject: names, labels, enumerated fields (restartPolicy, dnsPolicy, imagePullPolicy,
port protocols), port numbers, env entries, and requests against limits.

Every problem is reported, one a line with its file:line:col or field path, and nothing
is printed or submitted: those of the spec, the app id and every overlay together, and,
when the spec and the overlays are fine, those of every replica.
The --cfg keys are listed by "starpod runopts kubernetes".

With -s jobset the app becomes one JobSet (jobset.x-k8s.io/v1alpha2) instead: a replicated
job per role, an indexed Job of one pod per replica, whose one pod template the overlays
see once per role (ctx.replica_id is -1, ctx.scheduler "jobset"); each pod finds its
replica id in $(STARPOD_REPLICA_ID) (its completion index) and rank 0's host in
$(STARPOD_RANK0_HOST). --cfg queue=Q queues it in Kueue's LocalQueue Q, created suspended
for Kueue to admit. Elastic roles (min_replicas) need Volcano. Its --cfg keys are listed by
"starpod runopts jobset", and its project config run options are run_options.jobset.

COMPONENT is a builtin component (dist.ddp, dist.spmd, utils.python, ...; see "starpod
components") or FILE.star:FUNCTION, a Starlark function that returns the app: the flags after
it are the function's parameters, and "starpod run COMPONENT --help" describes them. Flags of
run itself go before COMPONENT. The app it returns is decoded, checked and built as an
APP.yaml is.

A project config, .starpod.yaml in the working directory or the file $STARPOD_CONFIG names,
gives default run options (run_options.kubernetes), default component arguments
(components.NAME), named resources for -h (named_resources) and overlays applied before the
--overlay-script files (overlays). The command line wins over the file, and the file over
the builtin defaults; "starpod runopts" shows where each value comes from.

The job's namespace is -n/--namespace, else --cfg namespace=, else the project config's,
else the kubeconfig context's, else default: when both are given, -n wins, as kubectl's -n
wins over the context's namespace.`,
		Example: `  starpod run --dry-run --app-id demo examples/llama-ft/app.yaml
  starpod run --dry-run dist.ddp -j 2:4x8 --script train.py -- --lr 0.1
  starpod run -s jobset --cfg queue=team-a dist.ddp -j 2x8 --script train.py
  starpod run --dry-run lib/trainers.star:trainer --nodes 4
  starpod run dist.ddp --help
  starpod run -n ml --wait app.yaml
  starpod run --cfg queue=gpu,namespace=ml --overlay-script spot.star --overlay-arg zone=b app.yaml`,
		// One APP.yaml or COMPONENT; what follows a component is its own.
		Args: usageArgs(func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cobra.ExactArgs(1)(cmd, args)
			}
			return nil
		}),
		// The first argument completes to the builtin components as well as to files.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveDefault
			}
			var out []cobra.Completion
			for _, name := range component.BuiltinNames() {
				if strings.HasPrefix(name, toComplete) {
					out = append(out, name)
				}
			}
			return out, cobra.ShellCompDirectiveDefault
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !component.IsComponent(args[0]) {
				// An app spec: the flags may follow it, as before components.
				rest, err := parseTrailingFlags(cmd, args[1:])
				if err != nil || rest {
					return err
				}
			}
			return runRun(cmd.Context(), a, f, args[0], args[1:])
		},
	}
	fs := cmd.Flags()
	// The flags after a component are the component's: run's own flags go before it.
	fs.SetInterspersed(false)
	f.register(fs, true)
	fs.StringVarP(&f.scheduler, "scheduler", "s", "kubernetes", "`SCHEDULER` to run on: kubernetes (a Volcano Job) or jobset (a JobSet, queued by Kueue with --cfg queue=)")
	fs.StringArrayVar(&f.cfg, "cfg", nil, "run options `KEY=VALUE,...` (repeatable; see starpod runopts SCHEDULER)")
	cmd.RegisterFlagCompletionFunc("scheduler", cobra.FixedCompletions(scheduler.Schedulers, cobra.ShellCompDirectiveNoFileComp))
	fs.StringVar(&f.dryRun, "dry-run", "none", "`MODE`: client prints the job without contacting a cluster, server has the API server check it")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&f.diff, "diff", false, "with --dry-run: print a unified diff of each task's pod before and after the overlays instead of the job (exit 0 whether or not anything changed)")
	fs.BoolVar(&f.wait, "wait", false, "follow the app until it ends, showing its progress on standard error; exit 1 unless it succeeded")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig `CONTEXT` to use")
	registerNamespace(fs, &f.namespace)
	fs.StringVarP(&f.output, "output", "o", "yaml", "output `FORMAT`: yaml or json")
	fs.StringVar(&f.appID, "app-id", "", "`ID` to use as the job's name instead of a generated one (for reproducible output)")
	return cmd
}

func runRun(ctx context.Context, a *app, f *runFlags, spec string, componentArgs []string) error {
	if scheduler.OptionsOf(f.scheduler) == nil {
		return usagef("--scheduler: got %q, want %s", f.scheduler, strings.Join(scheduler.Schedulers, " or "))
	}
	jobSet := f.scheduler == scheduler.SchedulerJobSet
	if f.output != "yaml" && f.output != "json" {
		return usagef("--output: got %q, want yaml or json", f.output)
	}
	switch f.dryRun {
	case "none", "client", "server":
	default:
		return usagef("--dry-run: got %q, want client or server", f.dryRun)
	}
	if f.wait && f.dryRun != "none" {
		return usagef("--wait: a dry run has nothing to wait for")
	}
	if f.diff && (f.dryRun != "client" || f.output != "yaml") {
		return usagef("--diff: only with --dry-run (client) and YAML output")
	}
	if f.diff && jobSet {
		return usagef("--diff: only with -s kubernetes, whose pods are one per replica")
	}
	// Check the limit flags; the loader is set per overlay by Build. The workers start now,
	// while this process reads the project config, the kubeconfig and the spec.
	eopts, err := f.options(a, spec)
	if err != nil {
		return err
	}
	eopts.Loader = nil
	prestart(eopts)
	// The project config's run options come first, so that --cfg wins over them.
	project, err := component.LoadConfig()
	if err == nil {
		err = project.CheckOverlays(f.root)
	}
	if err != nil {
		return printErrors(a, err)
	}
	fileSettings := project.Settings(f.scheduler)
	if _, err := scheduler.ParseConfigFor(f.scheduler, fileSettings); err != nil {
		return printErrors(a, &component.ConfigError{File: project.File, Err: fmt.Errorf("run_options: %v", err)})
	}
	cfg, err := scheduler.ParseConfigFor(f.scheduler, append(fileSettings, f.cfg...))
	if err != nil {
		return usagef("--cfg: %v", err)
	}
	switch {
	case f.namespace != "":
		// As kubectl's -n beats the context's namespace, -n beats --cfg namespace=.
		if err := checkNamespace(f.namespace); err != nil {
			return err
		}
		cfg.Namespace = f.namespace
	case !cfgSets(f.cfg, "namespace") && !cfgSets(fileSettings, "namespace"):
		// As kubectl does: the namespace of the kubeconfig context, else default. Only local
		// files are read, so a dry run shows what a real run would create.
		cfg.Namespace = cluster.ContextNamespace(f.kubeconfig, f.context)
	}
	args, err := f.overlayArgs()
	if err != nil {
		return err
	}
	// Each overlay's pod is checked as the API server would check a pod template, so that a
	// problem is reported at the line of the overlay that wrote it; Build checks the pod of
	// each task again, with what Volcano owns.
	eopts.Validation = engine.ValidatePodTemplate
	var app *scheduler.App
	if component.IsComponent(spec) {
		var done bool
		app, done, err = componentApp(ctx, a, f, project, eopts, spec, componentArgs)
		var usage *usageError
		if done || errors.As(err, &usage) {
			return err
		}
	} else {
		app, err = scheduler.LoadApp(spec)
	}
	if app == nil {
		return printErrors(a, err)
	}
	// An app with problems comes back with them (a *SpecError); Build and Render report them
	// together with those of the overlays and the app id, and build nothing.
	bopts := scheduler.BuildOptions{
		AppID:       f.appID,
		Overlays:    append(project.OverlayPaths(), f.scripts...),
		OverlayArgs: args,
		Engine:      *eopts,
		OverlayRoot: f.root,
	}
	if f.diff {
		return runDiff(ctx, a, app, cfg, bopts)
	}
	if jobSet {
		return runJobSet(ctx, a, f, app, cfg, bopts)
	}
	if f.dryRun == "client" {
		out := &errWriter{w: a.stdout}
		if err := scheduler.RenderTo(ctx, out, app, cfg, bopts, f.output); err != nil {
			if out.err != nil {
				return err // the job was built, and writing it failed
			}
			return printErrors(a, err)
		}
		return nil
	}
	job, err := scheduler.Build(ctx, app, cfg, bopts)
	if err != nil {
		return printErrors(a, err)
	}
	return submitJob(ctx, a, job, f.submitOptions())
}

// runJobSet builds the JobSet of app and prints it (a client dry run) or submits it.
func runJobSet(ctx context.Context, a *app, f *runFlags, app *scheduler.App, cfg scheduler.Config, bopts scheduler.BuildOptions) error {
	js, err := scheduler.BuildJobSet(ctx, app, cfg, bopts)
	if err != nil {
		return printErrors(a, err)
	}
	if f.dryRun == "client" {
		out, err := scheduler.MarshalJobSet(js, f.output)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(out)
		return err
	}
	return submitJobSet(ctx, a, js, f.submitOptions())
}

// submitOptions returns how the flags have a job or JobSet submitted.
func (f *runFlags) submitOptions() submitOptions {
	return submitOptions{Kubeconfig: f.kubeconfig, Context: f.context, DryRunServer: f.dryRun == "server", Wait: f.wait, Output: f.output}
}

// cfgSets reports whether the --cfg settings give key a value.
func cfgSets(settings []string, key string) bool {
	pairs, _ := scheduler.SplitSettings(settings) // ParseConfig has reported any error
	for _, kv := range pairs {
		if kv.Key == key {
			return true
		}
	}
	return false
}

// printErrors prints every problem of a failed load or build on standard error, one a line,
// with the Starlark backtrace after an overlay's runtime error, and returns exit code 1.
// An errWriter writes to w and keeps the first error of a write.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

func printErrors(a *app, err error) error {
	errs := []error{err}
	var build *scheduler.BuildError
	if errors.As(err, &build) {
		errs = build.Errs
	}
	for _, err := range errs {
		var missing *fs.PathError
		if build != nil && errors.As(err, &missing) && errors.Is(err, fs.ErrNotExist) {
			// A file of the command line's (the spec's are *SpecErrors): named as apply
			// names it, with the flag and where it was looked for.
			err = scriptFileError(missing.Path, err)
		}
		fmt.Fprintln(a.stderr, err)
		var e *engine.Error
		if errors.As(err, &e) && e.Backtrace != "" {
			fmt.Fprintln(a.stderr, strings.TrimRight(e.Backtrace, "\n"))
		}
	}
	return &exitCodeError{exitError}
}

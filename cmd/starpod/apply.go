package main

// This file defines the apply command: its flags, its help and runApply, which sets up the
// pipeline (internal/pipeline) that applies the overlays and writes the documents to the
// spool (apply_output.go).

import (
	"context"
	"errors"
	"fmt"
	"github.com/starpod/starpod/internal/fast"
	"github.com/starpod/starpod/internal/pipeline"
	"github.com/starpod/starpod/internal/residency"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/stream"
)

type applyFlags struct {
	overlayFlags
	files    []string
	output   string
	jobs     int
	maxDoc   string   // --max-document-size
	maxInput string   // --max-input-size
	podTmpl  []string // --pod-template
	diff     bool     // --diff
	explain  bool     // --explain
}

func newApplyCmd(a *app) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply --overlay-script FILE... [-f FILE|-]... [-o yaml|json]",
		Short: "Apply overlays to every Pod and pod template of a YAML or JSON stream",
		Long: `Apply reads a multi-document YAML or JSON stream (the -f files in order, or standard
input), applies the overlays in order to every Pod and every pod template, passes every
other document through unchanged and writes the documents in input order to standard output.

Pod templates are those of PodTemplate, ReplicationController, Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job and CronJob, of Volcano Jobs, JobSets, Kubeflow's PyTorchJob,
TFJob, MPIJob, XGBoostJob and PaddleJob, Ray's RayCluster and RayJob, LeaderWorkerSets, of
the items of a v1 List, and of the kinds --pod-template names. An overlay gets a template as
a pod (apiVersion v1, kind Pod, the template's metadata and spec), and ctx.workload names the
object it belongs to (kind, api_version, name, namespace and path; None for a bare pod). A
template has no name and no namespace: a result that sets them is an error. A document that
holds a template the overlays changed is encoded anew, with sorted keys. When the input holds
no pod and no template, a warning goes to standard error. A Pod the overlays
do not change is written as it was read, comments and all, when the output format is the
input's; a changed Pod is encoded anew, with sorted keys, and without the empty status: {}
and resources: {} its document did not hold. It streams: -j documents are
applied at the same time, and output beyond 256 KiB waits in a temporary file,
which is removed at the end.

With -o json, several documents are written as kubectl writes them, as the items of one
v1 List ({"apiVersion": "v1", "items": [...], "kind": "List", ...}), so that the output is
one JSON value; a single document is written as itself. A document read from YAML is
written with sorted keys, as kubectl prints maps.

Nothing is written unless every document succeeds: on any error, standard output stays
empty, the error goes to standard error and the exit code is 1. Ctrl-C (SIGINT) or SIGTERM
stops apply at once, also while it waits on standard input: nothing more is written, its
workers exit, and the exit code is 130 or 143; a second signal ends it at once. On a
terminal, without -f, apply says that it reads standard input; Ctrl-D ends the input.

Streams are split as kubectl splits them: a line "---" (with spaces or a comment after it)
separates YAML documents, and a line that starts with "---" followed by anything else is an
error. A document that parses to nothing ("null") is written as it was. A document larger
than --max-document-size, also once its YAML aliases are expanded, and input larger than
--max-input-size (all files together) are errors; but a YAML v1 List larger than
--max-document-size whose items are a block sequence at column 0, as kubectl get -o yaml
prints them, is read item by item, each within the limit, and written back as one List, so
that a List of any size takes bounded memory. Only regular files and pipes are read.`,
		Example: `  starpod apply --overlay-script gpu.star -f pod.yaml
  kubectl get pod trainer -o yaml | starpod apply --overlay-script gpu.star -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			// The input files are given with -f, as kubectl's are.
			var fs []string
			for _, arg := range args {
				fs = append(fs, "-f "+shellQuote(arg))
			}
			return unexpectedArgs(cmd, args, "; give input files with "+strings.Join(fs, " "))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApply(cmd.Context(), a, f)
		},
	}
	f.register(cmd.Flags(), true)
	f.registerCtx(cmd.Flags())
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "`FILE` to read, - for standard input (repeatable; default: standard input)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "yaml", "output `FORMAT`: yaml, or json (several documents as the items of one v1 List)")
	cmd.Flags().IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "`N` documents to apply at the same time (output order is unchanged)")
	cmd.Flags().StringVar(&f.maxDoc, "max-document-size", bound.FormatSize(stream.DefaultMaxDocumentBytes), "largest `SIZE` of one document, also with its YAML aliases expanded (e.g. 16Mi)")
	cmd.Flags().StringArrayVar(&f.podTmpl, "pod-template", nil, "`GROUP/KIND=PATH` of the pod templates of more kinds, e.g. example.com/Trainer=spec.workers[*].template (repeatable)")
	cmd.Flags().BoolVar(&f.diff, "diff", false, "print a unified diff of each changed document's YAML before and after the overlays instead of the documents (exit 0 whether or not anything changed)")
	cmd.Flags().BoolVar(&f.explain, "explain", false, "print each field the overlays changed in each pod and pod template, with its old and new value and the overlay file:line:col that wrote it, instead of the documents")
	cmd.Flags().StringVar(&f.maxInput, "max-input-size", bound.FormatSize(stream.DefaultMaxInputBytes), "largest `SIZE` of the input, all files together (e.g. 4Gi)")
	return cmd
}

func runApply(ctx context.Context, a *app, f *applyFlags) error {
	if len(f.scripts) == 0 {
		return usagef("apply: no --overlay-script given")
	}
	if f.output != "yaml" && f.output != "json" {
		return usagef("--output: got %q, want yaml or json", f.output)
	}
	if f.diff && f.output != "yaml" {
		return usagef("--diff: diffs are of YAML; leave out -o %s", f.output)
	}
	if f.explain && (f.diff || f.output != "yaml") {
		return usagef("--explain: prints explanations, not documents or diffs; leave out --diff and -o")
	}
	if f.jobs < 1 {
		return usagef("--jobs: got %d, want a positive number", f.jobs)
	}
	maxDoc, err := sizeFlag("--max-document-size", f.maxDoc, "16Mi")
	if err != nil {
		return err
	}
	maxInput, err := sizeFlag("--max-input-size", f.maxInput, "16Mi")
	if err != nil {
		return err
	}
	files := f.files
	if len(files) == 0 {
		files = []string{"-"}
	}
	stdin := 0
	for _, file := range files {
		if file == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usagef("-f -: standard input given %d times, want at most once", stdin)
	}
	env, err := f.env()
	if err != nil {
		return err
	}
	rules, err := podTemplateRules(f.podTmpl)
	if err != nil {
		return err
	}
	// Each overlay's result is checked as the API server would check the pod (a pod template
	// as a template), as run checks the pods of its tasks.
	f.validation = engine.ValidatePod
	chain, err := f.compile(ctx, a, f.scripts)
	if err != nil {
		return err
	}

	inWorkers := f.isolate != "none"
	if inWorkers && inputSize(files) >= fillBytes {
		// An input this large keeps every worker busy for long: start them all now rather
		// than once the first has kept batches waiting (see engine.WorkerPoolOptions.OnDemand).
		if opts, err := f.options(a, f.scripts[0]); err == nil {
			opts.Workers.Fill(opts)
		}
	}
	p := pipeline.New(pipeline.Options{
		Chain: chain, Env: env, Format: f.output, Rules: rules, Jobs: f.jobs, Stdin: a.stdin,
		Limits:    stream.ReaderOptions{MaxDocumentBytes: maxDoc, MaxInputBytes: maxInput},
		InWorkers: inWorkers,
		Diff:      f.diff, Color: f.diff && colorOutput(a.stdout), Explain: f.explain,
		// A long run need not keep resident the executable's pages that only the start
		// touched: at 10,000 pods in workers this process peaked at 28-30 MiB with the
		// release, 30-34 MiB without; at 100,000 in process, 27.7 against 37.1 MiB.
		Lasting: func() { residency.ReleaseExecutable() }, // best effort
	})
	if len(f.files) == 0 && a.stdinTerminal {
		// A forgotten -f would otherwise wait on the terminal without a word.
		fmt.Fprintln(a.stderr, stdinNotice("apply"))
	}
	out := &spool{limit: spoolMemory}
	defer out.Close()
	if err := p.Run(ctx, files, out); err != nil {
		return limitHint(err, map[string]string{"document": "--max-document-size", "document with its aliases expanded": "--max-document-size", "input": "--max-input-size"})
	}
	for _, m := range p.Misses() {
		// A path that finds nothing in an object of its kind is likely wrong.
		more := ""
		if m.Count > 1 {
			more = fmt.Sprintf(" (nor in %d more of its kind)", m.Count-1)
		}
		fmt.Fprintf(a.stderr, "starpod apply: warning: --pod-template %s found no pod template in %s %q%s; check the path against the object\n", m.Rule, m.Kind, m.Name, more)
	}
	if p.Pods() == 0 {
		// A silent no-op is visible: a stream of kinds starpod does not know, or a typo.
		fmt.Fprintln(a.stderr, "starpod apply: warning: the input held no pod and no pod template; nothing was applied (see --pod-template for other kinds)")
	}
	return out.copyTo(a.stdout)
}

// stdinNotice is what a command that reads manifests from a terminal says first.
func stdinNotice(cmd string) string {
	return "starpod " + cmd + ": reading manifests from standard input (give files with -f; end the input with Ctrl-D, or stop with Ctrl-C)"
}

// A hintError is an error over a limit, and the flag that raises the limit.
type hintError struct {
	err  error
	flag string
}

func (e *hintError) Error() string { return e.err.Error() + " (raise it with " + e.flag + ")" }
func (e *hintError) Unwrap() error { return e.err }

// limitHint returns err, when it is a *bound.SizeError whose limit a flag raises, with the
// flag: flags holds the flag of each kind of limit (SizeError.What).
func limitHint(err error, flags map[string]string) error {
	var size *bound.SizeError
	if errors.As(err, &size) && flags[size.What] != "" {
		return &hintError{err, flags[size.What]}
	}
	return err
}

// fillBytes is the size of the input from which apply starts every worker at once: 10,000
// pods of 2.5 KB took a tenth longer with workers started on demand, 1,000 took as long.
const fillBytes = 8 << 20

// inputSize returns the size of the regular files among files, which apply reads.
func inputSize(files []string) int64 {
	var n int64
	for _, file := range files {
		if fi, err := os.Stat(file); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// fastPathsEnv names the variable of the environment that turns the fast paths of
// internal/fast off when it is "off": every command then takes the library paths alone.
const fastPathsEnv = "STARPOD_FAST_PATHS"

// setFastPaths sets fast.Off from the environment.
func setFastPaths() { fast.Off = os.Getenv(fastPathsEnv) == "off" }

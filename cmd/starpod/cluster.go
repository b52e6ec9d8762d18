package main

// This file defines the commands that operate on apps in a cluster: status, describe, logs,
// list, cancel and delete.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/starpod/starpod/cluster"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/scheduler"
)

// clusterFlags are the flags of every command that talks to a cluster.
type clusterFlags struct {
	kubeconfig string
	context    string
	namespace  string
	cfg        []string
}

func (f *clusterFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig `CONTEXT` to use")
	registerNamespace(fs, &f.namespace)
	fs.StringArrayVar(&f.cfg, "cfg", nil, "run option `namespace=NS`, as -n (default: the context's namespace)")
}

// registerNamespace registers -n/--namespace, as kubectl's.
func registerNamespace(fs *pflag.FlagSet, ns *string) {
	fs.StringVarP(ns, "namespace", "n", "", "`NAMESPACE` of the app, and of bare app ids; wins over --cfg namespace= (default: the context's)")
}

// connect parses --cfg and connects to the cluster the flags select.
func (f *clusterFlags) connect() (*cluster.Client, error) {
	ns, err := cfgNamespace(f.cfg)
	if err != nil {
		return nil, err
	}
	if f.namespace != "" {
		if err := checkNamespace(f.namespace); err != nil {
			return nil, err
		}
		ns = f.namespace
	}
	return connect(cluster.Options{Kubeconfig: f.kubeconfig, Context: f.context, Namespace: ns})
}

// checkNamespace checks the value of -n; a bad one is bad usage.
func checkNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return usagef("--namespace: got %q, want a DNS label: %s", ns, errs[0])
	}
	return nil
}

// cfgNamespace returns the namespace that --cfg settings name, or "". Only the namespace
// run option applies to the commands that find apps; the others are refused.
func cfgNamespace(settings []string) (string, error) {
	pairs, err := scheduler.SplitSettings(settings)
	if err != nil {
		return "", usagef("--cfg: %v", err)
	}
	ns := ""
	for _, kv := range pairs {
		switch {
		case kv.Key == "namespace":
			ns = kv.Value
			if _, err := scheduler.ParseConfig([]string{"namespace=" + kv.Value}); err != nil {
				return "", usagef("--cfg: %v", err)
			}
		case isRunOption(kv.Key):
			return "", usagef("--cfg %s: got a run option, want namespace (the only key that finds apps)", kv.Key)
		default:
			msg := fmt.Sprintf("--cfg: unknown key %q, want namespace", kv.Key)
			if spell.Nearest(kv.Key, []string{"namespace"}) != "" {
				msg += ` (did you mean "namespace"?)`
			}
			return "", usagef("%s", msg)
		}
	}
	return ns, nil
}

// isRunOption reports whether k is a key of the run options.
func isRunOption(k string) bool {
	for _, o := range scheduler.ConfigOptions {
		if o.Name == k {
			return true
		}
	}
	return false
}

// connectTo parses the handle argument arg (a bad one is bad usage) and connects to the
// cluster the flags select.
func (f *clusterFlags) connectTo(arg string) (cluster.Handle, *cluster.Client, error) {
	h, err := handleArg(arg)
	if err != nil {
		return h, nil, err
	}
	c, err := f.connect()
	return h, c, err
}

// handleArg parses a handle argument; a bad one is bad usage.
func handleArg(s string) (cluster.Handle, error) {
	h, err := cluster.ParseHandle(s)
	if err != nil {
		return h, &usageError{err: err}
	}
	return h, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	if u, ok := w.(interface{ Unwrap() io.Writer }); ok {
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// liveOutput reports whether w is a terminal that can redraw a status block.
func liveOutput(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("TERM") != "dumb"
}

// colorOutput reports whether to colour what goes to w: on a terminal, unless $NO_COLOR is set.
func colorOutput(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == ""
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// checkOutput checks an -o value against the formats a command knows; "" stands for the
// default, human-readable form.
func checkOutput(got string, want ...string) error {
	var names []string
	for _, w := range want {
		if got == w {
			return nil
		}
		if w != "" {
			names = append(names, w)
		}
	}
	return usagef("--output: got %q, want %s", got, strings.Join(names, " or "))
}

func newStatusCmd(a *app) *cobra.Command {
	var f clusterFlags
	var output string
	var wait bool
	cmd := &cobra.Command{
		Use:   "status HANDLE",
		Short: "Show the state of an app and of each of its replicas",
		Long: `Status shows the state of the app HANDLE names (kubernetes://<namespace>/<app_id> for a
Volcano Job, jobset://<namespace>/<app_id> for a JobSet, or an app id in the namespace of
-n, else --cfg namespace=, else the context's: a Volcano Job of that name, else a JobSet)
and the state of each replica of each role.

States follow TorchX: Volcano's Pending is PENDING; Running, Restarting, Completing,
Terminating and Aborting are RUNNING; Completed is SUCCEEDED; Aborted is CANCELLED;
Terminated and Failed are FAILED; a job with no status yet is UNKNOWN.

A JobSet is SUCCEEDED or FAILED by its Completed or Failed condition, PENDING while it is
suspended (reason WaitingForKueueAdmission when it waits in a Kueue queue), CANCELLED once
"starpod cancel" suspended it, RUNNING while its Jobs are active; each replica's state comes
from its Job's completed and failed indexes and its newest pod.`,
		Example: `  starpod status kubernetes://ml/llama-ft-x7k2
  starpod status jobset://ml/ddp-x7k2 --wait
  starpod status -o json llama-ft-x7k2`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json"); err != nil {
				return err
			}
			h, c, err := f.connectTo(args[0])
			if err != nil {
				return err
			}
			if wait {
				return waitApp(cmd.Context(), a, c, h, a.stdout)
			}
			st, err := c.Status(cmd.Context(), h)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(a.stdout, st)
			}
			_, err = io.WriteString(a.stdout, cluster.FormatStatus(st))
			return err
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output `FORMAT`: json (default: text)")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the app until it ends; exit 1 unless it succeeded")
	return cmd
}

func newDescribeCmd(a *app) *cobra.Command {
	var f clusterFlags
	var output string
	cmd := &cobra.Command{
		Use:   "describe HANDLE",
		Short: "Show an app as it was submitted, with its status",
		Long: `Describe reads back the app spec that "starpod run" stored on the Volcano Job (or the
JobSet) of HANDLE, and shows it with the job's labels and the app's status, as YAML (or
JSON).`,
		Example: `  starpod describe kubernetes://ml/llama-ft-x7k2`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "yaml", "json"); err != nil {
				return err
			}
			h, c, err := f.connectTo(args[0])
			if err != nil {
				return err
			}
			d, err := c.Describe(cmd.Context(), h)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(a.stdout, d)
			}
			var buf bytes.Buffer
			if err := writeJSON(&buf, d); err != nil {
				return err
			}
			out, err := stream.JSONToYAML(buf.Bytes(), nil)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(out)
			return err
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output `FORMAT`: yaml or json")
	return cmd
}

func newLogsCmd(a *app) *cobra.Command {
	var f clusterFlags
	var opts cluster.LogOptions
	var regex string
	var tail int64
	cmd := &cobra.Command{
		Use:   "logs HANDLE[/ROLE[/REPLICA]]",
		Short: "Print the logs of an app's replicas",
		Long: `Logs prints the log lines of the pods of an app, or of one role, or of one replica, each
line prefixed by its role and replica ("trainer/0"; in a JobSet the replica is the pod's
completion index), and by its container when several are shown. Prefixes are coloured on a terminal (unless $NO_COLOR is set). Control
characters in the lines are escaped.

Each pod's default container is shown (kubectl's kubectl.kubernetes.io/default-container
annotation, else the first); -c names another, --all-containers shows every one, init
containers and sidecars included.`,
		Example: `  starpod logs kubernetes://ml/llama-ft-x7k2
  starpod logs -f --since 10m kubernetes://ml/llama-ft-x7k2/trainer/0
  starpod logs --all-containers --regex 'loss=' llama-ft-x7k2/trainer`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Container != "" && opts.AllContainers {
				return usagef("-c and --all-containers: got both, want at most one")
			}
			switch {
			case tail < -1:
				return usagef("--tail: got %d, want a number of lines, or -1 for all", tail)
			case tail >= 0:
				opts.Tail = &tail // 0 with -f: only new lines
			}
			if opts.Since < 0 {
				return usagef("--since: got %s, want a positive duration", opts.Since)
			}
			if regex != "" {
				re, err := regexp.Compile(regex)
				if err != nil {
					return usagef("--regex: %v", err)
				}
				opts.Regex = re
			}
			t, err := cluster.ParseLogTarget(args[0])
			if err != nil {
				return &usageError{err: err}
			}
			c, err := f.connect()
			if err != nil {
				return err
			}
			opts.Color = colorOutput(a.stdout)
			opts.Notes = a.stderr
			return c.Logs(cmd.Context(), t, opts, a.stdout)
		},
	}
	f.register(cmd.Flags())
	fs := cmd.Flags()
	fs.BoolVarP(&opts.Follow, "follow", "f", false, "stream new lines until the containers end")
	fs.DurationVar(&opts.Since, "since", 0, "only lines newer than `DURATION`, such as 10m or 1h")
	fs.Int64Var(&tail, "tail", -1, "only the last `N` lines of each container (-1: all)")
	fs.StringVar(&regex, "regex", "", "only lines that match the regular expression `RE`")
	fs.StringVarP(&opts.Container, "container", "c", "", "show `CONTAINER` of each pod instead of its default container")
	fs.BoolVar(&opts.AllContainers, "all-containers", false, "show every container of each pod")
	return cmd
}

func newListCmd(a *app) *cobra.Command {
	var f clusterFlags
	var output string
	var all bool
	cmd := &cobra.Command{
		Use:   "list [-n NAMESPACE] [-A]",
		Short: "List the apps in a namespace",
		Long: `List shows the apps that starpod launched in the namespace (-n, else --cfg namespace=,
else the context's, else default), or in every namespace with -A: handle, app name, state
and age, newest first (across namespaces with -A).`,
		Example: `  starpod list
  starpod list -n ml
  starpod list -A -o json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json"); err != nil {
				return err
			}
			c, err := f.connect()
			if err != nil {
				return err
			}
			apps, err := c.List(cmd.Context(), cluster.ListOptions{AllNamespaces: all})
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(a.stdout, apps)
			}
			if len(apps) == 0 {
				where := fmt.Sprintf("namespace %q", c.Namespace())
				if all {
					where = "any namespace"
				}
				fmt.Fprintf(a.stderr, "no apps in %s\n", where)
				return nil
			}
			return writeList(a.stdout, apps, time.Now())
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output `FORMAT`: json (default: a table)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the apps of every namespace")
	return cmd
}

// writeList writes apps as a table of handle, name, state and age at now.
func writeList(w io.Writer, apps []cluster.Status, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "HANDLE\tNAME\tSTATE\tAGE")
	for _, st := range apps {
		age := "<unknown>"
		if !st.Created.IsZero() {
			age = duration.HumanDuration(now.Sub(st.Created))
		}
		name := st.Name
		if name == "" {
			name = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.Handle, name, st.State, age)
	}
	return tw.Flush()
}

func newCancelCmd(a *app) *cobra.Command {
	var f clusterFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "cancel HANDLE",
		Short: "Stop an app, keeping its job",
		Long: `Cancel stops the app HANDLE names the way Volcano intends: it creates a bus.volcano.sh
Command with action AbortJob for the job, and Volcano's controller then evicts the pods
and marks the job Aborted (state CANCELLED). The job stays, for status, describe and
logs; "starpod delete" removes it. Cancelling an app that is stopping or has ended
already changes nothing and succeeds.

A JobSet, which has no abort, is suspended instead: its pods are deleted, the JobSet stays,
marked cancelled (state CANCELLED). Kueue may resume a JobSet whose workload it has
admitted: "starpod delete" stops it for good.

A Volcano Job or JobSet that starpod did not make (one without the starpod.dev/app-spec
annotation, which "starpod describe" reads) is refused, unless --force.`,
		Example: `  starpod cancel kubernetes://ml/llama-ft-x7k2
  starpod cancel jobset://ml/ddp-x7k2`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, c, err := f.connectTo(args[0])
			if err != nil {
				return err
			}
			h = c.Locate(cmd.Context(), h)
			res, err := c.Cancel(cmd.Context(), h, cluster.OpOptions{Force: force})
			if errors.Is(err, cluster.ErrNotStarpod) {
				return fmt.Errorf("%w; --force cancels it anyway", err)
			}
			if err != nil {
				return err
			}
			switch res {
			case cluster.CancelRequested:
				fmt.Fprintf(a.stdout, "%s: cancel requested (AbortJob)\n", h)
			case cluster.CancelSuspended:
				fmt.Fprintf(a.stdout, "%s: cancelled (JobSet suspended)\n", h)
			case cluster.CancelPending:
				fmt.Fprintf(a.stdout, "%s: cancel requested already (AbortJob pending)\n", h)
			case cluster.CancelDone:
				st, err := c.Status(cmd.Context(), h)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%s: nothing to cancel, app is %s (%s)\n", h, st.State, st.Phase)
			}
			return nil
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&force, "force", false, "cancel a Volcano Job that starpod did not make too")
	return cmd
}

func newDeleteCmd(a *app) *cobra.Command {
	var f clusterFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "delete HANDLE",
		Short: "Remove an app's job from the cluster",
		Long: `Delete removes the Volcano Job (or the JobSet) of the app HANDLE names; the cluster's
garbage collector then removes its pods and commands (a JobSet's Jobs and pods). A running app is stopped by that; "starpod cancel"
stops an app and keeps its job.

A Volcano Job or JobSet that starpod did not make (one without the starpod.dev/app-spec
annotation, which "starpod describe" reads) is refused, unless --force.`,
		Example: `  starpod delete kubernetes://ml/llama-ft-x7k2
  starpod delete jobset://ml/ddp-x7k2`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, c, err := f.connectTo(args[0])
			if err != nil {
				return err
			}
			h = c.Locate(cmd.Context(), h)
			err = c.Delete(cmd.Context(), h, cluster.OpOptions{Force: force})
			if errors.Is(err, cluster.ErrNotStarpod) {
				return fmt.Errorf("%w; --force deletes it anyway", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s: deleted\n", h)
			return nil
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&force, "force", false, "delete a Volcano Job that starpod did not make too")
	return cmd
}

// connect is cluster.Connect, whose error names the flag that gives a kubeconfig.
func connect(opts cluster.Options) (*cluster.Client, error) {
	c, err := cluster.Connect(opts)
	if errors.Is(err, cluster.ErrNoConfig) {
		return nil, errors.New("no cluster configured: no kubeconfig in --kubeconfig, $KUBECONFIG or ~/.kube/config, and not running in a pod")
	}
	return c, err
}

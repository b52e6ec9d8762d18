package main

// This file defines "starpod runopts": the --cfg keys of a scheduler, and where each value of
// a run comes from.

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/scheduler"
)

func newRunoptsCmd(a *app) *cobra.Command {
	var cfg []string
	cmd := &cobra.Command{
		Use:   "runopts [--cfg KEY=VALUE,...] [kubernetes|jobset]",
		Short: "List the run options (--cfg keys) of a scheduler",
		Long: `Runopts lists the keys that "starpod run --cfg KEY=VALUE" accepts for the scheduler
(kubernetes, Volcano's, by default; jobset for "starpod run -s jobset"), with their
defaults and what they do.

With a project config (.starpod.yaml in the working directory, or the file $STARPOD_CONFIG
names) or --cfg settings, it shows instead the value each key would have in "starpod run"
and where it comes from: --cfg, the project config's file, or the builtin default (the
command line wins over the file, and the file over the defaults); then the component
arguments, named resources and overlays the project config gives.`,
		Example: `  starpod runopts
  starpod runopts --cfg queue=gpu kubernetes
  starpod runopts jobset`,
		Args:      usageArgs(cobra.MaximumNArgs(1)),
		ValidArgs: scheduler.Schedulers,
		RunE: func(cmd *cobra.Command, args []string) error {
			sched := scheduler.SchedulerKubernetes
			if len(args) == 1 {
				sched = args[0]
				if scheduler.OptionsOf(sched) == nil {
					return usagef("runopts: unknown scheduler %q, want %s", sched, strings.Join(scheduler.Schedulers, " or "))
				}
			}
			project, err := component.LoadConfig()
			if err != nil {
				return printErrors(a, err)
			}
			if project.File == "" && len(cfg) == 0 {
				return listRunOptions(a, sched)
			}
			return showRunOptions(a, project, sched, cfg)
		},
	}
	cmd.Flags().StringArrayVar(&cfg, "cfg", nil, "run options `KEY=VALUE,...` to show the values of (repeatable)")
	return cmd
}

// listRunOptions lists the run options with their defaults and help.
func listRunOptions(a *app, sched string) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s:\n", sched)
	fmt.Fprintln(tw, "  KEY\tDEFAULT\tHELP")
	for _, o := range scheduler.OptionsOf(sched) {
		def := o.Default
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Name, def, o.Help)
	}
	return tw.Flush()
}

// showRunOptions shows the value of each run option and where it comes from, then what else
// the project config gives.
func showRunOptions(a *app, project *component.Config, sched string, cfg []string) error {
	fileSettings := project.Settings(sched)
	if _, err := scheduler.ParseConfigFor(sched, fileSettings); err != nil {
		return printErrors(a, &component.ConfigError{File: project.File, Err: fmt.Errorf("run_options: %v", err)})
	}
	if _, err := scheduler.ParseConfigFor(sched, cfg); err != nil {
		return usagef("--cfg: %v", err)
	}
	value := make(map[string]string)
	source := make(map[string]string)
	for _, o := range scheduler.OptionsOf(sched) {
		value[o.Name], source[o.Name] = o.Default, "default"
	}
	for _, set := range []struct {
		settings []string
		from     string
	}{{fileSettings, project.File}, {cfg, "--cfg"}} {
		pairs, _ := scheduler.SplitSettings(set.settings) // checked above
		for _, kv := range pairs {
			value[kv.Key], source[kv.Key] = kv.Value, set.from
		}
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s:\n", sched)
	fmt.Fprintln(tw, "  KEY\tVALUE\tFROM\tHELP")
	for _, o := range scheduler.OptionsOf(sched) {
		v := value[o.Name]
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", o.Name, v, source[o.Name], o.Help)
	}
	if len(project.Components) > 0 {
		fmt.Fprintf(tw, "components (from %s; the command line wins):\n", project.File)
		names := make([]string, 0, len(project.Components))
		for name := range project.Components {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			args := project.ComponentArgs(name)
			keys := make([]string, 0, len(args))
			for k := range args {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, k, args[k])
			}
		}
	}
	if len(project.NamedResources) > 0 {
		fmt.Fprintf(tw, "named resources (from %s):\n", project.File)
		names := make([]string, 0, len(project.NamedResources))
		for name := range project.NamedResources {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			r := project.NamedResources[name]
			fmt.Fprintf(tw, "  %s\tcpu=%g gpu=%d mem_mb=%d\n", name, r.CPU, r.GPU, r.MemMB)
		}
	}
	if len(project.Overlays) > 0 {
		fmt.Fprintf(tw, "overlays (from %s; before --overlay-script):\n", project.File)
		for _, o := range project.OverlayPaths() {
			fmt.Fprintf(tw, "  %s\n", o)
		}
	}
	return tw.Flush()
}

package main

// This file defines "starpod runopts": the --cfg keys of a scheduler.

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/scheduler"
)

func init() { commands = append(commands, newRunoptsCmd) }

func newRunoptsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "runopts [kubernetes]",
		Short: "List the run options (--cfg keys) of a scheduler",
		Long: `Runopts lists the keys that "starpod run --cfg KEY=VALUE" accepts for the scheduler,
with their defaults and what they do.`,
		Args:      usageArgs(cobra.MaximumNArgs(1)),
		ValidArgs: []string{scheduler.SchedulerKubernetes},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] != scheduler.SchedulerKubernetes {
				return usagef("runopts: unknown scheduler %q, want kubernetes", args[0])
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s:\n", scheduler.SchedulerKubernetes)
			fmt.Fprintln(tw, "  KEY\tDEFAULT\tHELP")
			for _, o := range scheduler.ConfigOptions {
				def := o.Default
				if def == "" {
					def = "-"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Name, def, o.Help)
			}
			return tw.Flush()
		},
	}
}

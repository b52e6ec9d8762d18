package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { commands = append(commands, newCheckCmd) }

func newCheckCmd(a *app) *cobra.Command {
	f := &overlayFlags{}
	cmd := &cobra.Command{
		Use:   "check FILE...",
		Short: "Compile overlays without applying them",
		Long: `Check compiles each overlay file: syntax, names, loads, the top level, and the
overlay(pod) or overlay(pod, ctx) function. It prints every error and exits 1 if there
was any; it prints nothing when all files are good.`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, files []string) error {
			failed := false
			for _, file := range files {
				if _, err := f.compileFile(a, file); err != nil {
					if _, ok := err.(*usageError); ok {
						return err
					}
					fmt.Fprintln(a.stderr, err)
					failed = true
				}
			}
			if failed {
				return &exitCodeError{exitError}
			}
			return nil
		},
	}
	f.register(cmd.Flags(), false)
	return cmd
}

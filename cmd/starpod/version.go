package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time with -ldflags "-X main.version=v1.2.3"; otherwise the module
// version from the build info is used.
var version = ""

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the starpod version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version
			if v == "" {
				v = "(devel)"
				if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
					v = info.Main.Version
				}
			}
			fmt.Fprintf(a.stdout, "starpod %s\n", v)
			return nil
		},
	}
}

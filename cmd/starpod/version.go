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
		Long: `Version prints the version of starpod: the one set at link time
(-ldflags "-X main.version=v1.2.3"), or that of the module (go install
github.com/starpod/starpod/cmd/starpod@v1.2.3). A binary built from a clone of the
repository is "(devel)", followed by the commit it was built from (and "modified" when the
working tree had changes) as go build stamps it; go run, go test and -buildvcs=false do
not, and the version then says so.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(a.stdout, "starpod %s\n", versionText(version))
			return nil
		},
	}
}

// versionText returns the version of the binary: v if set, else the module's, with the
// commit of a development build.
func versionText(v string) string {
	if v != "" {
		return v
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v = info.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	settings := make(map[string]string)
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		return "(devel), built without version control information (go run, go test, -buildvcs=false, or no git repository)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v = "(devel) " + rev
	if t := settings["vcs.time"]; t != "" {
		v += " " + t
	}
	if settings["vcs.modified"] == "true" {
		v += " modified"
	}
	return v
}

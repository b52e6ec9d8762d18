package main

// This file defines `starpod builtins`, which prints the reference of the overlay helpers.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/builtins"
	"github.com/starpod/starpod/internal/spell"
)

func newBuiltinsCmd(a *app) *cobra.Command {
	var short bool
	cmd := &cobra.Command{
		Use:   "builtins [NAME...]",
		Short: "Print the reference of the helpers that overlays can call",
		Long: `Builtins prints the reference of the Starlark helpers and modules predeclared in every
overlay, as Markdown (the text of docs/builtins.md). With names, it prints only those
helpers; a module name (quantity, yaml) prints all of its functions. With --short, it
prints one line per helper: its signature and what it does.`,
		Example: `  starpod builtins
  starpod builtins merge quantity
  starpod builtins --short`,
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return builtinNames(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, names []string) error {
			docs := builtins.Docs()
			if len(names) > 0 {
				var err error
				if docs, err = selectDocs(docs, names); err != nil {
					return err
				}
			}
			switch {
			case short:
				for _, d := range docs {
					fmt.Fprintf(a.stdout, "%s - %s\n", d.Signature(), d.Summary)
				}
			case len(names) == 0:
				fmt.Fprint(a.stdout, builtins.Reference())
			default:
				for i, d := range docs {
					if i > 0 {
						fmt.Fprintln(a.stdout)
					}
					fmt.Fprint(a.stdout, d.String())
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print one line per helper")
	return cmd
}

// selectDocs returns the docs that names name, in the order of names: a builtin, or a module
// and so all its members. An unknown name is a usage error.
func selectDocs(docs []builtins.Doc, names []string) ([]builtins.Doc, error) {
	var out []builtins.Doc
	for _, name := range names {
		n := len(out)
		for _, d := range docs {
			if d.Name == name || strings.HasPrefix(d.Name, name+".") {
				out = append(out, d)
			}
		}
		if len(out) == n {
			hint := ""
			if near := spell.Nearest(name, builtinNames()); near != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", near)
			}
			return nil, usagef("unknown builtin %q%s", name, hint)
		}
	}
	return out, nil
}

// builtinNames returns the names of every builtin and module, sorted.
func builtinNames() []string {
	seen := make(map[string]bool)
	var names []string
	for _, d := range builtins.Docs() {
		for _, n := range []string{d.Name, strings.Split(d.Name, ".")[0]} {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

package main

import (
	"regexp"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/startest"
)

func init() { commands = append(commands, newTestCmd) }

func newTestCmd(a *app) *cobra.Command {
	var (
		runPattern string
		verbose    bool
		f          overlayFlags
	)
	cmd := &cobra.Command{
		Use:   "test [PATH...]",
		Short: "Run the tests of overlays in *_test.star files",
		Long: `Test finds the *_test.star files that the paths name (directories are searched
recursively; the default is the current directory) and runs each function named test_*.

A test file sees the overlay helpers and:
  assert.eq(got, want), assert.ne(a, b), assert.true(cond), assert.contains(container, item),
  assert.fails(fn, pattern)
  apply(overlay_file, pod, ctx=None)   the pod after the overlay (path relative to the test file)
  pod_from_yaml(text)                  a pod from YAML or JSON text, checked strictly

A test file may load modules relative to itself, inside its directory.

The report reads like go test's: ok or FAIL for each file, file:line: message for each
failure. What print() prints (in a test, or in an overlay it applies) is shown the same way
under the test when the test fails, or with -v; it never fails a test. What a file's top
level prints is shown when the file fails, or with -v. The exit code is 1 if any test failed.`,
		Example: `  starpod test examples/...
  starpod test -run 'test_gpu' -v overlays/`,
		RunE: func(cmd *cobra.Command, paths []string) error {
			opts := &startest.Options{Verbose: verbose}
			if runPattern != "" {
				re, err := regexp.Compile(runPattern)
				if err != nil {
					return usagef("-run: %v", err)
				}
				opts.Run = re
			}
			opts.Engine = &engine.Options{MaxSteps: f.maxSteps, Timeout: f.timeout}
			if len(paths) == 0 {
				paths = []string{"."}
			}
			files, err := startest.Find(paths)
			if err != nil {
				return err
			}
			if len(files) == 0 {
				return usagef("no *_test.star files in %v", paths)
			}
			if !startest.Run(files, a.stdout, opts) {
				return &exitCodeError{exitError}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runPattern, "run", "", "run only the tests whose names match `REGEXP`")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "report every test, not only failures")
	cmd.Flags().Uint64Var(&f.maxSteps, "max-steps", engine.DefaultMaxSteps, "execution steps allowed per overlay apply")
	cmd.Flags().DurationVar(&f.timeout, "timeout", engine.DefaultTimeout, "wall time allowed per overlay apply")
	return cmd
}

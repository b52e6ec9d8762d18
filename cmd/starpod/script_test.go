package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the starpod command inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"starpod": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScript runs the CLI scripts in testdata/script. Each names its files, runs the real
// command and checks its exit code, standard output and standard error.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": exits,
		},
		Setup: func(env *testscript.Env) error {
			// Scripts may use the examples of the repository.
			env.Setenv("EXAMPLES", repoPath("examples"))
			return nil
		},
	})
}

func repoPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return wd + "/../../" + p
}

// exits runs a command and checks its exit code: exits CODE COMMAND [ARG...]. Its output is
// the script's stdout and stderr, as an exec's would be.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	path := args[1]
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, args[1]); fileExists(p) {
			path = p
			break
		}
	}
	cmd := exec.Command(path, args[2:]...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	cmd.Env = os.Environ()
	for _, kv := range []string{"HOME", "PATH", "WORK"} {
		cmd.Env = append(cmd.Env, kv+"="+ts.Getenv(kv))
	}
	got := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("exits: %v", err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

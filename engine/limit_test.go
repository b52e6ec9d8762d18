//go:build unix

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/sandbox"
)

// limitChildEnv makes the test binary, run with -test.run=^TestLimitMemory$, act as a child
// of TestLimitMemory: it limits its memory and does what the variable says.
const limitChildEnv = "STARPOD_TEST_LIMIT_MEMORY_CHILD"

// limitChildDone is the exit code of a child that did what it was asked (0 would be taken
// for a test that returned).
const limitChildDone = 10

// limitChildRefused is the exit code of a child whose LimitMemory failed.
const limitChildRefused = 11

// TestLimitMemory runs each case in a child process, since LimitMemory limits the process
// that calls it for good.
func TestLimitMemory(t *testing.T) {
	if mode := os.Getenv(limitChildEnv); mode != "" {
		os.Exit(limitChild(mode))
	}
	for _, c := range []struct {
		mode     string
		code     int // the exit code, or -1 for any death (the Go runtime exits 2, the race detector 66)
		exceeded bool
		stdout   string // a regexp
		stderr   string // a regexp, if any
	}{
		{mode: "fits", code: limitChildDone, stdout: `^limited\nlabel yes\n$`, stderr: `^$`},
		{mode: "bomb", code: -1, exceeded: true, stdout: `^limited\n$`},
		{mode: "overlay", code: -1, exceeded: true, stdout: `^limited\n$`},
		{mode: "list", code: -1, exceeded: true, stdout: `^limited\n$`},
		{mode: "panic", code: 2, stdout: `^limited\n$`, stderr: `^panic: not a memory problem\n`},
		{mode: "small", code: limitChildRefused, stdout: `^$`, stderr: `^limiting memory: the memory limit 16Mi is below the 48Mi a process needs to run scripts\n$`},
		{mode: "fits-unlimited", code: limitChildDone, stdout: `^label yes\n$`, stderr: `^$`},
	} {
		t.Run(c.mode, func(t *testing.T) {
			limit := int64(128 << 20)
			if c.mode == "small" {
				limit = 16 << 20
			}
			var cmd *exec.Cmd
			var child *sandbox.Cmd
			if c.mode == "fits-unlimited" {
				cmd = exec.Command(os.Args[0], "-test.run=^TestLimitMemory$")
			} else {
				child = sandbox.Command(context.Background(), limit, os.Args[0], "-test.run=^TestLimitMemory$")
				cmd = child.Cmd
			}
			cmd.Env = append(os.Environ(), limitChildEnv+"="+c.mode)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			var err error
			if child != nil {
				err = child.Run()
			} else {
				err = cmd.Run()
			}
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatal(err)
			}
			got, want := cmd.ProcessState.ExitCode(), fmt.Sprint(c.code)
			ok := got == c.code
			if c.code == -1 {
				want = "the code of a death"
				ok = got != 0 && got != 1 && got != limitChildDone && got != limitChildRefused
			}
			if !ok {
				t.Errorf("exit code %d, want %s; stderr:\n%s", got, want, firstLines(stderr.String(), 5))
			}
			if child != nil {
				f := child.Failure()
				if got := f != nil && f.Reason == sandbox.Memory; got != c.exceeded {
					t.Errorf("Failure = %v, want one of memory: %v; stderr:\n%s", f, c.exceeded, firstLines(stderr.String(), 5))
				}
			}
			if !regexp.MustCompile(c.stdout).MatchString(stdout.String()) {
				t.Errorf("stdout %q, want a match of %q", stdout.String(), c.stdout)
			}
			if c.stderr != "" && !regexp.MustCompile(c.stderr).MatchString(stderr.String()) {
				t.Errorf("stderr:\n%s\nwant a match of %q", firstLines(stderr.String(), 5), c.stderr)
			}
		})
	}
}

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// sink keeps what the children allocate alive.
var sink any

// limitChild is a child of TestLimitMemory. It returns its exit code.
func limitChild(mode string) int {
	if sandbox.IsChild() {
		if err := sandbox.Enter(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return limitChildRefused
		}
		fmt.Println("limited")
	}
	applyOverlay := func(src string) int {
		// No time limit that a bomb could reach first: where page faults are slow, or under
		// the race detector, filling the memory limit takes seconds.
		o, err := engine.Compile(context.Background(), "overlay.star", []byte(src), &engine.Options{Timeout: time.Hour})
		if err == nil {
			var got *corev1.Pod
			got, err = o.Apply(context.Background(), testPod(), nil)
			if err == nil {
				fmt.Println("label", got.Labels["ok"])
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return limitChildDone
	}
	switch mode {
	case "fits", "fits-unlimited":
		// Half the limit, touched, fits; and an overlay still runs.
		b := make([]byte, 64<<20)
		for i := range b {
			b[i] = 1
		}
		sink = b
		return applyOverlay("def overlay(pod):\n    pod[\"metadata\"][\"labels\"] = {\"ok\": \"yes\"}\n")
	case "bomb":
		s := strings.Repeat("ab", 1024)
		for range 40 {
			s += s
			sink = s
		}
	case "overlay":
		return applyOverlay("def overlay(pod):\n    s = \"ab\" * 1024\n    for i in range(40):\n        s += s\n")
	case "list":
		return applyOverlay("def overlay(pod):\n    l = [0] * ((1 << 30) - 1)\n")
	case "panic":
		// Out of the test's goroutine, where the testing package would recover it.
		go panic("not a memory problem")
		select {}
	}
	fmt.Fprintf(os.Stderr, "child %q survived\n", mode)
	return 1
}

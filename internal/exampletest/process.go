package exampletest

// This file defines the two-process check of the determinism tests.

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// SameInTwoProcesses runs the test binary twice as a child process, with env=1 in its
// environment (its TestMain is expected to print its results and exit), and returns the
// output, which both children must have printed byte for byte. It fails t otherwise.
func SameInTwoProcesses(t testing.TB, env string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var outs [2][]byte
	for i := range outs {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), env+"=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("process %d: %v\n%s", i+1, err, stderr.String())
		}
		outs[i] = out
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatalf("the two processes disagree:\n%s\n---\n%s", outs[0], outs[1])
	}
	return string(outs[0])
}

package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestREADMETour checks that the output the README's tour shows is the command's output.
func TestREADMETour(t *testing.T) {
	t.Chdir("../..")
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```console\n$ starpod apply --overlay-script examples/gpu-tolerations/overlay.star"
	i := bytes.Index(data, []byte(start))
	if i < 0 {
		t.Fatal("README.md has no tour of the GPU example")
	}
	block := string(data[i+len("```console\n$ "):])
	block = block[:strings.Index(block, "```")]
	command, want, _ := strings.Cut(block, "\n")
	// The output is the same in process; the test binary cannot serve as a worker here.
	args := append(strings.Fields(command)[1:], "--isolation=none")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("%s: exit %d: %s", command, code, stderr.String())
	}
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("README.md's tour output (-README +command):\n%s", diff)
	}
}

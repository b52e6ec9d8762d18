package main

// This file defines the benchmark of starpod apply end to end: the GPU overlay over a stream
// of training pods with distinct names, read from a file and written to a discarded output.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchStream writes n copies of the training pod, named pod-0 ... pod-(n-1), to a file and
// returns its name.
func benchStream(b *testing.B, n int) string {
	b.Helper()
	pod, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	for i := range n {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(bytes.Replace(pod, []byte("name: llama-ft-trainer-0\n"), fmt.Appendf(nil, "name: pod-%d\n", i), 1))
	}
	file := filepath.Join(b.TempDir(), "pods.yaml")
	if err := os.WriteFile(file, buf.Bytes(), 0o666); err != nil {
		b.Fatal(err)
	}
	return file
}

// BenchmarkApplyCLI runs the starpod binary, built once, over 1,000 pods with the GPU
// overlay; ns/op is per run of 1,000 pods. It runs the real binary because overlays run in
// worker processes that re-execute it.
func BenchmarkApplyCLI(b *testing.B) {
	exe := filepath.Join(b.TempDir(), "starpod")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	file := benchStream(b, 1000)
	overlay := filepath.Join("..", "..", "examples", "gpu-tolerations", "overlay.star")
	// With --diff and --explain too: --explain's target is at most three times the plain
	// apply's time.
	for _, mode := range []struct {
		jobs int
		flag string
	}{{1, ""}, {0, ""}, {0, "--diff"}, {0, "--explain"}} {
		name := "j=default"
		args := []string{"apply", "--overlay-script", overlay, "-f", file}
		if mode.jobs > 0 {
			name = fmt.Sprintf("j=%d", mode.jobs)
			args = append(args, "-j", fmt.Sprint(mode.jobs))
		}
		if mode.flag != "" {
			name += "/" + strings.TrimPrefix(mode.flag, "--")
			args = append(args, mode.flag)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				var stderr bytes.Buffer
				cmd := exec.Command(exe, args...)
				cmd.Stdout, cmd.Stderr = io.Discard, &stderr
				if err := cmd.Run(); err != nil {
					b.Fatalf("%v: %s", err, stderr.String())
				}
			}
		})
	}
}

// BenchmarkApplyInProcess runs starpod apply --isolation none in this process over 1,000
// pods with the GPU overlay; ns/op is per run of 1,000 pods. It is the one to profile
// (go test -run '^$' -bench ApplyInProcess -cpuprofile cpu.out): the CLI's reading,
// decoding, encoding and printing around the overlay.
func BenchmarkApplyInProcess(b *testing.B) {
	file := benchStream(b, 1000)
	overlay := filepath.Join("..", "..", "examples", "gpu-tolerations", "overlay.star")
	args := []string{"apply", "--isolation", "none", "--overlay-script", overlay, "-f", file}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var stderr bytes.Buffer
		if code := run(ctx, args, strings.NewReader(""), io.Discard, &stderr); code != 0 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
	}
}

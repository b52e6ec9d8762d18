package main

// This file defines the benchmark of starpod apply in process: the GPU overlay over a stream of
// training pods with distinct names, read from a file and written to a discarded output.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// BenchmarkApplyCLI runs starpod apply over 100 pods; ns/op is per run of 100 pods.
func BenchmarkApplyCLI(b *testing.B) {
	for _, jobs := range []int{1, 0} {
		b.Run(fmt.Sprintf("j=%d", jobs), func(b *testing.B) {
			file := benchStream(b, 100)
			overlay := filepath.Join("..", "..", "examples", "gpu-tolerations", "overlay.star")
			args := []string{"apply", "--overlay-script", overlay, "-f", file}
			if jobs > 0 {
				args = append(args, "-j", fmt.Sprint(jobs))
			}
			b.ReportAllocs()
			for b.Loop() {
				var stderr bytes.Buffer
				if code := run(args, nil, io.Discard, &stderr); code != 0 {
					b.Fatalf("exit %d: %s", code, stderr.String())
				}
			}
		})
	}
}

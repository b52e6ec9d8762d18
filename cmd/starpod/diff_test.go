package main

import (
	"bytes"
	"context"
	"github.com/starpod/starpod/internal/pipeline"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/internal/exampletest"
)

// TestApplyDiffExamples runs apply --diff on every pod example: the diff is that of the
// example's pod.yaml, encoded as apply encodes a pod, and its expected.yaml, with exit 0; and
// on the example's own output, which the overlay leaves as it is, it is empty, with exit 0.
func TestApplyDiffExamples(t *testing.T) {
	examples, err := exampletest.Load(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < 5 {
		t.Fatalf("found %d pod examples, want at least 5", len(examples))
	}
	for _, e := range examples {
		t.Run(e.Name, func(t *testing.T) {
			args := []string{"apply", "--diff", "--isolation=none", "--overlay-script", e.Script}
			if _, err := os.Stat(filepath.Join(e.Dir, "env.yaml")); err == nil {
				args = append(args, "--ctx-file", filepath.Join(e.Dir, "env.yaml"))
			}
			input := filepath.Join(e.Dir, "pod.yaml")
			before, err := e.MarshalYAML(e.Pod)
			if err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(e.Expected)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pipeline.UnifiedDiff(input+" document 1", before, after, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatal("the example changes nothing")
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), append(args, "-f", input), strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
				t.Errorf("apply --diff (-want +got):\n%s", diff)
			}
			stdout.Reset()
			if code := run(context.Background(), append(args, "-f", e.Expected), strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("on the expected output: exit %d: %s", code, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("on the expected output: got a diff, want none:\n%s", stdout.String())
			}
		})
	}
}

// TestApplyExplainExamples runs apply --explain on every pod example: exit 0, and every
// change of the example's pod is explained with the overlay position that wrote it.
func TestApplyExplainExamples(t *testing.T) {
	examples, err := exampletest.Load(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range examples {
		t.Run(e.Name, func(t *testing.T) {
			args := []string{"apply", "--explain", "--isolation=none", "--overlay-script", e.Script, "-f", filepath.Join(e.Dir, "pod.yaml")}
			if _, err := os.Stat(filepath.Join(e.Dir, "env.yaml")); err == nil {
				args = append(args, "--ctx-file", filepath.Join(e.Dir, "env.yaml"))
			}
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if len(lines) < 2 || !strings.HasPrefix(lines[0], filepath.Join(e.Dir, "pod.yaml")+" document 1: pod ") {
				t.Fatalf("got %q, want a pod's explanation", stdout.String())
			}
			for _, line := range lines[1:] {
				// "  file.star:line:col: path: old -> new"
				pos, _, _ := strings.Cut(strings.TrimSpace(line), " ")
				if !strings.HasPrefix(line, "  ") || !strings.Contains(pos, ".star:") || !strings.Contains(line, " -> ") {
					t.Errorf("change without a position: %q", line)
				}
			}
		})
	}
}

// TestUnifiedDiffColor checks the colours of a diff on a terminal.
func TestUnifiedDiffColor(t *testing.T) {
	got, err := pipeline.UnifiedDiff("pod.yaml document 1", []byte("a: 1\nb: 2\n"), []byte("a: 1\nb: 3\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	want := "\x1b[1m--- pod.yaml document 1\x1b[0m\n" +
		"\x1b[1m+++ pod.yaml document 1 (after the overlays)\x1b[0m\n" +
		"\x1b[36m@@ -1,2 +1,2 @@\x1b[0m\n" +
		" a: 1\n" +
		"\x1b[31m-b: 2\x1b[0m\n" +
		"\x1b[32m+b: 3\x1b[0m\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestREADMEDiffExplain checks that the output the README shows for apply --diff and
// --explain is the command's output.
func TestREADMEDiffExplain(t *testing.T) {
	t.Chdir("../..")
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--diff", "--explain"} {
		start := "```console\n$ starpod apply " + flag + " "
		i := bytes.Index(data, []byte(start))
		if i < 0 {
			t.Fatalf("README.md shows no starpod apply %s", flag)
		}
		block := string(data[i+len("```console\n$ "):])
		block = block[:strings.Index(block, "```")]
		command, want, _ := strings.Cut(block, "\n")
		args := append(strings.Fields(command)[1:], "--isolation=none")
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("%s: exit %d: %s", command, code, stderr.String())
		}
		if diff := cmp.Diff(want, stdout.String()); diff != "" {
			t.Errorf("README.md's %s output (-README +command):\n%s", flag, diff)
		}
	}
}

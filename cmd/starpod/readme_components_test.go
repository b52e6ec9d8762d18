package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestREADMEComponents checks that the torchrun command the components sections of the README
// and of docs/scheduler.md show is the one the dry run they describe gives replica 0.
func TestREADMEComponents(t *testing.T) {
	t.Chdir("../..")
	const cmdLine = "go run ./cmd/starpod run --dry-run dist.ddp -j 2:4x8 --script train.py -- --lr 0.1"
	// In this process: the test binary is no starpod to start a component process with.
	args := append([]string{"run", "--app-id", "demo", "--isolation=none"}, strings.Fields(cmdLine)[4:]...)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	var job struct {
		Spec struct {
			Tasks []struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Command []string `json:"command"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"tasks"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(stdout.Bytes(), &job); err != nil {
		t.Fatal(err)
	}
	if len(job.Spec.Tasks) != 4 {
		t.Fatalf("got %d tasks, want 4", len(job.Spec.Tasks))
	}
	got := job.Spec.Tasks[0].Template.Spec.Containers[0].Command

	for _, name := range []string{"README.md", "docs/scheduler.md"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		const start = "on replica 0 it reads\n\n```\n"
		i := bytes.Index(data, []byte(start))
		if i < 0 || !bytes.Contains(data, []byte(cmdLine)) {
			t.Errorf("%s has no components section with the dist.ddp launch", name)
			continue
		}
		block := string(data[i+len(start):])
		block = block[:strings.Index(block, "```")]
		want := strings.ReplaceAll(strings.Join(strings.Fields(block), " "), "<app id>", "demo")
		if len(got) != 3 || got[0] != "bash" || got[1] != "-c" || got[2] != want {
			t.Errorf("replica 0 runs %q\n%s shows bash -c %q", got, name, want)
		}
	}
}

package scheduler_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/scheduler"
)

// TestExamples builds every ../examples/*/app.yaml as "starpod run --dry-run --app-id demo"
// does and compares the job with the example's expected.yaml. With -update it rewrites it.
func TestExamples(t *testing.T) {
	apps, err := filepath.Glob("../examples/*/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) == 0 {
		t.Fatal("no examples with an app.yaml")
	}
	for _, app := range apps {
		dir := filepath.Dir(app)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got, err := build(app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "demo"}, "yaml")
			if err != nil {
				t.Fatal(err)
			}
			expected := filepath.Join(dir, "expected.yaml")
			if *update {
				if err := os.WriteFile(expected, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(expected)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", expected, diff)
			}
		})
	}
}

// BenchmarkLlamaFT measures starpod run --dry-run on the llama-ft example: load the spec,
// compile two overlays, build and apply four pods, print the job.
func BenchmarkLlamaFT(b *testing.B) {
	for b.Loop() {
		if _, err := build("../examples/llama-ft/app.yaml", scheduler.DefaultConfig(),
			scheduler.BuildOptions{AppID: "demo"}, "yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeterministic builds the llama-ft example several times: with the same app id, the
// output is the same byte for byte, whatever order the replicas were built in.
func TestDeterministic(t *testing.T) {
	var first string
	for i := range 5 {
		got, err := build("../examples/llama-ft/app.yaml", scheduler.DefaultConfig(),
			scheduler.BuildOptions{AppID: "demo"}, "json")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("build %d differs from build 0:\n%s", i, cmp.Diff(first, got))
		}
	}
}

// Package examples_test runs every example overlay: examples/<name>/overlay.star applied to
// pod.yaml (with the ctx in env.yaml, when present) must give expected.yaml, and applying the
// overlay to its own output must change nothing. Examples of apps (app.yaml) are run by the
// scheduler's tests.
//
// Run with -update to rewrite the expected.yaml files.
package examples_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/startest"
)

var update = flag.Bool("update", false, "rewrite expected.yaml files")

// envFile is the shape of an example's env.yaml.
type envFile struct {
	AppID       string            `json:"app_id"`
	Role        string            `json:"role"`
	ReplicaID   int               `json:"replica_id"`
	NumReplicas int               `json:"num_replicas"`
	Scheduler   string            `json:"scheduler"`
	Args        map[string]string `json:"args"`
}

func TestExamples(t *testing.T) {
	dirs, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "app.yaml")); err == nil {
			continue // an app, run by package scheduler's tests
		}
		n++
		t.Run(dir, func(t *testing.T) { runExample(t, dir) })
	}
	if n < 5 {
		t.Errorf("found %d pod examples, want at least 5", n)
	}
}

// TestStarlarkTests runs every example's *_test.star files, as starpod test does.
func TestStarlarkTests(t *testing.T) {
	files, err := startest.Find([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Errorf("found %d *_test.star files in the examples, want at least 3", len(files))
	}
	var out strings.Builder
	if !startest.Run(files, &out, &startest.Options{Verbose: true}) {
		t.Errorf("starpod test examples/... failed:\n%s", out.String())
	}
}

func runExample(t *testing.T, dir string) {
	script := filepath.Join(dir, "overlay.star")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatalf("every example needs overlay.star and pod.yaml (or app.yaml): %v", err)
	}
	o, err := engine.Compile(script, src, &engine.Options{Loader: engine.DirLoader(dir)})
	if err != nil {
		t.Fatal(err)
	}
	pod := new(corev1.Pod)
	readYAML(t, filepath.Join(dir, "pod.yaml"), pod)
	env := new(engine.Env)
	if _, err := os.Stat(filepath.Join(dir, "env.yaml")); err == nil {
		var e envFile
		readYAML(t, filepath.Join(dir, "env.yaml"), &e)
		*env = engine.Env{AppID: e.AppID, Role: e.Role, ReplicaID: e.ReplicaID,
			NumReplicas: e.NumReplicas, Scheduler: e.Scheduler, Args: e.Args}
	}
	got, err := o.Apply(context.Background(), pod, env)
	if err != nil {
		t.Fatal(err)
	}
	gotYAML, err := yaml.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(dir, "expected.yaml")
	if *update {
		if err := os.WriteFile(golden, gotYAML, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(gotYAML)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", golden, diff)
	}

	// Overlays are idempotent: applying one to its own output changes nothing.
	again, err := o.Apply(context.Background(), got, env)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	againYAML, err := yaml.Marshal(again)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(gotYAML), string(againYAML)); diff != "" {
		t.Errorf("applying the overlay twice differs from applying it once (-once +twice):\n%s", diff)
	}
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

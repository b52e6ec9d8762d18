// Package examples_test runs every example overlay: examples/<name>/overlay.star applied to
// pod.yaml (with the ctx in env.yaml, when present) must give expected.yaml, and applying the
// overlay to its own output must change nothing. Examples of apps (app.yaml) are run by the
// scheduler's tests. The examples' *_test.star files run as starpod test runs them.
//
// Run with -update to rewrite the expected.yaml files.
package examples_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/exampletest"
	"github.com/starpod/starpod/internal/fast"
	"github.com/starpod/starpod/startest"
)

var update = flag.Bool("update", false, "rewrite expected.yaml files")

// TestExamples runs every pod example twice: with the fast paths, and with the library paths
// alone (fast.Off, as STARPOD_FAST_PATHS=off sets it), which must give the same bytes.
func TestExamples(t *testing.T) {
	for _, mode := range []struct {
		name string
		off  bool
	}{{"fast", false}, {"library", true}} {
		t.Run(mode.name, func(t *testing.T) {
			fast.Off = mode.off
			defer func() { fast.Off = false }()
			examples, err := exampletest.Load(".")
			if err != nil {
				t.Fatal(err)
			}
			if len(examples) < 5 {
				t.Errorf("found %d pod examples, want at least 5", len(examples))
			}
			for _, e := range examples {
				// -update writes what the fast paths give; the library paths must agree.
				t.Run(e.Name, func(t *testing.T) { runExample(t, e, *update && !mode.off) })
			}
		})
	}
}

// TestStarlarkTests runs every example's *_test.star files, as starpod test does, with the
// fast paths and with the library paths alone.
func TestStarlarkTests(t *testing.T) {
	files, err := startest.Find([]string{"."})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Errorf("found %d *_test.star files in the examples, want at least 3", len(files))
	}
	for _, off := range []bool{false, true} {
		fast.Off = off
		var out strings.Builder
		ok := startest.Run(context.Background(), files, &out, &startest.Options{Verbose: true})
		fast.Off = false
		if !ok {
			t.Errorf("starpod test examples/... (fast paths off: %v) failed:\n%s", off, out.String())
		}
	}
}

func runExample(t *testing.T, e *exampletest.Example, update bool) {
	o, err := e.Compile(context.Background(), engine.Options{Validation: engine.ValidatePod})
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Apply(context.Background(), e.Pod, e.Env)
	if err != nil {
		t.Fatal(err)
	}
	gotYAML, err := e.MarshalYAML(got)
	if err != nil {
		t.Fatal(err)
	}
	if update {
		if err := os.WriteFile(e.Expected, gotYAML, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(e.Expected)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(gotYAML)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", e.Expected, diff)
	}

	// Overlays are idempotent: applying one to its own output changes nothing.
	again, err := o.Apply(context.Background(), got, e.Env)
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	againYAML, err := e.MarshalYAML(again)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(gotYAML), string(againYAML)); diff != "" {
		t.Errorf("applying the overlay twice differs from applying it once (-once +twice):\n%s", diff)
	}
}

package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/engine"
)

// TestExplain explains each overlay of testdata/explain applied to pod.yaml and compares the
// changes, one a line, with NAME.golden: every changed field with its old and new value and
// the line that wrote it, for index assignment, dict and list methods, every helper (at the
// line of its call), new dicts and loaded modules. The changes are the same in process and in
// a worker, and the result is Apply's. With -update the golden files are rewritten.
func TestExplain(t *testing.T) {
	t.Chdir(filepath.Join("testdata", "explain"))
	files, err := filepath.Glob("*.star")
	if err != nil || len(files) == 0 {
		t.Fatalf("no overlays: %v", err)
	}
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	pod := readPod(t, "pod.yaml")
	for _, file := range files {
		name := strings.TrimSuffix(file, ".star")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, iso := range []engine.Isolation{engine.InProcess, engine.WorkerProcess} {
				opts := &engine.Options{Loader: engine.DirLoader("."), Validation: engine.ValidatePod, Isolation: iso}
				if iso == engine.WorkerProcess {
					opts.Workers, opts.MaxMemory = pool, 128<<20
				}
				o, err := engine.Compile(context.Background(), file, src, opts)
				if err != nil {
					t.Fatal(err)
				}
				res, changes, err := o.Explain(context.Background(), pod, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, err := o.Apply(context.Background(), pod, nil)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, res); diff != "" {
					t.Errorf("Explain's result is not Apply's (-Apply +Explain):\n%s", diff)
				}
				var b strings.Builder
				for _, c := range changes {
					b.WriteString(c.String() + "\n")
				}
				got = append(got, b.String())
			}
			if diff := cmp.Diff(got[0], got[1]); diff != "" {
				t.Errorf("in process and in a worker differ (-in-process +worker):\n%s", diff)
			}
			checkGolden(t, name+".golden", got[0], "changes")
		})
	}
}

// TestExplainChain checks that a chain gives each overlay's changes in order, the later
// overlay's change of a field after the earlier's.
func TestExplainChain(t *testing.T) {
	a := compile(t, "def overlay(pod):\n    pod[\"metadata\"][\"labels\"][\"team\"] = \"ml\"\n    pod[\"spec\"][\"hostname\"] = \"a\"\n", nil)
	b, err := engine.Compile(context.Background(), "b.star", []byte("def overlay(pod):\n    pod[\"spec\"][\"hostname\"] = \"b\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, changes, err := engine.Chain{a, b}.Explain(context.Background(), readPod(t, filepath.Join("testdata", "explain", "pod.yaml")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Spec.Hostname != "b" {
		t.Errorf("hostname = %q, want b", res.Spec.Hostname)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Overlay+" "+c.String())
	}
	want := []string{
		`overlay.star overlay.star:2:30: metadata.labels[team]: (none) -> "ml"`,
		`overlay.star overlay.star:3:16: spec.hostname: (none) -> "a"`,
		`b.star b.star:2:16: spec.hostname: "a" -> "b"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}

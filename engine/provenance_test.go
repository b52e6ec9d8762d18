package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

// TestProvenance applies each overlay of testdata/provenance, which returns an invalid pod, to
// pod.yaml (or NAME.pod.yaml) and compares its error and backtrace with NAME.golden: each
// problem at the statement or helper call that last wrote it, in the overlay or a module,
// for writes by index assignment, dict and list methods, every helper, and new dicts. The
// error is the same in process and in a worker. With -update the golden files are rewritten.
func TestProvenance(t *testing.T) {
	t.Chdir(filepath.Join("testdata", "provenance"))
	dir := "."
	files, err := filepath.Glob("*.star")
	if err != nil || len(files) == 0 {
		t.Fatalf("no overlays in %s: %v", dir, err)
	}
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".star")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			podFile := filepath.Join(dir, name+".pod.yaml")
			if _, err := os.Stat(podFile); err != nil {
				podFile = filepath.Join(dir, "pod.yaml")
			}
			pod := readPod(t, podFile)
			var got []string
			for _, iso := range []engine.Isolation{engine.InProcess, engine.WorkerProcess} {
				opts := &engine.Options{Loader: engine.DirLoader(dir), Validation: engine.ValidatePod, Isolation: iso}
				if iso == engine.WorkerProcess {
					opts.Workers, opts.MaxMemory = pool, 128<<20
				}
				o, err := engine.Compile(context.Background(), name+".star", src, opts)
				if err != nil {
					t.Fatal(err)
				}
				_, err = o.Apply(context.Background(), pod, nil)
				var e *engine.Error
				if !errors.As(err, &e) {
					t.Fatalf("got %v, want an *engine.Error", err)
				}
				text := e.Error() + "\n"
				if e.Backtrace != "" {
					text += e.Backtrace + "\n"
				}
				got = append(got, text)
			}
			if diff := cmp.Diff(got[0], got[1]); diff != "" {
				t.Errorf("in process and in a worker differ (-in-process +worker):\n%s", diff)
			}
			checkGolden(t, filepath.Join(dir, name+".golden"), got[0], "error")
		})
	}
}

func readPod(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	return engine.ReadTestPod(t, file)
}

// TestProvenanceChain checks that in a chain the error names the overlay that wrote the bad
// value, at its line, whether the overlays before it changed the pod or not.
func TestProvenanceChain(t *testing.T) {
	compileSrc := func(name, src string) *engine.Overlay {
		o, err := engine.Compile(context.Background(), name, []byte(src), &engine.Options{Validation: engine.ValidatePod})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	label := compileSrc("label.star", "def overlay(pod):\n    pod[\"metadata\"][\"labels\"] = {\"team\": \"ml\"}\n")
	bad := compileSrc("bad.star", "def overlay(pod):\n    pod[\"spec\"][\"restartPolicy\"] = \"Sometimes\"\n")
	for _, test := range []struct {
		name  string
		chain engine.Chain
		want  string
	}{
		{"second", engine.Chain{label, bad}, `^bad.star:2:16: spec.restartPolicy: got "Sometimes"`},
		{"first", engine.Chain{bad, label}, `^bad.star:2:16: spec.restartPolicy: got "Sometimes"`},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := test.chain.Apply(context.Background(), readPod(t, filepath.Join("testdata", "provenance", "pod.yaml")), nil)
			matchErr(t, err, test.want)
		})
	}
}

// checkGolden compares got, the text of what, with the golden file path, or writes the file
// with -update.
func checkGolden(t *testing.T, path, got, what string) {
	t.Helper()
	if *updateHostile {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, diff)
	}
}

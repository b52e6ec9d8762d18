package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/scheduler"
)

var update = flag.Bool("update", false, "update the golden files")

// TestBuild runs each testdata/build/*.txtar: its app.yaml and overlays are written to a
// directory, its "options" file (lines of "key: value": app-id, cfg, overlay, overlay-arg,
// output) configures the build, and the printed job must equal its want.yaml (or want.json),
// or the error its want.err. With -update the want file is rewritten.
func TestBuild(t *testing.T) {
	files, err := filepath.Glob("testdata/build/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no test cases in testdata/build")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			testBuild(t, file)
		})
	}
}

func testBuild(t *testing.T, file string) {
	c, err := loadBuildCase(file, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, failed := c.result(engine.Options{})
	if failed && c.wantName != "want.err" {
		t.Errorf("unexpected error:\n%s", got)
		return
	}
	if !failed && c.wantName == "want.err" {
		t.Errorf("got no error, want:\n%s", c.want)
		return
	}

	if *update {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ar.Files {
			if ar.Files[i].Name == c.wantName {
				ar.Files[i].Data = []byte(got)
			}
		}
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(c.want, got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", c.wantName, diff)
	}
}

// build loads, builds and prints an app, with Build and Marshal and with Render, which must
// agree. An app that LoadApp returns with problems is built too, as starpod run does, so
// that the problems of its overlays and app id are reported with them.
func build(file string, cfg scheduler.Config, opts scheduler.BuildOptions, format string) (string, error) {
	app, err := scheduler.LoadApp(file)
	if app == nil {
		return "", err
	}
	job, err := scheduler.Build(context.Background(), app, cfg, opts)
	var out []byte
	if err == nil {
		out, err = scheduler.Marshal(job, format)
	}
	rendered, rerr := scheduler.Render(context.Background(), app, cfg, opts, format)
	if fmt.Sprint(rerr) != fmt.Sprint(err) || string(rendered) != string(out) {
		return "", fmt.Errorf("Render gives error %v and %d bytes, Build and Marshal error %v and %d bytes:\n%s",
			rerr, len(rendered), err, len(out), cmp.Diff(string(out), string(rendered)))
	}
	// RenderTo writes the same, and nothing at all when it fails.
	var written bytes.Buffer
	werr := scheduler.RenderTo(context.Background(), &written, app, cfg, opts, format)
	if fmt.Sprint(werr) != fmt.Sprint(err) || written.String() != string(out) {
		return "", fmt.Errorf("RenderTo gives error %v and writes %d bytes, Build and Marshal error %v and %d bytes",
			werr, written.Len(), err, len(out))
	}
	return string(out), err
}

// failingWriter takes n bytes, then fails.
type failingWriter struct{ n int }

var errWrite = errors.New("the disk is full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errWrite
	}
	w.n -= len(p)
	return len(p), nil
}

// TestRenderToWriteError checks that RenderTo returns the error of a write, whether the job
// is written in one piece (JSON) or in many (YAML of many tasks).
func TestRenderToWriteError(t *testing.T) {
	app, err := scheduler.ParseApp("app.yaml", []byte("name: w\nroles:\n- name: r\n  image: i\n  entrypoint: e\n  num_replicas: 3\n  resource: {cpu: 1, mem_mb: 1024}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		for _, n := range []int{0, 100} {
			err := scheduler.RenderTo(context.Background(), &failingWriter{n: n}, app, scheduler.DefaultConfig(),
				scheduler.BuildOptions{AppID: "w"}, format)
			if !errors.Is(err, errWrite) {
				t.Errorf("%s, failing after %d bytes: got %v, want the write's error", format, n, err)
			}
		}
	}
}

package scheduler_test

import (
	"context"
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
	return string(out), err
}

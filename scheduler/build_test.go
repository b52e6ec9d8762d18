package scheduler_test

import (
	"bufio"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rogpeppe/go-internal/txtar"

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
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var options string
	wantName, want := "", ""
	for _, f := range ar.Files {
		switch f.Name {
		case "options":
			options = string(f.Data)
			continue
		case "want.yaml", "want.json", "want.err":
			wantName, want = f.Name, string(f.Data)
			continue
		}
		path := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if wantName == "" {
		t.Fatal("no want.yaml, want.json or want.err")
	}

	var cfgs []string
	opts := scheduler.BuildOptions{OverlayArgs: map[string]string{}}
	format := "yaml"
	sc := bufio.NewScanner(strings.NewReader(options))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("options: bad line %q", line)
		}
		switch k {
		case "app-id":
			opts.AppID = v
		case "cfg":
			cfgs = append(cfgs, v)
		case "overlay":
			opts.Overlays = append(opts.Overlays, filepath.Join(dir, v))
		case "overlay-arg":
			ak, av, _ := strings.Cut(v, "=")
			opts.OverlayArgs[ak] = av
		case "output":
			format = v
		default:
			t.Fatalf("options: unknown key %q", k)
		}
	}
	cfg, err := scheduler.ParseConfig(cfgs)
	if err != nil {
		t.Fatal(err)
	}

	got, err := build(filepath.Join(dir, "app.yaml"), cfg, opts, format)
	if err != nil {
		got = strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n"
		if wantName != "want.err" {
			t.Errorf("unexpected error:\n%s", got)
			return
		}
	} else if wantName == "want.err" {
		t.Errorf("got no error, want:\n%s", want)
		return
	}

	if *update {
		for i := range ar.Files {
			if ar.Files[i].Name == wantName {
				ar.Files[i].Data = []byte(got)
			}
		}
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", wantName, diff)
	}
}

// build loads, builds and prints an app.
func build(file string, cfg scheduler.Config, opts scheduler.BuildOptions, format string) (string, error) {
	app, err := scheduler.LoadApp(file)
	if err != nil {
		return "", err
	}
	job, err := scheduler.Build(context.Background(), app, cfg, opts)
	if err != nil {
		return "", err
	}
	out, err := scheduler.Marshal(job, format)
	return string(out), err
}

package startest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/startest"
)

func write(t *testing.T, dir, name, src string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a_test.star", "b/c_test.star", "b/overlay.star", "testdata/x_test.star", ".hidden/y_test.star"} {
		write(t, dir, name, "")
	}
	got, err := startest.Find([]string{dir + "/...", filepath.Join(dir, "a_test.star")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a_test.star"), filepath.Join(dir, "b", "c_test.star")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := startest.Find([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing path is not an error")
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "gpu.star", "def overlay(pod):\n    pod[\"spec\"][\"nodeSelector\"] = {\"pool\": \"gpu\"}\n")
	write(t, dir, "gpu_test.star", `
POD = pod_from_yaml("kind: Pod\nspec:\n  containers: [{name: c, image: i}]\n")

def test_pass():
    assert.eq(apply("gpu.star", POD)["spec"]["nodeSelector"], {"pool": "gpu"})

def test_fail():
    assert.eq(1, 2)
    assert.true(False, "second check")

def test_fails_ok():
    assert.fails(lambda: apply("gpu.star", {"spec": {"bogus": 1}}), "spec.bogus: unknown field")
`)
	file := filepath.Join(dir, "gpu_test.star")
	var out strings.Builder
	if startest.Run([]string{file}, &out, &startest.Options{Verbose: true}) {
		t.Fatalf("Run passed, want a failure:\n%s", out.String())
	}
	for _, want := range []string{
		"--- PASS: test_pass ",
		"--- FAIL: test_fail ",
		"    " + file + ":8: got 1, want 2\n",
		"    " + file + ":9: second check: got False, want a true value\n",
		"--- PASS: test_fails_ok ",
		"FAIL\t" + file + "\t",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if !startest.Run([]string{file}, &out, &startest.Options{Run: regexp.MustCompile("pass|ok")}) {
		t.Fatalf("-run pass|ok failed:\n%s", out.String())
	}
	if !strings.HasPrefix(out.String(), "ok  \t"+file+"\t") {
		t.Errorf("got %q, want ok", out.String())
	}
}

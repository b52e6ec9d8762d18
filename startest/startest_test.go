package startest_test

import (
	"context"
	"fmt"
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
	if startest.Run(context.Background(), []string{file}, &out, &startest.Options{Verbose: true}) {
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
	if !startest.Run(context.Background(), []string{file}, &out, &startest.Options{Run: regexp.MustCompile("pass|ok")}) {
		t.Fatalf("-run pass|ok failed:\n%s", out.String())
	}
	if !strings.HasPrefix(out.String(), "ok  \t"+file+"\t") {
		t.Errorf("got %q, want ok", out.String())
	}
}

func TestRunLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lib/a.star", "load(\"b.star\", \"b\")\na = 1\n")
	write(t, dir, "lib/b.star", "load(\"a.star\", \"a\")\nb = 1\n")
	write(t, dir, "lib/common.star", "print(\"common runs\")\nC = [1]\n")
	write(t, dir, "lib/x.star", "load(\"common.star\", \"C\")\nX = C\n")
	write(t, dir, "lib/y.star", "load(\"common.star\", \"C\")\nY = C\n")
	write(t, dir, "cycle_test.star", "load(\"lib/a.star\", \"a\")\ndef test_a():\n    pass\n")
	write(t, dir, "shared_test.star", `
load("lib/x.star", "X")
load("lib/y.star", "Y")

def test_shared():
    assert.true(X == Y)
    assert.fails(lambda: X.append(2), "frozen")
`)

	// A cycle fails the file and names every module in it.
	file := filepath.Join(dir, "cycle_test.star")
	var out strings.Builder
	if startest.Run(context.Background(), []string{file}, &out, nil) {
		t.Fatalf("Run passed, want a load cycle:\n%s", out.String())
	}
	a, b := filepath.Join(dir, "lib", "a.star"), filepath.Join(dir, "lib", "b.star")
	want := fmt.Sprintf("%s: %s:1:6: load cycle: %s -> %s -> %s\nFAIL\t%s\t", file, b, a, b, a, file)
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("got:\n%s\nwant prefix:\n%s", out.String(), want)
	}

	// A module that two modules load runs once, and is frozen.
	file = filepath.Join(dir, "shared_test.star")
	out.Reset()
	if !startest.Run(context.Background(), []string{file}, &out, &startest.Options{Verbose: true}) {
		t.Fatalf("Run failed:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "common runs"); n != 1 {
		t.Errorf("common.star printed %d times, want 1:\n%s", n, out.String())
	}
}

func TestRunPrint(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "overlay.star", "def overlay(pod):\n    print(\"in overlay\")\n")
	write(t, dir, "p_test.star", `print("top")

def test_pass():
    print("pass")
    apply("overlay.star", {"spec": {"containers": [{"name": "c"}]}})

def test_fail():
    print("fail")
    assert.eq(1, 2)
`)
	file := filepath.Join(dir, "p_test.star")
	for _, test := range []struct {
		opts *startest.Options
		ok   bool
		want string // the output, without the times
	}{
		{&startest.Options{Run: regexp.MustCompile("pass")}, true, "ok  \tF\n"},
		{&startest.Options{Run: regexp.MustCompile("pass"), Verbose: true}, true,
			"F:1: top\n=== RUN   test_pass\n    F:4: pass\n    D/overlay.star:2: in overlay\n--- PASS: test_pass\nok  \tF\n"},
		{nil, false, "F:1: top\n--- FAIL: test_fail\n    F:8: fail\n    F:9: got 1, want 2\nFAIL\tF\n"},
	} {
		var out strings.Builder
		if ok := startest.Run(context.Background(), []string{file}, &out, test.opts); ok != test.ok {
			t.Errorf("Run = %v, want %v:\n%s", ok, test.ok, out.String())
		}
		got := regexp.MustCompile(` \(\d+\.\d+s\)|\t\d+\.\d+s`).ReplaceAllString(out.String(), "")
		got = strings.ReplaceAll(strings.ReplaceAll(got, file, "F"), dir, "D")
		if diff := cmp.Diff(test.want, got); diff != "" {
			t.Errorf("%+v: (-want +got):\n%s", test.opts, diff)
		}
	}
}

// TestCheck checks that Check compiles a test file as Run does, without running it.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "lib/pods.star", "POD = pod_from_yaml(\"kind: Pod\\nspec: {containers: [{name: c, image: i}]}\\n\")\n")
	write(t, dir, "good_test.star", "load(\"lib/pods.star\", \"POD\")\n\ndef test_never_run():\n    assert.eq(apply(\"x.star\", POD), None)\n    fail(\"run\")\n\nfail(\"top level run\")\n")
	write(t, dir, "typo_test.star", "def test_typo():\n    asert.eq(1, 1)\n")
	write(t, dir, "fstring_test.star", "def test_f():\n    print(f\"{1}\")\n")
	write(t, dir, "load_test.star", "load(\"lib/missing.star\", \"X\")\n")
	ctx := context.Background()
	if err := startest.Check(ctx, filepath.Join(dir, "good_test.star"), nil); err != nil {
		t.Errorf("good_test.star: %v", err)
	}
	for file, want := range map[string]string{
		"typo_test.star":    `typo_test.star:2:5: undefined: asert; did you mean "assert"\?$`,
		"fstring_test.star": `fstring_test.star:2:11: f-strings are not Starlark; `,
		"load_test.star":    `load_test.star:1:6: cannot load lib/missing.star: `,
		"none_test.star":    `none_test.star`,
	} {
		err := startest.Check(ctx, filepath.Join(dir, file), nil)
		if err == nil || !regexp.MustCompile(want).MatchString(err.Error()) {
			t.Errorf("%s: got %v, want an error matching %s", file, err, want)
		}
	}
}

// TestApplyCtx checks the ctx argument of apply: a dict or a struct, with None for the
// replica outside a scheduler.
func TestApplyCtx(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "ctx.star", "def overlay(pod, ctx):\n    pod[\"metadata\"] = {\"name\": \"%s-%s-%s-%s\" % (ctx.role, ctx.replica_id, ctx.num_replicas, ctx.scheduler)}\n")
	write(t, dir, "ctx_test.star", `
POD = pod_from_yaml("kind: Pod\nspec:\n  containers: [{name: c, image: i}]\n")

def name(ctx):
    return apply("ctx.star", POD, ctx = ctx)["metadata"]["name"]

def test_ctx():
    assert.eq(name(None), "-None-None-")
    assert.eq(name({}), "-None-None-")
    assert.eq(name({"role": "r", "replica_id": 1, "num_replicas": 2}), "r-1-2-kubernetes")
    assert.eq(name({"replica_id": 1, "num_replicas": 2, "scheduler": "local"}), "-1-2-local")
    assert.eq(name(struct(app_id = "a", role = "r", replica_id = 0, num_replicas = 1, scheduler = "kubernetes", args = {"k": "v"})), "r-0-1-kubernetes")
    assert.eq(name(struct(app_id = "", role = "", replica_id = None, num_replicas = None, scheduler = "", args = {})), "-None-None-")
    assert.fails(lambda: name({"replica_id": -1}), "apply: ctx: replica_id: got -1, want at least 0")
    assert.fails(lambda: name({"replica_id": "1"}), "apply: ctx: replica_id: ")
    assert.fails(lambda: name(struct(rank = 1)), 'apply: ctx: unknown key "rank"')
    assert.fails(lambda: name([]), "apply: ctx: got list, want dict, struct or None")
`)
	var out strings.Builder
	if !startest.Run(context.Background(), []string{filepath.Join(dir, "ctx_test.star")}, &out, nil) {
		t.Errorf("failed:\n%s", out.String())
	}
}

package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/starpod/starpod/builtins"
	"github.com/starpod/starpod/engine"
)

// linkFixture is a file system of modules for the Linker tests.
var linkFixture = fstest.MapFS{
	"t/top.star":        {Data: []byte("load(\"lib/a.star\", \"a\")\nload(\"lib/b.star\", \"b\")\nboth = a + b\n")},
	"t/lib/a.star":      {Data: []byte("load(\"common.star\", \"c\")\na = [\"a\"] + c\n")},
	"t/lib/b.star":      {Data: []byte("load(\"common.star\", \"c\")\nb = [\"b\"] + c\n")},
	"t/lib/common.star": {Data: []byte("count()\nprint(\"common runs\")\nc = [\"common\"]\nshared = []\n")},
	"t/lib/mut.star":    {Data: []byte("load(\"common.star\", \"shared\")\ndef f():\n    shared.append(1)\n")},
	"t/lib/x.star":      {Data: []byte("load(\"y.star\", \"y\")\nx = 1\n")},
	"t/lib/y.star":      {Data: []byte("load(\"x.star\", \"x\")\ny = 1\n")},
	"t/self_test.star":  {Data: []byte("load(\"lib/self.star\", \"s\")\nz = 1\n")},
	"t/lib/self.star":   {Data: []byte("load(\"../self_test.star\", \"z\")\ns = 1\n")},
	"t/lib/fail.star":   {Data: []byte("def f(d):\n    return d[\"missing\"]\nv = f({})\n")},
	"t/lib/spin.star":   {Data: []byte("def f():\n    for i in range(100000000):\n        pass\nf()\n")},
	"t/lib/undef.star":  {Data: []byte("v = count\n")},
}

// linkTop compiles src as the file name with predeclared and links it with l.
func linkTop(t *testing.T, l *engine.Linker, name, src string, predeclared starlark.StringDict) (*starlark.Program, error) {
	t.Helper()
	_, prog, err := starlark.SourceProgramOptions(&syntax.FileOptions{Set: true}, name, []byte(src), predeclared.Has)
	if err != nil {
		t.Fatal(err)
	}
	return prog, l.Link(name, prog)
}

func TestLinker(t *testing.T) {
	runs := 0
	predeclared := builtins.Predeclared()
	predeclared["count"] = starlark.NewBuiltin("count", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
		runs++
		return starlark.None, nil
	})
	var printed []string
	l := engine.NewLinker(engine.FSLoader(linkFixture), &engine.LinkOptions{
		Predeclared: predeclared,
		Thread: func(module string) *starlark.Thread {
			return &starlark.Thread{Name: module, Print: func(t *starlark.Thread, msg string) {
				printed = append(printed, fmt.Sprintf("%s: %s", t.CallFrame(1).Pos, msg))
			}}
		},
	})
	src, _ := linkFixture.ReadFile("t/top.star")
	prog, err := linkTop(t, l, "t/top.star", string(src), predeclared)
	if err != nil {
		t.Fatal(err)
	}
	thread := &starlark.Thread{Load: l.Load}
	globals, err := prog.Init(thread, predeclared)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := globals["both"].String(), `["a", "common", "b", "common"]`; got != want {
		t.Errorf("both = %s, want %s", got, want)
	}
	// common.star, loaded by a.star and b.star, ran once and printed through the given thread.
	if runs != 1 {
		t.Errorf("common.star ran %d times, want 1", runs)
	}
	if diff := cmp.Diff([]string{"t/lib/common.star:2:6: common runs"}, printed); diff != "" {
		t.Errorf("prints (-want +got):\n%s", diff)
	}

	// A second file linked by the same Linker shares the modules already run.
	prog, err = linkTop(t, l, "t/other.star", "load(\"lib/mut.star\", \"f\")\ng = f\n", predeclared)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("common.star ran %d times, want 1", runs)
	}
	globals, err = prog.Init(&starlark.Thread{Load: l.Load}, predeclared)
	if err != nil {
		t.Fatal(err)
	}
	// Loaded modules are frozen.
	_, err = starlark.Call(&starlark.Thread{}, globals["g"], nil, nil)
	matchErr(t, err, `cannot append to frozen list`)

	// Load serves only the files the Linker linked.
	_, err = starlark.ExecFileOptions(&syntax.FileOptions{}, &starlark.Thread{Load: l.Load}, "t/unlinked.star", "load(\"lib/a.star\", \"a\")\n", nil)
	matchErr(t, err, `cannot load lib/a.star: it was not loaded when t/unlinked.star was linked`)
}

func TestLinkerErrors(t *testing.T) {
	predeclared := builtins.Predeclared()
	for _, test := range []struct{ name, src, want string }{
		// The whole cycle, from the module where it starts.
		{"t/top.star", "load(\"lib/x.star\", \"x\")", `^t/top.star: t/lib/y.star:1:6: load cycle: t/lib/x.star -> t/lib/y.star -> t/lib/x.star$`},
		// A cycle back to the linked file itself.
		{"t/self_test.star", "load(\"lib/self.star\", \"s\")", `load cycle: t/self_test.star -> t/lib/self.star -> t/self_test.star$`},
		{"t/top.star", "load(\"../../x.star\", \"x\")", `^t/top.star:1:6: cannot load ../../x.star: ../../x.star is outside the module file system$`},
		{"t/top.star", "load(\"lib/none.star\", \"x\")", `cannot load lib/none.star: t/lib/none.star does not exist`},
		// Modules see the overlay helpers by default, not names the linked file sees.
		{"t/top.star", "load(\"lib/undef.star\", \"v\")", `t/lib/undef.star:1:5: undefined: count`},
	} {
		l := engine.NewLinker(engine.FSLoader(linkFixture), nil)
		_, err := linkTop(t, l, test.name, test.src, predeclared)
		matchErr(t, err, test.want)
		var e *engine.Error
		if !errors.As(err, &e) || e.Overlay != test.name {
			t.Errorf("%s: got %#v, want an *engine.Error naming %s", test.src, err, test.name)
		}
	}

	// A module whose top level fails: the error carries the module's backtrace.
	l := engine.NewLinker(engine.FSLoader(linkFixture), nil)
	_, err := linkTop(t, l, "t/top.star", "load(\"lib/fail.star\", \"v\")", predeclared)
	matchErr(t, err, `^t/top.star: t/lib/fail.star:2:13: key "missing" not in dict$`)
	var e *engine.Error
	if !errors.As(err, &e) || !strings.Contains(e.Backtrace, "t/lib/fail.star:3:6: in <toplevel>") {
		t.Errorf("got %#v, want an *engine.Error with the backtrace of fail.star", err)
	}

	// The default thread is bounded by the default step limit.
	l = engine.NewLinker(engine.FSLoader(linkFixture), nil)
	_, err = linkTop(t, l, "t/top.star", "load(\"lib/spin.star\", \"f\")", predeclared)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitSteps {
		t.Errorf("got %v, want a *engine.LimitError of steps", err)
	}

	// Without a loader, load is an error.
	l = engine.NewLinker(nil, nil)
	_, err = linkTop(t, l, "t/top.star", "load(\"lib/a.star\", \"a\")", predeclared)
	matchErr(t, err, `^t/top.star:1:6: cannot load lib/a.star: load is not enabled`)
}

// A Linker loads the modules of Starlark files that are not overlays. Here a test file sees a
// name, check, that overlays do not; the modules it loads see the overlay helpers.
func ExampleLinker() {
	fsys := fstest.MapFS{
		"checks/gpu_test.star":  {Data: []byte("load(\"lib/want.star\", \"want\")\nok = check(want)\n")},
		"checks/lib/want.star":  {Data: []byte("load(\"pools.star\", \"POOLS\")\nwant = {\"pool\": POOLS[0]}\n")},
		"checks/lib/pools.star": {Data: []byte("POOLS = [\"gpu-h100\"]\n")},
		"checks/lib/ping.star":  {Data: []byte("load(\"pong.star\", \"pong\")\nping = 1\n")},
		"checks/lib/pong.star":  {Data: []byte("load(\"ping.star\", \"ping\")\npong = 1\n")},
	}
	predeclared := builtins.Predeclared()
	predeclared["check"] = starlark.NewBuiltin("check", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
		return starlark.String("checked " + args[0].String()), nil
	})
	linker := engine.NewLinker(engine.FSLoader(fsys), nil)

	src, _ := fsys.ReadFile("checks/gpu_test.star")
	_, prog, err := starlark.SourceProgramOptions(&syntax.FileOptions{}, "checks/gpu_test.star", src, predeclared.Has)
	if err != nil {
		panic(err)
	}
	if err := linker.Link("checks/gpu_test.star", prog); err != nil {
		panic(err)
	}
	globals, err := prog.Init(&starlark.Thread{Load: linker.Load}, predeclared)
	if err != nil {
		panic(err)
	}
	fmt.Println(globals["ok"])

	_, prog, _ = starlark.SourceProgramOptions(&syntax.FileOptions{}, "checks/ping_test.star", []byte("load(\"lib/ping.star\", \"ping\")\n"), predeclared.Has)
	fmt.Println(linker.Link("checks/ping_test.star", prog))
	// Output:
	// "checked {\"pool\": \"gpu-h100\"}"
	// checks/ping_test.star: checks/lib/pong.star:1:6: load cycle: checks/lib/ping.star -> checks/lib/pong.star -> checks/lib/ping.star
}

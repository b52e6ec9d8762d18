package component_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"go.starlark.net/syntax"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/scheduler"
)

// TestResults checks that what a component returns goes through the strict decoding of an app
// spec, and that a result that is no app is an error naming the component and the field path.
func TestResults(t *testing.T) {
	cases := []struct {
		fn   string
		want string
	}{
		{"not_a_dict", `^testdata/results.star:not_a_dict: the component returned list, want a dict in the shape of an app spec$`},
		{"int_key", `roles\[0\]: Invalid value: "1": got an int key, want string`},
		{"cyclic", `nested deeper than 64 levels`},
		{"function_value", `roles\[0\]\.name: Invalid value: .*got a function, want a dict`},
		{"bad_spec", `(?m)^testdata/results.star:bad_spec: roles\[0\]\.colour: unknown field`},
		{"loops", `exceeded the limit of 1000 steps|steps`},
		{"repeats", `^testdata/results.star:repeats: the component's result: at roles\[0\]\.args\[2\]: larger than the limit of 256Ki of an app spec$`},
	}
	for _, tc := range cases {
		ctx := context.Background()
		c, err := component.Load(ctx, "testdata/results.star:"+tc.fn, &component.LoadOptions{Engine: engine.Options{MaxSteps: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.ParseArgs(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.App(ctx, a)
		if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
			t.Errorf("%s: got %v, want match %q", tc.fn, err, tc.want)
		}
	}
}

func TestResultLimit(t *testing.T) {
	ctx := context.Background()
	c, err := component.Load(ctx, "testdata/results.star:loops", &component.LoadOptions{Engine: engine.Options{MaxSteps: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.ParseArgs(nil, nil)
	_, err = c.App(ctx, a)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitSteps {
		t.Fatalf("got %v, want a steps *engine.LimitError", err)
	}
	// On a busy machine the time limit may already stop the file's top level.
	c, err = component.Load(ctx, "testdata/results.star:loops", &component.LoadOptions{Engine: engine.Options{Timeout: 50 * time.Millisecond, MaxSteps: 1 << 40}})
	if err == nil {
		_, err = c.App(ctx, a)
	}
	if !errors.As(err, &lim) || lim.Limit != engine.LimitTime {
		t.Fatalf("got %v, want a time *engine.LimitError", err)
	}
}

func TestSpecErrorHasNoPosition(t *testing.T) {
	ctx := context.Background()
	c, err := component.Load(ctx, "testdata/results.star:bad_spec", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.ParseArgs(nil, nil)
	app, err := c.App(ctx, a)
	var serr *scheduler.SpecError
	if app == nil || !errors.As(err, &serr) {
		t.Fatalf("got %v, %T, want the app and a *scheduler.SpecError", app, err)
	}
	for _, fe := range serr.Errors {
		if fe.Pos.Line != 0 {
			t.Errorf("%v: has a position in the generated YAML", fe)
		}
	}
	if len(serr.Errors) != 2 {
		t.Errorf("got %d problems, want 2 (an unknown field and mem_mb):\n%v", len(serr.Errors), serr)
	}
}

func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ name, want string }{
		{"testdata/results.star:NOT_A_FUNCTION", `NOT_A_FUNCTION is a int, want a function`},
		{"testdata/results.star:kwargs", `has a \*\*kw parameter`},
		{"testdata/results.star:_private", `has no function _private`},
		{"testdata/missing.star:f", `no such file`},
		{"dist.nope", `dist.star has no function nope`},
		{"nope.ddp", `unknown component "nope.ddp"`},
	}
	for _, tc := range cases {
		_, err := component.Load(ctx, tc.name, nil)
		if err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
			t.Errorf("%s: got %v, want match %q", tc.name, err, tc.want)
		}
	}
}

func TestPrint(t *testing.T) {
	ctx := context.Background()
	var got []string
	c, err := component.Load(ctx, "testdata/results.star:prints", &component.LoadOptions{Engine: engine.Options{
		Print: func(pos syntax.Position, msg string) { got = append(got, pos.String()+": "+msg) },
	}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.ParseArgs(nil, nil)
	if _, err := c.App(ctx, a); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "testdata/results.star:31:10: hello from a component" {
		t.Errorf("got %q", got)
	}
}

func TestIsComponent(t *testing.T) {
	for arg, want := range map[string]bool{
		"dist.ddp":              true,
		"utils.python":          true,
		"lib/x.star:fn":         true,
		"x.star:fn":             true,
		"app.yaml":              false,
		"dir/app.yaml":          false,
		"dist.ddp.yaml":         false,
		"utils.yaml":            false,
		"dist.yml":              false,
		"dist.json":             false,
		"other.thing":           false,
		"x.star":                false,
		"x.star:":               false,
		"examples/dist.ddp":     false,
		"C:\\apps\\dist.yaml":   false,
		"/abs/path/t.star:main": true,
	} {
		if got := component.IsComponent(arg); got != want {
			t.Errorf("IsComponent(%q) = %v, want %v", arg, got, want)
		}
	}
}

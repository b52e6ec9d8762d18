package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/engine"
)

func TestExecCall(t *testing.T) {
	ctx := context.Background()
	fsys := fstest.MapFS{"lib.star": {Data: []byte("def double(x):\n    return 2 * x\n")}}
	src := `
load("lib.star", "double")

N = 3

def f(a, b = 1, *rest):
    return [double(a), b, list(rest), N]

def spin(n):
    t = 0
    for i in range(n):
        t += i
    return t
`
	m, err := engine.Exec(ctx, "main.star", []byte(src), &engine.ExecOptions{Options: engine.Options{Loader: engine.FSLoader(fsys), MaxSteps: 10_000}})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Globals()["N"].(starlark.Value).Truth() || m.Name() != "main.star" {
		t.Fatalf("globals: %v", m.Globals())
	}
	got, err := m.Call(ctx, m.Globals()["f"], starlark.Tuple{starlark.MakeInt(4), starlark.MakeInt(5), starlark.String("x")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[8, 5, ["x"], 3]`; got.String() != want {
		t.Errorf("got %s, want %s", got, want)
	}

	// Each call has its own budget of steps.
	for i := 0; i < 3; i++ {
		if _, err := m.Call(ctx, m.Globals()["spin"], starlark.Tuple{starlark.MakeInt(500)}, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err = m.Call(ctx, m.Globals()["spin"], starlark.Tuple{starlark.MakeInt(100_000)}, nil)
	var lim *engine.LimitError
	var e *engine.Error
	if !errors.As(err, &lim) || lim.Limit != engine.LimitSteps || !errors.As(err, &e) || e.Backtrace == "" {
		t.Fatalf("got %v, want an *Error with a backtrace holding a steps *LimitError", err)
	}
	if !strings.HasPrefix(err.Error(), "main.star:11:") {
		t.Errorf("got %q, want the position in main.star", err)
	}

	// The globals are frozen: a call cannot change what the next sees.
	m2, err := engine.Exec(ctx, "m.star", []byte("L = []\ndef add():\n    L.append(1)\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Call(ctx, m2.Globals()["add"], nil, nil); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("got %v, want a frozen list error", err)
	}

	// A cancelled context stops the call.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Call(cctx, m.Globals()["spin"], starlark.Tuple{starlark.MakeInt(10)}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestExecErrors(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ src, want string }{
		{"x = ", "m.star:1:5: got end of file, want primary expression"},
		{"load('a.star', 'x')", "load is not enabled"},
		{"x = undefined", "undefined: undefined"},
		{"x = 1 // 0", "floored division by zero"},
		{"def f():\n    pass\nx = [i for i in range(1000000)]", "exceeded the limit of"},
	}
	for _, tc := range cases {
		_, err := engine.Exec(ctx, "m.star", []byte(tc.src), &engine.ExecOptions{Options: engine.Options{MaxSteps: 1000, Timeout: time.Second}})
		var e *engine.Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an *Error containing %q", tc.src, err, tc.want)
		}
	}
	// Predeclared names replace the overlay helpers.
	_, err := engine.Exec(ctx, "m.star", []byte("x = merge"), &engine.ExecOptions{Predeclared: starlark.StringDict{"y": starlark.None}})
	if err == nil || !strings.Contains(err.Error(), "undefined: merge") {
		t.Errorf("got %v, want merge undefined", err)
	}
}

package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/engine"
)

// TestCompileHints checks the wording of compile errors: Python habits are named with what
// Starlark offers instead, where they begin, and an undefined name gets the nearest one.
func TestCompileHints(t *testing.T) {
	for _, test := range []struct{ src, want string }{
		// f-strings, wherever the parser notices the literal after the f
		{"def overlay(pod):\n    x = f\"a{pod}\"\n", `h.star:2:9: f-strings are not Starlark; format with % or format(): "%s-%d" % (name, n), "{}-{}".format(name, n)`},
		{"def overlay(pod):\n    print(F'it\\'s {pod}', 1)\n", "h.star:2:11: f-strings are not"},
		{"def overlay(pod):\n    print(rf\"{pod}\")\n", "h.star:2:11: f-strings are not"},
		{"def overlay(pod):\n    x = (1,\n         f\"\"\"a\n{pod}\n\"\"\")\n", "h.star:3:10: f-strings are not"},
		{"X = 'f\"a\"'\ndef overlay(pod):\n    print \"x\"\n", `h.star:3:14: got string literal, want newline`},
		// keywords Starlark lacks
		{"import os\n", `h.star:1:1: "import" is not Starlark; use load("lib.star", "name")`},
		{"def overlay(pod):\n    if pod is not None:\n        pass\n", `h.star:2:12: "is" is not Starlark; compare with == and != (x == None, x != None)`},
		{"def overlay(pod):\n    x = pod is None\n", `h.star:2:13: "is" is not Starlark`},
		{"def overlay(pod):\n    try:\n        pass\n    except:\n        pass\n", `h.star:2:5: "try" is not Starlark, and errors cannot be caught`},
		{"def overlay(pod):\n    raise ValueError()\n", `h.star:2:5: "raise" is not Starlark; call fail("message") to stop with an error`},
		{"def overlay(pod):\n    with x:\n        pass\n", `h.star:2:5: "with" is not Starlark`},
		{"def overlay(pod):\n    yield pod\n", `h.star:2:5: "yield" is not Starlark`},
		// a lambda with a statement, and a valid lambda
		{"def overlay(pod):\n    f = lambda: pass\n", `h.star:2:9: a lambda's body is one expression, not a statement; define the function with def`},
		{"def overlay(pod):\n    f = lambda x: x\n    f(pod) = 1\n", `h.star:3:5: can't assign to callexpr`},
		// the assert statement, the decorator
		{"def overlay(pod):\n    assert pod\n", `h.star:2:5: the assert statement is not Starlark; write if not cond: fail("message")`},
		{"@wrap\ndef overlay(pod):\n    pass\n", `h.star:1:1: decorators are not Starlark; call the function instead: f = wrap(f)`},
		// undefined names
		{"def overlay(pod):\n    add_tolleration(pod, \"k\")\n", `h.star:2:5: undefined: add_tolleration; did you mean "add_toleration"?`},
		{"def overlay(pod):\n    x = [false, null]\n", "h.star:2:10: undefined: false; did you mean \"False\"?\nh.star:2:17: undefined: null; use None"},
		{"def overlay(pod):\n    conts = containers(pod)\n    for c in cnts:\n        pass\n", `h.star:3:14: undefined: cnts; did you mean "conts"?`},
		{"def overlay(pod):\n    zzzzzz(pod)\n", `h.star:2:5: undefined: zzzzzz`},
		{"def overlay(pod):\n    while True:\n        pass\n", `h.star:2:5: this Starlark dialect does not support while loops; loop with for over range(n) or a list, and break`},
	} {
		_, err := engine.Compile(context.Background(), "h.star", []byte(test.src), nil)
		if err == nil {
			t.Errorf("%q: compiled, want %q", test.src, test.want)
			continue
		}
		if got := err.Error(); len(got) < len(test.want) || got[:len(test.want)] != test.want {
			t.Errorf("%q:\ngot  %s\nwant %s...", test.src, got, test.want)
		}
	}
}

// TestLinkerCompile checks that other files compile with more predeclared names, and get the
// same errors.
func TestLinkerCompile(t *testing.T) {
	l := engine.NewLinker(nil, &engine.LinkOptions{Predeclared: starlark.StringDict{"check": starlark.None}})
	if _, err := l.Compile("t.star", []byte("check\n")); err != nil {
		t.Fatal(err)
	}
	_, err := l.Compile("t.star", []byte("chekc\n"))
	if want := `t.star:1:1: undefined: chekc; did you mean "check"?`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if _, ok := err.(*engine.Error); !ok {
		t.Errorf("got %T, want *engine.Error", err)
	}
}

// TestFieldErrorsCapped checks that an overlay that writes bad values into many fields gets
// the first twenty problems printed, one a line at the statement that wrote each, and a count
// of the others, which the error keeps.
func TestFieldErrorsCapped(t *testing.T) {
	src := `def overlay(pod):
    pod["spec"]["containers"] = [{"name": "c%d" % i, "image": ""} for i in range(500)]
    return pod
`
	o, err := engine.Compile(context.Background(), "many.star", []byte(src), &engine.Options{Validation: engine.ValidatePod})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Apply(context.Background(), testPod(), nil)
	var e *engine.Error
	if !errors.As(err, &e) || len(e.Fields) != 500 {
		t.Fatalf("got %v, want an *Error of 500 fields", err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 21 || !strings.HasPrefix(lines[20], "many.star:") || !strings.HasSuffix(lines[20], ": and 480 more errors in this pod") {
		t.Errorf("got %d lines, the last %q; want 20 and a count of the 480 more", len(lines), lines[len(lines)-1])
	}
	if want := ": spec.containers[0].image: every container needs an image"; !strings.HasSuffix(lines[0], want) {
		t.Errorf("first line %q, want it to end with %q", lines[0], want)
	}
}

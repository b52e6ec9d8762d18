package builtins_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/builtins"
)

// BenchmarkStarlark runs each bench_*(b) function of testdata/benchmark.star as a
// sub-benchmark. The script sees the builtins and POD, the shared training pod (frozen).
func BenchmarkStarlark(b *testing.B) {
	const file = "testdata/benchmark.star"
	src, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	pod := trainingPod(b)
	pod.Freeze()
	predeclared := builtins.Predeclared()
	predeclared["POD"] = pod
	thread := new(starlark.Thread)
	globals, err := starlark.ExecFile(thread, file, src, predeclared)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range globals.Keys() {
		fn, ok := globals[name].(*starlark.Function)
		if !ok || !strings.HasPrefix(name, "bench_") {
			continue
		}
		b.Run(strings.TrimPrefix(name, "bench_"), func(b *testing.B) {
			b.ReportAllocs()
			if _, err := starlark.Call(thread, fn, starlark.Tuple{benchmark{b}}, nil); err != nil {
				if err, ok := err.(*starlark.EvalError); ok {
					b.Fatal(err.Backtrace())
				}
				b.Fatal(err)
			}
		})
	}
}

// benchmark is the b that a bench_* function receives: b.n is the number of iterations, and
// b.restart() resets the timer after setup.
type benchmark struct{ b *testing.B }

func (benchmark) Freeze()               {}
func (benchmark) Truth() starlark.Bool  { return true }
func (benchmark) Type() string          { return "benchmark" }
func (benchmark) String() string        { return "<benchmark>" }
func (benchmark) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: benchmark") }
func (benchmark) AttrNames() []string   { return []string{"n", "restart"} }

func (b benchmark) Attr(name string) (starlark.Value, error) {
	switch name {
	case "n":
		return starlark.MakeInt(b.b.N), nil
	case "restart":
		return benchmarkRestart.BindReceiver(b), nil
	}
	return nil, nil
}

var benchmarkRestart = starlark.NewBuiltin("restart", func(thread *starlark.Thread, fn *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	fn.Receiver().(benchmark).b.ResetTimer()
	return starlark.None, nil
})

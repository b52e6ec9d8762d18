package builtins_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarktest"
	"go.starlark.net/syntax"

	"github.com/starpod/starpod/builtins"
)

// TestScripts runs every testdata/*.star file: assert tests of each helper and its errors.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.star")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.star files")
	}
	opts := &syntax.FileOptions{GlobalReassign: true, TopLevelControl: true}
	for _, file := range files {
		if filepath.Base(file) == "benchmark.star" {
			continue // run by BenchmarkStarlark
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			thread := &starlark.Thread{Load: load}
			starlarktest.SetReporter(thread, t)
			if _, err := starlark.ExecFileOptions(opts, thread, file, nil, builtins.Predeclared()); err != nil {
				if err, ok := err.(*starlark.EvalError); ok {
					t.Fatal(err.Backtrace())
				}
				t.Fatal(err)
			}
		})
	}
}

// load provides assert.star to the test scripts.
func load(thread *starlark.Thread, module string) (starlark.StringDict, error) {
	if module == "assert.star" {
		return starlarktest.LoadAssertModule()
	}
	return nil, fmt.Errorf("load not implemented")
}

package engine_test

// This file tests determinism across processes: every example overlay, applied 200 times
// under GOMAXPROCS 1, 2 and 8 from as many goroutines, in two separate processes, gives one
// byte-identical result per example.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/exampletest"
)

// determinismEnv makes the test binary a determinism child (see TestMain).
const determinismEnv = "STARPOD_DETERMINISM_CHILD"

// Each example is applied determinismRuns times under each of determinismProcs.
const determinismRuns = 200

var determinismProcs = []int{1, 2, 8}

// An exampleCase is one pod example of the repository: its overlay, pod and ctx.
type exampleCase struct {
	name    string
	overlay *engine.Overlay
	pod     *corev1.Pod
	env     *engine.Env
}

// loadExamples compiles every pod example in ../examples (those with app.yaml are apps,
// run by package scheduler).
func loadExamples() ([]exampleCase, error) {
	examples, err := exampletest.Load(filepath.Join("..", "examples"))
	if err != nil {
		return nil, err
	}
	var cases []exampleCase
	for _, e := range examples {
		o, err := e.Compile(context.Background(), engine.Options{})
		if err != nil {
			return nil, err
		}
		cases = append(cases, exampleCase{name: e.Name, overlay: o, pod: e.Pod, env: e.Env})
	}
	return cases, nil
}

// determinismChild applies every example determinismRuns times under each GOMAXPROCS and
// prints one line per example: its name and the SHA-256 of its result's YAML. It returns the
// process exit code; results that differ inside the process are an error.
func determinismChild() int {
	cases, err := loadExamples()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, c := range cases {
		sums := make(map[string]int)
		var mu sync.Mutex
		for _, procs := range determinismProcs {
			runtime.GOMAXPROCS(procs)
			var wg sync.WaitGroup
			for g := 0; g < procs; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < determinismRuns; i += procs {
						sum := "error"
						if res, err := c.overlay.Apply(context.Background(), c.pod, c.env); err != nil {
							sum = "error: " + err.Error()
						} else if data, err := yaml.Marshal(res); err == nil {
							sum = fmt.Sprintf("%x", sha256.Sum256(data))
						}
						mu.Lock()
						sums[sum]++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		}
		if len(sums) != 1 {
			fmt.Fprintf(os.Stderr, "%s: %d different results in one process: %v\n", c.name, len(sums), sums)
			return 1
		}
		for sum := range sums {
			fmt.Printf("%s %s\n", c.name, sum)
		}
	}
	return 0
}

func TestDeterminismAcrossProcesses(t *testing.T) {
	cases, err := loadExamples()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 5 {
		t.Fatalf("found %d pod examples, want at least 5", len(cases))
	}
	out := exampletest.SameInTwoProcesses(t, determinismEnv)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var names []string
	for _, line := range lines {
		name, sum, _ := strings.Cut(line, " ")
		if strings.HasPrefix(sum, "error") {
			t.Errorf("%s: %s", name, sum)
		}
		names = append(names, name)
	}
	var want []string
	for _, c := range cases {
		want = append(want, c.name)
	}
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("results for %v, want one for each of %v", names, want)
	}
}

package engine_test

// This file runs the hostile corpus, testdata/hostile: overlays that try to exhaust time,
// steps and memory, escape the sandbox or return values no pod can hold. Each file starts
// with the error it must produce:
//
//	# want: text the first line of the error contains, run in testdata/hostile
//	# want: another text it may contain instead (optional, repeatable: where a limit may be
//	        noticed at more than one place of the script)
//	# limit: memory        (optional: the Limit of the *LimitError inside the error)
//
// TestHostile runs every overlay through a worker pool and checks the error, that the test
// process is alive, the wall time and the workers' peak memory. The same corpus runs through
// the starpod command in cmd/starpod/testdata/script/sandbox_hostile.txtar, which
// TestHostileScript keeps up to date (go test -run TestHostileScript -update).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
)

var updateHostile = flag.Bool("update", false, "rewrite the golden files: the want lines of testdata/hostile and sandbox_hostile.txtar, and testdata/provenance/*.golden")

const hostileDir = "../testdata/hostile"

// Limits of the hostile runs: small, so that the corpus runs fast.
const (
	hostileMemory  = 128 << 20
	hostileTimeout = 3 * time.Second
	// The time limit of the cases that are not about time, in TestHostile and in
	// sandbox_hostile.txtar: a memory bomb must reach its memory limit first however loaded
	// the machine.
	hostileScriptTimeout = 2 * time.Minute
	// Margins of the bounds the test asserts, wide enough that a busy machine does not fail
	// it. Beyond its start size, the data limit of a worker leaves room for thread stacks (see
	// threadAllowance in internal/sandbox/limit_unix.go), and its resident memory counts program text. The
	// time margin covers killing a worker that does not answer, and starting its successor.
	hostileMemoryMargin = 32 << 20
	hostileTimeMargin   = 3 * time.Second
	// What the starpod command may have resident beyond a worker's limit and the margin: the
	// larger of its own start size and a worker's.
	hostileCommandStart = 48 << 20
)

// A hostileCase is one overlay of the corpus.
type hostileCase struct {
	file  string   // base name
	wants []string // the first line of the error contains one of these
	limit string
}

func readHostile(t *testing.T) []hostileCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(hostileDir, "*.star"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []hostileCase
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c := hostileCase{file: filepath.Base(file)}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "# want: "); ok {
				c.wants = append(c.wants, v)
			} else if v, ok := strings.CutPrefix(line, "# limit: "); ok {
				c.limit = v
			}
		}
		if len(c.wants) == 0 {
			t.Fatalf("%s: no # want: line", file)
		}
		cases = append(cases, c)
	}
	if len(cases) < 40 {
		t.Fatalf("the hostile corpus has %d overlays, want at least 40", len(cases))
	}
	return cases
}

func hostilePod(t *testing.T) *corev1.Pod {
	t.Helper()
	return engine.ReadTestPod(t, filepath.Join(hostileDir, "pod.yaml"))
}

func TestHostile(t *testing.T) {
	cases := readHostile(t)
	pod := hostilePod(t)
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	var printed int
	opts := &engine.Options{
		Isolation: engine.WorkerProcess,
		Workers:   pool,
		MaxMemory: hostileMemory,
		Timeout:   hostileTimeout,
		Loader:    engine.DirLoader("."),
		Print:     func(pos syntax.Position, msg string) { printed++ },
	}
	// The peak memory of a worker that ran a harmless overlay: its start size.
	baseline := workerBaseline(t, pod)
	// Run in the corpus directory, as sandbox_hostile.txtar does, so that errors read the same.
	t.Chdir(hostileDir)
	updated := make(map[string]string)
	var lastPeak int64
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".star"), func(t *testing.T) {
			name := c.file
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			copts := *opts
			if !strings.Contains(c.limit, "time") {
				copts.Timeout = hostileScriptTimeout
			}
			start := time.Now()
			o, err := engine.Compile(context.Background(), name, src, &copts)
			if err == nil {
				_, err = o.Apply(context.Background(), pod, &engine.Env{Args: map[string]string{"a": "b"}})
			}
			elapsed := time.Since(start)
			if err == nil {
				t.Fatalf("got no error, want %s", strings.Join(c.wants, " or "))
			}
			var e *engine.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *engine.Error", err, err)
			}
			if *updateHostile && (strings.Contains(c.limit, "|") || len(c.wants) > 1) {
				t.Logf("%s: %v", c.file, err)
				return // its want lines name no limit, or more than one place
			}
			got := strings.SplitN(err.Error(), "\n", 2)[0]
			var lim *engine.LimitError
			if raceTimeLimit && errors.As(err, &lim) && lim.Limit == engine.LimitTime {
				t.Logf("stopped at the time limit under the race detector: %s", got)
				return
			}
			if *updateHostile {
				updated[c.file] = got
			} else if !slices.ContainsFunc(c.wants, func(want string) bool { return strings.Contains(got, want) }) {
				t.Errorf("got error:\n%s\nwant it to contain one of:\n%s", got, strings.Join(c.wants, "\n"))
			}
			switch {
			case c.limit == "" && errors.As(err, &lim):
				t.Errorf("got a %s LimitError, want none", lim.Limit)
			case c.limit != "" && (!errors.As(err, &lim) || !slices.Contains(strings.Split(c.limit, "|"), lim.Limit.String())):
				t.Errorf("got %v, want a %s LimitError", err, c.limit)
			}
			if peak := pool.Stats().PeakRSS; peak > lastPeak {
				t.Logf("peak worker memory so far: %d MiB", peak>>20)
				lastPeak = peak
			}
			// Each case stops at one limit, in compile or in apply.
			if bound := copts.Timeout + raceTimeFactor*hostileTimeMargin; elapsed > bound {
				t.Errorf("took %v, want at most %v", elapsed, bound)
			}
		})
	}
	if peak, bound := pool.Stats().PeakRSS, raceMemoryFactor*(hostileMemory+hostileMemoryMargin)+baseline; peak > bound {
		t.Errorf("peak worker memory %d MiB, want at most %d MiB (the limit, a worker's start size and the margin)", peak>>20, bound>>20)
	} else if peak == 0 {
		t.Errorf("peak worker memory unknown")
	} else {
		t.Logf("peak worker memory: %d MiB; %d workers started", pool.Stats().PeakRSS>>20, pool.Stats().Started)
	}
	if *updateHostile {
		for file, got := range updated {
			path := file
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(`(?m)^# want: .*$`)
			data = re.ReplaceAllLiteral(data, []byte("# want: "+got))
			if err := os.WriteFile(path, data, 0o666); err != nil {
				t.Fatal(err)
			}
		}
	}
}

const hostileScript = "../cmd/starpod/testdata/script/sandbox_hostile.txtar"

// TestHostileScript checks that sandbox_hostile.txtar runs every overlay of the corpus
// through the starpod command and expects its error; -update rewrites it.
func TestHostileScript(t *testing.T) {
	var b strings.Builder
	b.WriteString(`# Every overlay of testdata/hostile fails with its error through the starpod command,
# which survives: exit code 1, nothing on standard output, the error on standard error,
# within the time limit and a margin, and with no process above the memory limit, a margin
# and a start size. Only the cases about time have a short time limit: the others, memory
# bombs among them, have minutes, so that a loaded machine does not stop a bomb at its time
# limit before its memory limit. Under the race detector a case may stop at the time limit
# instead: the detector slows allocation-heavy code many times over, and memory limits are 8
# times larger.
# Generated from the corpus by: go test ./engine -run TestHostileScript -update

cd $EXAMPLES/../testdata/hostile
`)
	for _, c := range readHostile(t) {
		fmt.Fprintf(&b, "\n# %s", c.file)
		if c.limit != "" {
			fmt.Fprintf(&b, " (limit: %s)", c.limit)
		}
		timeLimit := hostileScriptTimeout
		if strings.Contains(c.limit, "time") {
			timeLimit = hostileTimeout
		}
		fmt.Fprintf(&b, "\nbounded 1 %s+%s %s starpod apply --max-memory %s --timeout %s --overlay-script %s -f pod.yaml --overlay-arg a=b\n",
			timeLimit, hostileTimeMargin, bound.FormatSize(hostileMemory+hostileMemoryMargin+hostileCommandStart),
			bound.FormatSize(hostileMemory), timeLimit, c.file)
		var alts []string
		for _, want := range c.wants {
			alts = append(alts, regexp.QuoteMeta(want))
		}
		re := alts[0]
		if len(alts) > 1 {
			re = "(?:" + strings.Join(alts, "|") + ")"
		}
		// Under the race detector a case may stop at the time limit instead (raceTimeLimit).
		timeout := regexp.QuoteMeta(fmt.Sprintf("exceeded the time limit of %s", timeLimit))
		fmt.Fprintf(&b, "! stdout .\n[!race] stderr '%s'\n[race] stderr '(?:%s|%s)'\n",
			strings.ReplaceAll(re, "'", "''"), strings.ReplaceAll(re, "'", "''"), timeout)
	}
	want := b.String()
	if *updateHostile {
		if err := os.WriteFile(hostileScript, []byte(want), 0o666); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(hostileScript)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is out of date; run go test ./engine -run TestHostileScript -update (-want +got):\n%s", hostileScript, diff)
	}
}

// workerBaseline returns the peak resident memory of a worker that applied a harmless overlay.
func workerBaseline(t *testing.T, pod *corev1.Pod) int64 {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	o := compile(t, "def overlay(pod):\n    pass\n", &engine.Options{Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: hostileMemory})
	if _, err := o.Apply(context.Background(), pod, nil); err != nil {
		t.Fatal(err)
	}
	// Read while the worker lives: the peak the system reports of a worker that exited is
	// at least the test process's own, and is left out when it is no more.
	peak := pool.Stats().PeakRSS
	pool.Close()
	t.Logf("a worker's start size: %d MiB", peak>>20)
	return peak
}

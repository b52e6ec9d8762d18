package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestMain lets the test binary act as the starpod command inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"starpod":       main,
		"starpod-peak":  peakMain,
		"signals-stuck": stuckMain, // signals_test.go
	})
}

// peakMain is the program of bounded's helper: starpod-peak COMMAND [ARG...] runs the
// command, writes to descriptor 3 the peak resident memory, in KiB, of the command and of the
// processes it waited for, and exits with the command's exit code. bounded cannot read that
// of a command it starts itself: Linux gives a process started by vfork, as Go starts
// processes, the peak of the process that started it as its own first peak, and the test
// process grows larger than some bounds. The helper's peak, which the command inherits, is
// that of this program's start.
func peakMain() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "starpod-peak:", err)
		os.Exit(125)
	}
	usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "starpod-peak: no resource usage on", runtime.GOOS)
		os.Exit(125)
	}
	fmt.Fprintln(os.NewFile(3, "peak"), usage.Maxrss)
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	os.Exit(code)
}

// TestScript runs the CLI scripts in testdata/script. Each names its files, runs the real
// command and checks its exit code, standard output and standard error.
func TestScript(t *testing.T) {
	testscript.Run(t, scriptParams(nil))
}

// TestScriptLibrary runs the scripts of apply, fn and the kinds with pod templates with the
// fast paths off (STARPOD_FAST_PATHS=off): the library paths alone give the same output
// and the same errors.
func TestScriptLibrary(t *testing.T) {
	var files []string
	for _, pattern := range []string{"apply*.txtar", "fn_*.txtar", "workload_*.txtar", "diff_apply.txtar",
		"explain_apply.txtar", "validate_apply.txtar", "friction_apply_*.txtar", "hostile_input_stream.txtar"} {
		matches, err := filepath.Glob(filepath.Join("testdata", "script", pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	p := scriptParams(files)
	setup := p.Setup
	p.Setup = func(env *testscript.Env) error {
		env.Setenv(fastPathsEnv, "off")
		return setup(env)
	}
	testscript.Run(t, p)
}

// scriptParams returns the parameters of the scripts in testdata/script, or of files.
func scriptParams(files []string) testscript.Params {
	dir := "testdata/script"
	if files != nil {
		dir = ""
	}
	return testscript.Params{
		Dir:                 dir,
		Files:               files,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":     exits,
			"bounded":   bounded,
			"hostile":   hostileSpec, // hostile_spec_test.go
			"repeat":    repeat,
			"mkfifo":    mkfifo,
			"sparse":    sparse,
			"interrupt": interrupt, // signals_test.go
		},
		Condition: func(cond string) (bool, error) {
			if cond == "race" {
				return raceMemoryFactor > 1, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			// Scripts may use the examples of the repository.
			env.Setenv("EXAMPLES", repoPath("examples"))
			return nil
		},
	}
}

func repoPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return wd + "/../../" + p
}

// exits runs a command and checks its exit code: exits CODE COMMAND [ARG...]. Its output is
// the script's stdout and stderr, as an exec's would be.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARG...]")
	}
	runExits(ts, args[0], args[1:])
}

// bounded runs a command as exits does, and checks that it took at most TIME of wall time
// and that neither it nor any process it waited for (the overlay workers) had more than
// MEMORY resident at any time: bounded CODE TIME MEMORY COMMAND [ARG...]. TIME is a
// duration, or LIMIT+MARGIN, two durations. Under the race detector, which makes every
// process several times bigger and slower, MEMORY is multiplied by raceMemoryFactor and
// MARGIN by raceTimeFactor. The command runs under a helper (see peakMain), which reads its
// peak.
func bounded(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 {
		ts.Fatalf("usage: bounded CODE TIME MEMORY COMMAND [ARG...]")
	}
	limit, margin, _ := strings.Cut(args[1], "+")
	maxTime, err := time.ParseDuration(limit)
	if err != nil {
		ts.Fatalf("bounded: bad time: %v", err)
	}
	if margin != "" {
		d, err := time.ParseDuration(margin)
		if err != nil {
			ts.Fatalf("bounded: bad time margin: %v", err)
		}
		maxTime += raceTimeFactor * d
	}
	q, err := resource.ParseQuantity(args[2])
	if err != nil {
		ts.Fatalf("bounded: bad memory: %v", err)
	}
	maxMemory := q.Value() * raceMemoryFactor
	r, w, err := os.Pipe()
	ts.Check(err)
	defer r.Close()
	defer w.Close() // closed below too, unless the command fails the script first
	start := time.Now()
	runExits(ts, args[0], append([]string{"starpod-peak"}, args[3:]...), w)
	if elapsed := time.Since(start); elapsed > maxTime {
		ts.Fatalf("took %v, want at most %v", elapsed.Round(time.Millisecond), maxTime)
	}
	w.Close()
	out, err := io.ReadAll(r)
	ts.Check(err)
	// Linux gives the peak of the process and of the children it waited for, in KiB.
	kib, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		ts.Fatalf("bounded: the helper gave no peak: %q", out)
	}
	if peak := kib << 10; peak > maxMemory {
		ts.Fatalf("peak resident memory %d MiB, want at most %d MiB", peak>>20, maxMemory>>20)
	}
}

// repeat writes a file too large for a script's archive: repeat FILE COUNT TEXT [PREFIX
// [SUFFIX]] writes PREFIX, COUNT times TEXT, and SUFFIX. \n and \t in them are a newline and a
// tab.
func repeat(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 || len(args) > 5 {
		ts.Fatalf("usage: repeat FILE COUNT TEXT [PREFIX [SUFFIX]]")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("repeat: bad count: %v", err)
	}
	unescape := strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace
	var prefix, suffix string
	if len(args) > 3 {
		prefix = unescape(args[3])
	}
	if len(args) > 4 {
		suffix = unescape(args[4])
	}
	// Written in pieces, so that this process's memory stays small.
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	w := bufio.NewWriter(f)
	w.WriteString(prefix)
	text := unescape(args[2])
	for range n {
		w.WriteString(text)
	}
	w.WriteString(suffix)
	ts.Check(w.Flush())
	ts.Check(f.Close())
}

// mkfifo makes a named pipe: mkfifo FILE.
func mkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkfifo FILE")
	}
	ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o644))
}

// sparse makes a sparse file of SIZE bytes, which takes no disk: sparse FILE SIZE.
func sparse(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sparse FILE SIZE")
	}
	q, err := resource.ParseQuantity(args[1])
	if err != nil {
		ts.Fatalf("sparse: bad size: %v", err)
	}
	f, err := os.Create(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(f.Truncate(q.Value()))
	ts.Check(f.Close())
}

// runExits runs the command args with the script's environment in its work directory,
// writing its output to the script's stdout and stderr, and checks that it exits with code.
func runExits(ts *testscript.TestScript, code string, args []string, extra ...*os.File) {
	want, err := strconv.Atoi(code)
	if err != nil {
		ts.Fatalf("exits: bad code %q", code)
	}
	path := args[0]
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, args[0]); fileExists(p) {
			path = p
			break
		}
	}
	cmd := exec.Command(path, args[1:]...)
	cmd.Dir = ts.MkAbs(".") // the directory of the last cd
	cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	cmd.ExtraFiles = extra
	cmd.Env = os.Environ()
	for _, kv := range []string{"HOME", "PATH", "WORK"} {
		cmd.Env = append(cmd.Env, kv+"="+ts.Getenv(kv))
	}
	got := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("exits: %v", err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

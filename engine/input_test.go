package engine_test

// This file tests the bounds of what Compile reads and parses: the size and type of scripts
// and modules, parse bombs in workers, and the excerpts that compile errors quote.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
)

const overlayLoading = "def overlay(pod):\n    pass\n"

// TestCompileSizeBounds checks the limits of one script, one module, the modules of a compile
// together and their number, in process and in workers, with time and memory limits that the
// compile does not come near, even on a busy machine.
func TestCompileSizeBounds(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	big := "#" + strings.Repeat("x", bound.MaxScript-1) + "\n" // one byte over the limit
	under := "#" + strings.Repeat("x", bound.MaxScript-18) + "\n"
	fsys := fstest.MapFS{
		"lib/big.star": {Data: []byte(big)},
	}
	// Nine modules just under the limit each pass the limit of all modules together.
	var nine strings.Builder
	for i := range 9 {
		name := fmt.Sprintf("lib/m%d.star", i)
		fsys[name] = &fstest.MapFile{Data: []byte(under + fmt.Sprintf("v%d = 1\n", i))}
		fmt.Fprintf(&nine, "load(%q, \"v%d\")\n", name, i)
	}
	// A chain of modules one longer than the limit of their number.
	var many strings.Builder
	for i := range 1001 {
		fsys[fmt.Sprintf("lib/n%d.star", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("n%d = 1\n", i))}
		fmt.Fprintf(&many, "load(\"lib/n%d.star\", \"n%d\")\n", i, i)
	}
	for _, test := range []struct {
		name, src, want string
	}{
		{"script", big + overlayLoading, `^overlay\.star: the script is larger than the limit of 1Mi$`},
		{"module", "load(\"lib/big.star\", \"x\")\n" + overlayLoading,
			`^overlay\.star:1:6: cannot load lib/big\.star: lib/big\.star: the module is larger than the limit of 1Mi$`},
		{"modules together", nine.String() + overlayLoading,
			`^overlay\.star:9:6: cannot load lib/m8\.star: the modules that overlay\.star loads are larger than the limit of 8Mi together$`},
		{"module count", many.String() + overlayLoading,
			`^overlay\.star:1001:6: cannot load lib/n1000\.star: overlay\.star loads more than the limit of 1000 modules$`},
	} {
		for _, iso := range []engine.Isolation{engine.InProcess, engine.WorkerProcess} {
			t.Run(fmt.Sprintf("%s/%d", test.name, iso), func(t *testing.T) {
				opts := &engine.Options{Loader: engine.FSLoader(fsys), Isolation: iso, Timeout: 2 * time.Minute}
				if iso == engine.WorkerProcess {
					// The default memory limit, far above what these modules take: the
					// bounds of sizes, not memory, must stop them.
					opts.Workers = pool
				}
				_, err := engine.Compile(context.Background(), "overlay.star", []byte(test.src), opts)
				if err == nil || !regexp.MustCompile(test.want).MatchString(err.Error()) {
					t.Fatalf("got %v, want %s", err, test.want)
				}
			})
		}
	}
}

// TestCompileFileTypes checks that DirLoader reads only regular files: a named pipe, a
// directory and a sparse file of 1 GiB in the overlay root are refused at once.
func TestCompileFileTypes(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.star"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "dir.star"), 0o755)
	f, _ := os.Create(filepath.Join(dir, "sparse.star"))
	f.Truncate(1 << 30)
	f.Close()
	for module, want := range map[string]string{
		"fifo.star":   "is a named pipe, want a regular file",
		"dir.star":    "is a directory, want a regular file",
		"sparse.star": "the module is larger than the limit of 1Mi",
	} {
		for _, iso := range []engine.Isolation{engine.InProcess, engine.WorkerProcess} {
			opts := &engine.Options{Loader: engine.DirLoader(dir)}
			if iso == engine.WorkerProcess {
				opts = workerOptions(pool)
				opts.Loader = engine.DirLoader(dir)
			}
			src := fmt.Sprintf("load(%q, \"x\")\n%s", module, overlayLoading)
			_, err := engine.Compile(context.Background(), filepath.Join(dir, "overlay.star"), []byte(src), opts)
			if err == nil || !strings.HasSuffix(err.Error(), want) {
				t.Errorf("%s (isolation %d): got %v, want an error ending %q", module, iso, err, want)
			}
		}
	}
}

// TestParseBombInWorker checks that a module that takes more than the memory limit to parse
// and compile kills a worker, not the calling process, and is named in the error.
func TestParseBombInWorker(t *testing.T) {
	if raceMemoryFactor > 1 {
		t.Skip("under the race detector a worker's memory limit is scaled up past what the bomb takes")
	}
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	fsys := fstest.MapFS{"lib/huge.star": {Data: []byte("X = 1" + strings.Repeat("+1", 500_000) + "\n")}}
	opts := workerOptions(pool)
	opts.Loader = engine.FSLoader(fsys)
	_, err := engine.Compile(context.Background(), "overlay.star", []byte("load(\"lib/huge.star\", \"X\")\n"+overlayLoading), opts)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
		t.Fatalf("got %v, want a memory LimitError", err)
	}
	if want := "overlay.star: parsing lib/huge.star: exceeded the memory limit of 128Mi"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	// The same bomb as the script itself.
	_, err = engine.Compile(context.Background(), "bomb.star", fsys["lib/huge.star"].Data, opts)
	if want := "bomb.star: parsing: exceeded the memory limit of 128Mi"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// TestCompileErrorExcerpts checks that the errors of a file that is not Starlark (a secret
// named by mistake) quote only short excerpts of it, and at most ten of its errors.
func TestCompileErrorExcerpts(t *testing.T) {
	secret := "ghp_" + strings.Repeat("Zk3q", 100)
	var src strings.Builder
	for i := range 50 {
		fmt.Fprintf(&src, "%s%d\n", secret, i)
	}
	fsys := fstest.MapFS{"token": {Data: []byte(src.String())}}
	_, err := engine.Compile(context.Background(), "overlay.star", []byte("load(\"token\", \"x\")\n"+overlayLoading),
		&engine.Options{Loader: engine.FSLoader(fsys)})
	if err == nil {
		t.Fatal("got no error")
	}
	msg := err.Error()
	if n := strings.Count(msg, "\n") + 1; n > 11 {
		t.Errorf("got %d lines, want at most 11:\n%s", n, msg)
	}
	if strings.Contains(msg, secret[:200]) {
		t.Errorf("the error quotes 200 bytes of the file:\n%s", msg)
	}
	if !strings.Contains(msg, "and 40 more errors") {
		t.Errorf("the error does not say how many errors are not shown:\n%s", msg)
	}
}

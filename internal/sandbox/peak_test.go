package sandbox

// The tests of what the parent learns of a child's peak memory.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestPoolPeakNotInherited checks that the peak memory of workers that exited is their own,
// not that of the parent that started them: Linux reports the parent's peak as the first of
// a process started by vfork.
func TestPoolPeakNotInherited(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peaks are read from /proc")
	}
	// This process's peak passes 256 MiB, which no worker's does here; the other tests
	// start their workers from a process of its peak before this one again.
	defer resetPeak(t)
	grow := make([]byte, 256<<20)
	for i := 0; i < len(grow); i += 4096 {
		grow[i] = 1
	}
	runtime.KeepAlive(grow)
	grow = nil
	debug.FreeOSMemory()
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol})
	w := getWorker(t, p)
	if err := w.Call(context.Background(), &call{kind: 'e', body: "x"}, CallOptions{First: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	alive := p.Stats().PeakRSS // the worker's VmHWM, read while it lives
	p.Put(w)
	p.Close() // the worker exits
	if peak := p.Stats().PeakRSS; alive <= 0 || peak != alive {
		t.Errorf("peak memory %d MiB after the worker exited, %d MiB while it lived: want the same, under 256 MiB", peak>>20, alive>>20)
	}
}

// TestPoolSignalOfMemory checks that a worker that dies of a signal inside its runtime, with a
// peak of a quarter of its limit or more, dies of memory, even where the parent's own peak is
// larger (the system then reports the parent's as the worker's); and that a worker that dies
// of the same signal well below that peak crashed.
func TestPoolSignalOfMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peaks are published in memory files and read from /proc")
	}
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	// Each worker fills its memory and dies: it has all the time it could take on a loaded
	// machine.
	opts := CallOptions{First: 5 * time.Minute}
	die := func(limit int64, mib int64) (*Failure, *exit) {
		t.Helper()
		w, err := p.Get(context.Background(), limit, "", false)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Put(w)
		err = w.Call(context.Background(), &call{kind: 'v', body: fmt.Sprint(mib)}, opts)
		var f *Failure
		if !errors.As(err, &f) {
			t.Fatalf("a worker that dies of a signal: got %v, want a failure", err)
		}
		if x := w.child.exit; !runtimeCrash(x.stderr) {
			t.Fatalf("the worker's standard error does not say it died of a signal in the runtime: %q", x.stderr)
		}
		return f, w.child.exit
	}

	// Far below a quarter of a limit of 512 MiB (a worker holds 20 to 28 MiB at its start).
	if f, _ := die(512<<20, 0); f.Reason != Crashed || !strings.Contains(f.Error(), "SIGSEGV") {
		t.Errorf("a signal, far below the limit: got %v, want a crash that names the signal", f)
	}

	// A quarter of the limit and more, from a parent whose peak is larger than the worker's.
	const limit = MinMemory
	keep := int64(limit*RaceMemoryFactor/4>>20 + 8)
	defer resetPeak(t)
	grow := make([]byte, (2*keep+128)<<20)
	for i := 0; i < len(grow); i += 4096 {
		grow[i] = 1
	}
	runtime.KeepAlive(grow)
	grow = nil
	debug.FreeOSMemory()
	f, x := die(limit, keep)
	if reported := exitPeakRSS(x.state); reported > x.inherited {
		t.Fatalf("the system reports the worker's peak (%d MiB), not the parent's (%d MiB): the parent must grow more for the test", reported>>20, x.inherited>>20)
	}
	if f.Reason != Memory {
		t.Errorf("a signal at %d MiB of a %d MiB limit, the parent at %d MiB: got %v (peak published %d MiB), want a failure of memory",
			keep, limit>>20, x.inherited>>20, f, x.published>>20)
	}
}

// resetPeak sets this process's peak resident memory (VmHWM) to what it holds now.
func resetPeak(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak memory: %v", err)
	}
}

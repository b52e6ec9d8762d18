//go:build unix

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"
)

// heldAtStart is what a worker of TestPoolRoom holds from its start: writable memory it never
// touches, as the static data of a large binary (crypto's 32 MiB buffer, for one) or the
// stacks of threads are, which counts as data but takes no memory.
var heldAtStart []byte

func init() {
	if IsWorker() && os.Getenv("SANDBOX_TEST_START_DATA") != "" {
		var err error
		heldAtStart, err = syscall.Mmap(-1, 0, 256<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
	}
}

// TestPoolRoom checks that the memory limit is room to grow, whatever the process holds at
// start (here 256 MiB of data more than the test binary): a worker keeps three quarters of
// its limit alive and answers, and dies of memory when it then allocates without end.
func TestPoolRoom(t *testing.T) {
	t.Setenv("SANDBOX_TEST_START_DATA", "1")
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	const limit = 128 << 20
	// Each call fills the memory: it has all the time it could take on a loaded machine.
	opts := CallOptions{First: 5 * time.Minute}
	w, err := p.Get(context.Background(), limit, "", false)
	if err != nil {
		t.Fatal(err)
	}
	keep := fmt.Sprint(limit * 3 / 4 >> 20)
	c := &call{kind: 'a', body: keep}
	if err := w.Call(context.Background(), c, opts); err != nil || c.got != keep {
		t.Fatalf("allocating %s MiB of a %d MiB limit: got %q, %v", keep, limit>>20, c.got, err)
	}
	err = w.Call(context.Background(), &call{kind: 'b'}, opts)
	if f := (*Failure)(nil); !errors.As(err, &f) || f.Reason != Memory {
		t.Errorf("allocating without end: got %v, want a failure of memory", err)
	}
	p.Put(w)
}

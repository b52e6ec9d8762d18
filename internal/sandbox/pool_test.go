package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testProtocol = "sandbox-test/1"

// TestMain lets the test binary serve as a worker of the tests' pools: an echo server whose
// requests say what to do.
func TestMain(m *testing.M) {
	if IsWorker() {
		if os.Getenv("SANDBOX_TEST_NOSTART") != "" {
			os.Stderr.WriteString("cannot start\n")
			os.Exit(3)
		}
		if os.Getenv("SANDBOX_TEST_HANG") != "" {
			time.Sleep(time.Hour) // never says it is ready
		}
		if err := Serve(testProtocol, echo); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if IsChild() {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// sink and chunks keep what the children allocate alive.
var (
	sink   []byte
	chunks [][]byte
)

// echo answers each request frame: 'e' with its body, 'b' by allocating without end, 'a' by
// allocating and keeping as many MiB as its body says, 's' by sleeping, 'p' by panicking, 'g'
// with its GOMAXPROCS.
func echo(in *FrameReader, out *bufio.Writer) error {
	for {
		kind, body, err := in.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch kind {
		case 'e':
			WriteFrame(out, 'd', body)
		case 'b':
			for {
				allocate(16 << 20)
			}
		case 'a':
			mib, err := strconv.Atoi(string(body))
			if err != nil {
				return err
			}
			for range mib {
				allocate(1 << 20)
			}
			WriteFrame(out, 'd', body)
		case 's':
			time.Sleep(time.Hour)
		case 'p':
			panic("not a memory problem")
		case 'g':
			WriteFrame(out, 'd', []byte(strconv.Itoa(runtime.GOMAXPROCS(0))))
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// allocate allocates n bytes, touches each page and keeps them in chunks.
func allocate(n int) {
	chunk := make([]byte, n)
	for j := 0; j < len(chunk); j += 4096 {
		chunk[j] = 1
	}
	chunks = append(chunks, chunk)
}

// call is an Exchange of one frame and one answer.
type call struct {
	kind byte
	body string
	got  string
}

func (c *call) Send(w *bufio.Writer) error {
	if err := WriteFrame(w, c.kind, []byte(c.body)); err != nil {
		return err
	}
	return w.Flush()
}

func (c *call) Answer(kind byte, body []byte) (bool, error) {
	if kind != 'd' {
		return false, fmt.Errorf("got a frame of kind %q, want d", kind)
	}
	c.got = string(body)
	return true, nil
}

// TestPoolProcs checks that a worker takes its share of the parent's processors, one at least
// and two at most: a pool of a worker per processor leaves each one.
func TestPoolProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "4") // what a child's runtime starts with, whatever the machine
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for size, want := range map[int]string{1: "2", 2: "2", 3: "1", 4: "1"} {
		p := NewPool(&PoolOptions{Size: size, Protocol: testProtocol})
		w, err := p.Get(128<<20, "", false)
		if err != nil {
			t.Fatal(err)
		}
		c := &call{kind: 'g'}
		if err := w.Call(context.Background(), c, CallOptions{First: 10 * time.Second}); err != nil || c.got != want {
			t.Errorf("a pool of %d workers under GOMAXPROCS 4: a worker's GOMAXPROCS is %q (%v), want %s", size, c.got, err, want)
		}
		p.Put(w)
		p.Close()
	}
}

func TestPool(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	const limit = 128 << 20
	opts := CallOptions{First: 10 * time.Second}
	w, err := p.Get(limit, "", false)
	if err != nil {
		t.Fatal(err)
	}
	c := &call{kind: 'e', body: "hello"}
	if err := w.Call(context.Background(), c, opts); err != nil || c.got != "hello" {
		t.Fatalf("echo: got %q, %v", c.got, err)
	}
	w.Keys.Add("k", struct{}{})
	p.Put(w)

	// The worker that holds the key comes back; a fresh one is another.
	if w2, err := p.Get(limit, "k", false); err != nil || w2 != w {
		t.Fatalf("Get of the key: got %p, %v, want the same worker %p", w2, err, w)
	} else {
		p.Put(w2)
	}

	for _, test := range []struct {
		kind   byte
		opts   CallOptions
		reason Reason
	}{
		{'b', opts, Memory},
		{'s', CallOptions{First: 200 * time.Millisecond}, Timeout},
		{'p', opts, Crashed},
	} {
		w, err := p.Get(limit, "", false)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Call(context.Background(), &call{kind: test.kind}, test.opts)
		var f *Failure
		if !errors.As(err, &f) || f.Reason != test.reason {
			t.Errorf("request %q: got %v, want a failure of %s", test.kind, err, test.reason)
		}
		if test.reason == Crashed && !strings.Contains(err.Error(), "echo worker failed: exit status 2: panic: not a memory problem") {
			t.Errorf("request %q: got %q, want the panic", test.kind, err)
		}
		p.Put(w)
	}

	// A context that ends kills the worker.
	w, err = p.Get(limit, "", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = w.Call(ctx, &call{kind: 's'}, opts)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != Canceled || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("canceled: got %v, want a failure of the context", err)
	}
	p.Put(w)
	if s := p.Stats(); s.Started != 4 || s.Alive != 0 {
		t.Errorf("stats %+v, want 4 started (the first serves twice) and none alive", s)
	}
}

// TestPoolStart checks the errors of workers that do not start: one that exits before it is
// ready, one of another protocol, and a limit too small.
func TestPoolStart(t *testing.T) {
	t.Setenv("SANDBOX_TEST_NOSTART", "1")
	p := NewPool(&PoolOptions{Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	_, err := p.Get(128<<20, "", false)
	if want := "starting an echo worker: exit status 3: cannot start"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	os.Unsetenv("SANDBOX_TEST_NOSTART")
	other := NewPool(&PoolOptions{Protocol: "other/1", Name: "echo worker"})
	defer other.Close()
	if _, err := other.Get(128<<20, "", false); err == nil || !strings.Contains(err.Error(), `got protocol "sandbox-test/1", want "other/1"`) {
		t.Errorf("another protocol: got %v", err)
	}
	if _, err := p.Get(16<<20, "", false); err == nil || !strings.Contains(err.Error(), "the memory limit 16Mi is below the 48Mi") {
		t.Errorf("small limit: got %v", err)
	}

	// A worker that never says it is ready is killed after the start timeout, which is its
	// own: no request's time limit has begun.
	t.Setenv("SANDBOX_TEST_HANG", "1")
	slow := NewPool(&PoolOptions{Protocol: testProtocol, Name: "echo worker", StartTimeout: 300 * time.Millisecond})
	defer slow.Close()
	start := time.Now()
	_, err = slow.Get(128<<20, "", false)
	if want := "starting an echo worker: it did not say it was ready within 300ms"; err == nil || err.Error() != want {
		t.Errorf("a worker that hangs at its start: got %v, want %q", err, want)
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the start took %v", d)
	}
	if s := slow.Stats(); s.Alive != 0 {
		t.Errorf("stats %+v, want no worker alive", s)
	}
}

// runChild is a child of TestCommand, which says what to do in SANDBOX_TEST_MODE.
func runChild() int {
	if err := Enter(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	switch os.Getenv("SANDBOX_TEST_MODE") {
	case "bomb":
		for {
			chunk := make([]byte, 16<<20)
			for j := 0; j < len(chunk); j += 4096 {
				chunk[j] = 1
			}
			chunks = append(chunks, chunk)
		}
	case "panic":
		panic("not a memory problem")
	case "exit":
		return 1
	}
	return 0
}

func TestCommand(t *testing.T) {
	for mode, want := range map[string]Reason{"ok": 0, "exit": 0, "bomb": Memory, "panic": Crashed} {
		c := Command(context.Background(), 128<<20, os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), "SANDBOX_TEST_MODE="+mode)
		if err := c.Run(); err != nil {
			t.Fatal(err)
		}
		var got Reason
		if f := c.Failure(); f != nil {
			got = f.Reason
		}
		if got != want {
			t.Errorf("%s: got failure %v (%v), want %v", mode, c.Failure(), c.ProcessState, want)
		}
	}
}

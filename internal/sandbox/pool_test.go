package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPoolProcs checks that a worker takes its share of the parent's processors, one at least
// and two at most: a pool of a worker per processor leaves each one.
func TestPoolProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "4") // what a child's runtime starts with, whatever the machine
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for size, want := range map[int]string{1: "2", 2: "2", 3: "1", 4: "1"} {
		p := NewPool(&PoolOptions{Size: size, Protocol: testProtocol})
		w, err := p.Get(context.Background(), 128<<20, "", false)
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

// TestPoolProgress checks that the parent reads the progress a worker sets, while the worker
// is idle and after it died.
func TestPoolProgress(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol})
	defer p.Close()
	w := getWorker(t, p)
	defer p.Put(w)
	opts := CallOptions{First: 10 * time.Second}
	if n, ok := w.Progress(); n != 0 || ok != (runtime.GOOS == "linux") {
		t.Errorf("a new worker's progress: got %d, %v, want 0, %v", n, ok, runtime.GOOS == "linux")
	}
	if runtime.GOOS != "linux" {
		return // no memory files: the worker answers at each step instead
	}
	c := &call{kind: 'n', body: "41"}
	if err := w.Call(context.Background(), c, opts); err != nil || c.got != "true" {
		t.Fatalf("setting the progress: got %q, %v, want true", c.got, err)
	}
	if n, ok := w.Progress(); n != 41 || !ok {
		t.Errorf("an idle worker's progress: got %d, %v, want 41", n, ok)
	}
	c = &call{kind: 'N', body: "42"}
	var f *Failure
	if err := w.Call(context.Background(), c, opts); !errors.As(err, &f) || f.Reason != Memory {
		t.Fatalf("a worker that dies of its memory: got %v, want a memory failure", err)
	}
	if n, ok := w.Progress(); n != 42 || !ok {
		t.Errorf("a dead worker's progress: got %d, %v, want 42", n, ok)
	}
}

// TestPoolProgressWatch checks that a step of a worker's progress counts as an answer: a
// worker that makes steps more often than each answer is allowed lives on, one that stops is
// killed.
func TestPoolProgressWatch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("progress is counted in memory files, which are Linux's")
	}
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol})
	defer p.Close()
	w := getWorker(t, p)
	opts := CallOptions{First: 400 * time.Millisecond}
	c := &call{kind: 'w', body: "12,100"} // 1.2 s of steps, three times what an answer is allowed
	if err := w.Call(context.Background(), c, opts); err != nil || c.got != c.body {
		t.Fatalf("a worker that makes steps: got %q, %v, want an answer", c.got, err)
	}
	start := time.Now()
	c = &call{kind: 'w', body: "-1,100"}
	err := w.Call(context.Background(), c, opts)
	var f *Failure
	if !errors.As(err, &f) || f.Reason != Timeout {
		t.Fatalf("a worker that stops: got %v, want a time out", err)
	}
	// Killed between 400 and 500 ms after its step: it took 100 ms to make it.
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("the worker was killed %v after the call began, want 500 ms at least", d)
	}
	p.Put(w)
}

// TestPoolMark checks that the parent reads the mark a worker sets, while the worker is idle
// and after it died, and that a mark, unlike a step of its progress, does not count as an
// answer.
func TestPoolMark(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("marks are kept in memory files, which are Linux's")
	}
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol})
	defer p.Close()
	w := getWorker(t, p)
	opts := CallOptions{First: 10 * time.Second}
	if n, ok := w.Mark(); n != 0 || !ok {
		t.Errorf("a new worker's mark: got %d, %v, want 0", n, ok)
	}
	if err := w.Call(context.Background(), &call{kind: 'k', body: "7"}, opts); err != nil {
		t.Fatal(err)
	}
	if n, ok := w.Mark(); n != 7 || !ok {
		t.Errorf("an idle worker's mark: got %d, %v, want 7", n, ok)
	}
	if n, _ := w.Progress(); n != 0 {
		t.Errorf("the progress of a worker that marked: got %d, want 0", n)
	}
	var f *Failure
	if err := w.Call(context.Background(), &call{kind: 'K', body: "8"}, opts); !errors.As(err, &f) || f.Reason != Memory {
		t.Fatalf("a worker that dies of its memory: got %v, want a memory failure", err)
	}
	if n, ok := w.Mark(); n != 8 || !ok {
		t.Errorf("a dead worker's mark: got %d, %v, want 8", n, ok)
	}
	p.Put(w)

	// Were a mark an answer, the worker would answer after its marks.
	w = getWorker(t, p)
	defer p.Put(w)
	err := w.Call(context.Background(), &call{kind: 'j', body: "40,50"}, CallOptions{First: 400 * time.Millisecond})
	if !errors.As(err, &f) || f.Reason != Timeout {
		t.Fatalf("a worker that marks for 2s and answers: got %v, want a time out", err)
	}
}

// TestPoolAside checks that frames aside from the answers reach the exchange but do not count
// as answers: a worker that sends them all along and never answers is killed in the time
// allowed for its answer, not after its last frame.
func TestPoolAside(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol})
	defer p.Close()
	for _, aside := range []byte{'x', 0} {
		w := getWorker(t, p)
		// 20 frames 100 ms apart: 2 s of frames, four times the time allowed.
		c := &call{kind: 'x', body: "20,100"}
		err := w.Call(context.Background(), c, CallOptions{First: 500 * time.Millisecond, Aside: aside})
		p.Put(w)
		var f *Failure
		if !errors.As(err, &f) || f.Reason != Timeout {
			t.Fatalf("Aside %q: got %v, want a time out", aside, err)
		}
		if c.aside == 0 {
			t.Errorf("Aside %q: the exchange got no frame aside", aside)
		}
		// Killed before the frames end; or, where every frame counts as an answer, after
		// the last.
		if aside != 0 && c.aside >= 20 {
			t.Errorf("Aside %q: the worker sent all its %d frames before it was killed, want it killed before", aside, c.aside)
		}
		if aside == 0 && c.aside != 20 {
			t.Errorf("Aside 0: the worker was killed after %d frames, want after its last, the 20th", c.aside)
		}
	}
}

func TestPool(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	const limit = 128 << 20
	opts := CallOptions{First: 10 * time.Second}
	w, err := p.Get(context.Background(), limit, "", false)
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
	if w2, err := p.Get(context.Background(), limit, "k", false); err != nil || w2 != w {
		t.Fatalf("Get of the key: got %p, %v, want the same worker %p", w2, err, w)
	} else {
		p.Put(w2)
	}

	for _, test := range []struct {
		kind   byte
		opts   CallOptions
		reason Reason
	}{
		// A memory bomb has all the time it could take on a loaded machine, and a time
		// limit no memory to fill: each dies of its own limit.
		{'b', CallOptions{First: 5 * time.Minute}, Memory},
		{'s', CallOptions{First: 200 * time.Millisecond}, Timeout},
		{'p', opts, Crashed},
	} {
		w, err := p.Get(context.Background(), limit, "", false)
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
	w, err = p.Get(context.Background(), limit, "", false)
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

// TestCallGrace checks that a worker told its caller's deadline (CallOptions.Grace) has the
// grace period after the deadline to answer, and is killed only if it does not, while a
// context canceled otherwise kills it at once.
func TestCallGrace(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	opts := CallOptions{First: time.Minute, Grace: 30 * time.Second}

	// It answers 300ms after a deadline of 100ms: within the grace period.
	w := getWorker(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	c := &call{kind: 'w', body: "1,400"}
	if err := w.Call(ctx, c, opts); err != nil || c.got != "1,400" {
		t.Errorf("an answer within the grace period: got %q, %v", c.got, err)
	}
	cancel()
	p.Put(w)

	// It does not answer: killed once the grace period has passed.
	w = getWorker(t, p)
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	start := time.Now()
	err := w.Call(ctx, &call{kind: 's'}, CallOptions{First: time.Minute, Grace: 200 * time.Millisecond})
	var f *Failure
	if elapsed := time.Since(start); !errors.As(err, &f) || f.Reason != Canceled || !errors.Is(err, context.DeadlineExceeded) || elapsed < 300*time.Millisecond {
		t.Errorf("no answer: got %v after %v, want a failure of the deadline after its grace period", err, elapsed)
	}
	cancel()
	p.Put(w)

	// A cancel kills it at once, grace or not.
	w = getWorker(t, p)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	err = w.Call(ctx, &call{kind: 's'}, opts)
	if elapsed := time.Since(start); !errors.As(err, &f) || f.Reason != Canceled || !errors.Is(err, context.Canceled) || elapsed > 10*time.Second {
		t.Errorf("canceled: got %v after %v, want a failure of the cancel at once", err, elapsed)
	}
	p.Put(w)
	if s := p.Stats(); s.Started != 2 {
		t.Errorf("stats %+v, want 2 started: the first answered, the second was killed", s)
	}
}

// TestPoolGetContext checks that a Get that waits for a busy worker returns the error of its
// context once the context ends, and leaves the busy worker be.
func TestPoolGetContext(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	const limit = 128 << 20
	busy := getWorker(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.Get(ctx, limit, "", false)
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "waiting for an echo worker: context deadline exceeded" {
		t.Errorf("a Get whose context ends while it waits: got %v, want the context's deadline", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Get(canceled, limit, "", false); !errors.Is(err, context.Canceled) {
		t.Errorf("a Get of a context canceled: got %v, want context.Canceled", err)
	}
	c := &call{kind: 'e', body: "still here"}
	if err := busy.Call(context.Background(), c, CallOptions{First: time.Minute}); err != nil || c.got != c.body {
		t.Errorf("the busy worker after the Gets that gave up: got %q, %v, want it to answer", c.got, err)
	}
	p.Put(busy)
	if s := p.Stats(); s.Started != 1 || s.Alive != 1 || s.Idle != 1 {
		t.Errorf("stats %+v, want the one worker started, alive and idle", s)
	}
	// The Get of a context that has not ended takes the worker put back.
	if w, err := p.Get(context.Background(), limit, "", false); err != nil || w != busy {
		t.Errorf("a Get after the worker was put back: got %p, %v, want %p", w, err, busy)
	} else {
		p.Put(w)
	}
}

// TestPoolStartContext checks that a Get whose context ends while its worker starts returns
// the context's error, and that the worker, once ready, goes to the pool.
func TestPoolStartContext(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.mu.Lock()
	p.reserve(128 << 20)
	p.mu.Unlock()
	if _, err := p.startFor(ctx, 128<<20); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "starting an echo worker: ") {
		t.Fatalf("a start whose context ended: got %v, want context.Canceled", err)
	}
	w := getWorker(t, p) // the worker started for the Get that gave up, once ready
	defer p.Put(w)
	if s := p.Stats(); s.Started != 1 {
		t.Errorf("stats %+v, want the one worker started", s)
	}
}

// TestPoolStart checks the errors of workers that do not start: one that exits before it is
// ready, one of another protocol, and a limit too small.
func TestPoolStart(t *testing.T) {
	t.Setenv("SANDBOX_TEST_NOSTART", "1")
	p := NewPool(&PoolOptions{Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	_, err := p.Get(context.Background(), 128<<20, "", false)
	if want := "starting an echo worker: exit status 3: cannot start"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	os.Unsetenv("SANDBOX_TEST_NOSTART")
	other := NewPool(&PoolOptions{Protocol: "other/1", Name: "echo worker"})
	defer other.Close()
	if _, err := other.Get(context.Background(), 128<<20, "", false); err == nil || !strings.Contains(err.Error(), `got protocol "sandbox-test/1", want "other/1"`) {
		t.Errorf("another protocol: got %v", err)
	}
	var small *SmallMemoryError
	if _, err := p.Get(context.Background(), 16<<20, "", false); !errors.As(err, &small) || small.Limit != 16<<20 || !strings.Contains(err.Error(), "the memory limit 16Mi is below the 48Mi") {
		t.Errorf("small limit: got %v", err)
	}

	// A worker that never says it is ready is killed after the start timeout, which is its
	// own: no request's time limit has begun.
	t.Setenv("SANDBOX_TEST_HANG", "1")
	slow := NewPool(&PoolOptions{Protocol: testProtocol, Name: "echo worker", StartTimeout: 300 * time.Millisecond})
	defer slow.Close()
	start := time.Now()
	_, err = slow.Get(context.Background(), 128<<20, "", false)
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

// TestPoolCloseWaits checks that Close returns only once the processes of the workers that
// no caller holds have exited, idle or still starting, so that a command that closes its pool
// leaves none behind; a busy worker is stopped when it is put back.
func TestPoolCloseWaits(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 3, Protocol: testProtocol})
	busy := getWorker(t, p)
	idle := getWorker(t, p)
	p.Put(idle)
	p.Fill(128 << 20) // the third starts, and may not be ready when Close comes
	p.mu.Lock()
	var pids []int
	for w := range p.procs {
		if w != busy {
			pids = append(pids, w.child.cmd.Process.Pid)
		}
	}
	p.mu.Unlock()
	if len(pids) != 2 {
		t.Fatalf("got %d workers besides the busy one, want 2", len(pids))
	}
	p.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker %d is alive after Close (kill 0: %v)", pid, err)
		}
	}
	c := &call{kind: 'e'}
	if err := busy.Call(context.Background(), c, CallOptions{First: 10 * time.Second}); err != nil {
		t.Errorf("the busy worker failed after Close: %v", err)
	}
	pid := busy.child.cmd.Process.Pid
	p.Put(busy)
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the busy worker %d is alive once put back after Close (kill 0: %v)", pid, err)
	}
}

package sandbox

import (
	"context"
	"os"
	"testing"
	"time"
)

// startEarly starts an early worker of the memory limit for a pool of opts, as a program's
// first StartEarly does, and returns it; the test ends by stopping it if no pool took it.
func startEarly(t *testing.T, opts *PoolOptions, limit int64) *Worker {
	t.Helper()
	early.mu.Lock()
	early.done, early.w = false, nil
	early.mu.Unlock()
	StartEarly(opts, limit)
	early.mu.Lock()
	w := early.w
	early.mu.Unlock()
	if w == nil {
		t.Fatal("StartEarly started no worker")
	}
	t.Cleanup(func() {
		early.mu.Lock()
		left := early.w
		early.w = nil
		early.mu.Unlock()
		if left != nil {
			left.stop()
		}
	})
	return w
}

// pid returns the process id of the worker.
func (w *Worker) pid() int { return w.child.cmd.Process.Pid }

// TestStartEarly checks that the first pool that starts a worker of the early worker's limit
// takes it, at Prestart or at a Get, instead of starting a process; that it serves requests;
// and that a second StartEarly starts nothing.
func TestStartEarly(t *testing.T) {
	const limit = 128 << 20
	for _, prestart := range []bool{true, false} {
		opts := &PoolOptions{Protocol: testProtocol, Name: "echo worker", OnDemand: true}
		e := startEarly(t, opts, limit)
		StartEarly(opts, limit)
		if early.w != e {
			t.Fatal("a second StartEarly started another worker")
		}
		p := NewPool(opts)
		if prestart {
			p.Prestart(limit)
		}
		w, err := p.Get(limit, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if w != e || w.pid() != e.pid() {
			t.Errorf("prestart %v: the pool started worker %d, want the early worker %d", prestart, w.pid(), e.pid())
		}
		c := &call{kind: 'e', body: "hello"}
		if err := w.Call(context.Background(), c, CallOptions{First: 10 * time.Second}); err != nil || c.got != "hello" {
			t.Errorf("the early worker answered %q (%v), want hello", c.got, err)
		}
		p.Put(w)
		if s := p.Stats(); s.Started != 1 || s.Alive != 1 || s.Idle != 1 {
			t.Errorf("stats %+v, want the one early worker, idle", s)
		}
		p.Close()
		select {
		case <-e.child.exited:
		case <-time.After(10 * time.Second):
			t.Error("the early worker did not exit when its pool closed")
		}
	}
}

// TestStartEarlyOther checks that a pool of another memory limit, program or size stops the
// early worker and starts its own.
func TestStartEarlyOther(t *testing.T) {
	const limit = 128 << 20
	for name, opts := range map[string]*PoolOptions{
		"another limit": {Protocol: testProtocol},
		"another size":  {Protocol: testProtocol, Size: 7},
		"another args":  {Protocol: testProtocol, Args: []string{"-test.run=^$"}},
	} {
		e := startEarly(t, &PoolOptions{Protocol: testProtocol}, limit)
		p := NewPool(opts)
		want := int64(limit)
		if name == "another limit" {
			want = 2 * limit
		}
		w, err := p.Get(want, "", false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w == e {
			t.Errorf("%s: the pool took the early worker", name)
		}
		select {
		case <-e.child.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: the early worker was not stopped", name)
		}
		p.Put(w)
		p.Close()
	}
}

// TestStartEarlyDied checks that a pool does not take an early worker that died before it
// was ready: it starts its own, and counts only that one.
func TestStartEarlyDied(t *testing.T) {
	const limit = 128 << 20
	opts := &PoolOptions{Protocol: testProtocol}
	t.Setenv("SANDBOX_TEST_NOSTART", "1")
	e := startEarly(t, opts, limit)
	os.Unsetenv("SANDBOX_TEST_NOSTART")
	<-e.child.exited
	p := NewPool(opts)
	defer p.Close()
	w, err := p.Get(limit, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if w == e {
		t.Error("the pool took the early worker that had died")
	}
	p.Put(w)
	if s := p.Stats(); s.Started != 1 || s.Alive != 1 {
		t.Errorf("stats %+v, want one worker, the pool's own", s)
	}
}

// TestStartEarlyNotInChild checks that a worker starts no early worker: it would start them
// without end.
func TestStartEarlyNotInChild(t *testing.T) {
	early.mu.Lock()
	early.done, early.w = false, nil
	early.mu.Unlock()
	t.Setenv(envRole, "worker")
	StartEarly(&PoolOptions{Protocol: testProtocol}, 128<<20)
	if early.w != nil {
		early.w.stop()
		t.Error("a worker started an early worker")
	}
}

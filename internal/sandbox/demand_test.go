package sandbox

// The tests of a pool that grows on demand (demand.go), with the test workers of pool_test.go.

import (
	"context"
	"testing"
	"time"
)

// prestartedOnDemand returns a pool of two workers that grows on demand, closed when the test
// ends, and the memory limit of the worker it prestarts.
func prestartedOnDemand(t *testing.T) (*Pool, int64) {
	p := NewPool(&PoolOptions{Size: 2, OnDemand: true, Protocol: testProtocol, Name: "echo worker"})
	t.Cleanup(func() { p.Close() })
	const limit = 128 << 20
	p.Prestart(limit)
	return p, limit
}

// TestPoolOnDemand checks how a pool that grows on demand starts workers: Prestart starts
// one; a Get that waits for a busy worker takes it back if it comes back before the waits add
// up to waitPerStart starts, and starts another once they do; a full pool starts none.
func TestPoolOnDemand(t *testing.T) {
	p, limit := prestartedOnDemand(t)
	p.Prestart(limit) // a worker of the limit is alive: no more
	w1, err := p.Get(context.Background(), limit, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Started != 1 || s.Alive != 1 {
		t.Fatalf("after Prestart: stats %+v, want one worker", s)
	}
	setCost := func(d time.Duration) time.Duration {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.demand.cost <= 0 {
			t.Errorf("the cost of a start is %v, want the time the first worker took", p.demand.cost)
		}
		p.demand.cost = d
		return p.demand.short
	}
	getAsync := func() chan *Worker {
		got := make(chan *Worker, 1)
		go func() {
			w, err := p.Get(context.Background(), limit, "", false)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		return got
	}

	// A start that takes long is not worth a short wait.
	setCost(time.Hour)
	got := getAsync()
	time.Sleep(100 * time.Millisecond)
	p.Put(w1)
	if w := <-got; w != w1 {
		t.Fatalf("a short wait got another worker")
	}
	if s := p.Stats(); s.Started != 1 {
		t.Fatalf("a short wait started a worker: stats %+v", s)
	}

	// The waits add up: once they are as long as waitPerStart starts, a Get starts a
	// worker, and does not wait for the busy one.
	short := setCost(time.Hour)
	if short <= 0 {
		t.Fatalf("the Get waited %v, want the time until the worker came back", short)
	}
	setCost((short + 200*time.Millisecond) / waitPerStart)
	got = getAsync()
	w2 := <-got
	if w2 == w1 {
		t.Fatalf("the Get got the busy worker")
	}
	c := &call{kind: 'e', body: "second"}
	if err := w2.Call(context.Background(), c, CallOptions{First: 10 * time.Second}); err != nil || c.got != "second" {
		t.Fatalf("the second worker: got %q, %v", c.got, err)
	}
	if s := p.Stats(); s.Started != 2 || s.Alive != 2 {
		t.Fatalf("after the waits: stats %+v, want two workers", s)
	}

	// The pool is full: a Get waits for a worker, however long, and starts none.
	setCost(time.Nanosecond)
	got = getAsync()
	time.Sleep(100 * time.Millisecond)
	p.Put(w2)
	if w := <-got; w != w2 {
		t.Fatalf("got another worker than the one put back")
	}
	p.Put(w1)
	p.Put(w2)
	if s := p.Stats(); s.Started != 2 {
		t.Fatalf("a full pool started a worker: stats %+v", s)
	}
}

// TestPoolOnDemandLimits checks that a pool that grows on demand starts a worker at once for
// a memory limit that no worker alive has: the busy workers could not serve it.
func TestPoolOnDemandLimits(t *testing.T) {
	p := NewPool(&PoolOptions{Size: 2, OnDemand: true, Protocol: testProtocol, Name: "echo worker"})
	defer p.Close()
	w1, err := p.Get(context.Background(), 128<<20, "", false)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.demand.cost = time.Hour
	p.mu.Unlock()
	got := make(chan *Worker, 1)
	go func() {
		w, err := p.Get(context.Background(), 256<<20, "", false)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	var w2 *Worker
	select {
	case w2 = <-got:
	case <-time.After(time.Minute):
		t.Fatal("the Get waits for the busy worker of another limit")
	}
	if w2 == nil || w2 == w1 || w2.Limit() != 256<<20 {
		t.Fatalf("got a worker of limit %d, want a new one of 256Mi", w2.Limit())
	}
	p.Put(w1)
	p.Put(w2)
	if s := p.Stats(); s.Started != 2 || s.Alive != 2 || s.Idle != 2 {
		t.Fatalf("stats %+v, want two workers idle", s)
	}
}

// TestPoolFill checks that Fill starts as many workers as the pool has room for, even when
// it grows on demand.
func TestPoolFill(t *testing.T) {
	p, limit := prestartedOnDemand(t)
	p.Fill(limit)
	p.Fill(limit) // full
	deadline := time.Now().Add(time.Minute)
	for p.Stats().Idle < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := p.Stats(); s.Started != 2 || s.Idle != 2 {
		t.Fatalf("stats %+v, want two workers idle", s)
	}
}

// TestPoolOnDemandStarting checks that Gets that began to wait while the first worker started
// count their waits from its start on, and start another worker with no other event.
func TestPoolOnDemandStarting(t *testing.T) {
	p, limit := prestartedOnDemand(t)
	got := make(chan *Worker, 2)
	for range 2 {
		go func() {
			w, err := p.Get(context.Background(), limit, "", false)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
	}
	var ws []*Worker
	for range 2 {
		select {
		case w := <-got:
			ws = append(ws, w)
		case <-time.After(time.Minute):
			t.Fatal("a Get that waited while the first worker started never got a worker")
		}
	}
	if ws[0] == nil || ws[1] == nil || ws[0] == ws[1] {
		t.Fatalf("got workers %p and %p, want two", ws[0], ws[1])
	}
	for _, w := range ws {
		p.Put(w)
	}
}

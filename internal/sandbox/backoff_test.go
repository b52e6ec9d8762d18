package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPoolRestartBackoff checks that a pool whose workers die one after another starts the
// next no sooner than the run of deaths allows, that Gets wait for it within their context,
// and that a worker that answers ends the run.
func TestPoolRestartBackoff(t *testing.T) {
	for _, tc := range []struct {
		deaths int
		most   time.Duration
		want   time.Duration
	}{
		{0, time.Second, 0}, {1, time.Second, 0}, {2, time.Second, 50 * time.Millisecond},
		{3, time.Second, 100 * time.Millisecond}, {6, time.Second, 800 * time.Millisecond},
		{7, time.Second, time.Second}, {1000, time.Second, time.Second}, {5, 0, 0},
	} {
		b := &backoff{deaths: tc.deaths}
		if got := b.delay(tc.most); got != tc.want {
			t.Errorf("the wait after %d deaths, at most %v: got %v, want %v", tc.deaths, tc.most, got, tc.want)
		}
	}

	p := NewPool(&PoolOptions{Size: 1, Protocol: testProtocol, Name: "echo worker", RestartBackoff: 2 * time.Hour})
	defer p.Close()
	p.restarts.first = time.Hour // a wait no machine's slowness makes pass unseen
	const limit = 128 << 20
	die := func() {
		t.Helper()
		w := getWorker(t, p)
		var f *Failure
		if err := w.Call(context.Background(), &call{kind: 'p'}, CallOptions{First: time.Minute}); !errors.As(err, &f) || f.Reason != Crashed {
			t.Fatalf("a panic: got %v, want a crash", err)
		}
		p.Put(w)
	}
	// The workers after the first death and the second start at once; the second death
	// sets the wait after the third start.
	for range 3 {
		die()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	const msg = "waiting for an echo worker (the last 3 died one after another, and the next starts no sooner than 2h0m0s after the last): context deadline exceeded"
	if _, err := p.Get(ctx, limit, "", false); !errors.Is(err, context.DeadlineExceeded) || err.Error() != msg {
		t.Fatalf("a Get within the wait: got %v, want %s", err, msg)
	}
	if s := p.Stats(); s.Started != 3 {
		t.Fatalf("stats %+v, want 3 started: none within the wait", s)
	}
	p.Prestart(limit)
	if s := p.Stats(); s.Started != 3 {
		t.Fatalf("stats %+v after Prestart, want 3 started: none within the wait", s)
	}
	// Once the wait is over, a Get waiting for it starts a worker.
	got := make(chan error, 1)
	go func() {
		w, err := p.Get(context.Background(), limit, "", false)
		if err == nil {
			c := &call{kind: 'e', body: "back"}
			err = w.Call(context.Background(), c, CallOptions{First: time.Minute})
			p.Put(w)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	p.mu.Lock()
	p.restarts.next = time.Now()
	p.restarts.wake.Reset(0)
	p.mu.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("a Get after the wait: %v", err)
	}
	// The worker answered: the run is over. It dies, and its replacement starts at once.
	die()
	die()
	if s := p.Stats(); s.Started != 5 {
		t.Errorf("stats %+v, want 5 started", s)
	}
}

package sandbox

// This file defines how a pool slows the replacement of workers that keep dying
// (PoolOptions.RestartBackoff), as the kubelet backs off a container in a crash loop: a
// script that exhausts its worker's memory at every call would otherwise have the pool start
// a worker for each call, and the starts, with the memory each worker fills before it dies,
// take the processors that other pools' workers and their callers need.

import (
	"context"
	"fmt"
	"time"
)

// firstBackoff is the wait before the start that follows the second death in a row; each
// death after it doubles the wait, up to PoolOptions.RestartBackoff.
const firstBackoff = 50 * time.Millisecond

// backoff is a pool's account of the deaths of its workers. Its methods are called with the
// pool's mu held.
type backoff struct {
	deaths int           // workers that died one after another, with no answer in between
	next   time.Time     // the earliest the next worker may start
	wake   *time.Timer   // wakes the Gets that wait for next
	first  time.Duration // the first wait; zero means firstBackoff (tests set it)
}

// delay returns the wait between starts after the deaths in a row: none after the first,
// so that the work a death interrupted goes on at once, then firstBackoff, doubled at each
// death, at most most.
func (b *backoff) delay(most time.Duration) time.Duration {
	if b.deaths < 2 || most <= 0 {
		return 0
	}
	first := b.first
	if first <= 0 {
		first = firstBackoff
	}
	return min(first<<min(b.deaths-2, 16), most)
}

// died counts a worker that died of its work: of its memory limit, killed for not answering
// in time, or crashed; not one killed because its caller gave up.
func (b *backoff) died() { b.deaths++ }

// answered ends a run of deaths: a worker answered and was put back.
func (b *backoff) answered() {
	b.deaths = 0
	b.next = time.Time{}
}

// why says, for the error of a Get that gave up, that the pool's workers kept dying, if they
// did.
func (b *backoff) why(most time.Duration) string {
	d := b.delay(most)
	if d == 0 {
		return ""
	}
	return fmt.Sprintf(" (the last %d died one after another, and the next starts no sooner than %v after the last)", b.deaths, d)
}

// hold returns how long a start must wait, or zero if a worker may start now, in which case
// it counts the start: the next may start no sooner than the run of deaths says.
func (p *Pool) hold() time.Duration {
	b := &p.restarts
	now := time.Now()
	if wait := b.next.Sub(now); wait > 0 {
		return wait
	}
	if d := b.delay(p.opts.RestartBackoff); d > 0 {
		b.next = now.Add(d)
	}
	return 0
}

// awaitStart waits, as await does, for a change of the pool or for wait to pass, when a
// start may be due. p.mu is held, and released while it waits.
func (p *Pool) awaitStart(ctx context.Context, wait time.Duration) {
	b := &p.restarts
	if b.wake == nil {
		b.wake = time.AfterFunc(wait, func() {
			p.mu.Lock()
			p.broadcast()
			p.mu.Unlock()
		})
	} else {
		b.wake.Reset(wait)
	}
	p.await(ctx)
}

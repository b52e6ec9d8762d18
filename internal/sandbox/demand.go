package sandbox

// This file defines when a pool that grows on demand (PoolOptions.OnDemand) starts another
// worker of a memory limit that has one alive: the rule of renting or buying. Waiting for a
// busy worker is the rent, a start the price of buying. A worker more does not end the waits,
// though: it adds at most a processor, and less where the processors are few and shared with
// the parent and the other workers (on 2 vCPUs, a second worker builds 1,000 replicas only
// 1.16 times as fast as one). Counting it as a third more, it pays for its start once the
// work left is four starts long: so Gets wait until they have waited, in all, as long as
// waitPerStart starts took, and then start one. Work that the workers alive do soon enough
// never pays for a start; a long stream of work pays a bounded multiple of what starting at
// once would have cost. Neither the time a process takes to start, from a few milliseconds
// to tens on a virtual machine whose page faults are slow, nor the length of the work need be
// known in advance.

import (
	"context"
	"time"
)

// waitPerStart is how many times the last start's duration Gets wait, in all, before they
// start another worker.
const waitPerStart = 4

// demand is a pool's account of the waits of its Gets. Its methods are called with the
// pool's mu held.
type demand struct {
	waiting  int           // Gets waiting for a worker
	starting int           // workers reserved and not yet ready, or failed
	short    time.Duration // the time Gets waited with no worker starting, since the last start due
	last     time.Time     // when short was last brought up to date
	cost     time.Duration // how long the last worker to be ready took to start
	wake     *time.Timer   // wakes the waiting Gets when a start may be due (see await)
}

// tick brings short up to date: the time since the last tick counts if Gets were waiting
// and no worker was starting, which is how things stood all along, since tick comes before
// every change of waiting and starting.
func (d *demand) tick() {
	now := time.Now()
	if d.waiting > 0 && d.starting == 0 && !d.last.IsZero() {
		d.short += now.Sub(d.last)
	}
	d.last = now
}

// due reports whether a Get that finds no idle worker should start another: whether no worker
// is starting and Gets have waited as long as waitPerStart starts. If so it begins the count
// again, for the start after.
func (d *demand) due() bool {
	if d.starting > 0 {
		return false // a worker that is starting serves sooner than a new one
	}
	d.tick()
	if d.short < waitPerStart*d.cost {
		return false
	}
	d.short = 0
	return true
}

// await waits for a change of the pool: a worker put back, ready or lost, or, where the pool
// grows on demand and has room, the time at which a start would be due; or for the end of
// ctx, which the caller then sees in ctx.Err(). p.mu is held, and released while it waits.
func (p *Pool) await(ctx context.Context) {
	d := &p.demand
	if p.opts.OnDemand && d.starting == 0 && p.alive < p.opts.Size {
		after := waitPerStart*d.cost - d.short
		if d.wake == nil {
			d.wake = time.AfterFunc(after, func() {
				p.mu.Lock()
				p.broadcast()
				p.mu.Unlock()
			})
		} else {
			d.wake.Reset(after)
		}
	}
	d.tick()
	d.waiting++
	changed := p.changed
	p.mu.Unlock()
	select {
	case <-changed:
	case <-ctx.Done():
	}
	p.mu.Lock()
	d.tick()
	d.waiting--
}

// stop stops the timer of the waiting Gets.
func (d *demand) stop() {
	if d.wake != nil {
		d.wake.Stop()
	}
}

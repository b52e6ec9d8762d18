package sandbox

// This file defines the watchdog of a call to a worker.

import (
	"sync"
	"time"
)

// A watchdog kills a worker that takes too long to answer (see CallOptions). It looks four
// times in each period allowed for a step of the worker's progress, so that a worker that
// stops is killed between the period and a quarter more after its last step.
type watchdog struct {
	w     *Worker
	each  time.Duration
	kill  func()
	timer *time.Timer

	mu      sync.Mutex
	allowed time.Duration // the period allowed now: First, then Each
	last    time.Time     // the last answer or step, or the start
	step    uint64        // the worker's progress then
	done    bool
}

// watch starts the watchdog of a call with opts, which calls kill if the worker does not
// answer in time.
func (w *Worker) watch(opts CallOptions, kill func()) *watchdog {
	d := &watchdog{w: w, each: opts.Each, kill: kill, allowed: opts.First, last: time.Now()}
	d.step, _ = w.Progress()
	d.mu.Lock() // check waits for the timer to be set
	d.timer = time.AfterFunc(d.period(), d.check)
	d.mu.Unlock()
	return d
}

// period is how long the watchdog waits before it looks again.
func (d *watchdog) period() time.Duration {
	return max(d.allowed/4, time.Millisecond)
}

// check kills the worker if its time is up, and looks again later otherwise.
func (d *watchdog) check() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return
	}
	now := time.Now()
	if step, ok := d.w.Progress(); ok && step != d.step {
		d.step, d.last, d.allowed = step, now, d.each
	}
	left := d.allowed - now.Sub(d.last)
	if left <= 0 {
		d.done = true
		d.kill()
		return
	}
	d.timer.Reset(min(left, d.period()))
}

// answered notes an answer.
func (d *watchdog) answered() {
	d.mu.Lock()
	d.last, d.allowed = time.Now(), d.each
	d.mu.Unlock()
}

// stop stops the watchdog.
func (d *watchdog) stop() {
	d.mu.Lock()
	d.done = true
	d.mu.Unlock()
	d.timer.Stop()
}

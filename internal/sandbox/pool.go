package sandbox

// This file defines the pool of workers: long-lived children that answer requests in frames.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// PoolOptions configures [NewPool].
type PoolOptions struct {
	// Path is the program to run as a worker. Empty means the running program
	// (os.Executable), which must then serve as a worker when [IsWorker] says so.
	Path string

	// Args are the arguments of the worker program.
	Args []string

	// Size bounds the number of workers alive at once. Zero means runtime.GOMAXPROCS(0).
	Size int

	// Protocol names the protocol of the requests, which a worker says in its ready frame
	// and the parent in its hello; a worker of another build is refused.
	Protocol string

	// Name names a worker in messages, e.g. "overlay worker". Empty means "worker".
	Name string

	// Keys is how many keys of the work a worker holds (compiled scripts) a Worker's Keys
	// account keeps. Zero means 16.
	Keys int

	// StartTimeout bounds the time a new worker takes to say it is ready. Zero means 15s.
	// It is the worker's own: no request's time limit runs until the worker is ready.
	StartTimeout time.Duration

	// OnDemand has the pool start a worker beyond the first of a memory limit only once
	// requests have waited for busy workers, in all, four times as long as the last worker
	// took to start, and Prestart start one: where a process is slow to start, or the work
	// is done soon, another worker would cost more than it saves (see demand.go). Without
	// it the pool starts workers up to Size as soon as requests find none idle.
	OnDemand bool

	// RestartBackoff bounds the wait between starts of workers when they die one after
	// another (see backoff.go): after the second death in a row, a worker starts no sooner
	// than 50ms after the last, and each death doubles the wait, up to RestartBackoff. A
	// worker that answers ends the run. Gets wait for the start meanwhile, up to their
	// context. Zero means workers are replaced at once.
	RestartBackoff time.Duration
}

// A Pool starts, reuses and replaces workers. Workers stay alive across requests; a worker
// that dies (of its memory limit, or killed for not answering in time) is replaced by a new
// one on demand. Workers of different memory limits may be alive at once. A Pool is safe for
// concurrent use.
type Pool struct {
	opts PoolOptions

	mu       sync.Mutex
	changed  chan struct{}       // closed, and replaced, when a worker is put back, ready or lost
	idle     map[int64][]*Worker // by memory limit
	alive    int                 // workers alive or starting
	limits   map[int64]int       // alive by memory limit
	closed   bool
	procs    map[*Worker]bool // the workers whose process has not exited
	demand   demand           // when to start another worker, with OnDemand
	restarts backoff          // when to start another worker after deaths

	started atomic.Int64
	peak    atomic.Int64 // the highest peak resident set size of any worker, in bytes
}

// NewPool returns a pool of workers. Nil options are the zero options.
func NewPool(opts *PoolOptions) *Pool {
	p := &Pool{idle: make(map[int64][]*Worker), limits: make(map[int64]int), procs: make(map[*Worker]bool)}
	if opts != nil {
		p.opts = *opts
		p.opts.Args = slices.Clone(opts.Args)
	}
	if p.opts.Size <= 0 {
		p.opts.Size = runtime.GOMAXPROCS(0)
	}
	if p.opts.Name == "" {
		p.opts.Name = "worker"
	}
	if p.opts.Keys <= 0 {
		p.opts.Keys = 16
	}
	if p.opts.StartTimeout <= 0 {
		p.opts.StartTimeout = 15 * time.Second
	}
	p.changed = make(chan struct{})
	return p
}

// Prestart starts as many workers of the memory limit as p has room for (with OnDemand,
// one, if none of the limit is alive), so that the first requests find them ready instead of
// each waiting for a process to start. It starts the processes itself, which takes a fraction
// of a millisecond each: a goroutine would start them later, since the caller goes on working
// on its processor. It does not wait for them to be ready. A worker that fails to start is not
// reported: a Get that finds no idle worker starts one itself, and reports why that fails.
func (p *Pool) Prestart(limit int64) { p.prestart(limit, !p.opts.OnDemand) }

// Fill starts as many workers of the memory limit as p has room for, as Prestart does without
// OnDemand: for work known to keep them all busy for long.
func (p *Pool) Fill(limit int64) { p.prestart(limit, true) }

// prestart starts workers of the memory limit in the background: all p has room for, or one
// if none of the limit is alive.
func (p *Pool) prestart(limit int64, all bool) {
	if limit < MinMemory {
		return
	}
	p.mu.Lock()
	n := p.opts.Size - p.alive
	if !all {
		n = min(n, 1-p.limits[limit])
	}
	if p.closed || p.restarts.deaths > 0 {
		n = 0 // after a death, Get starts workers as the run of deaths allows
	}
	for range n {
		p.reserve(limit)
	}
	p.mu.Unlock()
	for range n {
		w, err := p.spawn(limit)
		if err != nil {
			p.ready(limit, nil, err)
			continue
		}
		go func() {
			err := w.handshake(p.opts.StartTimeout)
			p.ready(limit, w, err)
			if err == nil {
				p.Put(w)
			}
		}()
	}
}

// Close stops the idle workers of p and every busy one when it is put back, and waits until
// every worker it does not leave to its user has exited: the idle ones, and those still
// starting, which it kills. Once Close returns, no process of p outlives it but those of
// workers that Get handed out and Put has not taken back. Gets after Close fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var ws []*Worker
	for _, idle := range p.idle {
		ws = append(ws, idle...)
	}
	p.idle = make(map[int64][]*Worker)
	for _, w := range ws {
		p.retire(w.limit)
	}
	p.demand.stop()
	if p.restarts.wake != nil {
		p.restarts.wake.Stop()
	}
	p.broadcast()
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.stop()
		}()
	}
	wg.Wait()
	// The workers still starting (or being stopped) have no user to wait for them: a
	// command that ends would leave them behind, unwaited.
	p.mu.Lock()
	var rest []*Worker
	for w := range p.procs {
		if !w.busy {
			rest = append(rest, w)
		}
	}
	p.mu.Unlock()
	for _, w := range rest {
		w.child.cmd.Process.Kill()
		<-w.child.exited
	}
	return nil
}

// Kill kills every process of p, busy or not, without waiting for them: for a process that
// is about to exit at once.
func (p *Pool) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.procs {
		w.child.cmd.Process.Kill()
	}
}

// Stats describes the workers of a pool.
type Stats struct {
	Started int   // workers started since the pool was made
	Alive   int   // workers alive now, busy or idle
	Idle    int   // workers alive and waiting for work
	PeakRSS int64 // the highest peak resident set size of any worker seen so far, in bytes
}

// Stats returns the pool's counts. Peak memory counts the workers alive now and those that
// have exited.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	pids := make([]int, 0, len(p.procs))
	for w := range p.procs {
		pids = append(pids, w.child.cmd.Process.Pid)
	}
	s := Stats{Started: int(p.started.Load()), Alive: p.alive}
	for _, ws := range p.idle {
		s.Idle += len(ws)
	}
	p.mu.Unlock()
	for _, pid := range pids {
		p.notePeak(peakRSS(pid))
	}
	s.PeakRSS = p.peak.Load()
	return s
}

func (p *Pool) notePeak(n int64) {
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

// ErrClosed is the error of a Get from a closed pool.
var ErrClosed = errors.New("the worker pool is closed")

// Get returns a ready worker with the memory limit: an idle one, preferably one whose Keys
// hold key, or a new one. With fresh set it returns only a worker whose Keys are empty. It
// waits for a place when the pool is full of busy workers, and with OnDemand, for a busy
// worker of the limit until another is worth starting. The caller gives the worker back with
// Put.
//
// Get waits no longer than ctx lasts: once ctx ends it returns an error that wraps
// ctx.Err(), and a worker it was starting goes to the pool when ready. It stops no busy
// worker.
func (p *Pool) Get(ctx context.Context, limit int64, key string, fresh bool) (*Worker, error) {
	if limit < MinMemory {
		return nil, fmt.Errorf("starting an %s: %w", p.opts.Name, &SmallMemoryError{limit})
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			why := p.restarts.why(p.opts.RestartBackoff)
			p.mu.Unlock()
			return nil, fmt.Errorf("waiting for an %s%s: %w", p.opts.Name, why, err)
		}
		if i := pick(p.idle[limit], key, fresh); i >= 0 {
			ws := p.idle[limit]
			w := ws[i]
			p.idle[limit] = slices.Delete(ws, i, i+1)
			w.busy = true
			p.mu.Unlock()
			return w, nil
		}
		if p.alive < p.opts.Size && (!p.opts.OnDemand || fresh || p.limits[limit] == 0) {
			// No worker alive could serve the request: start one for it.
			if wait := p.hold(); wait > 0 {
				p.awaitStart(ctx, wait)
				continue
			}
			p.reserve(limit)
			p.mu.Unlock()
			return p.startFor(ctx, limit)
		}
		if p.alive >= p.opts.Size {
			// Make room by stopping an idle worker with another limit (or, for a fresh
			// worker, one that holds work).
			var evict *Worker
			for l, ws := range p.idle {
				if len(ws) > 0 {
					evict = ws[len(ws)-1]
					p.idle[l] = ws[:len(ws)-1]
					p.retire(l)
					break
				}
			}
			if evict != nil {
				go evict.stop()
				continue
			}
		} else if wait := p.hold(); wait > 0 {
			p.awaitStart(ctx, wait)
			continue
		} else if p.demand.due() {
			// Requests waited as long as waitPerStart starts: start another worker,
			// and take whichever is idle first.
			p.reserve(limit)
			go p.grow(limit)
			continue
		}
		p.await(ctx)
	}
}

// startFor starts a worker of the memory limit, reserved, for a Get of ctx. If ctx ends
// before the worker is ready, it returns an error that wraps ctx.Err(), and the worker goes
// to the pool once ready.
func (p *Pool) startFor(ctx context.Context, limit int64) (*Worker, error) {
	w, err := p.spawn(limit)
	if err != nil {
		p.ready(limit, nil, err)
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		err := w.handshake(p.opts.StartTimeout)
		p.ready(limit, w, err)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		w.busy = true
		p.mu.Unlock()
		return w, nil
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				p.Put(w)
			}
		}()
		return nil, fmt.Errorf("starting an %s: %w", p.opts.Name, ctx.Err())
	}
}

// pick returns the index in ws of the worker Get should take, or -1: the last that holds key,
// or else the last; with fresh set, the last that holds nothing.
func pick(ws []*Worker, key string, fresh bool) int {
	for i := len(ws) - 1; i >= 0; i-- {
		if fresh && ws[i].Keys.Len() == 0 {
			return i
		}
		if _, ok := ws[i].Keys.Get(key); ok && !fresh {
			return i
		}
	}
	if fresh {
		return -1
	}
	return len(ws) - 1
}

// reserve counts a worker of the memory limit that is about to start. p.mu is held.
func (p *Pool) reserve(limit int64) {
	p.demand.tick()
	p.alive++
	p.limits[limit]++
	p.demand.starting++
}

// ready ends the start of a worker of the memory limit: err is nil if the worker w is ready,
// which the caller then takes or puts, or else why it failed.
func (p *Pool) ready(limit int64, w *Worker, err error) {
	p.mu.Lock()
	p.demand.tick()
	p.demand.starting--
	if err != nil {
		p.retire(limit)
	} else {
		p.demand.cost = time.Since(w.born)
	}
	// Gets that waited while it started have no timer (see await): they look again.
	p.broadcast()
	p.mu.Unlock()
}

// retire uncounts a worker of the memory limit that has stopped, or will. p.mu is held.
func (p *Pool) retire(limit int64) {
	p.alive--
	if p.limits[limit]--; p.limits[limit] <= 0 {
		delete(p.limits, limit)
	}
}

// grow starts a worker of the memory limit that Get reserved, and puts it in the pool.
func (p *Pool) grow(limit int64) {
	w, err := p.start(limit)
	p.ready(limit, w, err)
	if err == nil {
		p.Put(w)
	}
}

// Put gives a worker back to the pool after a request, or retires it if it is dead.
func (p *Pool) Put(w *Worker) {
	p.mu.Lock()
	w.busy = false
	if w.dead && w.failed != Canceled {
		p.restarts.died()
	} else if !w.dead {
		p.restarts.answered()
	}
	if w.dead || p.closed {
		p.retire(w.limit)
		p.broadcast()
		p.mu.Unlock()
		w.stop()
		return
	}
	p.idle[w.limit] = append(p.idle[w.limit], w)
	p.broadcast()
	p.mu.Unlock()
}

// broadcast wakes the Gets that wait for a change of the pool. p.mu is held.
func (p *Pool) broadcast() {
	close(p.changed)
	p.changed = make(chan struct{})
}

package sandbox

// This file defines the early worker: one a program starts before its pool exists, so that
// the worker's start overlaps the program's own.

import (
	"slices"
	"sync"
)

// early is the process's early worker, until a pool takes it.
var early struct {
	mu   sync.Mutex
	done bool // StartEarly was called
	w    *Worker
	opts PoolOptions // of the pool that started it, with NewPool's defaults
}

// StartEarly starts a worker of the memory limit at once, for the first pool of the same
// program, arguments and size to take when it starts a worker (at its Prestart, or at a Get
// that finds none): a package's init may call it, so that the worker starts while the rest
// of the program initialises. A Go program's start takes tens of milliseconds where page
// faults are slow, and the two starts then overlap on two processors instead of following
// each other. The first pool that starts a worker takes the early one if it serves it, and
// stops it otherwise.
//
// It does nothing after a first call, in a child of the sandbox, or if the limit is below
// [MinMemory]; a worker that fails to start is forgotten (a pool then starts its own, and
// reports why that fails). A worker no pool takes exits when this process does, at the end
// of its input.
func StartEarly(opts *PoolOptions, limit int64) {
	if IsWorker() || IsChild() || limit < MinMemory {
		return
	}
	early.mu.Lock()
	defer early.mu.Unlock()
	if early.done {
		return
	}
	early.done = true
	p := NewPool(opts)
	if w, err := p.startProcess(limit); err == nil {
		early.w, early.opts = w, p.opts
	}
}

// takeEarly returns the early worker, not yet ready, if it serves p with the memory limit,
// and makes it p's; otherwise nil. An early worker that does not serve p is stopped: no pool
// would take it later.
func (p *Pool) takeEarly(limit int64) *Worker {
	early.mu.Lock()
	w, o := early.w, &early.opts
	early.w = nil
	serves := w != nil && w.limit == limit && o.Path == p.opts.Path && slices.Equal(o.Args, p.opts.Args) && o.Size == p.opts.Size
	early.mu.Unlock()
	switch {
	case w == nil:
		return nil
	case !serves:
		go w.stop()
		return nil
	case !w.adopt(p):
		w.stop() // it has exited: close its files
		return nil
	}
	return w
}

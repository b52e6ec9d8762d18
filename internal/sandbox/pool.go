package sandbox

// This file defines the pool of workers: long-lived children that answer requests in frames.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/starpod/starpod/internal/bound"
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
}

// A Pool starts, reuses and replaces workers. Workers stay alive across requests; a worker
// that dies (of its memory limit, or killed for not answering in time) is replaced by a new
// one on demand. Workers of different memory limits may be alive at once. A Pool is safe for
// concurrent use.
type Pool struct {
	opts PoolOptions

	mu     sync.Mutex
	cond   *sync.Cond
	idle   map[int64][]*Worker // by memory limit
	alive  int
	closed bool
	procs  map[*Worker]bool // the workers whose process has not exited

	started atomic.Int64
	peak    atomic.Int64 // the highest peak resident set size of any worker, in bytes
}

// NewPool returns a pool of workers. Nil options are the zero options.
func NewPool(opts *PoolOptions) *Pool {
	p := &Pool{idle: make(map[int64][]*Worker), procs: make(map[*Worker]bool)}
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
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Prestart starts as many workers of the memory limit as p has room for, so that the first
// requests find them ready instead of each waiting for a process to start. It starts the
// processes itself, which takes a fraction of a millisecond each: a goroutine would start
// them later, since the caller goes on working on its processor. It does not wait for them to
// be ready. A worker that fails to start is not reported: a Get that finds no idle worker
// starts one itself, and reports why that fails.
func (p *Pool) Prestart(limit int64) {
	if limit < MinMemory {
		return
	}
	p.mu.Lock()
	n := p.opts.Size - p.alive
	if p.closed {
		n = 0
	}
	p.alive += n
	p.mu.Unlock()
	for range n {
		w, err := p.spawn(limit)
		if err != nil {
			p.unreserve()
			continue
		}
		go func() {
			if err := w.handshake(p.opts.StartTimeout); err != nil {
				p.unreserve()
				return
			}
			p.Put(w)
		}()
	}
}

// Close stops the idle workers of p and every busy one when it is put back. Gets after Close
// fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var ws []*Worker
	for _, idle := range p.idle {
		ws = append(ws, idle...)
	}
	p.idle = make(map[int64][]*Worker)
	p.alive -= len(ws)
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
	return nil
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
// waits for a place when the pool is full of busy workers. The caller gives the worker back
// with Put.
func (p *Pool) Get(limit int64, key string, fresh bool) (*Worker, error) {
	if limit < MinMemory {
		return nil, fmt.Errorf("starting an %s: %v", p.opts.Name, ErrSmallMemory(limit))
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if i := pick(p.idle[limit], key, fresh); i >= 0 {
			ws := p.idle[limit]
			w := ws[i]
			p.idle[limit] = slices.Delete(ws, i, i+1)
			p.mu.Unlock()
			return w, nil
		}
		if p.alive < p.opts.Size {
			p.alive++
			p.mu.Unlock()
			w, err := p.start(limit)
			if err != nil {
				p.unreserve()
				return nil, err
			}
			return w, nil
		}
		// Make room by stopping an idle worker with another limit (or, for a fresh worker,
		// one that holds work).
		var evict *Worker
		for l, ws := range p.idle {
			if len(ws) > 0 {
				evict = ws[len(ws)-1]
				p.idle[l] = ws[:len(ws)-1]
				p.alive--
				break
			}
		}
		if evict != nil {
			go evict.stop()
			continue
		}
		p.cond.Wait()
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

// unreserve gives back the place in the pool of a worker that failed to start.
func (p *Pool) unreserve() {
	p.mu.Lock()
	p.alive--
	p.cond.Broadcast()
	p.mu.Unlock()
}

// Put gives a worker back to the pool after a request, or retires it if it is dead.
func (p *Pool) Put(w *Worker) {
	p.mu.Lock()
	if w.dead || p.closed {
		p.alive--
		p.cond.Broadcast()
		p.mu.Unlock()
		w.stop()
		return
	}
	p.idle[w.limit] = append(p.idle[w.limit], w)
	p.cond.Signal()
	p.mu.Unlock()
}

// A Worker is one worker process, ready.
type Worker struct {
	pool    *Pool
	limit   int64
	child   *child
	in      *bufio.Writer
	inFile  *os.File
	out     *FrameReader
	outFile *os.File
	dead    bool

	progress *os.File // the worker's progress file, or nil (see Progress)

	// Keys is the caller's account of the work the worker holds, such as compiled scripts,
	// which Get prefers to find again.
	Keys *Cache[struct{}]

	// State is the caller's, for what it keeps of a worker between requests (the buffers of
	// its encoder).
	State any
}

// Limit returns the worker's memory limit.
func (w *Worker) Limit() int64 { return w.limit }

// SetMaxFrame bounds the frames the parent reads from the worker.
func (w *Worker) SetMaxFrame(n int) { w.out.Max = n }

// start starts a worker with the memory limit and waits until it is ready.
func (p *Pool) start(limit int64) (*Worker, error) {
	w, err := p.spawn(limit)
	if err != nil {
		return nil, err
	}
	if err := w.handshake(p.opts.StartTimeout); err != nil {
		return nil, err
	}
	return w, nil
}

// spawn starts a worker process with the memory limit, without waiting for it to be ready.
func (p *Pool) spawn(limit int64) (*Worker, error) {
	if IsWorker() {
		// A worker that starts workers would start them without end.
		return nil, fmt.Errorf("starting an %s: this process was started as one, and must serve as one first thing in main", p.opts.Name)
	}
	path := p.opts.Path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("starting an %s: %v", p.opts.Name, err)
		}
		path = exe
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(path, p.opts.Args...)
	cmd.Stdin, cmd.Stdout = inR, outW
	cmd.Env = append(os.Environ(), envProcs+"="+strconv.Itoa(max(runtime.GOMAXPROCS(0)/p.opts.Size, 1)))
	progress := newProgress()
	if progress != nil {
		cmd.ExtraFiles = []*os.File{progress} // descriptor 4, progressFD
		cmd.Env = append(cmd.Env, envProgress+"="+strconv.Itoa(progressFD))
	}
	w := &Worker{pool: p, limit: limit, inFile: inW, outFile: outR, progress: progress,
		in: bufio.NewWriterSize(inW, 64<<10), out: NewFrameReader(outR), Keys: NewCache[struct{}](p.opts.Keys)}
	w.child, err = startChild(cmd, "worker", limit, func(x *exit) {
		p.notePeak(exitPeakRSS(x.state))
		p.mu.Lock()
		delete(p.procs, w)
		p.mu.Unlock()
	})
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		w.closeProgress()
		return nil, fmt.Errorf("starting an %s: %v", p.opts.Name, err)
	}
	p.started.Add(1)
	p.mu.Lock()
	p.procs[w] = true
	p.mu.Unlock()
	return w, nil
}

// handshake exchanges hellos with a new worker, which says it is ready once it has limited
// its memory, within timeout. A worker that does not is killed, and the error says why.
func (w *Worker) handshake(timeout time.Duration) error {
	name, protocol := w.pool.opts.Name, w.pool.opts.Protocol
	var late atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		late.Store(true)
		w.child.cmd.Process.Kill()
	})
	defer timer.Stop()
	var broke error // set when the worker broke the protocol
	err := WriteFrame(w.in, FrameHello, []byte(protocol))
	if err == nil {
		err = w.in.Flush()
	}
	if err == nil {
		kind, body, err := w.out.Next()
		switch {
		case err != nil:
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				broke = err
			}
		case kind != FrameReady:
			broke = fmt.Errorf("got a frame of kind %q, want the %s's hello of protocol %q: the %s is another build", kind, name, protocol, name)
		case string(body) != protocol:
			broke = fmt.Errorf("got protocol %q, want %q: the %s is another build", body, protocol, name)
		default:
			return nil
		}
	}
	w.kill()
	w.inFile.Close()
	w.outFile.Close()
	w.closeProgress()
	if late.Load() {
		return fmt.Errorf("starting an %s: it did not say it was ready within %v", name, timeout)
	}
	x := w.child.exit
	msg := x.state.String()
	if broke != nil {
		msg = broke.Error()
	} else if line := firstLine(x.stderr); line != "" {
		msg += ": " + line
	}
	if broke == nil && x.memory() {
		msg += fmt.Sprintf(": the %s ran out of memory as it started, under the memory limit of %s", name, bound.FormatSize(w.limit))
	}
	return fmt.Errorf("starting an %s: %s", name, msg)
}

// kill kills the worker and waits until it has exited.
func (w *Worker) kill() {
	w.dead = true
	w.child.cmd.Process.Kill()
	<-w.child.exited
}

// stop ends the worker: it closes its input, which makes a healthy worker exit, and kills it
// if it has not exited soon after.
func (w *Worker) stop() {
	w.inFile.Close()
	select {
	case <-w.child.exited:
	case <-time.After(time.Second):
		w.child.cmd.Process.Kill()
		<-w.child.exited
	}
	w.outFile.Close()
	w.closeProgress()
}

// closeProgress closes the worker's progress file, if it has one.
func (w *Worker) closeProgress() {
	if w.progress != nil {
		w.progress.Close()
	}
}

// An Exchange is one request to a worker and its answers.
type Exchange interface {
	// Send writes the request to w. With CallOptions.Async set, it runs in a goroutine of
	// its own while Answer takes the answers.
	Send(w *bufio.Writer) error
	// Answer takes one frame of the answers, and says whether it was the last. An error
	// means the worker broke the protocol.
	Answer(kind byte, body []byte) (done bool, err error)
}

// CallOptions configures [Worker.Call].
type CallOptions struct {
	// First is the time allowed until the first answer, and Each the time allowed for each
	// answer after it (zero means First). A step of the worker's progress (see [SetProgress])
	// counts as an answer: a worker that counts its steps may hold their answers.
	First time.Duration
	Each  time.Duration
	// Async sends the request while the answers come, so that the worker works on the
	// start of a long request while the parent sends the rest, and the parent reads the
	// answers while the worker works on the rest.
	Async bool
}

// Call sends a request to the worker and passes each answer to x until it says the request is
// done. It returns nil, or a *Failure when the worker did not answer in time (Timeout), the
// context ended (Canceled), the worker died of its memory limit (Memory), or it died
// otherwise or broke the protocol (Crashed). After a failure the worker is dead.
func (w *Worker) Call(ctx context.Context, x Exchange, opts CallOptions) error {
	if opts.Each == 0 {
		opts.Each = opts.First
	}
	var reason atomic.Int32
	kill := func(r Reason) {
		reason.CompareAndSwap(0, int32(r))
		w.child.cmd.Process.Kill()
	}
	wd := w.watch(opts, func() { kill(Timeout) })
	stopCtx := context.AfterFunc(ctx, func() { kill(Canceled) })
	defer func() {
		wd.stop()
		stopCtx()
	}()
	var err, broke error // broke is set when the worker broke the protocol
	var sent chan error
	if opts.Async {
		sent = make(chan error, 1)
		go func() { sent <- x.Send(w.in) }()
	} else {
		err = x.Send(w.in)
	}
	for err == nil {
		var kind byte
		var body []byte
		if kind, body, err = w.out.Next(); err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				broke = err
			}
			break
		}
		var done bool
		if done, err = x.Answer(kind, body); err != nil {
			broke = err
			break
		}
		if done {
			if sent != nil {
				err = <-sent
				sent = nil
			}
			if err == nil {
				return nil
			}
			break
		}
		wd.answered()
	}
	// The worker died or broke the protocol: make sure it is gone and find out why.
	w.kill()
	if sent != nil {
		<-sent // the worker's input is closed now
	}
	f := &Failure{Reason: Reason(reason.Load()), Limit: w.limit}
	switch {
	case f.Reason == Canceled:
		f.Err = ctx.Err()
	case f.Reason != 0:
	case w.child.exit.memory():
		f.Reason = Memory
	case broke != nil:
		f.Reason, f.Err = Crashed, fmt.Errorf("%s failed: %v", w.pool.opts.Name, broke)
	default:
		f.Reason, f.Err = Crashed, fmt.Errorf("%s failed: %s", w.pool.opts.Name, w.child.exit.why())
	}
	return f
}

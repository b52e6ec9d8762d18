package sandbox

// This file defines a worker: a child that answers requests in frames, how it starts, and a
// call of it.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/starpod/starpod/internal/bound"
)

// A Worker is one worker process, ready.
type Worker struct {
	pool    *Pool     // the pool that started it
	born    time.Time // when its process started
	limit   int64
	child   *child
	in      *bufio.Writer
	inFile  *os.File
	out     *FrameReader
	outFile *os.File
	dead    bool
	failed  Reason // why a call found it dead, once it is
	busy    bool   // handed out by Get and not put back; the pool's mu guards it

	progress *os.File // the worker's page, or nil (see Progress)

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
			return nil, fmt.Errorf("starting an %s: %w", p.opts.Name, err)
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
	w := &Worker{pool: p, born: time.Now(), limit: limit, inFile: inW, outFile: outR,
		in: bufio.NewWriterSize(inW, 64<<10), out: NewFrameReader(outR), Keys: NewCache[struct{}](p.opts.Keys)}
	w.child, err = startChild(cmd, "worker", limit, w.exited)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting an %s: %w", p.opts.Name, err)
	}
	w.progress = w.child.page
	p.started.Add(1)
	p.mu.Lock()
	p.procs[w] = true
	p.mu.Unlock()
	return w, nil
}

// exited notes the end of the worker's process in its pool.
func (w *Worker) exited(x *exit) {
	p := w.pool
	p.notePeak(x.peak())
	p.mu.Lock()
	delete(p.procs, w)
	p.mu.Unlock()
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

// closeProgress closes the worker's page, if it has one, once its process has exited.
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
	// Aside is the kind of the frames, if not zero, that a worker sends aside from its
	// answers, such as what a script prints: they reach the exchange, but do not count as
	// answers against the time, so that a worker cannot put off its end by sending them.
	Aside byte
	// Grace, if not zero, says that the request told the worker the deadline of the call's
	// context, at which the worker stops by itself and answers: once the deadline passes, the
	// parent waits Grace more for the answers before it kills the worker. A context that is
	// canceled (not by its deadline) kills the worker at once, as it does without Grace.
	Grace time.Duration
}

// Call sends a request to the worker and passes each answer to x until it says the request is
// done. It returns nil, or a *Failure when the worker did not answer in time (Timeout), the
// context ended (Canceled; with opts.Grace, its deadline only once the worker has not
// answered within Grace after it), the worker died of its memory limit (Memory), or it died
// otherwise or broke the protocol (Crashed). After a failure the worker is dead.
func (w *Worker) Call(ctx context.Context, x Exchange, opts CallOptions) error {
	if opts.Each == 0 {
		opts.Each = opts.First
	}
	var reason atomic.Int32
	var mu sync.Mutex
	over := false // whether the call has returned, after which nothing kills the worker
	kill := func(r Reason) {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			reason.CompareAndSwap(0, int32(r))
			w.child.cmd.Process.Kill()
		}
	}
	wd := w.watch(opts, func() { kill(Timeout) })
	ended := make(chan struct{}) // closed when the call returns
	stopCtx := context.AfterFunc(ctx, func() {
		if opts.Grace > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The worker stops at the deadline by itself: give it time to say so.
			t := time.NewTimer(opts.Grace)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ended:
				return
			}
		}
		kill(Canceled)
	})
	defer func() {
		mu.Lock()
		over = true
		mu.Unlock()
		close(ended)
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
		if kind != opts.Aside || opts.Aside == 0 {
			wd.answered()
		}
	}
	// The worker died or broke the protocol: make sure it is gone and find out why, which a
	// kill from now on would not change.
	mu.Lock()
	over = true
	mu.Unlock()
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
		f.Reason, f.Err = Crashed, fmt.Errorf("%s failed: %w", w.pool.opts.Name, broke)
	default:
		f.Reason, f.Err = Crashed, fmt.Errorf("%s failed: %s", w.pool.opts.Name, w.child.exit.why())
	}
	w.failed = f.Reason
	return f
}

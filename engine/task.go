package engine

// This file defines tasks: work a program does in a worker process around the overlays it
// applies there, such as reading documents and printing them, so that the calling process only
// passes bytes.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/wire"
)

// A TaskFunc does a task in a worker process: it gets the request the caller passed to
// [Chain.RunTask], the chain of the overlays named there, compiled in the worker and applied
// in it (in process, with every limit but memory, which is the worker's), and the ctx passed
// there. It returns the answer, or an error whose text reaches the caller; the worker writes
// the answer out before it serves another request, so the task may use the answer's memory
// again in its next call. It calls note to say what it is doing: if the worker stops
// answering or dies, the caller learns the last note (see [TaskFailure]). A note that is not
// empty says the chain is at work on what it names; an empty one, that the task does work of
// its own. Notes cost no system call: the worker counts them in memory its parent reads even
// after the worker died ([sandbox.SetMark]), and sends the latest every tenth of a second, if
// it changed; each note the caller gets starts the time allowed (TaskOptions.Timeout) again,
// so a task that notes its progress may take longer.
type TaskFunc func(ctx context.Context, chain Chain, env *Env, req []byte, note func([]byte) error) ([]byte, error)

var tasks sync.Map // name -> TaskFunc

// RegisterTask registers a task under name for [Chain.RunTask]. The worker program must
// register it before it serves (in an init function of the program that re-executes itself
// as a worker); registering a name twice panics.
func RegisterTask(name string, fn TaskFunc) {
	if _, dup := tasks.LoadOrStore(name, fn); dup {
		panic(fmt.Sprintf("engine: task %q registered twice", name))
	}
}

// ErrNotInWorkers is the error of [Chain.RunTask] for a chain that does not run in workers:
// one with no overlay, or with an overlay compiled with InProcess isolation, or overlays of
// different worker pools or memory limits.
var ErrNotInWorkers = errors.New("engine: the chain's overlays do not run in workers of one pool")

// TaskOptions bounds a task.
type TaskOptions struct {
	// Timeout is how long the worker may take to answer, or to give a note, from the request
	// or the note before; past it the worker is killed and RunTask fails. Each overlay's own
	// time limit still bounds each of its applies inside the task.
	Timeout time.Duration
	// MaxAnswer bounds the answer's size in bytes; a larger answer fails the task.
	MaxAnswer int
	// Answer, if not nil, is memory for the answer: RunTask appends the answer to
	// Answer[:0]. A caller done with an earlier answer may pass its memory back, so that
	// each answer does not take fresh memory, whose every page costs a fault when first
	// written.
	Answer []byte
}

// RunTask runs the task registered under name in a worker process that holds every overlay of
// c compiled (compiling those it lacks), with env as the ctx and req as the request, and
// returns its answer. It returns ErrNotInWorkers for a chain that does not run in workers, a
// *TaskFailure when the worker died (of its memory limit, killed past opts.Timeout, or
// breaking the protocol), or a *TaskError with the task's error.
//
// A task that fails leaves the caller free to do the work another way: no state of the
// caller changed, and nothing was printed. The print() output of the overlays is held until
// the task ends, and reaches the first overlay's Options.Print, in order, only if it
// succeeds; a failure holds it, for a caller that reports the failure to pass on (Print), and
// for one that does the work again, which prints it again, to drop. The worker bounds it (see
// [Options.Print]), which bounds what the caller holds.
func (c Chain) RunTask(ctx context.Context, name string, env *Env, req []byte, opts TaskOptions) ([]byte, error) {
	if len(c) == 0 {
		return nil, ErrNotInWorkers
	}
	var rs []*remote
	for _, o := range c {
		r, ok := o.run.(*remote)
		if !ok || len(rs) > 0 && (r.pool != rs[0].pool || r.limit != rs[0].limit) {
			return nil, ErrNotInWorkers
		}
		rs = append(rs, r)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	first := rs[0]
	w, err := first.pool.Get(ctx, first.limit, first.script.Key, false)
	if err != nil {
		return nil, err
	}
	defer first.pool.Put(w)
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = r.script.Key
		if _, ok := w.Keys.Get(r.script.Key); ok {
			w.Keys.Use(r.script.Key)
			continue
		}
		w.SetMaxFrame(answerFrameLimit(r.script.MaxResultBytes))
		x := &defineExchange{r: r}
		if err := w.Call(ctx, x, sandbox.CallOptions{First: workerGrace + r.o.opts.timeout(), Aside: framePrint}); err != nil {
			return nil, err
		}
		if x.err != nil {
			return nil, x.err.error()
		}
		w.Keys.Add(r.script.Key, struct{}{})
	}
	maxAnswer := max(opts.MaxAnswer, 1<<20) // room for an error and the prints
	w.SetMaxFrame(maxAnswer)
	var envData []byte // a nil ctx is empty
	if env != nil {
		envData = appendEnv(nil, env)
	}
	x := &taskExchange{req: &wireTask{Name: name, Keys: keys, Env: envData, Req: req, MaxAnswer: maxAnswer},
		prints: heldPrints{sink: first.printer()}, answer: opts.Answer[:0]}
	base, counted := w.Mark()
	if err := w.Call(ctx, x, sandbox.CallOptions{First: opts.Timeout, Aside: framePrint}); err != nil {
		tf := &TaskFailure{Note: x.note, Cause: err, prints: x.prints}
		// The note is the task's last if the worker counted no note after it.
		mark, ok := w.Mark()
		last := counted && ok && (x.noted && mark == x.noteMark || !x.noted && mark == base)
		var f *sandbox.Failure
		// The overlay's limit, as an apply of it reports it: the time of the only overlay,
		// or its memory when the worker died while the overlay was at work, and held no
		// other script whose memory counts too.
		if errors.As(err, &f) && len(rs) == 1 &&
			(f.Reason == sandbox.Timeout || f.Reason == sandbox.Memory && last && len(x.note) > 0 && w.Keys.Len() == 1) {
			tf.Err, _ = first.failure(ctx, err)
		}
		return nil, tf
	}
	if x.err != nil {
		return nil, &TaskError{Err: x.err, prints: x.prints}
	}
	x.prints.Print()
	return x.answer, nil
}

// A TaskFailure is the failure of a worker during a task.
type TaskFailure struct {
	Note  []byte // the task's last note before the failure
	Cause error  // the worker's failure
	// Err is the *Error, wrapping a *LimitError, of the chain's overlay when the chain is
	// one overlay and the worker was killed for passing its time limit (then the note says
	// what the task was doing, if it noted that just before), or died of its memory limit
	// while the overlay was at work on what the task's last note names (see TaskFunc).
	// Else nil: the memory may be the task's own, or the last note may not have reached
	// the caller before the worker died.
	Err *Error

	prints heldPrints
}

func (f *TaskFailure) Error() string { return "a worker failed during a task: " + f.Cause.Error() }

func (f *TaskFailure) Unwrap() error { return f.Cause }

// Print passes on the print() output the task made before the worker failed (see
// [Chain.RunTask]), once.
func (f *TaskFailure) Print() { f.prints.Print() }

// A TaskError is the error a task returned in its worker.
type TaskError struct {
	Err    error // an *Error when it is an overlay's
	prints heldPrints
}

func (e *TaskError) Error() string { return e.Err.Error() }

func (e *TaskError) Unwrap() error { return e.Err }

// Print passes on the print() output the task made before it failed (see [Chain.RunTask]),
// once.
func (e *TaskError) Print() { e.prints.Print() }

// heldPrints is the print() output of a task, held until the task ends.
type heldPrints struct {
	sink   func(*wirePrint) // nil drops the output
	prints []wirePrint
}

func (h *heldPrints) add(p *wirePrint) {
	if h.sink != nil {
		h.prints = append(h.prints, *p)
	}
}

// Print passes the output held to the sink, and forgets it.
func (h *heldPrints) Print() {
	prints := h.prints
	h.prints = nil
	for i := range prints {
		h.sink(&prints[i])
	}
}

// A wireTask is a task request.
type wireTask struct {
	Name      string
	Keys      []string // the scripts of the chain, defined in the worker, in order
	Env       []byte   // the ctx, as appendEnv writes it
	Req       []byte
	MaxAnswer int // the largest frame the parent reads
}

// A taskExchange is a task request and its answer.
type taskExchange struct {
	req      *wireTask
	prints   heldPrints
	note     []byte // the last note the worker sent
	noteMark uint64 // the worker's count of notes at that note
	noted    bool   // whether it sent one
	answer   []byte // the memory for the answer (TaskOptions.Answer), then the answer
	err      error
}

func (x *taskExchange) Send(in *bufio.Writer) error {
	if err := sandbox.WriteFrame(in, frameTask, x.req.appendHead(nil), x.req.Req); err != nil {
		return err
	}
	return in.Flush()
}

// appendHead appends the encoding of t but its request, which follows it in a frame: the
// name, the keys, the ctx and the answer's limit. JSON would cost the worker more than some
// tasks do, for the base64 of a request of many documents.
func (t *wireTask) appendHead(b []byte) []byte {
	b = wire.AppendString(b, t.Name)
	b = binary.AppendUvarint(b, uint64(len(t.Keys)))
	for _, k := range t.Keys {
		b = wire.AppendString(b, k)
	}
	b = wire.AppendBytes(b, t.Env)
	return binary.AppendUvarint(b, uint64(t.MaxAnswer))
}

// decodeTask decodes the body of a task frame. The request aliases body.
func decodeTask(body []byte) (*wireTask, error) {
	d := &wire.Decoder{B: body}
	t := &wireTask{Name: d.String(), Keys: make([]string, d.Count())}
	for i := range t.Keys {
		t.Keys[i] = d.String()
	}
	t.Env = d.Bytes()
	t.MaxAnswer = int(min(d.Uvarint(), sandbox.MaxFrame))
	t.Req, d.B = d.B, nil
	return t, d.Err
}

func (x *taskExchange) Answer(kind byte, body []byte) (bool, error) {
	switch kind {
	case framePrint:
		return false, answerPrint(body, x.prints.add)
	case frameNote:
		d := &wire.Decoder{B: body}
		x.noteMark, x.noted = d.Uvarint(), true
		if d.Err != nil {
			return false, fmt.Errorf("malformed note: %v", d.Err)
		}
		x.note = append(x.note[:0], d.B...)
		return false, nil
	case frameAnswer:
		x.answer = append(x.answer, body...)
		return true, nil
	case frameError:
		var we wireError
		if err := json.Unmarshal(body, &we); err != nil {
			return false, fmt.Errorf("malformed error: %v", err)
		}
		x.err = we.error()
		if we.Overlay == "" && we.Limit == nil && len(we.Fields) == 0 {
			x.err = errors.New(we.Msg) // the task's own error, not an overlay's
		}
		return true, nil
	}
	return false, fmt.Errorf("got a frame of kind %q, want the answer of a task", kind)
}

// task does a task request in the worker and answers with its answer or its error.
func (s *server) task(body []byte) error {
	t, err := decodeTask(body)
	if err != nil {
		return fmt.Errorf("decoding a task: %v", err)
	}
	s.answerMax = t.MaxAnswer
	fn, ok := tasks.Load(t.Name)
	if !ok {
		return s.writeError(frameError, fmt.Errorf("no task %q in this worker program", t.Name))
	}
	chain := make(Chain, len(t.Keys))
	for i, key := range t.Keys {
		o, ok := s.scripts.Get(key)
		if !ok {
			return fmt.Errorf("task of unknown script %s", key)
		}
		s.scripts.Use(key)
		chain[i] = o
	}
	env, err := decodeEnv(t.Env)
	if err != nil {
		return fmt.Errorf("decoding a task: %v", err)
	}
	s.resetPrint()
	stop := s.startNotes()
	answer, err := fn.(TaskFunc)(context.Background(), chain, env, t.Req, s.note)
	stop()
	if s.printErr != nil {
		return s.printErr
	}
	if err == nil && len(answer) > t.MaxAnswer {
		err = fmt.Errorf("the answer of %d bytes exceeds the limit of %d bytes of a worker's answer", len(answer), t.MaxAnswer)
	}
	if err != nil {
		return s.writeError(frameError, err)
	}
	return sandbox.WriteFrame(s.out, frameAnswer, answer)
}

// noteInterval is how often a worker sends a task's latest note, if it changed.
const noteInterval = 100 * time.Millisecond

// note records a task's note, which startNotes sends.
func (s *server) note(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(b) > maxErrorText {
		return fmt.Errorf("a note of %d bytes, over the limit of %d", len(b), maxErrorText)
	}
	s.noteText = append(s.noteText[:0], b...)
	s.noted++
	sandbox.SetMark(s.noted)
	return s.printErr
}

// startNotes sends a task's latest note every noteInterval, if it changed, until the
// returned function is called.
func (s *server) startNotes() (stop func()) {
	s.mu.Lock()
	s.noteText = s.noteText[:0]
	sent := s.noted
	s.mu.Unlock()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(noteInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			s.mu.Lock()
			if s.noted != sent && s.printErr == nil {
				sent = s.noted
				s.printErr = sandbox.WriteFrame(s.out, frameNote, binary.AppendUvarint(nil, s.noted), s.noteText)
				if s.printErr == nil {
					s.printErr = s.out.Flush()
				}
			}
			s.mu.Unlock()
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

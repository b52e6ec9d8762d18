package engine

// This file defines how an overlay compiled for workers applies: batches of pods sent to a
// worker in one round trip, the second chance of a worker that died of other scripts'
// memory, and the exchanges of the protocol.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/sandbox"
)

// A batch is the pods of an apply in worker processes and their answers.
type batch struct {
	pods  []*corev1.Pod
	env   *Env   // the ctx of every pod, when envs is nil
	envs  []*Env // the ctx of each pod
	first bool   // whether to stop at the first pod that fails
	todo  []int  // the indices in pods of the pods still to apply, in order

	out    []*corev1.Pod
	errs   []error
	failed bool // whether a pod has failed

	explain bool       // whether to explain each result (Overlay.Explain)
	changes [][]Change // the changes of each pod, with explain

	// careful asks the worker to write out each answer at once: the batch is tried again
	// after a worker died (see server.apply).
	careful bool
	// skip counts the print() messages of the first pod of todo that were passed on already:
	// a worker that died printed them before its answer was lost.
	skip int
}

// explain is Overlay.Explain in a worker: one pod, whose changes the worker sends before the
// result.
func (r *remote) explain(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, []Change, error) {
	b := &batch{pods: []*corev1.Pod{pod}, env: env, first: true, todo: []int{0},
		out: make([]*corev1.Pod, 1), errs: make([]error, 1), explain: true, changes: make([][]Change, 1)}
	if a := r.call(ctx, b); a.err != nil && b.errs[0] == nil {
		b.errs[0] = a.err
	}
	if b.errs[0] != nil {
		return nil, nil, b.errs[0]
	}
	return b.out[0], b.changes[0], nil
}

// apply applies the overlay in workers to each pod, with the ctx envs[i] for pods[i] when
// envs is not nil and env for every pod otherwise. It sends the pods to one worker in one
// round trip. A pod that kills its worker (by a memory or time limit) gets that error, and
// the pods after it go to another worker, with those before it whose answers died with the
// worker. With first set it stops at the first pod that fails and gives the pods after it no
// result and no error.
func (r *remote) apply(ctx context.Context, pods []*corev1.Pod, env *Env, envs []*Env, first bool) ([]*corev1.Pod, []error) {
	b := &batch{pods: pods, env: env, envs: envs, first: first, todo: make([]int, len(pods)),
		out: make([]*corev1.Pod, len(pods)), errs: make([]error, len(pods))}
	for i := range b.todo {
		b.todo[i] = i
	}
	for len(b.todo) > 0 {
		a := r.call(ctx, b)
		if a.err == nil || first && b.failed {
			break
		}
		n, c := a.answered, a.finished
		if !a.died {
			for _, i := range b.todo[n:] {
				b.errs[i] = a.err
			}
			break
		}
		// The worker died at the pod after the c it finished, or after the last one (it
		// broke the protocol then). The answers of the pods from the n it answered to the c
		// it finished died with it: those pods go to another worker again, in order, with
		// the pods after the one it died at. Of them only the first can have printed (a
		// print writes out the answers before it), and what it printed was passed on.
		again := slices.Clip(b.todo[n:c])
		if c < len(b.todo) {
			b.errs[b.todo[c]] = a.err
			if !first {
				again = append(again, b.todo[c+1:]...)
			}
		}
		b.todo, b.careful, b.skip = again, true, 0
		if n < c {
			b.skip = a.printed
		}
	}
	return b.out, b.errs
}

// An attempt is what one worker did with a request: it compiled the overlay if it had not,
// and answered the first pods of the batch.
type attempt struct {
	answered int // the pods of the batch's todo it answered
	// finished counts the pods it finished: those it answered, and after them those whose
	// answers it had not written out when it died, which died with it (see server.apply).
	finished int
	began    time.Time // when it began what it did last: the compile, or the pod after the last answered
	// died says the worker died of a limit at the pod after the finished ones, whose error
	// err is: the pods after it were not tried and may go to another worker. Otherwise err
	// is the error of every pod not answered.
	died bool
	// crowded says the worker died of its memory limit while it held other scripts.
	crowded bool
	err     error
	// printed counts the print() messages of the pod after the answered ones: the worker
	// printed them before it died.
	printed int
}

// call compiles the overlay in a worker if the worker has not, and applies it to the pods of b
// still to do, if any, setting their results and errors in b. A worker that dies of its
// memory limit while it holds other scripts gets a second chance: the pods from the one it
// died at go to a worker that holds no other script, within what is left of that pod's time
// (or the compile's), so that the second chance does not stretch the time limit.
func (r *remote) call(ctx context.Context, b *batch) attempt {
	skip := 0
	if b != nil {
		skip = b.skip
	}
	a := r.attempt(ctx, b, false, time.Time{}, skip)
	if !a.crowded || b != nil && b.first && b.failed {
		return a
	}
	deadline := a.began.Add(workerGrace + r.o.opts.timeout())
	if time.Until(deadline) <= 0 {
		return a
	}
	// The worker died of its memory limit while it held other scripts, whose memory counts
	// too: try again in a worker that holds none, so that the overlay is not blamed for
	// theirs. The pod it died at prints the same messages again there, since an apply is
	// deterministic: those it printed in the first are not passed on twice.
	var rest *batch
	if b != nil {
		sub := *b
		sub.todo, sub.careful = b.todo[a.answered:], true
		rest = &sub
	}
	again := r.attempt(ctx, rest, true, deadline, a.printed)
	if b != nil {
		b.failed = rest.failed
	}
	again.answered += a.answered
	again.finished += a.answered
	return again
}

// attempt is call in one worker: a fresh one (holding no script) if fresh is set. A compile
// or a first pod must be done by deadline, if it is not zero. A nil b only compiles. The
// first skip print() messages of the first pod are not passed on: they were already.
func (r *remote) attempt(ctx context.Context, b *batch, fresh bool, deadline time.Time, skip int) attempt {
	o := r.o
	if ctx.Err() != nil {
		return attempt{err: &Error{Overlay: o.name, Err: ctxError(ctx)}}
	}
	key := r.key
	w, err := r.pool.Get(ctx, r.limit, key, fresh)
	if err != nil {
		return attempt{err: &Error{Overlay: o.name, Err: err}}
	}
	defer r.pool.Put(w)
	st, _ := w.State.(*workerState)
	if st == nil {
		st = &workerState{results: podDecoder{copy: true}}
		w.State = st
	}
	// others reports whether the worker holds scripts besides this one.
	others := func() bool {
		_, ok := w.Keys.Get(key)
		return w.Keys.Len() > 0 && !ok || w.Keys.Len() > 1
	}
	// Compiling may take the time limit (the top levels of the script and of its modules
	// together), and each pod may take it; the parent allows a grace period more.
	timeout := o.opts.timeout()
	first := workerGrace + timeout
	if !deadline.IsZero() {
		first = max(min(first, time.Until(deadline)), time.Millisecond)
	}
	w.SetMaxFrame(answerFrameLimit(o.opts.MaxResultBytes))
	var a attempt
	if _, ok := w.Keys.Get(key); !ok {
		a.began = time.Now()
		x := &defineExchange{r: r}
		if err := w.Call(ctx, x, sandbox.CallOptions{First: first, Aside: framePrint}); err != nil {
			// Compiling is the same for every pod.
			a.err, _ = r.failure(ctx, err, false)
			a.crowded = isMemory(err) && others()
			return a
		}
		if x.err != nil {
			a.err = x.err
			return a
		}
		w.Keys.Add(key, struct{}{})
	}
	if b == nil || len(b.todo) == 0 {
		return a
	}
	w.Keys.Use(key) // as the worker does when it reads the apply
	a.began = time.Now()
	st.results.forget() // its caller may have changed it
	base, counted := w.Progress()
	// The worker is told ctx's deadline, stops there by itself and answers, and goes back to
	// the pool: it is killed only if it has not answered a grace period after the deadline.
	x := &applyExchange{r: r, st: st, b: b, a: &a, skip: skip}
	x.deadline, _ = ctx.Deadline()
	err = w.Call(ctx, x, sandbox.CallOptions{First: first, Each: workerGrace + timeout, Async: len(b.todo) > 1, Aside: framePrint,
		Grace: workerGrace})
	a.finished = a.answered
	if err != nil {
		if n, ok := w.Progress(); counted && ok && n >= base {
			a.finished = int(min(max(n-base, uint64(a.answered)), uint64(len(b.todo))))
		}
		var limit bool
		a.err, limit = r.failure(ctx, err, true)
		// A worker that failed before it finished a pod may be broken: trying the other
		// pods in another would fail as often.
		a.died = limit || a.finished > 0 && !isCanceled(err)
		a.crowded = isMemory(err) && others()
	}
	return a
}

// failure returns the *Error of a worker's failure, and whether it was a limit of the
// overlay (its time or memory). told says the worker was told ctx's deadline, and was
// killed only once it had not answered within workerGrace after it.
func (r *remote) failure(ctx context.Context, err error, told bool) (*Error, bool) {
	o := r.o
	var f *sandbox.Failure
	if !errors.As(err, &f) {
		return &Error{Overlay: o.name, Err: err}, false
	}
	switch f.Reason {
	case sandbox.Timeout:
		return &Error{Overlay: o.name, Err: &LimitError{Limit: LimitTime, Value: o.opts.timeout().String()}}, true
	case sandbox.Memory:
		return &Error{Overlay: o.name, Err: &LimitError{Limit: LimitMemory, Value: bound.FormatSize(r.limit)}}, true
	case sandbox.Canceled:
		cerr := ctx.Err()
		if told && errors.Is(cerr, context.DeadlineExceeded) {
			return &Error{Overlay: o.name, Err: fmt.Errorf("the worker did not stop within %v of the caller's deadline: %w", workerGrace, cerr)}, false
		}
		return &Error{Overlay: o.name, Err: cerr}, false
	default:
		return &Error{Overlay: o.name, Err: f.Err}, false
	}
}

func isMemory(err error) bool {
	var f *sandbox.Failure
	return errors.As(err, &f) && f.Reason == sandbox.Memory
}

func isCanceled(err error) bool {
	var f *sandbox.Failure
	return errors.As(err, &f) && f.Reason == sandbox.Canceled
}

// answerPrint passes a print frame's message to print, if not nil.
func answerPrint(body []byte, print func(syntax.Position, string)) error {
	pos, msg, err := decodePrint(body)
	if err != nil {
		return fmt.Errorf("malformed print frame: %w", err)
	}
	if print != nil {
		print(pos, msg)
	}
	return nil
}

// A defineExchange is a define request and its answer.
type defineExchange struct {
	r   *remote
	err *Error // the compile's error, if any
}

func (x *defineExchange) Send(in *bufio.Writer) error {
	if err := sandbox.WriteFrame(in, frameDefine, x.r.define); err != nil {
		return err
	}
	return in.Flush()
}

func (x *defineExchange) Answer(kind byte, body []byte) (bool, error) {
	switch kind {
	case framePrint:
		return false, answerPrint(body, x.r.print)
	case frameError:
		var err error
		if x.err, err = decodeError(body); err != nil {
			return false, err
		}
		return true, nil
	case frameDone:
		return true, nil
	}
	return false, fmt.Errorf("got a frame of kind %q, want done", kind)
}

// An applyExchange is an apply request of the pods of a batch and their answers.
type applyExchange struct {
	r        *remote
	st       *workerState
	b        *batch
	a        *attempt
	skip     int       // the print() messages of the first pod not to pass on
	deadline time.Time // the caller's deadline, or zero for none
}

func (x *applyExchange) Send(in *bufio.Writer) error {
	var left time.Duration
	if !x.deadline.IsZero() {
		left = max(time.Until(x.deadline), 1) // passed already: the worker answers at once
	}
	return x.st.sendPods(in, x.r.key, x.b, left)
}

func (x *applyExchange) Answer(kind byte, body []byte) (bool, error) {
	b, o := x.b, x.r.o
	n := x.a.answered
	if kind == framePrint {
		x.a.printed++
		if x.skip > 0 {
			x.skip--
			return false, nil
		}
		return false, answerPrint(body, x.r.print)
	}
	x.a.printed, x.skip = 0, 0
	if kind == frameDone {
		if n != len(b.todo) {
			return false, fmt.Errorf("answered %d pods, want %d", n, len(b.todo))
		}
		return true, nil
	}
	if n == len(b.todo) {
		return false, fmt.Errorf("answered more than %d pods", len(b.todo))
	}
	i := b.todo[n]
	switch kind {
	case frameChanges:
		if !b.explain {
			return false, errors.New("got changes, want an answer")
		}
		changes, err := decodeChanges(body)
		if err != nil {
			return false, fmt.Errorf("malformed changes: %w", err)
		}
		b.changes[i] = changes
		return false, nil // the result follows
	case frameResult:
		if !b.failed || !b.first {
			pod, err := x.st.results.decode(body)
			if err != nil {
				b.errs[i] = &Error{Overlay: o.name, Err: fmt.Errorf("decoding the result: %w", err)}
				b.failed = true
			} else {
				b.out[i] = pod
			}
		}
	case frameError:
		e, err := decodeError(body)
		if err != nil {
			return false, err
		}
		if !b.failed || !b.first {
			b.errs[i] = e
		}
		b.failed = true
	default:
		return false, fmt.Errorf("got a frame of kind %q, want an answer", kind)
	}
	x.a.answered++
	x.a.began = time.Now()
	return false, nil
}

// workerState is what the parent keeps of a worker between applies: the pod and ctx it sent
// last, and their encodings, and the decoder of its results.
type workerState struct {
	enc     podEncoder
	env     *Env
	envData []byte // the encoding of env, nil for a nil env
	envBuf  []byte // the memory of envData
	results podDecoder
}

// sendPods sends an apply request of the script key to the pods of b still to do, with left
// the time left to the caller's deadline, or zero for none.
func (st *workerState) sendPods(in *bufio.Writer, key string, b *batch, left time.Duration) error {
	apply := byte(frameApply)
	switch {
	case b.explain:
		apply = frameExplain
	case b.first:
		apply = frameFirst
	}
	if err := sandbox.WriteFrame(in, apply, appendApply(nil, key, b.careful, left)); err != nil {
		return err
	}
	st.enc.pod, st.env, st.envData = nil, nil, nil
	for j, i := range b.todo {
		env := b.env
		if b.envs != nil {
			env = b.envs[i]
		}
		if env != st.env || j == 0 {
			st.envData = nil // no ctx
			if env != nil {
				st.envData = appendEnv(st.envBuf[:0], env)
				st.envBuf = st.envData
			}
			st.env = env
		}
		pod := b.pods[i]
		var err error
		if err = st.enc.encode(pod); err == nil {
			st.enc.head = appendPodHeader(st.enc.head[:0], st.envData, pod.Kind, pod.APIVersion, len(st.enc.proto))
			err = sandbox.WriteFrame(in, framePod, st.enc.head, st.enc.proto)
		} else {
			err = sandbox.WriteFrame(in, frameSkip, []byte(err.Error()))
		}
		if err != nil {
			return err
		}
		// The worker starts with the first pod while the parent encodes the next ones.
		if j == 0 || in.Buffered() >= 8<<10 {
			if err := in.Flush(); err != nil {
				return err
			}
		}
	}
	if err := sandbox.WriteFrame(in, frameEnd); err != nil {
		return err
	}
	return in.Flush()
}

package scheduler

// This file defines how Render has the overlay workers build and print whole chunks of
// replicas. A worker rebuilds the builder from the request (the app spec, the run options,
// the names and the overlay args), then builds, applies, checks and prints the replicas of a
// chunk as the builder does in process (the same code: builder.tasks), so that this process
// only adds up the sizes of the tasks and keeps their texts in order, and the workers do the
// rest on every CPU. A replica that fails in a worker, whose errors cannot cross the process
// boundary with their types, is built again here once every chunk is done, with the output
// of print() muted, since the worker printed it already; a chunk whose worker fails (dies
// of a limit) is built here at once, as before, and prints here what the worker printed,
// which the failed task held back. That path reports every error exactly.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/syntax"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/wire"
)

// renderTaskName names the task of a chunk of replicas.
const renderTaskName = "starpod.render"

func init() { engine.RegisterTask(renderTaskName, renderTask) }

// taskHead returns the part of a chunk's request that every chunk of the job shares, from
// which a worker rebuilds b (see renderBuilder): the app spec as the job's annotation holds
// it, the run options, the job's and the app's names, the first task and the overlay args.
func (b *builder) taskHead(spec string) ([]byte, error) {
	cfg, err := json.Marshal(b.cfg)
	if err != nil {
		return nil, err
	}
	head := wire.AppendString(nil, spec)
	head = wire.AppendBytes(head, cfg)
	head = wire.AppendString(head, b.jobName)
	head = wire.AppendString(head, b.appName)
	head = wire.AppendString(head, b.firstTask)
	keys := make([]string, 0, len(b.opts.OverlayArgs))
	for k := range b.opts.OverlayArgs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	head = binary.AppendUvarint(head, uint64(len(keys)))
	for _, k := range keys {
		head = wire.AppendString(head, k)
		head = wire.AppendString(head, b.opts.OverlayArgs[k])
	}
	return head, nil
}

// workers is what a builder that has workers print its tasks keeps of them.
type workers struct {
	head   []byte       // the head of every chunk's request, if workers print tasks
	muted  atomic.Bool  // whether print() output is dropped
	mu     sync.Mutex   // guards failed
	failed [][]*replica // the replicas that failed in workers, of one role each
}

// wrapPrint makes opts.Engine.Print, which the overlays are compiled with, mutable (see
// retryFailed), if b prints its tasks.
func (w *workers) wrapPrint(b *builder, opts *BuildOptions) {
	if print := opts.Engine.Print; print != nil && b.print != nil {
		opts.Engine.Print = func(pos syntax.Position, msg string) {
			if !w.muted.Load() {
				print(pos, msg)
			}
		}
	}
}

// prepare makes workers print the tasks of b, which prints them, if the job has n > 1
// tasks: with one, Render prints the typed job.
func (w *workers) prepare(b *builder, job *vcbatch.Job, n int) error {
	if b.print == nil || n < 2 {
		return nil
	}
	var err error
	w.head, err = b.taskHead(job.Annotations[AnnotationAppSpec])
	return err
}

// tasksInWorker has a worker build and print the tasks of reps, replicas of one role in
// order of their ids, as tasks does, and reports whether it did: false leaves reps as they
// were, for tasks to build them here. The replicas that failed in the worker are left for
// retryFailed. A task built in a worker has its text and its size, but no typed task.
func (b *builder) tasksInWorker(ctx context.Context, reps []*replica, chain engine.Chain) bool {
	if len(chain) == 0 {
		return false // no overlay, no worker
	}
	req := wire.AppendBytes(make([]byte, 0, len(b.workers.head)+32), b.workers.head)
	req = binary.AppendUvarint(req, uint64(reps[0].role))
	req = binary.AppendUvarint(req, uint64(reps[0].id))
	req = binary.AppendUvarint(req, uint64(len(reps)))
	// Each overlay's time limit bounds each of its applies in the worker; this bounds a
	// worker that hangs all the same (in a builtin that no time limit interrupts) as an
	// apply in a worker is bounded: the worker notes each replica before it builds it,
	// which starts the time allowed again. The texts of a job's tasks are about the size
	// of their JSON, which MaxJobBytes bounds: a larger answer fails, and tasks does better.
	timeout := time.Second + time.Duration(len(chain))*b.timeout()
	answer, err := chain.RunTask(ctx, renderTaskName, nil, req, engine.TaskOptions{
		Timeout: timeout, MaxAnswer: 4 * MaxJobBytes})
	if err != nil {
		// ErrNotInWorkers, a *TaskFailure, a cancelled ctx: tasks knows what to say. Built
		// here, the replicas print again what they printed in the worker, which RunTask
		// held back.
		return false
	}
	d := wire.Decoder{B: answer}
	type result struct {
		ok   bool
		size int64
		text []byte
		err  error // the overlay's error, if the worker sent it
	}
	results := make([]result, len(reps))
	for i := range results {
		r := &results[i]
		switch d.Byte() {
		case replicaBuilt:
			r.ok = true
			r.size, r.text = int64(d.Uvarint()), d.Bytes()
		case replicaOverlayError:
			var err error
			if r.err, err = engine.DecodeError(d.Bytes()); err != nil {
				return false
			}
		}
	}
	if d.End() != nil {
		return false
	}
	workerChunks.Add(1)
	var failed []*replica
	for i, rep := range reps {
		r := results[i]
		if r.err != nil {
			// As tasks reports an overlay's error, which it would give again.
			rep.errs = []error{&ReplicaError{Role: b.app.Roles[rep.role].Name, ReplicaID: rep.id, Err: r.err}}
			continue
		}
		if !r.ok {
			failed = append(failed, rep)
			continue
		}
		// As tasks counts the size of each task.
		if b.size.Add(r.size+1) > b.limit {
			b.over.Store(true)
		} else {
			rep.text = r.text
		}
	}
	if len(failed) > 0 {
		b.workers.mu.Lock()
		b.workers.failed = append(b.workers.failed, failed)
		b.workers.mu.Unlock()
	}
	return true
}

// retryFailed builds here the replicas that failed in workers but of an overlay's error (which
// the worker sends), once no other replica is being built, so that their errors are those of
// tasks, with the output of print() muted.
func (b *builder) retryFailed(ctx context.Context, chains []engine.Chain) {
	b.workers.muted.Store(true)
	defer b.workers.muted.Store(false)
	for _, reps := range b.workers.failed {
		retriedReplicas.Add(int64(len(reps)))
		b.tasks(ctx, reps, chains[reps[0].role])
	}
}

// workerChunks counts the chunks that workers built, and retriedReplicas the replicas that
// failed in workers and were built again, for tests.
var workerChunks, retriedReplicas atomic.Int64

// timeout is the time limit of each apply of an overlay.
func (b *builder) timeout() time.Duration {
	if t := b.opts.Engine.Timeout; t > 0 {
		return t
	}
	return engine.DefaultTimeout
}

// renderTask is the task of a chunk of replicas in a worker: it builds, applies chain to,
// checks and prints the replicas the request names, as tasks does, and answers with each
// replica's result: 0, the size of its task's JSON and its text, or 1 for a replica that
// failed, which the caller builds again to report it.
func renderTask(ctx context.Context, chain engine.Chain, _ *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
	d := wire.Decoder{B: req}
	head := d.Bytes()
	role, start, n := d.Uvarint(), d.Uvarint(), d.Uvarint()
	if d.End() != nil {
		return nil, errors.New("malformed request of a chunk of replicas")
	}
	b, err := renderBuilder(head)
	if err != nil {
		return nil, err
	}
	if role >= uint64(len(b.app.Roles)) || n == 0 || start+n > uint64(b.app.Roles[role].Replicas()) {
		return nil, errors.New("a chunk of replicas that the app does not have")
	}
	reps := make([]*replica, n)
	for i := range reps {
		reps[i] = &replica{role: int(role), id: int(start) + i}
	}
	var id []byte
	for i := range reps {
		id = strconv.AppendInt(id[:0], int64(reps[i].id), 10)
		if err := note(id); err != nil {
			return nil, err
		}
		b.tasks(ctx, reps[i:i+1], chain)
	}
	size := 16
	for _, rep := range reps {
		size += len(rep.text) + 2*binary.MaxVarintLen32
	}
	answer := make([]byte, 0, size)
	for _, rep := range reps {
		if len(rep.errs) > 0 {
			if data, ok := overlayError(rep.errs); ok {
				answer = append(answer, replicaOverlayError)
				answer = wire.AppendBytes(answer, data)
				continue
			}
			answer = append(answer, replicaFailed)
			continue
		}
		answer = append(answer, replicaBuilt)
		answer = binary.AppendUvarint(answer, uint64(rep.size))
		answer = wire.AppendBytes(answer, rep.text)
	}
	return answer, nil
}

// What the answer of a chunk says of each replica.
const (
	replicaBuilt        = 0 // then the size of its task's JSON and its text
	replicaFailed       = 1 // to be built again in the parent, which reports its errors
	replicaOverlayError = 2 // then its overlay's error, as engine.EncodeError encodes it
)

// maxShippedError bounds the encoding of an overlay's error that a worker sends: a larger one
// (of many field errors) is left for the parent to find again.
const maxShippedError = 64 << 10

// overlayError returns the encoding of errs, the errors of a replica, if they are one error
// of an overlay's apply: the parent reports it as tasks does, without applying the overlays
// to the replica again (at the cost, for an overlay that ran to its time limit, of that limit
// again). Other errors, such as those of the checks of what Volcano owns, the parent finds
// again by building the replica.
func overlayError(errs []error) ([]byte, bool) {
	var re *ReplicaError
	var e *engine.Error
	if len(errs) != 1 || !errors.As(errs[0], &re) || !errors.As(re.Err, &e) || e != re.Err {
		return nil, false
	}
	data, err := engine.EncodeError(e)
	if err != nil || len(data) > maxShippedError {
		return nil, false
	}
	return data, true
}

// lastBuilder is the builder of the last request a worker served: the chunks of one job
// share it, and its name checks.
var lastBuilder struct {
	sync.Mutex
	head []byte
	b    *builder
}

// renderBuilder returns the builder that the head of a request describes (see taskHead),
// which prints every task and measures it without a limit.
func renderBuilder(head []byte) (*builder, error) {
	lastBuilder.Lock()
	defer lastBuilder.Unlock()
	if lastBuilder.b != nil && bytes.Equal(lastBuilder.head, head) {
		return lastBuilder.b, nil
	}
	d := wire.Decoder{B: head}
	spec, cfgData := d.Bytes(), d.Bytes()
	b := &builder{jobName: d.String(), appName: d.String(), firstTask: d.String(),
		opts: &BuildOptions{}, print: printTask, limit: math.MaxInt64}
	if n := d.Count(); n > 0 {
		b.opts.OverlayArgs = make(map[string]string, n)
		for range n {
			k := d.String()
			b.opts.OverlayArgs[k] = d.String()
		}
	}
	if d.End() != nil {
		return nil, errors.New("malformed request of a chunk of replicas")
	}
	b.app, b.cfg = new(App), new(Config)
	if err := json.Unmarshal(spec, b.app); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cfgData, b.cfg); err != nil {
		return nil, err
	}
	lastBuilder.head, lastBuilder.b = append(lastBuilder.head[:0], head...), b
	return b, nil
}

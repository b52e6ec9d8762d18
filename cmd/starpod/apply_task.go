package main

// This file defines how apply hands whole batches of documents to the overlay workers. A
// worker parses, decodes, applies and prints a batch as an applier does in process (the same
// code: pipeline.applyHere), so that this process only splits the input and writes the output,
// and the workers do the rest on every CPU. A batch the workers cannot do (a worker that dies
// of a limit, a JSON document) is done here, as before: that path reports every limit exactly.

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/wire"
)

// applyTaskName names the task of a batch of documents.
const applyTaskName = "starpod.apply"

func init() { engine.RegisterTask(applyTaskName, applyTask) }

// applyInWorker has a worker apply the chain to the documents of b, and reports whether it
// did: false leaves b as it was, for the applier to do it here.
func (p *pipeline) applyInWorker(ctx context.Context, b *batch) bool {
	size := 0
	for _, doc := range b.docs {
		if doc.JSON {
			return false // parsed while read, by the JSON reader
		}
		size += len(doc.Raw)
	}
	req := p.appendTask(slices.Grow(taskMemory.get(), size+len(b.docs)*48+64), b.docs)
	// Each overlay's time limit bounds each of its applies in the worker; the task's timeout
	// bounds a worker that hangs all the same, in one step no time limit interrupts. The
	// worker notes each document before it parses it and each pod before the chain applies
	// to it, and each note starts the timeout again: a pod that hangs kills the worker in the
	// same time as when pods go to workers one by one (see engine.WorkerProcess), and the
	// note says which pod it was.
	timeout := time.Second + time.Duration(len(p.chain))*p.timeout
	answer, err := p.chain.RunTask(ctx, applyTaskName, p.env, req, engine.TaskOptions{
		Timeout: timeout, MaxAnswer: 4*size + len(b.docs)*engine.DefaultMaxResultBytes, Answer: taskMemory.get()})
	taskMemory.put(req)
	var failure *engine.TaskFailure
	switch {
	case err == nil:
	case ctx.Err() != nil:
		b.err, b.docs = ctx.Err(), nil
		return true
	case errors.As(err, &failure) && failure.Err != nil && len(failure.Note) > 0:
		// The worker died of the overlay's limit (its time, or its memory while the overlay
		// was at work) while it applied the overlay to the pod the note names: that is the
		// error of the batch, whose documents before it succeeded, and whose output no one
		// will see; what they printed shows. Doing the batch again here would take the
		// limit a second time.
		failure.Print()
		b.err, b.docs = overlayError(string(failure.Note), failure.Err), nil
		return true
	default:
		// Done here, the batch prints again what it printed in the worker, which RunTask
		// held back.
		return false
	}
	pods, templates, out, docErr, err := decodeTaskAnswer(answer)
	if err != nil {
		taskMemory.put(answer)
		return false
	}
	p.pods.Add(pods)
	p.templates.Add(templates)
	b.out, b.docs, b.answer = out, nil, answer
	if docErr != nil { // else the error of reading after the documents, if any, stands
		b.err = docErr
	}
	return true
}

// appendTask appends the request of a batch: the output format, the document size limit,
// the --pod-template rules, and each document's file, index, line and text.
func (p *pipeline) appendTask(req []byte, docs []*stream.Document) []byte {
	req = wire.AppendString(req, p.format)
	req = binary.AppendUvarint(req, uint64(max(p.limits.MaxDocumentBytes, 0)))
	req = binary.AppendUvarint(req, uint64(len(p.ruleFlags)))
	for _, r := range p.ruleFlags {
		req = wire.AppendString(req, r)
	}
	req = binary.AppendUvarint(req, uint64(len(docs)))
	file := ""
	for i, doc := range docs {
		if i == 0 || doc.File != file {
			file = doc.File
			req = append(req, 1)
			req = wire.AppendString(req, file)
		} else {
			req = append(req, 0) // the file of the document before
		}
		req = binary.AppendUvarint(req, uint64(doc.Index))
		req = binary.AppendUvarint(req, uint64(doc.Line))
		req = wire.AppendBytes(req, doc.Raw)
	}
	return req
}

// lastAnswer is the memory of the last answer of applyTask in this worker, which the next
// uses again (see engine.TaskFunc): fresh memory costs a page fault every 4 KiB.
var lastAnswer []byte

// taskMemory recycles the memory of the batches' requests and answers in the parent.
var taskMemory memoryPool

// A memoryPool recycles byte slices, so that a stream of batches does not take fresh memory
// for each: fresh memory costs a page fault every 4 KiB, which some machines make dear.
type memoryPool struct{ p sync.Pool }

// maxPooled bounds the memory a pool keeps of one slice: a batch of one large document
// should not stay.
const maxPooled = 4 << 20

// get returns an empty slice, with the memory of one put before if there is one.
func (m *memoryPool) get() []byte {
	if b, ok := m.p.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return nil
}

// put gives b's memory to a later get. b must not be used after.
func (m *memoryPool) put(b []byte) {
	if cap(b) > 0 && cap(b) <= maxPooled {
		m.p.Put(&b)
	}
}

// applyTask is the task of a batch in a worker: it applies chain to the documents of req, as
// an applier does, and answers with their output, the error that ended the batch and the
// number of pods and documents with templates found.
func applyTask(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
	d := wire.Decoder{B: req}
	format := d.String()
	maxDoc := int64(d.Uvarint())
	rules := make([]string, d.Count())
	for i := range rules {
		rules[i] = d.String()
	}
	docs := make([]*stream.Document, d.Count())
	file := ""
	for i := range docs {
		if d.Byte() == 1 {
			file = d.String()
		}
		index, line := int(d.Uvarint()), int(d.Uvarint())
		docs[i] = stream.NewText(file, index, line, d.Bytes(), maxDoc)
	}
	if d.End() != nil {
		return nil, errors.New("malformed request of a batch")
	}
	r, err := podTemplateRules(rules)
	if err != nil {
		return nil, err
	}
	var noteErr error
	p := &pipeline{ctx: ctx, chain: chain, env: env, format: format, rules: r,
		limits: stream.ReaderOptions{MaxDocumentBytes: maxDoc},
		onApply: func(where string) {
			if noteErr == nil {
				noteErr = note([]byte(where))
			}
		}}
	// One document at a time, each noted, so that the parent knows which one killed the
	// worker, if one does.
	var out [][]byte
	var docErr error
	for _, doc := range docs {
		if noteErr = note(nil); noteErr != nil {
			return nil, noteErr
		}
		b := &batch{docs: []*stream.Document{doc}}
		p.applyHere(ctx, b)
		if noteErr != nil {
			return nil, noteErr
		}
		out = append(out, b.out...)
		if b.err != nil {
			docErr = b.err
			break
		}
	}
	size := 64
	for _, o := range out {
		size += len(o) + binary.MaxVarintLen32
	}
	// The worker wrote the last answer out before this request came.
	answer := slices.Grow(lastAnswer[:0], size)
	lastAnswer = answer
	answer = binary.AppendUvarint(answer, uint64(p.pods.Load()))
	answer = binary.AppendUvarint(answer, uint64(p.templates.Load()))
	answer = binary.AppendUvarint(answer, uint64(len(out)))
	for _, o := range out {
		answer = wire.AppendBytes(answer, o)
	}
	if docErr != nil {
		answer = append(answer, 1)
		answer = wire.AppendString(answer, docErr.Error())
	} else {
		answer = append(answer, 0)
	}
	return answer, nil
}

// decodeTaskAnswer decodes the answer of applyTask. The output of each document aliases
// answer.
func decodeTaskAnswer(answer []byte) (pods, templates int64, out [][]byte, docErr, err error) {
	d := wire.Decoder{B: answer}
	pods, templates = int64(d.Uvarint()), int64(d.Uvarint())
	out = make([][]byte, d.Count())
	for i := range out {
		out[i] = d.Bytes()
	}
	if d.Byte() == 1 {
		docErr = errors.New(d.String())
	}
	if d.End() != nil {
		return 0, 0, nil, nil, errors.New("malformed answer of a batch")
	}
	return pods, templates, out, docErr, nil
}

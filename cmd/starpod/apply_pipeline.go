package main

// This file defines the pipeline of apply: it reads the documents in batches, hands them to
// -j appliers and writes their output in input order.

import (
	"context"
	"io"
	"sync/atomic"
	"time"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

// Sizes of the apply pipeline.
const (
	batchSize   = 32        // documents a job takes at a time (one worker round trip per overlay)
	batchBytes  = 1 << 20   // text a job takes at a time, beyond which a batch ends before batchSize
	spoolMemory = 256 << 10 // output kept in memory before it goes to a temporary file (which costs less than the memory)
)

// A pipeline applies a chain to the documents of several streams: one goroutine reads them
// in batches, -j goroutines apply and encode the batches, and the caller's goroutine writes
// their output in input order. The first error in input order ends the run.
type pipeline struct {
	ctx     context.Context
	a       *app
	chain   engine.Chain
	env     *engine.Env
	format  string
	limits  stream.ReaderOptions // of every stream; InputOffset counts the streams before
	rules   workload.Options     // where the pod templates of more kinds are
	diff    *diffOptions         // --diff: the diff of each changed document instead of the documents
	explain bool                 // --explain: the changes of each pod instead of the documents

	// inWorkers says the chain runs in workers and whole batches may go to them
	// (applyInWorker), with ruleFlags, the --pod-template flags, and timeout, each
	// overlay's time limit.
	inWorkers bool
	ruleFlags []string
	timeout   time.Duration

	// onApply, in a worker, is told before the chain applies to the pods of a document:
	// where an error of the one pod would be (see overlayError), or "" for several pods.
	onApply func(where string)

	pods      atomic.Int64 // pods and pod templates found
	templates atomic.Int64 // documents that hold pod templates
}

// A batch is consecutive documents of the input, or the error that ended reading.
type batch struct {
	docs []*stream.Document
	err  error         // the error of the first document that failed, or of reading after docs
	out  [][]byte      // the output of each document before the error, set by an applier
	done chan struct{} // closed when out and err are final
}

// run applies p.chain to every document of files and writes the output to w. Nothing that
// follows an error is written.
func (p *pipeline) run(files []string, jobs int, w io.Writer) error {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	work := make(chan *batch, jobs)
	order := make(chan *batch, jobs)
	go func() {
		defer close(order)
		defer close(work)
		p.read(ctx, files, jobs, work, order)
	}()
	for range jobs {
		go func() {
			for b := range work {
				p.apply(ctx, b)
				close(b.done)
			}
		}()
	}
	dw := &docWriter{w: w, format: p.format}
	if p.diff != nil || p.explain {
		dw.format = "text"
	}
	var failed error
	for b := range order {
		if failed != nil {
			continue // drain, so that the reader ends
		}
		<-b.done
		for _, data := range b.out {
			if err := dw.writeRaw(data); err != nil {
				b.err = err
				break
			}
		}
		b.out = nil
		if b.err != nil {
			failed = b.err
			cancel()
		}
	}
	if failed != nil {
		return failed
	}
	return dw.finish()
}

// read reads the documents of files in batches and sends each batch to work (when it has
// documents) and to order.
func (p *pipeline) read(ctx context.Context, files []string, jobs int, work, order chan<- *batch) {
	send := func(b *batch) bool {
		ok := b.err == nil // the error of reading: an applier may set b.err once b is sent
		if len(b.docs) > 0 {
			select {
			case work <- b:
			case <-ctx.Done():
				return false
			}
		} else {
			close(b.done)
		}
		select {
		case order <- b:
			return ok
		case <-ctx.Done():
			return false
		}
	}
	newBatch := func() *batch { return &batch{done: make(chan struct{})} }
	b := newBatch()
	text := 0 // the text of the documents of b
	for _, file := range files {
		ok := true
		err := p.readFile(file, func(doc *stream.Document) bool {
			if jobs == 1 && !p.inWorkers {
				// With one applier, parsing here keeps two goroutines busy; with more,
				// the appliers parse, so that reading is not a serial bottleneck. With
				// overlays in workers, the workers parse.
				doc.Parse() // an error waits for the applier, which parses again
			}
			b.docs = append(b.docs, doc)
			// A batch ends at batchSize documents, or earlier at batchBytes of text, so
			// that the batches under way hold little text even when documents are large.
			if text += len(doc.Raw); len(b.docs) < batchSize && text < batchBytes {
				return true
			}
			ok = send(b)
			b, text = newBatch(), 0
			return ok
		})
		if err != nil {
			b.err = err
			send(b)
			return
		}
		if !ok {
			return
		}
	}
	send(b)
}

// readFile calls yield with every document of one stream until yield returns false. It
// reads only regular files and pipes, and standard input for "-".
func (p *pipeline) readFile(file string, yield func(*stream.Document) bool) error {
	var r io.Reader
	name := file
	if file == "-" {
		r, name = p.a.stdin, "<stdin>"
	} else {
		fh, err := bound.Open(file)
		if err != nil {
			return err
		}
		defer fh.Close()
		r = fh
	}
	sr := p.limits.NewReader(name, r)
	for {
		doc, err := sr.NextText() // parsed by apply, in parallel
		if err == io.EOF {
			p.limits.InputOffset = sr.InputOffset()
			return nil
		}
		if err != nil {
			return err
		}
		if !yield(doc) {
			return nil
		}
	}
}

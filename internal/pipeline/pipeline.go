// Package pipeline applies a chain of overlays to the pods and pod templates of streams of
// manifests: it reads the documents (internal/stream), finds their pods and pod templates
// (internal/workload), applies the chain to them (engine) and writes every document in input
// order, changed or not, as YAML or JSON; or, instead of the documents, the diff of each
// changed document (Options.Diff) or the changes of each pod (Options.Explain). It is the
// work of "starpod apply", in the spirit of kyaml's kio: a reader, a filter and a writer.
//
// To run one, make it with [New] and call [Pipeline.Run]. The chain runs as it was made: in
// this process, or in workers when its engine options ask for them.
package pipeline

import (
	"context"
	"io"
	"sync"
	"sync/atomic"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

// Sizes of a pipeline.
const (
	batchSize  = 32      // documents an applier takes at a time
	batchBytes = 1 << 20 // text an applier takes at a time, beyond which a batch ends before batchSize
)

// Options configure a [Pipeline]. The zero value, with a Chain, applies it in one goroutine
// and writes YAML.
type Options struct {
	Chain  engine.Chain
	Env    *engine.Env          // the ctx of every pod; a template's has its workload too
	Format string               // "yaml" (the default) or "json"
	Limits stream.ReaderOptions // of every stream; InputOffset counts the streams before
	Rules  workload.Options     // where the pod templates of more kinds are
	Jobs   int                  // the batches applied at once; 0 means 1
	Stdin  io.Reader            // what the file "-" reads

	// InWorkers says the chain runs in workers: the goroutine that reads then leaves the
	// parsing of documents to the appliers, which wait for the workers.
	InWorkers bool

	Diff    bool // the diff of each changed document instead of the documents
	Color   bool // diffs coloured, for a terminal
	Explain bool // the changes of each pod and template instead of the documents

	// Lasting, if set, is called once, as the output of a second batch is written: the run
	// is long enough for the caller to give back what only its start needed.
	Lasting func()
}

// A Pipeline applies a chain to the documents of several streams: one goroutine reads them
// in batches, Options.Jobs goroutines apply the chain to the batches and encode them, and
// the caller's goroutine writes their output in input order. The first error in input order
// ends the run.
type Pipeline struct {
	opts      Options
	pods      atomic.Int64 // pods and pod templates found
	templates atomic.Int64 // documents that hold pod templates

	mu     sync.Mutex
	misses map[string]*Miss // by rule
}

// A Miss is a rule of Options.Rules that found no template in the objects of its kind.
type Miss struct {
	workload.Miss     // the first object
	Count         int // the objects of its kind the rule found no template in
}

// Misses returns the rules of Options.Rules that found no template in some objects of their
// kind, in the order of the rules.
func (p *Pipeline) Misses() []Miss {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Miss
	for _, r := range p.opts.Rules.Rules {
		if m := p.misses[r.String()]; m != nil {
			out = append(out, *m)
		}
	}
	return out
}

// noteMisses counts the misses of an object.
func (p *Pipeline) noteMisses(ms []workload.Miss) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.misses == nil {
		p.misses = make(map[string]*Miss)
	}
	for _, m := range ms {
		if old := p.misses[m.Rule]; old != nil {
			old.Count++
		} else {
			p.misses[m.Rule] = &Miss{Miss: m, Count: 1}
		}
	}
}

// New returns a pipeline of opts.
func New(opts Options) *Pipeline {
	if opts.Format == "" {
		opts.Format = "yaml"
	}
	opts.Jobs = max(opts.Jobs, 1)
	// A List larger than a document is read item by item (kubectl get -o yaml of a large
	// cluster), and written back as one List.
	opts.Limits.ListItems = true
	return &Pipeline{opts: opts}
}

// Pods returns the number of pods and pod templates the runs so far found.
func (p *Pipeline) Pods() int64 { return p.pods.Load() }

// Templates returns the number of documents holding pod templates the runs so far found.
func (p *Pipeline) Templates() int64 { return p.templates.Load() }

// A batch is consecutive documents of the input, or the error that ended reading.
type batch struct {
	docs  []*stream.Document
	err   error         // the error of the first document that failed, or of reading after docs
	out   [][]byte      // the output of each document before the error, set by an applier
	parts []stream.Part // what part of a List each document of out is, if any
	done  chan struct{} // closed when out and err are final
}

// Run applies the chain to every document of files ("-" is Options.Stdin, named <stdin>) and
// writes the output to w. Nothing that follows an error is written.
func (p *Pipeline) Run(ctx context.Context, files []string, w io.Writer) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *batch, p.opts.Jobs)
	order := make(chan *batch, p.opts.Jobs)
	go func() {
		defer close(order)
		defer close(work)
		p.read(ctx, files, work, order)
	}()
	for range p.opts.Jobs {
		go func() {
			for b := range work {
				p.apply(ctx, b)
				close(b.done)
			}
		}()
	}
	dw := &docWriter{w: w, format: p.opts.Format}
	if p.opts.Diff || p.opts.Explain {
		dw.format = "text"
	}
	var failed error
	batches := 0
	for b := range order {
		if failed != nil {
			continue // drain, so that the reader ends
		}
		if batches++; batches == 2 && p.opts.Lasting != nil {
			p.opts.Lasting()
		}
		<-b.done
		for i, data := range b.out {
			if err := dw.write(data, b.parts[i]); err != nil {
				b.err = err
				break
			}
		}
		b.out, b.parts = nil, nil
		if b.err != nil {
			failed = b.err
			cancel()
		}
	}
	if failed != nil {
		return failed
	}
	if parent.Err() != nil {
		// The reader and the appliers stop as soon as ctx ends, and may drop what they
		// held without an error of their own: a run cut short is never a success.
		return context.Cause(parent)
	}
	return dw.finish()
}

// read reads the documents of files in batches and sends each batch to work (when it has
// documents) and to order.
func (p *Pipeline) read(ctx context.Context, files []string, work, order chan<- *batch) {
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
			if p.opts.Jobs == 1 && !p.opts.InWorkers && doc.Part != stream.ListHead && doc.Part != stream.ListTail {
				// With one applier, parsing here keeps two goroutines busy; with more,
				// the appliers parse, so that reading is not a serial bottleneck.
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
// reads only regular files and pipes, and Options.Stdin for "-".
func (p *Pipeline) readFile(file string, yield func(*stream.Document) bool) error {
	var r io.Reader
	name := file
	if file == "-" {
		r, name = p.opts.Stdin, "<stdin>"
	} else {
		fh, err := bound.Open(file)
		if err != nil {
			return err
		}
		defer fh.Close()
		r = fh
	}
	sr := p.opts.Limits.NewReader(name, r)
	for {
		doc, err := sr.NextText() // parsed by apply, in parallel
		if err == io.EOF {
			p.opts.Limits.InputOffset = sr.InputOffset()
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

package pipeline

// This file defines what an applier does with one batch: it finds the pods and pod templates
// of its documents, applies the chain to them and encodes each document.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

// A unit is what one pod of a batch stands for: a document that is a pod (template 0), or
// template number template (from 1) of a document.
type unit struct {
	doc      int
	template int
	defaults *convert.PodDefaults // of a pod: which empty defaults its document held
}

// A work is a batch under way: its documents up to the first that failed, their pods and
// pod templates, and what the chain made of them.
type work struct {
	docs      []*stream.Document // the documents before the first failure
	objs      []*workload.Object // the templates of each document that holds some
	pods      []*corev1.Pod
	units     []unit        // what each pod is
	envs      []*engine.Env // the ctx of each pod
	templates bool          // whether a template is among the pods
	before    [][]byte      // with Diff, each document that holds templates as it was
	results   []*corev1.Pod
	changes   [][]engine.Change // with Explain
	err       error             // the error of the first document that failed
}

// fail records err as the error of document i, which ends the batch there.
func (w *work) fail(i int, err error) {
	w.err, w.docs = err, w.docs[:i]
}

// apply parses the documents of b, applies the chain to their pods and pod templates and
// encodes every document, up to the first document that fails, whose error goes before any
// error of reading.
func (p *Pipeline) apply(ctx context.Context, b *batch) {
	w := &work{docs: make([]*stream.Document, 0, len(b.docs)), objs: make([]*workload.Object, len(b.docs))}
	for _, doc := range b.docs {
		if err := p.find(w, doc); err != nil {
			w.err = err
			break
		}
		w.docs = append(w.docs, doc)
	}
	p.pods.Add(int64(len(w.pods)))
	if p.opts.Diff {
		p.encodeBefore(w)
	}
	p.applyChain(ctx, w)
	p.putBack(w)
	b.out = p.encode(w)
	b.parts = make([]stream.Part, len(b.out))
	for i := range b.out {
		b.parts[i] = w.docs[i].Part
	}
	if w.err != nil {
		b.err = w.err
	}
	b.docs = nil // only the output waits for the writer
}

// find adds the pod of doc, or its pod templates, to w.
func (p *Pipeline) find(w *work, doc *stream.Document) error {
	if doc.Part == stream.ListHead || doc.Part == stream.ListTail {
		return nil // the text around a List's items, written as it is
	}
	pod, defaults, err := p.decodePod(doc)
	if err != nil {
		return err
	}
	if pod != nil {
		w.pods = append(w.pods, pod)
		w.units = append(w.units, unit{doc: len(w.docs), defaults: defaults})
		w.envs = append(w.envs, p.opts.Env)
		// From here on the pod stands for the document's content; drop the parsed value,
		// which is several times its size, and the text unless it may be written as it is:
		// when the overlays change nothing and the output format is the input's.
		doc.Object = nil
		if doc.JSON != (p.opts.Format == "json") {
			doc.Raw = nil
		}
		return nil
	}
	if doc.Object == nil && !doc.JSON {
		return nil // a YAML document with no content
	}
	obj, err := workload.Find(doc.Object, &p.opts.Rules)
	if err != nil {
		return templateError(doc, err)
	}
	if len(obj.Misses) > 0 {
		p.noteMisses(obj.Misses)
	}
	for i, t := range obj.Templates {
		w.pods = append(w.pods, t.Pod)
		w.units = append(w.units, unit{doc: len(w.docs), template: i + 1})
		w.envs = append(w.envs, EnvOf(p.opts.Env, t))
		w.templates = true
	}
	if len(obj.Templates) > 0 {
		w.objs[len(w.docs)] = obj
		p.templates.Add(1)
	}
	return nil
}

// decodePod returns the pod of doc and the defaults its document held, or nil for a
// document that is not a pod. A pod document in plain YAML, as most are, decodes from its
// text straight into the pod; any other document takes the way through its parsed value,
// which reports the errors.
func (p *Pipeline) decodePod(doc *stream.Document) (*corev1.Pod, *convert.PodDefaults, error) {
	if raw, limit, ok := doc.Text(); ok {
		if pod, defaults, ok := convert.DecodePodYAML(raw, limit); ok {
			return pod, defaults, nil
		}
	}
	if _, err := doc.Parse(); err != nil {
		return nil, nil, err
	}
	if apiVersion, kind := doc.Kind(); kind != "Pod" || apiVersion != "v1" {
		return nil, nil, nil
	}
	pod, err := convert.DecodePod(doc.Object)
	if err != nil {
		var b strings.Builder
		for i, line := range strings.Split(err.Error(), "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s:%d: invalid pod: %s", doc.File, doc.Line, line)
		}
		return nil, nil, errors.New(b.String())
	}
	return pod, convert.PodDefaultsOf(doc.Object), nil
}

// encodeBefore keeps, for Diff, each document that holds templates as it was, before the
// results are put back into it.
func (p *Pipeline) encodeBefore(w *work) {
	w.before = make([][]byte, len(w.objs))
	for i, obj := range w.objs {
		if obj == nil || i >= len(w.docs) {
			continue
		}
		data, err := encode(obj.Root, "yaml")
		if err != nil {
			w.fail(i, err)
			return
		}
		w.before[i] = data
	}
}

// applyChain applies the chain to the pods of w, each with its ctx, up to the first that
// fails, whose error ends the batch at its document. Bare pods, which share one ctx, go as
// a batch; pods among templates one by one.
func (p *Pipeline) applyChain(ctx context.Context, w *work) {
	var err error
	chain := p.opts.Chain
	switch {
	case p.opts.Explain:
		w.results, w.changes, err = explainBatch(ctx, chain, w.pods, w.envs)
	case !w.templates:
		w.results, err = chain.ApplyBatch(ctx, w.pods, p.opts.Env)
	default:
		results, errs := chain.ApplyEach(ctx, w.pods, w.envs)
		w.results = results
		for i, e := range errs {
			if e != nil {
				w.results, err = results[:i], e
				break
			}
		}
	}
	if err == nil {
		return
	}
	failed := len(w.results)
	u := w.units[failed]
	if u.template > 0 {
		err = templateApplyError(w.docs[u.doc], w.objs[u.doc].Templates[u.template-1], err)
	} else {
		err = docError(w.docs[u.doc], w.pods[failed], err)
	}
	w.fail(u.doc, err)
}

// putBack puts each template's result back into its document.
func (p *Pipeline) putBack(w *work) {
	for k := range w.results {
		u := w.units[k]
		if u.template == 0 || u.doc >= len(w.docs) {
			continue
		}
		if err := w.objs[u.doc].Put(u.template-1, w.results[k]); err != nil {
			w.fail(u.doc, templateError(w.docs[u.doc], err))
			return
		}
	}
}

// encode returns the output of each document of w, up to the first that fails to encode.
func (p *Pipeline) encode(w *work) [][]byte {
	out := make([][]byte, 0, len(w.docs))
	k := 0 // the first unit of the document
	for i, doc := range w.docs {
		var data []byte
		var err error
		if doc.Part == stream.ListHead || doc.Part == stream.ListTail {
			out = append(out, doc.Raw)
			continue
		}
		if k < len(w.units) && w.units[k].doc == i && w.units[k].template == 0 {
			data, err = p.encodePodDoc(w, doc, k)
		} else {
			data, err = p.encodeDoc(w, doc, i, k)
		}
		for k < len(w.units) && w.units[k].doc == i {
			k++
		}
		if err != nil {
			w.err = err
			break
		}
		out = append(out, data)
	}
	return out
}

// encodePodDoc returns the output of doc, the document of the pod of unit k.
func (p *Pipeline) encodePodDoc(w *work, doc *stream.Document, k int) ([]byte, error) {
	in, res, d := w.pods[k], w.results[k], w.units[k].defaults
	defer func() { doc.Raw, w.pods[k], w.results[k] = nil, nil, nil }()
	switch {
	case p.opts.Explain:
		return explanation(doc, fmt.Sprintf("pod %q", in.Name), w.changes[k]), nil
	case p.opts.Diff:
		return p.diffPod(doc, in, res, d)
	case doc.Raw != nil && workload.Unchanged(in, res):
		// The overlays left the pod as it was decoded: its text, with its comments and
		// key order, rather than the pod encoded anew.
		return passThrough(doc, p.opts.Format)
	}
	return EncodePod(res, d, p.opts.Format)
}

// encodeDoc returns the output of doc, document i of w, which is not a pod; k is the first
// unit of its templates, if it holds some.
func (p *Pipeline) encodeDoc(w *work, doc *stream.Document, i, k int) ([]byte, error) {
	obj := w.objs[i]
	switch {
	case p.opts.Explain:
		var data []byte
		for j := k; j < len(w.units) && w.units[j].doc == i; j++ {
			t := obj.Templates[w.units[j].template-1]
			data = append(data, explanation(doc, templateLabel(t), w.changes[j])...)
		}
		return data, nil
	case p.opts.Diff:
		if obj == nil || !obj.Changed() {
			return nil, nil
		}
		after, err := encode(obj.Root, "yaml")
		if err != nil {
			return nil, err
		}
		return p.diffDocument(doc, w.before[i], after)
	case obj != nil && obj.Changed():
		data, err := encode(obj.Root, p.opts.Format)
		if err == nil && !doc.JSON && p.opts.Format == "yaml" {
			data = append(headComment(doc.Raw), data...)
		}
		return data, err
	}
	return passThrough(doc, p.opts.Format)
}

// docError puts the document an overlay failed on in front of the overlay's error, and its
// backtrace after it. A result over its size limit is the input's fault when the pod was over
// that limit before any overlay ran: that is an error of the document.
func docError(doc *stream.Document, pod *corev1.Pod, err error) error {
	var lim *engine.LimitError
	if errors.As(err, &lim) && lim.Limit == engine.LimitResultSize {
		if data, jerr := json.Marshal(pod); jerr == nil && len(data) > engine.DefaultMaxResultBytes {
			return fmt.Errorf("%s:%d: document %d: pod %q is larger than the size limit of a result, %s of JSON, before any overlay runs",
				doc.File, doc.Line, doc.Index+1, pod.Name, bound.FormatSize(engine.DefaultMaxResultBytes))
		}
	}
	return overlayError(podWhere(doc, pod), err)
}

// podWhere says where an overlay failed on the pod of doc.
func podWhere(doc *stream.Document, pod *corev1.Pod) string {
	return fmt.Sprintf("%s:%d: pod %q", doc.File, doc.Line, pod.Name)
}

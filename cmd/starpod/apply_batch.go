package main

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

// apply parses the documents of b, applies the chain to their pods and pod templates and
// encodes every document, up to the first document that fails, whose error goes before any
// error of reading.
func (p *pipeline) apply(ctx context.Context, b *batch) {
	p.applyHere(ctx, b)
}

// applyHere is apply in this process.
func (p *pipeline) applyHere(ctx context.Context, b *batch) {
	var pods []*corev1.Pod
	var units []unit                                 // what each pod is
	var envs []*engine.Env                           // the ctx of each pod, when a template is among them
	docs := make([]*stream.Document, 0, len(b.docs)) // the documents before the first failure
	objs := make([]*workload.Object, len(b.docs))    // the templates of each document that holds some
	var docErr error
	hasTemplates := false
	for _, doc := range b.docs {
		// A pod document in plain YAML, as most are, decodes from its text straight into
		// the pod; any other document, or any problem, takes the way through its parsed
		// value, which reports the errors.
		pod, defaults, isText := decodePodText(doc)
		ok := isText
		if !isText {
			var err error
			if ok, err = doc.Parse(); err != nil {
				docErr = err
				break
			}
			if ok && isPod(doc) {
				if pod, err = decodePod(doc); err != nil {
					docErr = err
					break
				}
				defaults = convert.PodDefaultsOf(doc.Object)
			}
		}
		if pod != nil {
			pods = append(pods, pod)
			units = append(units, unit{doc: len(docs), defaults: defaults})
			envs = append(envs, p.env)
			// From here on the pod stands for the document's content; drop the parsed
			// value, which is several times its size, and the text unless it may be
			// written as it is: when the overlays change nothing and the output format
			// is the input's (see unchanged).
			doc.Object = nil
			if doc.JSON != (p.format == "json") {
				doc.Raw = nil
			}
		} else if ok {
			obj, err := workload.Find(doc.Object, &p.rules)
			if err != nil {
				docErr = templateError(doc, err)
				break
			}
			for i, t := range obj.Templates {
				pods = append(pods, t.Pod)
				units = append(units, unit{doc: len(docs), template: i + 1})
				envs = append(envs, p.envOf(t))
				hasTemplates = true
			}
			if len(obj.Templates) > 0 {
				objs[len(docs)] = obj
				p.templates.Add(1)
			}
		}
		docs = append(docs, doc)
	}
	p.pods.Add(int64(len(pods)))
	// With --diff, each document that holds templates as it was, before the results are put
	// back into it.
	var before [][]byte
	if p.diff != nil {
		before = make([][]byte, len(objs))
		for i, obj := range objs {
			if obj == nil || i >= len(docs) {
				continue
			}
			data, err := encode(obj.Root, "yaml")
			if err != nil {
				docErr, docs = err, docs[:i]
				break
			}
			before[i] = data
		}
	}
	// The chain stops at the first pod that fails, in order, and returns the results of the
	// pods before it.
	var results []*corev1.Pod
	var changes [][]engine.Change // with --explain
	var failed int
	var err error
	if p.onApply != nil {
		where := ""
		if len(units) == 1 {
			if u := units[0]; u.template > 0 {
				where = templateWhere(docs[u.doc], objs[u.doc].Templates[u.template-1])
			} else {
				where = podWhere(docs[u.doc], pods[0])
			}
		}
		p.onApply(where)
	}
	if p.explain {
		results, changes, err = explainBatch(ctx, p.chain, pods, envs)
		failed = len(results)
	} else {
		results, failed, err = p.applyChain(ctx, pods, envs, hasTemplates)
	}
	if err != nil {
		u := units[failed]
		if u.template > 0 {
			docErr = templateApplyError(docs[u.doc], objs[u.doc].Templates[u.template-1], err)
		} else {
			docErr = docError(docs[u.doc], pods[failed], err)
		}
		docs = docs[:u.doc]
	}
	// Put each template's result back into its document.
	for k := range results {
		u := units[k]
		if u.template == 0 || u.doc >= len(docs) {
			continue
		}
		if err := objs[u.doc].Put(u.template-1, results[k]); err != nil {
			docErr = templateError(docs[u.doc], err)
			docs = docs[:u.doc]
			break
		}
	}
	b.out = make([][]byte, 0, len(docs))
	k := 0
	for i, doc := range docs {
		var data []byte
		var err error
		switch {
		case k < len(units) && units[k].doc == i && units[k].template == 0:
			switch {
			case p.explain:
				data = explanation(doc, fmt.Sprintf("pod %q", pods[k].Name), changes[k])
			case p.diff != nil:
				data, err = p.diff.pod(doc, pods[k], results[k], units[k].defaults)
			case doc.Raw != nil && unchanged(pods[k], results[k]):
				data, err = passThrough(doc, p.format)
			default:
				data, err = encodePod(results[k], units[k].defaults, p.format)
			}
			doc.Raw, pods[k], results[k] = nil, nil, nil
			k++
		case p.explain:
			for j := k; j < len(units) && units[j].doc == i; j++ {
				t := objs[i].Templates[units[j].template-1]
				data = append(data, explanation(doc, templateLabel(t), changes[j])...)
			}
		case p.diff != nil:
			if objs[i] != nil && objs[i].Changed() {
				var after []byte
				if after, err = encode(objs[i].Root, "yaml"); err == nil {
					data, err = p.diff.document(doc, before[i], after)
				}
			}
		case objs[i] != nil && objs[i].Changed():
			data, err = encode(objs[i].Root, p.format)
			if err == nil && !doc.JSON && p.format == "yaml" {
				data = append(headComment(doc.Raw), data...)
			}
		default:
			data, err = passThrough(doc, p.format)
		}
		for k < len(units) && units[k].doc == i {
			k++
		}
		if err != nil {
			docErr = err
			break
		}
		b.out = append(b.out, data)
	}
	if docErr != nil {
		b.err = docErr
	}
	b.docs = nil // only the output waits for the writer
}

// A unit is what one pod of a batch stands for: a document that is a pod (template 0), or
// template number template (from 1) of a document.
type unit struct {
	doc      int
	template int
	defaults *convert.PodDefaults // of a pod: which empty defaults its document held
}

// applyChain applies the chain to pods, each with its ctx, and returns the results of the
// pods before the first that fails, the index of that pod and its error.
func (p *pipeline) applyChain(ctx context.Context, pods []*corev1.Pod, envs []*engine.Env, templates bool) ([]*corev1.Pod, int, error) {
	if !templates {
		// Only bare pods, which share one ctx: a batch, which stops at the first failure.
		results, err := p.chain.ApplyBatch(ctx, pods, p.env)
		return results, len(results), err
	}
	results, errs := p.chain.ApplyEach(ctx, pods, envs)
	for i, err := range errs {
		if err != nil {
			return results[:i], i, err
		}
	}
	return results, len(results), nil
}

// unchanged reports whether the overlays left a pod as it was decoded: then its document is
// written as its text, with its comments and key order, rather than re-encoded. Equality is
// semantic, as workload.Unchanged tells it.
func unchanged(in, out *corev1.Pod) bool {
	return workload.Unchanged(in, out)
}

// isPod reports whether doc is a core/v1 Pod.
func isPod(doc *stream.Document) bool {
	apiVersion, kind := doc.Kind()
	return kind == "Pod" && apiVersion == "v1"
}

// decodePodText decodes a YAML pod document that is not parsed yet from its text, with
// convert.DecodePodYAML, and returns the pod and the defaults its document held; ok is false
// for any other document, and for any the fast path declines, which Parse and decodePod read.
func decodePodText(doc *stream.Document) (pod *corev1.Pod, d *convert.PodDefaults, ok bool) {
	raw, limit, ok := doc.Text()
	if !ok {
		return nil, nil, false
	}
	return convert.DecodePodYAML(raw, limit)
}

// decodePod decodes a Pod document strictly, reporting every problem with its field path.
func decodePod(doc *stream.Document) (*corev1.Pod, error) {
	pod, err := convert.DecodePod(doc.Object)
	if err != nil {
		var b strings.Builder
		for i, line := range strings.Split(err.Error(), "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s:%d: invalid pod: %s", doc.File, doc.Line, line)
		}
		return nil, errors.New(b.String())
	}
	return pod, nil
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

// docWriter writes encoded documents: YAML separated by ---, or JSON as kubectl prints
// several objects, one v1 List of them, which a JSON parser reads as one value. A JSON document
// alone is written as itself: the first is held until the second comes, or finish.

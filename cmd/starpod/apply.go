package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

func init() { commands = append(commands, newApplyCmd) }

type applyFlags struct {
	overlayFlags
	files    []string
	output   string
	jobs     int
	maxDoc   string   // --max-document-size
	maxInput string   // --max-input-size
	podTmpl  []string // --pod-template
	diff     bool     // --diff
	explain  bool     // --explain
}

func newApplyCmd(a *app) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply --overlay-script FILE... [-f FILE|-]... [-o yaml|json]",
		Short: "Apply overlays to every Pod and pod template of a YAML or JSON stream",
		Long: `Apply reads a multi-document YAML or JSON stream (the -f files in order, or standard
input), applies the overlays in order to every Pod and every pod template, passes every
other document through unchanged and writes the documents in input order to standard output.

Pod templates are those of PodTemplate, ReplicationController, Deployment, ReplicaSet,
StatefulSet, DaemonSet, Job and CronJob, of Volcano Jobs, JobSets, Kubeflow's PyTorchJob,
TFJob, MPIJob, XGBoostJob and PaddleJob, Ray's RayCluster and RayJob, LeaderWorkerSets, of
the items of a v1 List, and of the kinds --pod-template names. An overlay gets a template as
a pod (apiVersion v1, kind Pod, the template's metadata and spec), and ctx.workload names the
object it belongs to (kind, api_version, name, namespace and path; None for a bare pod). A
template has no name and no namespace: a result that sets them is an error. A document that
holds a template the overlays changed is encoded anew, with sorted keys. When the input holds
no pod and no template, a warning goes to standard error. A Pod the overlays
do not change is written as it was read, comments and all, when the output format is the
input's; a changed Pod is encoded anew, with sorted keys, and without the empty status: {}
and resources: {} its document did not hold. It streams: -j documents are
applied at the same time, and output beyond 1 MiB waits in a temporary file,
which is removed at the end.

With -o json, several documents are written as kubectl writes them, as the items of one
v1 List ({"apiVersion": "v1", "items": [...], "kind": "List", ...}), so that the output is
one JSON value; a single document is written as itself. A document read from YAML is
written with sorted keys, as kubectl prints maps.

Nothing is written unless every document succeeds: on any error, standard output stays
empty, the error goes to standard error and the exit code is 1.

Streams are split as kubectl splits them: a line "---" (with spaces or a comment after it)
separates YAML documents, and a line that starts with "---" followed by anything else is an
error. A document that parses to nothing ("null") is written as it was. A document larger
than --max-document-size, also once its YAML aliases are expanded, and input larger than
--max-input-size (all files together) are errors. Only regular files and pipes are read.`,
		Example: `  starpod apply --overlay-script gpu.star -f pod.yaml
  kubectl get pod trainer -o yaml | starpod apply --overlay-script gpu.star -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			// The input files are given with -f, as kubectl's are.
			var fs []string
			for _, arg := range args {
				fs = append(fs, "-f "+shellQuote(arg))
			}
			return unexpectedArgs(cmd, args, "; give input files with "+strings.Join(fs, " "))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApply(cmd.Context(), a, f)
		},
	}
	f.register(cmd.Flags(), true)
	f.registerCtx(cmd.Flags())
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, "`FILE` to read, - for standard input (repeatable; default: standard input)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "yaml", "output `FORMAT`: yaml, or json (several documents as the items of one v1 List)")
	cmd.Flags().IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "`N` documents to apply at the same time (output order is unchanged)")
	cmd.Flags().StringVar(&f.maxDoc, "max-document-size", bound.FormatSize(stream.DefaultMaxDocumentBytes), "largest `SIZE` of one document, also with its YAML aliases expanded (e.g. 16Mi)")
	cmd.Flags().StringArrayVar(&f.podTmpl, "pod-template", nil, "`GROUP/KIND=PATH` of the pod templates of more kinds, e.g. example.com/Trainer=spec.workers[*].template (repeatable)")
	cmd.Flags().BoolVar(&f.diff, "diff", false, "print a unified diff of each changed document's YAML before and after the overlays instead of the documents (exit 0 whether or not anything changed)")
	cmd.Flags().BoolVar(&f.explain, "explain", false, "print each field the overlays changed in each pod and pod template, with its old and new value and the overlay file:line:col that wrote it, instead of the documents")
	cmd.Flags().StringVar(&f.maxInput, "max-input-size", bound.FormatSize(stream.DefaultMaxInputBytes), "largest `SIZE` of the input, all files together (e.g. 4Gi)")
	return cmd
}

func runApply(ctx context.Context, a *app, f *applyFlags) error {
	if len(f.scripts) == 0 {
		return usagef("apply: no --overlay-script given")
	}
	if f.output != "yaml" && f.output != "json" {
		return usagef("--output: got %q, want yaml or json", f.output)
	}
	if f.diff && f.output != "yaml" {
		return usagef("--diff: diffs are of YAML; leave out -o %s", f.output)
	}
	if f.explain && (f.diff || f.output != "yaml") {
		return usagef("--explain: prints explanations, not documents or diffs; leave out --diff and -o")
	}
	if f.jobs < 1 {
		return usagef("--jobs: got %d, want a positive number", f.jobs)
	}
	maxDoc, err := sizeFlag("--max-document-size", f.maxDoc, "16Mi")
	if err != nil {
		return err
	}
	maxInput, err := sizeFlag("--max-input-size", f.maxInput, "16Mi")
	if err != nil {
		return err
	}
	files := f.files
	if len(files) == 0 {
		files = []string{"-"}
	}
	stdin := 0
	for _, file := range files {
		if file == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return usagef("-f -: standard input given %d times, want at most once", stdin)
	}
	env, err := f.env()
	if err != nil {
		return err
	}
	rules, err := podTemplateRules(f.podTmpl)
	if err != nil {
		return err
	}
	// Each overlay's result is checked as the API server would check the pod (a pod template
	// as a template), as run checks the pods of its tasks.
	f.validation = engine.ValidatePod
	chain, err := f.compile(ctx, a, f.scripts)
	if err != nil {
		return err
	}

	if f.isolate != "none" && os.Getenv("GOGC") == "" {
		// The overlays run in workers: this process reads, checks and writes documents, and
		// most of what it allocates is garbage at once. Collecting at half the usual growth
		// keeps its resident memory near its live heap (about 4 MiB less over 10,000 pods)
		// for about a tenth more time. GOGC in the environment still decides.
		debug.SetGCPercent(50)
	}
	p := &pipeline{ctx: ctx, a: a, chain: chain, env: env, format: f.output, rules: rules,
		limits: stream.ReaderOptions{MaxDocumentBytes: maxDoc, MaxInputBytes: maxInput}}
	if f.diff {
		p.diff = &diffOptions{color: colorOutput(a.stdout)}
	}
	p.explain = f.explain
	out := &spool{limit: spoolMemory}
	defer out.Close()
	if err := p.run(files, f.jobs, out); err != nil {
		return err
	}
	if p.pods.Load() == 0 {
		// A silent no-op is visible: a stream of kinds starpod does not know, or a typo.
		fmt.Fprintln(a.stderr, "starpod apply: warning: the input held no pod and no pod template; nothing was applied (see --pod-template for other kinds)")
	}
	return out.copyTo(a.stdout)
}

// Sizes of the apply pipeline.
const (
	batchSize   = 32      // documents a job takes at a time (one worker round trip per overlay)
	batchBytes  = 1 << 20 // text a job takes at a time, beyond which a batch ends before batchSize
	spoolMemory = 1 << 20 // output kept in memory before it goes to a temporary file
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
			return b.err == nil
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
			if jobs == 1 {
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

// apply parses the documents of b, applies the chain to their pods and pod templates and
// encodes every document, up to the first document that fails, whose error goes before any
// error of reading.
func (p *pipeline) apply(ctx context.Context, b *batch) {
	var pods []*corev1.Pod
	var units []unit                                 // what each pod is
	var envs []*engine.Env                           // the ctx of each pod, when a template is among them
	docs := make([]*stream.Document, 0, len(b.docs)) // the documents before the first failure
	objs := make([]*workload.Object, len(b.docs))    // the templates of each document that holds some
	var docErr error
	hasTemplates := false
	for _, doc := range b.docs {
		ok, err := doc.Parse()
		if err != nil {
			docErr = err
			break
		}
		if ok && isPod(doc) {
			pod, err := decodePod(doc)
			if err != nil {
				docErr = err
				break
			}
			pods = append(pods, pod)
			units = append(units, unit{doc: len(docs), defaults: convert.PodDefaultsOf(doc.Object)})
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
// semantic (apiequality.Semantic): a quantity written another way ("1000m" and "1") and an
// empty list or map where there was none change nothing, as they would not on the server.
func unchanged(in, out *corev1.Pod) bool {
	return !changedOften(in, out) && apiequality.Semantic.DeepEqual(in, out)
}

// isPod reports whether doc is a core/v1 Pod.
func isPod(doc *stream.Document) bool {
	apiVersion, kind := doc.Kind()
	return kind == "Pod" && apiVersion == "v1"
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
	where := fmt.Sprintf("%s:%d: pod %q", doc.File, doc.Line, pod.Name)
	var b strings.Builder
	for i, line := range strings.Split(err.Error(), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(where + ": " + line)
	}
	var e *engine.Error
	if errors.As(err, &e) && e.Backtrace != "" {
		b.WriteString("\n" + e.Backtrace)
	}
	return errors.New(b.String())
}

// docWriter writes encoded documents: YAML separated by ---, or JSON as kubectl prints
// several objects, one v1 List of them, which a JSON parser reads as one value. A JSON document
// alone is written as itself: the first is held until the second comes, or finish.
type docWriter struct {
	w       io.Writer
	format  string
	n       int
	pending []byte // the first JSON document, until the second
}

// The text of a v1 List of JSON documents, before and after its items, as kubectl prints it
// (sorted keys), at the indentation of the documents.
const (
	jsonListHead = "{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n"
	jsonListTail = "\n  ],\n  \"kind\": \"List\",\n  \"metadata\": {\n    \"resourceVersion\": \"\"\n  }\n}\n"
)

// writeRaw writes one encoded document.
func (w *docWriter) writeRaw(data []byte) error {
	w.n++
	if w.format == "json" {
		switch w.n {
		case 1:
			w.pending = data
			return nil
		case 2:
			if _, err := io.WriteString(w.w, jsonListHead); err != nil {
				return err
			}
			if err := w.writeItem(w.pending); err != nil {
				return err
			}
			w.pending = nil
		}
		if _, err := io.WriteString(w.w, ",\n"); err != nil {
			return err
		}
		return w.writeItem(data)
	}
	if w.format == "yaml" && w.n > 1 {
		if _, err := io.WriteString(w.w, "---\n"); err != nil {
			return err
		}
	}
	_, err := w.w.Write(data)
	return err
}

// writeItem writes a JSON document as an item of the List: indented two levels, without its
// final newline. JSON text has no newline but between tokens, so every line is indented.
func (w *docWriter) writeItem(data []byte) error {
	data = bytes.TrimSuffix(data, []byte("\n"))
	buf := make([]byte, 0, len(data)+len(data)/8)
	buf = append(buf, "    "...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		buf = append(buf, data[:i+1]...)
		buf = append(buf, "    "...)
		data = data[i+1:]
	}
	buf = append(buf, data...)
	_, err := w.w.Write(buf)
	return err
}

// finish writes what the documents written so far still need: the document held, or the end
// of the List.
func (w *docWriter) finish() error {
	if w.format != "json" {
		return nil
	}
	var err error
	switch {
	case w.n == 1:
		_, err = w.w.Write(w.pending)
		w.pending = nil
	case w.n > 1:
		_, err = io.WriteString(w.w, jsonListTail)
	}
	return err
}

// encode encodes an object the overlays produced.
func encode(obj any, format string) ([]byte, error) {
	if format == "json" {
		data, err := json.MarshalIndent(obj, "", "  ")
		return append(data, '\n'), err
	}
	return stream.MarshalYAML(obj)
}

// encodePod encodes a pod the overlays changed, or one read in the other format, with sorted
// keys (as kubectl prints maps) and without the empty defaults that every encoded pod holds
// (status: {} and each container's resources: {}) where its document did not hold them, as d
// records.
func encodePod(pod *corev1.Pod, d *convert.PodDefaults, format string) ([]byte, error) {
	if format == "json" {
		return d.MarshalIndent(pod, "", "  ")
	}
	return d.MarshalYAML(pod)
}

// passThrough encodes a document that is not a Pod unchanged: its text when the formats
// agree, its content otherwise.
func passThrough(doc *stream.Document, format string) ([]byte, error) {
	if doc.JSON != (format == "json") {
		return encode(doc.Object, format)
	}
	raw := doc.Raw
	if doc.JSON {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return nil, err
		}
		return append(buf.Bytes(), '\n'), nil
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		raw = append(raw[:len(raw):len(raw)], '\n')
	}
	return raw, nil
}

// A spool holds output until it can be written: in memory up to limit bytes, then in a
// temporary file. Close removes the file.
type spool struct {
	limit int
	mem   bytes.Buffer
	file  *os.File
	bw    *bufio.Writer
}

func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && s.mem.Len()+len(p) > s.limit {
		f, err := os.CreateTemp("", "starpod-apply-*")
		if err != nil {
			return 0, err
		}
		// Unlinked at once: the file lives as long as it is open, and nothing is left
		// behind however the process ends (Ctrl-C, a kill, a crash).
		os.Remove(f.Name())
		s.file, s.bw = f, bufio.NewWriterSize(f, 64<<10)
		if _, err := s.bw.Write(s.mem.Bytes()); err != nil {
			return 0, err
		}
		s.mem = bytes.Buffer{}
	}
	if s.file != nil {
		return s.bw.Write(p)
	}
	return s.mem.Write(p)
}

// copyTo copies everything written so far to w.
func (s *spool) copyTo(w io.Writer) error {
	if s.file == nil {
		_, err := s.mem.WriteTo(w)
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, s.file)
	return err
}

// Close closes the temporary file, if there is one, which frees its space: it was unlinked
// when it was made.
func (s *spool) Close() {
	if s.file != nil {
		s.file.Close()
	}
}

package main

// This file defines the fn command: starpod as a KRM function, for kustomize and kpt.
//
// The KRM function protocol (a config.kubernetes.io/v1 ResourceList on standard input and
// output, results, and the annotations orchestrators keep on items) is read and written by
// sigs.k8s.io/kustomize/kyaml's kio, which kustomize and kpt functions are written with,
// rather than by hand: it keeps the comments of items (kyaml/comments copies them onto an
// item starpod changed) and the config.kubernetes.io/* and internal.config.kubernetes.io/*
// annotations (reconciled as kustomize expects), and writes results in the form both
// orchestrators read (see fn_list.go). kyaml's fn/framework, the layer above kio, is not
// used: all it would add is its results' types, and its configuration schemas link
// kube-openapi's validation, whose initialisation every starpod process pays, workers too:
// about 2.4 ms of the 12 ms a process takes to start (linux/amd64, Go 1.26).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/starpod/starpod/internal/pipeline"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/kyaml/comments"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

type fnFlags struct {
	overlayFlags
	podTmpl []string // --pod-template
	maxList string   // --max-list-size
}

// defaultMaxList is the default of fn's --max-list-size: the largest ResourceList fn reads.
// kyaml takes about 240 bytes of memory a byte of a list of small items (100,000 one-line
// ConfigMaps, 5.7 MB, took 1.36 GB), so the default holds fn to well under a GiB.
const defaultMaxList = 3 << 20

func newFnCmd(a *app) *cobra.Command {
	f := &fnFlags{}
	cmd := &cobra.Command{
		Use:   "fn [--overlay-script FILE]...",
		Short: "Run as a KRM function: apply overlays to the pods and pod templates of a ResourceList",
		Long: `Fn is starpod as a KRM function (the function specification of kustomize and kpt). It
reads a config.kubernetes.io/v1 ResourceList on standard input, applies the overlays in order
to every pod and pod template of its items, as apply does, and writes the ResourceList to
standard output, with results for every problem (severity, message, resourceRef, field and
file). On any error no item is changed, and the exit code is 1.

The overlays are the --overlay-script files, then those the functionConfig names:

  apiVersion: starpod.dev/v1alpha1
  kind: StarpodOverlay
  metadata:
    name: gpu
  spec:
    overlays: [gpu.star]        # files, relative to the functionConfig's directory (see below)
    script: |                   # an overlay written inline
      def overlay(pod, ctx):
          ...
    args: {pool: a100}          # ctx.args
    podTemplates: ["example.com/Trainer=spec.workers[*].template"]

A ConfigMap functionConfig (kpt fn eval -- key=value) holds the same in data: overlays and
podTemplates separated by commas, script, and every other key as an arg. Items keep their
comments and the config.kubernetes.io annotations.

The overlays of the functionConfig are paths relative to its directory: the directory of
its file, when the orchestrator says where that is (kpt fn render, from the
internal.config.kubernetes.io/package-path and path annotations), or else the working
directory (kustomize runs a function in the kustomization's directory, kpt fn eval in its
own). Like the modules load() reads, they stay inside it: no absolute paths, no "..", no
symbolic links that lead out. --overlay-script files are relative to the working directory.

The input is one ResourceList of at most --max-list-size; anything else (a manifest, a
stream of them) is refused: apply is the command for those.`,
		Example: `  # kustomization.yaml: transformers: [starpod.yaml], with starpod.yaml holding
  #   metadata: {annotations: {config.kubernetes.io/function: "exec: {path: starpod, args: [fn]}"}}
  kustomize build --enable-alpha-plugins --enable-exec .
  kpt fn eval . --exec "starpod fn --overlay-script gpu.star"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unexpectedArgs(cmd, args, "")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFn(cmd.Context(), a, f)
		},
	}
	f.register(cmd.Flags(), true)
	cmd.Flags().StringArrayVar(&f.podTmpl, "pod-template", nil, "`GROUP/KIND=PATH` of the pod templates of more kinds, e.g. example.com/Trainer=spec.workers[*].template (repeatable)")
	cmd.Flags().StringVar(&f.maxList, "max-list-size", bound.FormatSize(defaultMaxList), "largest `SIZE` of the ResourceList read, also with its YAML aliases expanded (e.g. 16Mi)")
	return cmd
}

func runFn(ctx context.Context, a *app, f *fnFlags) error {
	// Usage is checked before the input is read: bad flags are exit 2 with no output.
	if _, err := f.env(); err != nil {
		return err
	}
	if _, err := podTemplateRules(f.podTmpl); err != nil {
		return err
	}
	maxList, err := sizeFlag("--max-list-size", f.maxList, "16Mi")
	if err != nil {
		return err
	}
	if a.stdinTerminal {
		// fn is run by kustomize and kpt; run by hand, it would wait without a word.
		fmt.Fprintln(a.stderr, "starpod fn: reading a ResourceList from standard input (kustomize and kpt send one; for manifests, use starpod apply -f FILE; end the input with Ctrl-D, or stop with Ctrl-C)")
	}
	list, err := readResourceList(a.stdin, maxList)
	if err != nil {
		return err
	}
	p := &fnProcessor{ctx: ctx, a: a, f: f}
	rw := &kio.ByteReadWriter{Reader: bytes.NewReader(list), Writer: a.stdout, KeepReaderAnnotations: true}
	err = processList(rw, p.Process)
	var results fnResults
	if errors.As(err, &results) {
		for _, r := range results {
			if r.Severity == severityError {
				fmt.Fprintln(a.stderr, r.String())
			}
		}
		return &exitCodeError{exitError}
	}
	if err != nil {
		var usage *usageError
		if errors.As(err, &usage) {
			return err
		}
		return fmt.Errorf("fn: %v", err)
	}
	return nil
}

// fnConfig is the functionConfig of the fn command, its spec (or a ConfigMap's data).
type fnConfig struct {
	Overlays     []string          `json:"overlays,omitempty"`
	Script       string            `json:"script,omitempty"`
	Args         map[string]string `json:"args,omitempty"`
	PodTemplates []string          `json:"podTemplates,omitempty"`
}

// fnConfigOf reads the functionConfig: a ConfigMap's data, or any other kind's spec, decoded
// strictly. A missing functionConfig is an empty one.
func fnConfigOf(fc *kyaml.RNode) (*fnConfig, error) {
	c := &fnConfig{}
	if fc == nil || fc.IsNilOrEmpty() {
		return c, nil
	}
	if fc.GetKind() == "ConfigMap" && fc.GetApiVersion() == "v1" {
		for k, v := range fc.GetDataMap() {
			switch k {
			case "overlays":
				c.Overlays = splitList(v)
			case "podTemplates":
				c.PodTemplates = splitList(v)
			case "script":
				c.Script = v
			default:
				if c.Args == nil {
					c.Args = make(map[string]string)
				}
				c.Args[k] = v
			}
		}
		return c, nil
	}
	spec := fc.Field("spec")
	if spec == nil || spec.Value.IsNilOrEmpty() {
		return c, nil
	}
	data, err := spec.Value.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if err := sigsyaml.UnmarshalStrict(data, c); err != nil {
		return nil, fmt.Errorf("functionConfig.spec: %v", err)
	}
	return c, nil
}

// splitList splits a comma-separated list, leaving out empty elements.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// An fnProcessor applies the overlays to a ResourceList.
type fnProcessor struct {
	ctx context.Context
	a   *app
	f   *fnFlags
}

// A fnItem is an item of the ResourceList and its templates.
type fnItem struct {
	node *kyaml.RNode
	doc  *stream.Document
	obj  *workload.Object
}

// Process applies the overlays to the items of rl. On any error it leaves every item as it
// was and returns the results, which hold the errors.
func (p *fnProcessor) Process(rl *resourceList) error {
	fail := func(r ...*fnResult) error {
		rl.Results = append(rl.Results, r...)
		return rl.Results
	}
	cfg, err := fnConfigOf(rl.FunctionConfig)
	if err != nil {
		return fail(&fnResult{Severity: severityError, Message: err.Error()})
	}
	f := p.f.overlayFlags // a copy: the functionConfig adds to the flags
	f.args = append([]string(nil), f.args...)
	for _, k := range slices.Sorted(maps.Keys(cfg.Args)) {
		f.args = append(f.args, k+"="+cfg.Args[k])
	}
	env, err := f.env()
	if err != nil {
		return fail(&fnResult{Severity: severityError, Message: "functionConfig.spec.args: " + err.Error()})
	}
	rules, err := podTemplateRules(append(append([]string(nil), p.f.podTmpl...), cfg.PodTemplates...))
	if err != nil {
		return fail(&fnResult{Severity: severityError, Message: "functionConfig.spec.podTemplates: " + err.Error()})
	}
	chain, errs := p.compile(&f, cfg, configDir(rl.FunctionConfig))
	if len(errs) > 0 {
		return fail(errs...)
	}
	if len(chain) == 0 {
		return fail(&fnResult{Severity: severityError,
			Message: "no overlay: give --overlay-script, or spec.overlays or spec.script in the functionConfig"})
	}

	// Find the templates of every item, then apply the chain to all of them at once.
	var results fnResults
	items := make([]fnItem, len(rl.Items))
	objs := make([]*workload.Object, len(rl.Items))
	templates := 0
	for i, node := range rl.Items {
		it := fnItem{node: node}
		text, err := node.String()
		if err == nil {
			it.doc, err = stream.NewReader(itemName(node, i), strings.NewReader(text)).Next()
		}
		if err != nil {
			results = append(results, itemResult(node, nil, err.Error()))
			continue
		}
		it.obj, err = workload.Find(it.doc.Object, &rules)
		if err != nil {
			results = append(results, fieldResults(node, err)...)
			continue
		}
		items[i], objs[i] = it, it.obj
		templates += len(it.obj.Templates)
	}
	if len(results) > 0 {
		return fail(results...)
	}
	if templates == 0 {
		rl.Results = append(rl.Results, &fnResult{Severity: severityWarning,
			Message: "the items held no pod and no pod template; nothing was applied"})
		return nil
	}
	for _, e := range pipeline.ApplyTemplates(p.ctx, chain, env, objs) {
		it := items[e.Object]
		if e.Put {
			results = append(results, fieldResults(it.node, e.Err)...)
		} else {
			results = append(results, itemResult(it.node, it.obj.Templates[e.Template].Path, overlayMessage(e.Err)))
		}
	}
	if len(results) > 0 {
		return fail(results...)
	}
	// Every overlay succeeded: replace the items they changed, with their comments.
	for i, it := range items {
		if it.obj == nil || !it.obj.Changed() {
			continue
		}
		data, err := stream.MarshalYAML(it.obj.Root)
		if err != nil {
			return fail(itemResult(it.node, nil, err.Error()))
		}
		node, err := kyaml.Parse(string(data))
		if err != nil {
			return fail(itemResult(it.node, nil, err.Error()))
		}
		// Copying comments walks both trees with the schema of their kind, which takes most of
		// the time of an item: an item with no comment (what generators write) skips it.
		if commented(it.node.YNode()) {
			if err := comments.CopyComments(it.node, node); err != nil {
				return fail(itemResult(it.node, nil, err.Error()))
			}
		}
		rl.Items[i] = node
	}
	return nil
}

// commented reports whether n or a node under it holds a comment.
func commented(n *kyaml.Node) bool { return anyNode(n, hasComment) }

// hasComment reports whether n itself holds a comment.
func hasComment(n *kyaml.Node) bool {
	return n.HeadComment != "" || n.LineComment != "" || n.FootComment != ""
}

// anyNode reports whether f holds for n or a node under it; n may be nil.
func anyNode(n *kyaml.Node, f func(*kyaml.Node) bool) bool {
	return n != nil && (f(n) || slices.ContainsFunc(n.Content, func(c *kyaml.Node) bool { return anyNode(c, f) }))
}

// compile compiles the --overlay-script files, the files of the functionConfig (relative to
// dir, and confined to it) and its inline script, in that order. Each problem is a result.
func (p *fnProcessor) compile(f *overlayFlags, cfg *fnConfig, dir string) (engine.Chain, fnResults) {
	var chain engine.Chain
	var results fnResults
	add := func(o *engine.Overlay, err error, file string) {
		var usage *usageError
		switch {
		case errors.As(err, &usage):
			results = append(results, &fnResult{Severity: severityError, Message: err.Error()})
		case err != nil:
			r := &fnResult{Severity: severityError, Message: overlayMessage(err)}
			if file != "" {
				r.File = &fnFile{Path: file}
			}
			results = append(results, r)
		default:
			chain = append(chain, o)
		}
	}
	for _, file := range f.scripts {
		o, err := f.compileFile(p.ctx, p.a, file)
		add(o, scriptFileError(file, err), file)
	}
	for i, file := range cfg.Overlays {
		// Read as load() reads a module, from the functionConfig's directory.
		var name string
		var src []byte
		var err error
		switch {
		case filepath.IsAbs(file):
			err = fmt.Errorf("got the absolute path %s, want a path relative to %s", file, describeDir(dir))
		case !filepath.IsLocal(file):
			err = fmt.Errorf("%s leads outside %s", file, describeDir(dir))
		default:
			name, src, err = engine.DirLoader(dir).Load(filepath.Join(dir, "functionConfig"), file)
		}
		if err != nil {
			add(nil, fmt.Errorf("functionConfig.spec.overlays[%d]: %v (the overlays of a functionConfig are relative to its directory, or the working directory: see starpod fn --help)", i, err), file)
			continue
		}
		opts, err := f.options(p.a, name)
		var o *engine.Overlay
		if err == nil {
			prestart(opts)
			o, err = engine.Compile(p.ctx, name, src, opts)
		}
		add(o, err, name)
	}
	if cfg.Script != "" {
		const name = "functionConfig.spec.script"
		opts, err := f.options(p.a, filepath.Join(".", name))
		if err == nil {
			prestart(opts)
			if len(cfg.Script) > bound.MaxScript {
				err = &bound.SizeError{Name: name, What: "script", Limit: bound.MaxScript}
			}
		}
		var o *engine.Overlay
		if err == nil {
			o, err = engine.Compile(p.ctx, name, []byte(cfg.Script), opts)
		}
		add(o, err, "")
	}
	return chain, results
}

// packagePathAnnotation is the annotation in which kpt fn render says which directory holds
// the package of an item, or of the functionConfig.
const packagePathAnnotation = "internal.config.kubernetes.io/package-path"

// configDir returns the directory the overlays of the functionConfig fc are relative to: that
// of its file when the orchestrator says where it is (kpt fn render), or else the working
// directory.
func configDir(fc *kyaml.RNode) string {
	if fc == nil {
		return workingDir()
	}
	a := fc.GetAnnotations()
	pkg := a[packagePathAnnotation]
	if pkg == "" || !filepath.IsAbs(pkg) {
		return workingDir()
	}
	path := a[kioutil.PathAnnotation]
	if path == "" {
		path = a[kioutil.LegacyPathAnnotation]
	}
	if path != "" && filepath.IsLocal(path) {
		return filepath.Join(pkg, filepath.Dir(path))
	}
	return filepath.Clean(pkg)
}

// workingDir returns the working directory, or "." if it cannot say.
func workingDir() string {
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "."
}

// describeDir names dir in messages, saying when it is the working directory.
func describeDir(dir string) string {
	if wd := workingDir(); dir == wd {
		return "the working directory, " + dir
	}
	return dir
}

// overlayMessage returns the text of an overlay's error, with its backtrace.
func overlayMessage(err error) string {
	msg := err.Error()
	var e *engine.Error
	if errors.As(err, &e) && e.Backtrace != "" {
		msg += "\n" + e.Backtrace
	}
	return msg
}

// itemName names an item in messages: the file it came from, or its index.
func itemName(node *kyaml.RNode, i int) string {
	if path := fileOf(node); path != nil {
		return path.Path
	}
	return "items[" + strconv.Itoa(i) + "]"
}

// fileOf returns the file an item came from, as the orchestrator's annotations say.
func fileOf(node *kyaml.RNode) *fnFile {
	a := node.GetAnnotations()
	path, index := a[kioutil.PathAnnotation], a[kioutil.IndexAnnotation]
	if path == "" {
		path, index = a[kioutil.LegacyPathAnnotation], a[kioutil.LegacyIndexAnnotation]
	}
	if path == "" {
		return nil
	}
	n, _ := strconv.Atoi(index)
	return &fnFile{Path: path, Index: n}
}

// itemResult returns the error result of an item, at path when it is not nil.
func itemResult(node *kyaml.RNode, path *field.Path, msg string) *fnResult {
	r := &fnResult{Severity: severityError, Message: msg, File: fileOf(node),
		ResourceRef: &kyaml.ResourceIdentifier{
			TypeMeta: kyaml.TypeMeta{APIVersion: node.GetApiVersion(), Kind: node.GetKind()},
			NameMeta: kyaml.NameMeta{Name: node.GetName(), Namespace: node.GetNamespace()},
		}}
	if path != nil {
		r.Field = &fnField{Path: path.String()}
	}
	return r
}

// fieldResults returns a result for each field error of err, a *workload.Error.
func fieldResults(node *kyaml.RNode, err error) fnResults {
	var we *workload.Error
	if !errors.As(err, &we) {
		return fnResults{itemResult(node, nil, err.Error())}
	}
	var out fnResults
	for _, fe := range we.Fields {
		r := itemResult(node, nil, fe.ErrorBody())
		r.Field = &fnField{Path: fe.Field}
		out = append(out, r)
	}
	if more := we.MoreText(); more != "" {
		out = append(out, itemResult(node, nil, more))
	}
	return out
}

// Package workload finds the pod templates of Kubernetes objects, gives each to an overlay
// as a pod, and puts the results back.
//
// Pods are born from templates: a Deployment's spec.template, a CronJob's
// spec.jobTemplate.spec.template, a Volcano Job's spec.tasks[*].template. To find the
// templates of one decoded document (untyped JSON data, as internal/stream reads it), use
// [Find]; it returns an [Object] whose Templates each hold a pod-shaped *corev1.Pod
// (apiVersion v1, kind Pod, the template's metadata and spec), the [Workload] it belongs to
// and its field path. Apply overlays to the pods, then give each result to [Object.Put],
// which checks the template rules (a template has no name, no namespace and no status) and
// writes the result into the document; [Object.Changed] says whether any did change.
//
// Find knows v1 Pods, the items of v1 Lists (recursively), the kinds of k8s.io/api that hold
// templates (see [Kinds]) and the common custom resources of batch and AI workloads (Volcano
// Job, JobSet, Kubeflow's PyTorchJob, TFJob, MPIJob, XGBoostJob and PaddleJob, Ray's
// RayCluster and RayJob, LeaderWorkerSet). [Options].Rules name more, as GROUP/KIND=PATH
// (see [ParseRule]). A kind of k8s.io/api decodes strictly as its Go type; for a custom
// resource only its templates are decoded strictly, as corev1.PodTemplateSpec, and
// everything around them is kept as it is. Every problem is reported with its field path
// in an *Error.
//
// The package knows nothing of files or flags, so that the apply command, the KRM function
// and an admission webhook share it.
package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/convert"
)

// Options controls [Find]. The zero value knows the built-in kinds only.
type Options struct {
	// Rules name the templates of more kinds. A rule for a group and kind that Find knows
	// replaces what Find knows of it.
	Rules []Rule
}

// A Workload is the object a pod template belongs to, as an overlay sees it in ctx.workload.
type Workload struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	Path       string // the template's path in the object, e.g. spec.template
}

// A Template is one pod or pod template of a document.
type Template struct {
	// Pod is the template as a pod: apiVersion v1, kind Pod, the template's metadata and
	// spec. For a pod, it is the pod.
	Pod *corev1.Pod
	// Workload is the object the template belongs to; nil for a pod.
	Workload *Workload
	// Path is where the template is in the document: spec.template,
	// items[2].spec.tasks[0].template. It is nil for a document that is a pod.
	Path *field.Path

	m        map[string]any       // the template's (or pod's) untyped data
	list     []any                // for a pod that is an item of a List: the items
	index    int                  // and its index there
	defaults *convert.PodDefaults // the empty defaults the template's data held
}

// An Object is a document and its templates.
type Object struct {
	// Root is the document's untyped data, with the results that [Object.Put] wrote.
	Root      any
	Templates []*Template
	// Misses are the rules of Options that named the kind of the document, or of an item of
	// it, and found no template there: a path that is likely wrong.
	Misses  []Miss
	changed bool
}

// A Miss is a rule of Options that found no template in an object of its kind.
type Miss struct {
	Rule       string // GROUP/KIND=PATH,... as ParseRule reads it
	Kind, Name string // of the object
}

// Changed reports whether [Object.Put] wrote a result that differs from its template.
func (o *Object) Changed() bool { return o.changed }

// An Error lists the problems of a document, each with its field path from the document's
// root: the first MaxErrors of them, and how many more there were.
type Error struct {
	Kind, Name string // of the document
	Fields     field.ErrorList
	More       int // the problems left out after Fields
}

// MaxErrors bounds the problems an Error lists: a path that covers 100,000 values of the
// wrong type would print as many lines.
const MaxErrors = 20

func (e *Error) Error() string {
	var b strings.Builder
	for i, fe := range e.Fields {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(fe.Error())
	}
	if e.More > 0 {
		b.WriteString("\n" + e.MoreText())
	}
	return b.String()
}

// MoreText says how many problems the Error leaves out, or "".
func (e *Error) MoreText() string {
	if e.More == 0 {
		return ""
	}
	s := "s"
	if e.More == 1 {
		s = ""
	}
	return fmt.Sprintf("and %d more error%s in this document", e.More, s)
}

// Find returns the templates of the document obj, untyped JSON data (map[string]any, []any,
// string, json.Number, float64, int64, bool, nil). A document that holds no template (a
// Service, a scalar) gives an Object with none. Problems are an *Error.
func Find(obj any, opts *Options) (*Object, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := &Object{Root: obj}
	m, ok := obj.(map[string]any)
	if !ok {
		return o, nil
	}
	f := &finder{opts: opts, o: o}
	f.object(m, nil, nil, 0, 0)
	if len(f.errs) > 0 {
		return nil, errorOf(m, f.errs)
	}
	return o, nil
}

// maxListDepth bounds the nesting of Lists in Lists.
const maxListDepth = 100

type finder struct {
	opts *Options
	o    *Object
	errs field.ErrorList
}

// object finds the templates of the object m at path at: the document, or an item of a List
// (list[index]).
func (f *finder) object(m map[string]any, at *field.Path, list []any, index int, depth int) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	gk := groupKind{groupOf(apiVersion), kind}
	if rules := f.rules(gk); len(rules) > 0 {
		if f.custom(m, at, apiVersion, kind, rules) == 0 {
			name, _ := m["metadata"].(map[string]any)["name"].(string)
			for _, r := range rules {
				f.o.Misses = append(f.o.Misses, Miss{Rule: r.String(), Kind: kind, Name: name})
			}
		}
		return
	}
	switch {
	case apiVersion == "v1" && kind == "Pod":
		f.pod(m, at, list, index)
	case apiVersion == "v1" && kind == "List":
		if depth >= maxListDepth {
			f.errs = append(f.errs, field.Forbidden(at, fmt.Sprintf("Lists nested more than %d deep", maxListDepth)))
			return
		}
		items, ok := m["items"]
		if !ok || items == nil {
			return
		}
		l, ok := items.([]any)
		if !ok {
			f.errs = append(f.errs, field.Invalid(childOf(at, "items"), typeName(items), "got "+typeName(items)+", want list"))
			return
		}
		for i, x := range l {
			item := childOf(at, "items").Index(i)
			xm, ok := x.(map[string]any)
			if !ok {
				f.errs = append(f.errs, field.Invalid(item, typeName(x), "got "+typeName(x)+", want object"))
				continue
			}
			f.object(xm, item, l, i, depth+1)
		}
	default:
		if tk, ok := typedKinds[gk]; ok && tk.apiVersion == apiVersion {
			f.typed(m, at, tk)
			return
		}
		for _, r := range customKinds {
			if r.Group == gk.group && r.Kind == gk.kind {
				f.custom(m, at, apiVersion, kind, []Rule{r})
				return
			}
		}
	}
}

// childOf returns at.Child(name), or a root path of name when at is nil.
func childOf(at *field.Path, name string) *field.Path {
	if at == nil {
		return field.NewPath(name)
	}
	return at.Child(name)
}

// rules returns the user's rules for gk.
func (f *finder) rules(gk groupKind) []Rule {
	var out []Rule
	for _, r := range f.opts.Rules {
		if r.Group == gk.group && r.Kind == gk.kind {
			out = append(out, r)
		}
	}
	return out
}

// pod adds a pod.
func (f *finder) pod(m map[string]any, at *field.Path, list []any, index int) {
	v, err := convert.FromGo(m)
	if err != nil {
		f.errs = append(f.errs, field.Invalid(at, nil, err.Error()))
		return
	}
	pod := new(corev1.Pod)
	errs, err := convert.Decode(v, pod, at, nil)
	if err != nil {
		f.errs = append(f.errs, field.Invalid(at, nil, err.Error()))
		return
	}
	if len(errs) > 0 {
		f.errs = append(f.errs, errs...)
		return
	}
	f.o.Templates = append(f.o.Templates, &Template{Pod: pod, Path: at, m: m, list: list, index: index,
		defaults: convert.PodDefaultsOf(m)})
}

// workloadOf returns the Workload of the object m for a template at path.
func workloadOf(m map[string]any, apiVersion, kind, path string) *Workload {
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	return &Workload{APIVersion: apiVersion, Kind: kind, Name: name, Namespace: ns, Path: path}
}

// typed decodes an object of a kind of k8s.io/api strictly and adds its templates.
func (f *finder) typed(m map[string]any, at *field.Path, tk typedKind) {
	v, err := convert.FromGo(m)
	if err != nil {
		f.errs = append(f.errs, field.Invalid(at, nil, err.Error()))
		return
	}
	obj := tk.new()
	errs, err := convert.Decode(v, obj, at, nil)
	if err != nil {
		f.errs = append(f.errs, field.Invalid(at, nil, err.Error()))
		return
	}
	if len(errs) > 0 {
		f.errs = append(f.errs, errs...)
		return
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	for _, tt := range tk.templates(obj) {
		locs, _ := typedPaths[tt.path].walk(m, at) // decoded: the types on the way are right
		if len(locs) == 0 {
			continue // no template written: nothing to apply to
		}
		f.add(m, locs[0], apiVersion, kind, tt.path, tt.t)
	}
}

// custom adds the templates of a custom resource at the paths of rules, each decoded
// strictly as a corev1.PodTemplateSpec. It returns the number of values the paths reached,
// templates or not.
func (f *finder) custom(m map[string]any, at *field.Path, apiVersion, kind string, rules []Rule) int {
	reached := 0
	for _, r := range rules {
		for _, p := range r.Paths {
			locs, errs := p.walk(m, at)
			reached += len(locs) + len(errs)
			f.errs = append(f.errs, errs...)
			rels, _ := p.walk(m, nil) // the same templates, in the same order
			for j, loc := range locs {
				v, err := convert.FromGo(loc.m)
				if err != nil {
					f.errs = append(f.errs, field.Invalid(loc.path, nil, err.Error()))
					continue
				}
				t := new(corev1.PodTemplateSpec)
				errs, err := convert.Decode(v, t, loc.path, nil)
				if err != nil {
					f.errs = append(f.errs, field.Invalid(loc.path, nil, err.Error()))
					continue
				}
				if len(errs) > 0 {
					f.errs = append(f.errs, errs...)
					continue
				}
				f.add(m, loc, apiVersion, kind, rels[j].path.String(), t)
			}
		}
	}
	return reached
}

// add adds the template t, found at loc in the object m.
func (f *finder) add(m map[string]any, loc found, apiVersion, kind, rel string, t *corev1.PodTemplateSpec) {
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	pod.APIVersion, pod.Kind = "v1", "Pod"
	f.o.Templates = append(f.o.Templates, &Template{
		Pod:      pod,
		Workload: workloadOf(m, apiVersion, kind, rel),
		Path:     loc.path,
		m:        loc.m,
		defaults: convert.PodDefaultsOf(loc.m),
	})
}

// Put writes pod, the result of an overlay applied to o.Templates[i].Pod, into the document.
// A result equal to the template (see [Unchanged]) leaves the document as it was. A
// result that breaks the rules of templates (a name, a namespace or a status that the
// template did not hold, or another kind than v1 Pod) is an *Error, and writes nothing.
func (o *Object) Put(i int, pod *corev1.Pod) error {
	t := o.Templates[i]
	if Unchanged(t.Pod, pod) {
		return nil
	}
	if t.Workload == nil {
		return o.putPod(t, pod)
	}
	meta := t.Path.Child("metadata")
	var errs field.ErrorList
	if pod.APIVersion != "v1" || pod.Kind != "Pod" {
		errs = append(errs, field.Invalid(t.Path, pod.APIVersion+"/"+pod.Kind, "got apiVersion "+pod.APIVersion+" and kind "+pod.Kind+", want v1 Pod for a pod template"))
	}
	if pod.Name != t.Pod.Name {
		errs = append(errs, field.Forbidden(meta.Child("name"), fmt.Sprintf("a pod template has no name: got %q", pod.Name)))
	}
	if pod.Namespace != t.Pod.Namespace {
		errs = append(errs, field.Forbidden(meta.Child("namespace"), fmt.Sprintf("a pod template has no namespace: got %q", pod.Namespace)))
	}
	if !apiequality.Semantic.DeepEqual(pod.Status, corev1.PodStatus{}) {
		errs = append(errs, field.Forbidden(t.Path.Child("status"), "a pod template has no status"))
	}
	if len(errs) > 0 {
		return o.errorOf(errs)
	}
	v, err := untyped(&corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}, t.defaults)
	if err != nil {
		return o.errorOf(field.ErrorList{field.InternalError(t.Path, err)})
	}
	if m, _ := v["metadata"].(map[string]any); len(m) == 0 {
		if _, held := t.m["metadata"]; !held {
			delete(v, "metadata") // as an empty status: not written unless it was
		}
	}
	for _, k := range []string{"metadata", "spec"} {
		if x, ok := v[k]; ok {
			t.m[k] = x
		} else {
			delete(t.m, k)
		}
	}
	t.Pod = pod
	o.changed = true
	return nil
}

// putPod writes the result of a pod.
func (o *Object) putPod(t *Template, pod *corev1.Pod) error {
	v, err := untyped(pod, t.defaults)
	if err != nil {
		return o.errorOf(field.ErrorList{field.InternalError(t.Path, err)})
	}
	if t.list != nil {
		t.list[t.index] = v
	} else {
		o.Root = v
	}
	t.m, t.Pod = v, pod
	o.changed = true
	return nil
}

// errorOf returns the *Error of errs in the document.
func (o *Object) errorOf(errs field.ErrorList) error {
	return errorOf(o.Root, errs)
}

// errorOf returns the *Error of errs in the document obj.
func errorOf(obj any, errs field.ErrorList) error {
	m, _ := obj.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	kind, _ := m["kind"].(string)
	e := &Error{Kind: kind, Name: name, Fields: errs}
	if len(errs) > MaxErrors {
		e.Fields, e.More = errs[:MaxErrors], len(errs)-MaxErrors
	}
	return e
}

// untyped returns the untyped data of v (a pod or a template) as JSON gives it, without the
// empty defaults that d's data did not hold.
func untyped(v any, d *convert.PodDefaults) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	out, ok := x.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("got %s, want an object", typeName(x))
	}
	d.Remove(out)
	return out, nil
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

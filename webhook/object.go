package webhook

// This file defines the admitted object as the webhook sees it: the pods overlays change in
// it, and how it is encoded again. It is the one place that knows object kinds.

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/workload"
)

// An object is an admitted object: its labels, which rules match on, and the pods in it that
// overlays change. A Pod is its own one pod; a workload's pods are its pod templates.
type object interface {
	// name returns the object's name, or the prefix of the name to generate.
	name() string
	labels() map[string]string
	pods() []*corev1.Pod
	// workloads returns ctx.workload of each pod, in the order of pods: nil for a Pod.
	workloads() []*engine.Workload
	// check reports whether pods, results of overlays for the pods, can be written back: a
	// pod template has no name, no namespace and no status. The error names the field path.
	check([]*corev1.Pod) error
	// setPods replaces the pods, in the order pods returned them. Its error is check's.
	setPods([]*corev1.Pod) error
	// encode returns the object as JSON.
	encode() ([]byte, error)
}

// kindOf returns the kind of an admitted object as match.kinds names it: KIND for the core
// group (Pod), GROUP/KIND otherwise (apps/Deployment, batch.volcano.sh/Job), as the left
// side of a --pod-template rule.
func kindOf(gvk metav1.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Group + "/" + gvk.Kind
}

// decodeObject decodes raw, an object of kind (as kindOf names it) in namespace. A Pod is
// decoded as a corev1.Pod. Any other kind is given to internal/workload, which finds its pod
// templates (a Deployment's, a Job's, a Volcano Job's, and those opts' rules name) and puts
// the results back; everything around the templates is kept as the API server sent it.
func decodeObject(kind, namespace string, raw []byte, opts *workload.Options) (object, error) {
	if kind == "Pod" {
		p := new(corev1.Pod)
		// The API server sends objects it has decoded and defaulted: a case-sensitive decode
		// that keeps integers as they are reads them as the server wrote them.
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, p); err != nil {
			return nil, fmt.Errorf("decoding the Pod: %w", err)
		}
		return &podObject{p}, nil
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", kind, err)
	}
	o, err := workload.Find(doc, opts)
	if err != nil {
		return nil, fmt.Errorf("the %s: %w", kind, err)
	}
	w := &workloadObject{o: o, kind: kind, namespace: namespace, raw: raw, opts: opts}
	for _, t := range o.Templates {
		if t.Workload == nil {
			// Find gives pods for a v1 Pod or List only; the API server admits neither here.
			return nil, fmt.Errorf("kind %s: holds a pod, not a pod template", kind)
		}
		ns := t.Workload.Namespace
		if ns == "" {
			ns = namespace // the API server may send a new object without its namespace
		}
		w.envs = append(w.envs, &engine.Workload{Kind: t.Workload.Kind, APIVersion: t.Workload.APIVersion,
			Name: t.Workload.Name, Namespace: ns, Path: t.Workload.Path})
	}
	if m, ok := doc.(map[string]any); ok {
		if meta, ok := m["metadata"].(map[string]any); ok {
			w.nm, _ = meta["name"].(string)
			if w.nm == "" {
				w.nm, _ = meta["generateName"].(string)
			}
			if l, ok := meta["labels"].(map[string]any); ok {
				w.lbls = make(map[string]string, len(l))
				for k, v := range l {
					if s, ok := v.(string); ok {
						w.lbls[k] = s
					}
				}
			}
		}
	}
	return w, nil
}

// podObject is an admitted Pod.
type podObject struct{ pod *corev1.Pod }

func (o *podObject) labels() map[string]string { return o.pod.Labels }
func (o *podObject) name() string {
	if o.pod.Name != "" {
		return o.pod.Name
	}
	return o.pod.GenerateName
}
func (o *podObject) pods() []*corev1.Pod           { return []*corev1.Pod{o.pod} }
func (o *podObject) workloads() []*engine.Workload { return []*engine.Workload{nil} }
func (o *podObject) check([]*corev1.Pod) error     { return nil }
func (o *podObject) setPods(p []*corev1.Pod) error { o.pod = p[0]; return nil }
func (o *podObject) encode() ([]byte, error)       { return json.Marshal(o.pod) }

// workloadObject is an admitted object that holds pod templates. Its labels are the
// workload's own (metadata.labels), not its templates': a rule selects the object the user
// created.
type workloadObject struct {
	o    *workload.Object
	nm   string
	lbls map[string]string
	envs []*engine.Workload
	// what decodeObject was given, for check
	kind, namespace string
	raw             []byte
	opts            *workload.Options
}

func (w *workloadObject) name() string                  { return w.nm }
func (w *workloadObject) labels() map[string]string     { return w.lbls }
func (w *workloadObject) workloads() []*engine.Workload { return w.envs }

func (w *workloadObject) pods() []*corev1.Pod {
	out := make([]*corev1.Pod, len(w.o.Templates))
	for i, t := range w.o.Templates {
		out[i] = t.Pod
	}
	return out
}

// check puts pods into a copy of the object decoded anew: Object.Put is where the rules of
// templates are, and it writes what it checks.
func (w *workloadObject) check(pods []*corev1.Pod) error {
	c, err := decodeObject(w.kind, w.namespace, w.raw, w.opts)
	if err != nil {
		return err
	}
	return c.setPods(pods)
}

func (w *workloadObject) setPods(pods []*corev1.Pod) error {
	for i, p := range pods {
		if err := w.o.Put(i, p); err != nil {
			return err
		}
	}
	return nil
}

// encode returns the document with the results Put wrote; its keys are sorted, and every
// field the API server sent is kept.
func (w *workloadObject) encode() ([]byte, error) { return json.Marshal(w.o.Root) }

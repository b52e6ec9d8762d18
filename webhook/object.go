package webhook

// This file defines the admitted object as the webhook sees it: the pods overlays change in
// it, and how it is encoded again. It is the one place that knows object kinds.

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

// An object is an admitted object: its labels, which rules match on, and the pods in it that
// overlays change. A Pod is its own one pod; a workload's pods are its pod templates.
type object interface {
	labels() map[string]string
	pods() []*corev1.Pod
	// setPods replaces the pods, in the order pods returned them.
	setPods([]*corev1.Pod)
	// encode returns the object as JSON, as the API server would encode it.
	encode() ([]byte, error)
}

// decodeObject decodes raw, an object of kind. It is where pod templates of workload kinds
// plug in: internal/workload finds the pod templates of a Deployment, a Job, a Volcano Job
// and the rest, and a workload object wraps them as pods (with the template's metadata and
// spec) so that the same overlays and the same patch code serve them. The kinds it knows
// are listed in kinds (config.go).
func decodeObject(kind string, raw []byte) (object, error) {
	switch kind {
	case "Pod":
		p := new(corev1.Pod)
		// The API server sends objects it has decoded and defaulted: a case-sensitive decode
		// that keeps integers as they are reads them as the server wrote them.
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, p); err != nil {
			return nil, fmt.Errorf("decoding the Pod: %v", err)
		}
		return &podObject{p}, nil
	}
	return nil, fmt.Errorf("kind %s: not mutated by starpod (want one of %v)", kind, kinds)
}

// podObject is an admitted Pod.
type podObject struct{ pod *corev1.Pod }

func (o *podObject) labels() map[string]string { return o.pod.Labels }
func (o *podObject) pods() []*corev1.Pod       { return []*corev1.Pod{o.pod} }
func (o *podObject) setPods(p []*corev1.Pod)   { o.pod = p[0] }
func (o *podObject) encode() ([]byte, error)   { return json.Marshal(o.pod) }

package engine

// This file defines how the pods that cross between a worker and its parent are decoded,
// reusing what the pod before had in common with them.

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
)

// The parts of a pod a podDecoder reuses: the fields of the Pod message, by their numbers in
// k8s.io/api's protobuf encoding.
const (
	podMetadata = 1 // ObjectMeta
	podSpec     = 2 // PodSpec
	podStatus   = 3 // PodStatus
	podParts    = 3
)

// A podDecoder decodes pods sent by a worker's parent or answered by a worker (see decodePod).
// The pods of one call are mostly alike: the replicas of a role, the pods of a workload, the
// documents of a stream differ in their metadata and share their spec. A pod whose spec (or
// metadata, or status) is encoded in the same bytes as the last pod's takes it from that pod
// rather than decoding it again, and a pod encoded as the last one was is that pod again.
//
// A worker's decoder shares what it takes: nothing in a worker changes a pod it was sent
// (Apply and Explain do not). A parent's decoder (copy) takes deep copies, so that every pod
// it returns is its caller's, and forgets the last pod before each call (forget), once its
// caller may have changed it.
type podDecoder struct {
	copy  bool             // whether to deep-copy what it takes from the last pod
	pod   *corev1.Pod      // the pod decoded last, or nil
	data  []byte           // its encoding: a pod message without its ctx
	parts [podParts][]byte // the encodings of its parts (slices of data), nil for none or if not split
}

// forget forgets the last pod.
func (d *podDecoder) forget() {
	d.pod = nil
}

// decode decodes a pod message without its ctx, as decodePod does.
func (d *podDecoder) decode(data []byte) (*corev1.Pod, error) {
	if d.pod != nil && bytes.Equal(data, d.data) {
		if d.copy {
			return d.pod.DeepCopy(), nil
		}
		return d.pod, nil
	}
	last, lastParts := d.pod, d.parts
	d.pod, d.parts = nil, [podParts][]byte{}
	kind, apiVersion, proto, err := podFields(data)
	if err != nil {
		return nil, err
	}
	head := cap(data) - cap(proto) // where proto begins in data, of which it is a slice
	spans, ok := splitPod(proto)
	var pod *corev1.Pod
	if !ok || last == nil {
		// Nothing to reuse, or an encoding other than a Pod's one metadata, spec and status
		// (which Marshal never writes): the generated decoder has the last word on it.
		var err error
		if pod, err = decodePod(data); err != nil {
			return nil, err
		}
	} else {
		pod = &corev1.Pod{}
		for i, s := range spans {
			if !s.ok {
				continue
			}
			p := data[head+s.start : head+s.end]
			if lastParts[i] != nil && bytes.Equal(p, lastParts[i]) {
				d.take(pod, i+1, last)
			} else if err := decodePart(pod, i+1, p); err != nil {
				return nil, err
			}
		}
		pod.Kind, pod.APIVersion = string(kind), string(apiVersion)
	}
	d.pod = pod
	d.data = append(d.data[:0], data...)
	for i, s := range spans {
		if ok && s.ok {
			d.parts[i] = d.data[head+s.start : head+s.end : head+s.end]
		}
	}
	return pod, nil
}

// take sets the part num of pod to last's.
func (d *podDecoder) take(pod *corev1.Pod, num int, last *corev1.Pod) {
	switch {
	case num == podMetadata && d.copy:
		last.ObjectMeta.DeepCopyInto(&pod.ObjectMeta)
	case num == podMetadata:
		pod.ObjectMeta = last.ObjectMeta
	case num == podSpec && d.copy:
		last.Spec.DeepCopyInto(&pod.Spec)
	case num == podSpec:
		pod.Spec = last.Spec
	case d.copy:
		last.Status.DeepCopyInto(&pod.Status)
	default:
		pod.Status = last.Status
	}
}

// decodePart sets the part num of pod to what its encoding p decodes to.
func decodePart(pod *corev1.Pod, num int, p []byte) error {
	switch num {
	case podMetadata:
		return pod.ObjectMeta.Unmarshal(p)
	case podSpec:
		return pod.Spec.Unmarshal(p)
	default:
		return pod.Status.Unmarshal(p)
	}
}

// A span is where a part is in an encoding, if it is there (ok).
type span struct {
	start, end int
	ok         bool
}

// splitPod returns where the parts of a Pod's protobuf encoding b are, and whether b is made
// of parts alone, each once at most, as Marshal writes it.
func splitPod(b []byte) (spans [podParts]span, ok bool) {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 || typ != protowire.BytesType || num < 1 || num > podParts || spans[num-1].ok {
			return spans, false
		}
		off += n
		v, n := protowire.ConsumeBytes(b[off:])
		if n < 0 {
			return spans, false
		}
		spans[num-1] = span{start: off + n - len(v), end: off + n, ok: true}
		off += n
	}
	return spans, true
}

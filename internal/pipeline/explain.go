package pipeline

// This file defines --explain: every field the overlays changed, with its old and new value
// and the overlay line that wrote it.

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

// explainBatch explains the apply of chain to each of pods, with envs[i] as the ctx of
// pods[i], as Chain.ApplyEach applies it, but stops at the first pod that fails: len(out) is
// then its index.
func explainBatch(ctx context.Context, chain engine.Chain, pods []*corev1.Pod, envs []*engine.Env) ([]*corev1.Pod, [][]engine.Change, error) {
	out := make([]*corev1.Pod, 0, len(pods))
	changes := make([][]engine.Change, 0, len(pods))
	for i, pod := range pods {
		res, c, err := chain.Explain(ctx, pod, envs[i])
		if err != nil {
			return out, changes, err
		}
		out, changes = append(out, res), append(changes, c)
	}
	return out, changes, nil
}

// explanation formats the changes of a pod or pod template of doc, headed by its file,
// document number and label (see templateLabel):
//
//	pods.yaml document 1: pod "a"
//	  gpu.star:3:26: spec.nodeSelector[pool]: (none) -> "gpu"
//
// one line per change, in the order of the overlays and, in each, of the fields. Nothing for
// a pod the overlays did not change. The paths of a template's changes are those of the pod
// the overlays saw.
func explanation(doc *stream.Document, label string, changes []engine.Change) []byte {
	if len(changes) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s document %d: %s\n", doc.File, doc.Index+1, label)
	for _, c := range changes {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return []byte(b.String())
}

// templateLabel names a pod template in explanations: `Deployment "web" spec.template`, or
// `pod "a" at items[0]` for a pod inside a List.
func templateLabel(t *workload.Template) string {
	if t.Workload == nil {
		return fmt.Sprintf("pod %q at %s", t.Pod.Name, t.Path)
	}
	return fmt.Sprintf("%s %q %s", t.Workload.Kind, t.Workload.Name, t.Path)
}

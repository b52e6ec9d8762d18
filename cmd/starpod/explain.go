package main

// This file defines --explain: every field the overlays changed, with its old and new value
// and the overlay line that wrote it.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/stream"
)

// explainBatch explains the apply of chain to each of pods, as Chain.ApplyBatch applies it:
// it stops at the first pod that fails, and len(out) is then its index.
func explainBatch(ctx context.Context, chain engine.Chain, pods []*corev1.Pod, env *engine.Env) ([]*corev1.Pod, [][]engine.Change, error) {
	out := make([]*corev1.Pod, 0, len(pods))
	changes := make([][]engine.Change, 0, len(pods))
	for _, pod := range pods {
		res, c, err := chain.Explain(ctx, pod, env)
		if err != nil {
			return out, changes, err
		}
		out, changes = append(out, res), append(changes, c)
	}
	return out, changes, nil
}

// explanation formats the changes of the pod of doc, headed by its file and document number:
//
//	pods.yaml document 1: pod "a"
//	  gpu.star:3:26: spec.nodeSelector[pool]: (none) -> "gpu"
//
// one line per change, in the order of the overlays and, in each, of the fields. Nothing for
// a pod the overlays did not change.
func explanation(doc *stream.Document, pod *corev1.Pod, changes []engine.Change) []byte {
	if len(changes) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s document %d: pod %q\n", doc.File, doc.Index+1, pod.Name)
	for _, c := range changes {
		pos := c.Overlay
		if c.Pos.IsValid() {
			pos = c.Pos.String()
		}
		fmt.Fprintf(&b, "  %s: %s: %s -> %s\n", pos, c.Path, explainValue(c.Old), explainValue(c.New))
	}
	return []byte(b.String())
}

// explainValue writes a value of a change as compact JSON, and an absent one as (none).
func explainValue(v any) string {
	if v == nil {
		return "(none)"
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

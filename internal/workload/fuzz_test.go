package workload

import (
	"strings"
	"testing"

	"github.com/starpod/starpod/internal/stream"
)

// FuzzParseRule checks that ParseRule never panics, and that the path of a rule it accepts
// parses again to the same path.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"example.com/Trainer=spec.workers[*].template", "Trainer=spec.*.template",
		"a/B=x[*][*].y", "=", "a/B=spec..t", "a/B=[*]", "/K=p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		for _, p := range r.Paths {
			again, err := ParsePath(p.String())
			if err != nil || len(again.steps) != len(p.steps) {
				t.Errorf("path %q: parsed again: %v, %d steps, want %d", p, err, len(again.steps), len(p.steps))
			}
		}
	})
}

// FuzzFind checks that Find never panics on a document, that every template it finds has a
// path, and that putting each template back unchanged changes nothing.
func FuzzFind(f *testing.F) {
	f.Add("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec: {template: {spec: {containers: [{name: a}]}}}\n")
	f.Add("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: p}}]\n")
	f.Add("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nspec: {tasks: [{template: {}}, 1]}\n")
	f.Add("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec: {pytorchReplicaSpecs: {A: {template: {metadata: {labels: {a: b}}}}}}\n")
	f.Fuzz(func(t *testing.T, text string) {
		doc, err := stream.NewReader("in.yaml", strings.NewReader(text)).Next()
		if err != nil {
			return
		}
		o, err := Find(doc.Object, &Options{Rules: []Rule{mustRule("example.com/T=spec.t[*].x.*")}})
		if err != nil {
			return
		}
		for i, tmpl := range o.Templates {
			if tmpl.Workload != nil && tmpl.Path == nil {
				t.Errorf("template %d has no path", i)
			}
			if err := o.Put(i, tmpl.Pod.DeepCopy()); err != nil {
				t.Errorf("putting template %d back: %v", i, err)
			}
		}
		if o.Changed() {
			t.Error("putting every template back unchanged changed the document")
		}
	})
}

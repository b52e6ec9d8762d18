package integration

// This file tests starpod fn as an exec KRM function of the real kustomize, built by the
// test from its module at a pinned version (see installTool).

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// pathEnv returns the environment that puts starpod on PATH, as a user installs it.
func pathEnv() []string {
	return []string{"PATH=" + filepath.Dir(starpodBin) + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// kustomization writes a kustomization with starpod fn as a transformer, and the overlay
// files the functionConfig names (relative to the kustomization), into a new directory: the
// files of docs/pipelines.md.
func kustomization(t *testing.T, overlay string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"kustomization.yaml": `resources:
- app.yaml
transformers:
- starpod.yaml
`,
		"app.yaml": kptApp + `---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: train
spec:
  minAvailable: 2
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers:
        - name: pytorch
          image: pytorch:2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  # the log level
  level: debug
`,
		"starpod.yaml": `apiVersion: starpod.dev/v1alpha1
kind: StarpodOverlay
metadata:
  name: team
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: starpod
        args: [fn]
spec:
  overlays: [overlays/team.star]
  args: {team: shop}
`,
		"overlays/team.star": overlay,
	}
	writeFiles(t, dir, files)
	return dir
}

// TestKustomizeExecFunction runs kustomize build with starpod fn as an exec KRM function:
// the overlay labels the Deployment's template and the Volcano Job's task template, and the
// ConfigMap comes out as it went in.
func TestKustomizeExecFunction(t *testing.T) {
	kustomize := installTool(t, "sigs.k8s.io/kustomize/kustomize/v5", kustomizeVersion, "kustomize")
	dir := kustomization(t, `def overlay(pod, ctx):
    pod["metadata"].setdefault("labels", {})["team"] = ctx.args["team"]
    pod["metadata"]["labels"]["workload"] = ctx.workload.kind
`)
	out := runTool(t, dir, pathEnv(), kustomize, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	docs := splitDocs(out)
	if len(docs) != 3 {
		t.Fatalf("got %d documents, want 3:\n%s", len(docs), out)
	}
	for _, doc := range docs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			mustUnmarshal(t, doc, &d)
			wantLabel(t, "Deployment", d.Spec.Template.Labels, "team", "shop")
			wantLabel(t, "Deployment", d.Spec.Template.Labels, "workload", "Deployment")
			for k := range d.Annotations {
				if strings.Contains(k, "config.kubernetes.io") {
					t.Errorf("Deployment: kustomize left annotation %s", k)
				}
			}
		case "Job":
			var j struct {
				Spec struct {
					Tasks []struct {
						Template corev1.PodTemplateSpec `json:"template"`
					} `json:"tasks"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal([]byte(doc), &j); err != nil {
				t.Fatal(err)
			}
			wantLabel(t, "Volcano Job", j.Spec.Tasks[0].Template.Labels, "team", "shop")
		case "ConfigMap":
			var cm corev1.ConfigMap
			mustUnmarshal(t, doc, &cm)
			if len(cm.Labels) > 0 || cm.Data["level"] != "debug" {
				t.Errorf("ConfigMap changed:\n%s", doc)
			}
		default:
			t.Errorf("unexpected document:\n%s", doc)
		}
	}
}

// TestKustomizeExecFunctionError checks that an overlay's error fails kustomize build, with
// starpod's message: the resource, the field path and the problem.
func TestKustomizeExecFunctionError(t *testing.T) {
	kustomize := installTool(t, "sigs.k8s.io/kustomize/kustomize/v5", kustomizeVersion, "kustomize")
	dir := kustomization(t, `def overlay(pod):
    pod["metadata"]["name"] = "named"
`)
	cmd := exec.Command(kustomize, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), pathEnv()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("kustomize build: got no error, want one; output:\n%s", stdout.Bytes())
	}
	want := "spec.template.metadata.name: Forbidden: a pod template has no name"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("kustomize build: stderr:\n%s\nwant it to hold %q", stderr.Bytes(), want)
	}
}

// Kustomize versions around the oldest that runs the function as docs/pipelines.md writes
// it: v5.6.0 refuses the function's exec.args, v5.7.0 takes them.
const (
	kustomizeOldest   = "v5.7.0"
	kustomizeTooOld   = "v5.6.0"
	kustomizeArgsFail = `unknown field "args"`
)

// TestKustomizeVersions runs the documented build with the oldest kustomize that works, and
// checks that the version before it fails as docs/pipelines.md says.
func TestKustomizeVersions(t *testing.T) {
	dir := kustomization(t, `def overlay(pod, ctx):
    pod["metadata"].setdefault("labels", {})["team"] = ctx.args["team"]
`)
	oldest := installTool(t, "sigs.k8s.io/kustomize/kustomize/v5", kustomizeOldest, "kustomize")
	out := runTool(t, dir, pathEnv(), oldest, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	found := false
	for _, doc := range splitDocs(out) {
		if strings.Contains(doc, "\nkind: Deployment\n") {
			var d appsv1.Deployment
			mustUnmarshal(t, doc, &d)
			wantLabel(t, "Deployment (kustomize "+kustomizeOldest+")", d.Spec.Template.Labels, "team", "shop")
			found = true
		}
	}
	if !found {
		t.Errorf("kustomize %s build: no Deployment in\n%s", kustomizeOldest, out)
	}

	old := installTool(t, "sigs.k8s.io/kustomize/kustomize/v5", kustomizeTooOld, "kustomize")
	cmd := exec.Command(old, "build", "--enable-alpha-plugins", "--enable-exec", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), pathEnv()...)
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), kustomizeArgsFail) {
		t.Errorf("kustomize %s build: got %v:\n%s\nwant it to refuse the function with %s, as docs/pipelines.md says", kustomizeTooOld, err, msg, kustomizeArgsFail)
	}
}

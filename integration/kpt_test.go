package integration

// This file runs the commands of docs/pipelines.md for kpt and for kubectl kustomize as
// they are written there, with the kpt and the kubectl installed on the machine: kpt cannot
// be built from its Go module (see the page), and kubectl's kustomize is the one people have.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The commands of docs/pipelines.md that these tests run, each through sh as a user types it.
const (
	kptEvalCommand       = `kpt fn eval . --exec "starpod fn --overlay-script team.star"`
	kptRenderCommand     = `kpt fn render shop --allow-exec`
	kubectlKustomizePipe = `kubectl kustomize . | starpod apply --overlay-script overlays/team.star`
	kubectlKustomizeExec = `kubectl kustomize --enable-alpha-plugins --enable-exec .`
)

// installed returns the path of a tool of the machine, preferring the one in /usr/bin, or
// skips the test saying loudly that what it tests was not tested.
func installed(t *testing.T, name, what string) string {
	t.Helper()
	path := filepath.Join("/usr/bin", name)
	if _, err := os.Stat(path); err != nil {
		if path, err = exec.LookPath(name); err != nil {
			t.Logf("!!! %s is not installed (not in /usr/bin, not on PATH): %s is NOT TESTED on this machine !!!", name, what)
			t.Skipf("%s is not installed: %s not tested", name, what)
		}
	}
	return path
}

// documented checks that docs/pipelines.md shows the command as it is written here: on a line
// of its own, in a block, or quoted in the text.
func documented(t *testing.T, command string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "pipelines.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("\n"+command+"\n")) && !bytes.Contains(doc, []byte("`"+command+"`")) {
		t.Errorf("docs/pipelines.md does not show the command %q: the test and the page disagree", command)
	}
}

// shell runs command with sh in dir, with tool's directory and starpod's first on PATH, and
// returns its standard output; a failure ends the test.
func shell(t *testing.T, dir, tool, command string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(starpodBin)+string(os.PathListSeparator)+
		filepath.Dir(tool)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, stderr.Bytes())
	}
	t.Logf("%s: %s", command, stderr.Bytes())
	return stdout.Bytes()
}

// writeFiles writes files (name → text) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The files of a package: a Deployment and a ConfigMap, and the overlay.
const (
	kptApp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`
	kptConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  level: debug # the log level
`
	kptOverlay = `def overlay(pod, ctx):
    pod["metadata"].setdefault("labels", {})["team"] = "shop"
    pod["metadata"]["labels"]["workload"] = ctx.workload.kind
`
)

// checkPackage checks the files of a package the overlay ran on: the Deployment's template
// labelled, the ConfigMap as it was.
func checkPackage(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	mustUnmarshal(t, string(data), &d)
	wantLabel(t, "Deployment", d.Spec.Template.Labels, "team", "shop")
	wantLabel(t, "Deployment", d.Spec.Template.Labels, "workload", "Deployment")
	cm, err := os.ReadFile(filepath.Join(dir, "settings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(cm) != kptConfigMap {
		t.Errorf("the ConfigMap changed:\n%s", cm)
	}
}

// TestKptFnEval runs kpt fn eval with starpod fn as its exec function, in the package.
func TestKptFnEval(t *testing.T) {
	kpt := installed(t, "kpt", "kpt fn eval --exec")
	documented(t, kptEvalCommand)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"app.yaml": kptApp, "settings.yaml": kptConfigMap, "team.star": kptOverlay})
	shell(t, dir, kpt, kptEvalCommand)
	checkPackage(t, dir)
}

// TestKptFnRender runs kpt fn render with --allow-exec on a package whose Kptfile names
// starpod fn and its config, from the package's parent directory: the config's overlays are
// found next to the config.
func TestKptFnRender(t *testing.T) {
	kpt := installed(t, "kpt", "kpt fn render --allow-exec")
	documented(t, kptRenderCommand)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "pipelines.md"))
	if err != nil {
		t.Fatal(err)
	}
	kptfile := `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: shop
pipeline:
  mutators:
  - exec: starpod fn
    configPath: starpod.yaml
`
	config := `apiVersion: starpod.dev/v1alpha1
kind: StarpodOverlay
metadata:
  name: team
spec:
  overlays: [team.star]   # relative to this file's directory, wherever kpt runs
`
	for _, text := range []string{kptfile, config} {
		if !bytes.Contains(doc, []byte(text)) {
			t.Errorf("docs/pipelines.md does not show this file as the test writes it:\n%s", text)
		}
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "shop")
	writeFiles(t, dir, map[string]string{"Kptfile": kptfile, "starpod.yaml": config,
		"app.yaml": kptApp, "settings.yaml": kptConfigMap, "team.star": kptOverlay})
	shell(t, parent, kpt, kptRenderCommand)
	checkPackage(t, dir)
}

// TestKubectlKustomize checks what docs/pipelines.md says of kubectl's kustomize: it has no
// --enable-exec, and its build piped through starpod apply changes the templates.
func TestKubectlKustomize(t *testing.T) {
	kubectl := installed(t, "kubectl", "kubectl kustomize")
	documented(t, kubectlKustomizePipe)
	documented(t, kubectlKustomizeExec)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"kustomization.yaml": "resources:\n- app.yaml\n- settings.yaml\n",
		"app.yaml":           kptApp, "settings.yaml": kptConfigMap,
		"overlays/team.star": kptOverlay,
	})
	out := shell(t, dir, kubectl, kubectlKustomizePipe)
	docs := splitDocs(out)
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2:\n%s", len(docs), out)
	}
	var cm corev1.ConfigMap
	var d appsv1.Deployment
	mustUnmarshal(t, docs[0], &cm)
	mustUnmarshal(t, docs[1], &d)
	if cm.Data["level"] != "debug" || len(cm.Labels) > 0 {
		t.Errorf("the ConfigMap changed:\n%s", docs[0])
	}
	wantLabel(t, "Deployment", d.Spec.Template.Labels, "team", "shop")

	cmd := exec.Command("sh", "-c", kubectlKustomizeExec)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "unknown flag: --enable-exec") {
		t.Errorf("%s: got %v:\n%s\nwant it refused with unknown flag: --enable-exec, as docs/pipelines.md says", kubectlKustomizeExec, err, msg)
	}
}

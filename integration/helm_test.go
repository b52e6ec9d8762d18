package integration

// This file tests starpod as a Helm post-renderer with the real Helm 3 and Helm 4, built by
// the test from their modules at pinned versions (see installTool), rendering
// testdata/chart with helm template: no cluster is needed.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// Pinned versions of the tools the tests build.
const (
	helm3Version     = "v3.22.0"
	helm4Version     = "v4.3.1"
	kustomizeVersion = "v5.8.2" // v5.8.3 needs Go 1.27
)

// installTool returns the path of the binary name built from pkg at version with go install
// through the Go module proxy. Binaries are cached between runs, keyed by package and version,
// under the user cache directory (starpod-tools/); on a cold machine the build takes minutes.
func installTool(t *testing.T, pkg, version, name string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	key := strings.NewReplacer("/", "_", ".", "_").Replace(pkg) + "@" + version
	dir := filepath.Join(cache, "starpod-tools", key)
	bin := filepath.Join(dir, name)
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), key+".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "install", pkg+"@"+version)
	cmd.Dir = tmp // outside any module: go install pkg@version ignores the current one anyway
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s@%s: %v\n%s", pkg, version, err, out)
	}
	t.Logf("built %s@%s in %s", pkg, version, time.Since(start).Round(time.Second))
	// Another test process may have won the race: either binary will do.
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(bin); serr != nil {
			t.Fatalf("caching %s: %v", name, err)
		}
	}
	return bin
}

// runTool runs a tool with env added to the test's environment and returns its standard
// output; a failure ends the test with its standard error.
func runTool(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// helmEnv returns the environment of a Helm with its own empty home, and starpod on PATH.
// HELM_PLUGINS is HELM_DATA_HOME/plugins: Helm 4.3.1 installs plugins there whatever
// HELM_PLUGINS says, and looks for them in HELM_PLUGINS.
func helmEnv(t *testing.T) []string {
	home := t.TempDir()
	return []string{
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
		"HELM_PLUGINS=" + filepath.Join(home, "data", "plugins"),
		pathEnv()[0],
	}
}

// splitDocs splits a YAML stream at its --- lines.
func splitDocs(data []byte) []string {
	var docs []string
	for _, d := range strings.Split("\n"+string(data), "\n---\n") {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, strings.TrimPrefix(d, "\n"))
		}
	}
	return docs
}

// checkRendered checks the chart rendered through team.star: every pod template of the
// Deployment, StatefulSet and CronJob labelled, the CronJob's pods on the batch pool, and the
// ConfigMap and Service documents byte for byte as plain, Helm's output without starpod.
func checkRendered(t *testing.T, plain, got []byte) {
	t.Helper()
	plainDocs := splitDocs(plain)
	gotDocs := splitDocs(got)
	if len(gotDocs) != len(plainDocs) {
		t.Fatalf("got %d documents, want %d:\n%s", len(gotDocs), len(plainDocs), got)
	}
	kinds := map[string]int{}
	for i, doc := range gotDocs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("document %d: %v\n%s", i, err, doc)
		}
		kinds[meta.Kind]++
		switch meta.Kind {
		case "Deployment":
			var d appsv1.Deployment
			mustUnmarshal(t, doc, &d)
			wantLabel(t, "Deployment", d.Spec.Template.Labels, "app", "web")
			wantLabel(t, "Deployment", d.Spec.Template.Labels, "team", "shop")
		case "StatefulSet":
			var s appsv1.StatefulSet
			mustUnmarshal(t, doc, &s)
			wantLabel(t, "StatefulSet", s.Spec.Template.Labels, "team", "shop")
		case "CronJob":
			var c batchv1.CronJob
			mustUnmarshal(t, doc, &c)
			pod := c.Spec.JobTemplate.Spec.Template
			wantLabel(t, "CronJob", pod.Labels, "team", "shop")
			wantLabel(t, "CronJob", pod.Spec.NodeSelector, "pool", "batch")
		case "ConfigMap", "Service":
			// Untouched: the document as Helm wrote it, comments and all.
			if doc != plainDocs[i] {
				t.Errorf("%s changed:\ngot:\n%s\nwant:\n%s", meta.Kind, doc, plainDocs[i])
			}
			if meta.Kind == "ConfigMap" && (!strings.Contains(doc, "# the log level of the web tier") || !strings.Contains(doc, "# debug until launch")) {
				t.Errorf("ConfigMap lost its comments:\n%s", doc)
			}
		}
		if !strings.HasPrefix(doc, "# Source: shop/templates/") {
			t.Errorf("document %d lost its # Source: line:\n%s", i, doc)
		}
	}
	for _, k := range []string{"Deployment", "StatefulSet", "CronJob", "ConfigMap", "Service"} {
		if kinds[k] != 1 {
			t.Errorf("got %d %s documents, want 1", kinds[k], k)
		}
	}
}

func mustUnmarshal(t *testing.T, doc string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}

func wantLabel(t *testing.T, kind string, m map[string]string, k, v string) {
	t.Helper()
	if m[k] != v {
		t.Errorf("%s: %s = %q, want %q (all: %v)", kind, k, m[k], v, m)
	}
}

// overlayFile returns the absolute path of a file of testdata.
func overlayFile(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHelm3PostRenderer renders the chart with Helm 3 and starpod as its --post-renderer
// executable, as the README shows.
func TestHelm3PostRenderer(t *testing.T) {
	helm := installTool(t, "helm.sh/helm/v3/cmd/helm", helm3Version, "helm")
	env := helmEnv(t)
	chart := overlayFile(t, "chart")
	plain := runTool(t, "", env, helm, "template", "shop", chart)
	got := runTool(t, "", env, helm, "template", "shop", chart,
		"--post-renderer", "starpod", // found on PATH
		"--post-renderer-args", "apply",
		"--post-renderer-args", "--overlay-script="+overlayFile(t, "team.star"))
	checkRendered(t, plain, got)
}

// TestHelm4PostRenderer installs the postrenderer/v1 plugin of plugins/starpod into Helm 4
// and renders the chart through it.
func TestHelm4PostRenderer(t *testing.T) {
	helm := installTool(t, "helm.sh/helm/v4/cmd/helm", helm4Version, "helm")
	env := helmEnv(t)
	plugin, err := filepath.Abs(filepath.Join("..", "plugins", "starpod"))
	if err != nil {
		t.Fatal(err)
	}
	runTool(t, "", env, helm, "plugin", "install", plugin)
	if out := runTool(t, "", env, helm, "plugin", "list"); !bytes.Contains(out, []byte("starpod")) {
		t.Fatalf("helm plugin list:\n%s\nwant starpod", out)
	}
	// Helm 4 parses what a post-renderer writes and prints it anew (a comment after a value
	// gets one space before it), so the documents starpod leaves alone are compared with what
	// a post-renderer that changes nothing, cat, gives.
	cat := filepath.Join(t.TempDir(), "cat")
	if err := os.MkdirAll(cat, 0o755); err != nil {
		t.Fatal(err)
	}
	catPlugin := "apiVersion: v1\nname: cat\ntype: postrenderer/v1\nruntime: subprocess\nversion: 0.1.0\n" +
		"runtimeConfig:\n  platformCommand:\n  - command: cat\n"
	if err := os.WriteFile(filepath.Join(cat, "plugin.yaml"), []byte(catPlugin), 0o644); err != nil {
		t.Fatal(err)
	}
	runTool(t, "", env, helm, "plugin", "install", cat)
	chart := overlayFile(t, "chart")
	plain := runTool(t, "", env, helm, "template", "shop", chart, "--post-renderer", "cat")
	got := runTool(t, "", env, helm, "template", "shop", chart,
		"--post-renderer", "starpod",
		"--post-renderer-args", "--overlay-script="+overlayFile(t, "team.star"))
	checkRendered(t, plain, got)

	// An overlay that fails fails the render. Helm 4.3.1 keeps a plugin's standard error to
	// itself (it gives the subprocess a buffer and prints only "exited with error"), so
	// starpod's message cannot reach the user through Helm; docs/pipelines.md says so.
	bad := filepath.Join(t.TempDir(), "bad.star")
	if err := os.WriteFile(bad, []byte("def overlay(pod):\n    fail(\"no\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helm, "template", "shop", chart, "--post-renderer", "starpod", "--post-renderer-args", "--overlay-script="+bad)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte(`plugin "starpod" exited with error`)) || bytes.Contains(out, []byte("kind:")) {
		t.Errorf("helm template with a failing overlay: %v\n%s\nwant it to fail, naming the plugin, and render nothing", err, out)
	}
}

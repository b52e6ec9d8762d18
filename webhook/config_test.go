package webhook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReload: a changed overlay takes effect; a broken one is refused and the last good one
// keeps serving.
func TestReload(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	ctx := context.Background()
	if err := f.srv.Reload(ctx); err != nil {
		t.Fatalf("reload of unchanged files: %v", err)
	}
	f.write("gpu.star", strings.Replace(gpuOverlay, `"cloud.example.com/pool"`, `"pool"`, 1))
	if err := f.srv.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	req := podRequest(t, trainerPod)
	pod, _ := patched(t, req, f.review(req))
	if pod.Spec.NodeSelector["pool"] != "a100" {
		t.Errorf("after reload: nodeSelector %v, want pool=a100", pod.Spec.NodeSelector)
	}
	f.write("gpu.star", "def overlay(pod):\n    pod[\n")
	err := f.srv.Reload(ctx)
	if err == nil || !strings.Contains(err.Error(), "gpu.star:3:1: got outdent") {
		t.Fatalf("broken overlay: reload error %v, want its position", err)
	}
	f.srv.Reload(ctx) // the same broken file: logged and counted once
	pod, _ = patched(t, req, f.review(req))
	if pod.Spec.NodeSelector["pool"] != "a100" {
		t.Errorf("after a refused reload: nodeSelector %v, want the last good overlay's", pod.Spec.NodeSelector)
	}
	if n := strings.Count(f.logBuf.String(), "config refused"); n != 1 {
		t.Errorf("refusal logged %d times, want once", n)
	}
	// A broken config is refused as well; a good one after it is taken.
	f.write("config.yaml", gpuConfig+"  onError: Sometimes\n")
	f.write("gpu.star", gpuOverlay)
	if err := f.srv.Reload(ctx); err == nil || !strings.Contains(err.Error(), "rules[0].onError") {
		t.Fatalf("broken config: %v, want the field path", err)
	}
	f.write("config.yaml", gpuConfig)
	if err := f.srv.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	pod, _ = patched(t, req, f.review(req))
	if pod.Spec.NodeSelector["cloud.example.com/pool"] != "a100" {
		t.Errorf("after the fix: nodeSelector %v", pod.Spec.NodeSelector)
	}
}

// TestReloadModule: a change to a module an overlay loads is a change too.
func TestReloadModule(t *testing.T) {
	f := newFixture(t, map[string]string{
		"config.yaml": gpuConfig,
		"gpu.star":    "load('lib.star', 'pool')\ndef overlay(pod):\n    set_node_selector(pod, 'pool', pool)\n",
		"lib.star":    "pool = 'v1'\n",
	}, nil)
	f.write("lib.star", "pool = 'v2'\n")
	if err := f.srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := podRequest(t, trainerPod)
	pod, _ := patched(t, req, f.review(req))
	if pod.Spec.NodeSelector["pool"] != "v2" {
		t.Errorf("nodeSelector %v, want the changed module's pool=v2", pod.Spec.NodeSelector)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"apiVersion: v1\nkind: WebhookConfig\n", `apiVersion: Unsupported value: "v1"`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrulez: []\n", `unknown field "rulez"`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: A\n  overlays: [a.star]\n", "rules[0].name: Invalid value"},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n", "rules[0].overlays: Required"},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [../a.star]\n", "rules[0].overlays[0]: Invalid value"},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n  match: {kinds: [Deployment]}\n", `rules[0].match.kinds[0]: Invalid value: "Deployment": want Pod or the GROUP/KIND of a workload (podTemplates names more) (did you mean "apps/Deployment"?)`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n- name: a\n  overlays: [a.star]\n", "rules[1].name: Duplicate value"},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [missing.star]\n", "rule a: "},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n  match: {labelSelector: {matchExpressions: [{key: x, operator: Near}]}}\n", "rules[0].match.labelSelector"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.star"), []byte("def overlay(pod):\n    pass\n"), 0o644)
		file := filepath.Join(dir, "config.yaml")
		os.WriteFile(file, []byte(tc.config), 0o644)
		_, err := New(context.Background(), file, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "config.yaml") && !strings.Contains(err.Error(), "missing.star") {
			t.Errorf("config %q: got %v, want an error with %q naming the file", tc.config, err, tc.want)
		}
	}
}

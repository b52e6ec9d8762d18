package webhook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
		{"apiVersion: v1\nkind: WebhookConfig\n", `config.yaml:1:13: apiVersion: got "v1", want one of "starpod.dev/v1alpha1"`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrulez: []\n", `config.yaml:3:1: rulez: unknown field; did you mean "rules"?`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: A\n  overlays: [a.star]\n", `config.yaml:4:9: rules[0].name: got "A", a lowercase RFC 1123 label`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n", "config.yaml:4:3: rules[0].overlays: required: a rule applies at least one overlay"},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [../a.star]\n", `config.yaml:5:14: rules[0].overlays[0]: got "../a.star", want a file inside`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n  match: {kinds: [Deployment]}\n", `config.yaml:6:19: rules[0].match.kinds[0]: got "Deployment", want Pod or the GROUP/KIND of a workload (podTemplates names more) (did you mean "apps/Deployment"?)`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n- name: a\n  overlays: [a.star]\n", `config.yaml:6:9: rules[1].name: "a" given twice`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [missing.star]\n", "rule a: "},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n  onErorr: Fail\n", `config.yaml:6:3: rules[0].onErorr: unknown field; did you mean "onError"?`},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n  match: {labelSelector: {matchLabel: {a: b}}}\n", `config.yaml:6:27: rules[0].match.labelSelector.matchLabel: unknown field; did you mean "matchLabels"?`},
		{"", "config.yaml: got an empty file, want an overlay webhook config"},
		{"apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: a\n  overlays: [a.star]\n  match: {labelSelector: {matchExpressions: [{key: x, operator: Near}]}}\n", `config.yaml:6:26: rules[0].match.labelSelector: "Near" is not a valid label selector operator`},
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

// TestHostileReload: a config of one long anchored string and thousands of aliases to it,
// written while the webhook serves, is refused with its bound, decoding it allocates little,
// and the last good config keeps serving.
func TestHostileReload(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	ctx := context.Background()
	for _, tc := range []struct{ name, config, want string }{
		{"aliases of a long string", hostileString(), "config.yaml:13:9: rules[0].args[a3]: the values add up to more than 1Mi of text here (aliases repeat them)"},
		{"aliases of aliases", hostileLaughs(), "aliases add more than the limit of"},
		{"over 1 MiB", gpuConfig + "#" + strings.Repeat("x", 1<<20), "config is larger than the limit of 1Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.config) > 2<<20 {
				t.Fatalf("the hostile config is %d bytes", len(tc.config))
			}
			f.write("config.yaml", tc.config)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := f.srv.Reload(ctx)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("reload: %v, want %q", err, tc.want)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
				t.Errorf("refusing it allocated %d MiB", n>>20)
			}
			req := podRequest(t, trainerPod)
			if pod, _ := patched(t, req, f.review(req)); pod.Spec.NodeSelector["cloud.example.com/pool"] != "a100" {
				t.Errorf("the last good config does not serve: nodeSelector %v", pod.Spec.NodeSelector)
			}
		})
	}
}

// hostileString is a config under 1 MiB whose args are one 256 KiB anchored string and 4,000
// aliases to it: a gigabyte of text.
func hostileString() string {
	var b strings.Builder
	b.WriteString(strings.Replace(gpuConfig, "  args: {pool: a100}\n", "", 1))
	b.WriteString("  args:\n    pool: a100\n    a0: &s " + strings.Repeat("x", 256<<10) + "\n")
	for i := 1; i < 4000; i++ {
		fmt.Fprintf(&b, "    a%d: *s\n", i)
	}
	return b.String()
}

// hostileLaughs is a config whose podTemplates are ten lists of ten aliases of the list
// before, nine deep: a billion values.
func hostileLaughs() string {
	var b strings.Builder
	b.WriteString(strings.Replace(gpuConfig, "  args: {pool: a100}\n", "", 1))
	b.WriteString("x:\n  - &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  - &l%d [%s]\n", i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", "))
	}
	b.WriteString("podTemplates: *l9\n")
	return b.String()
}

package webhook

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// TestDeploy decodes deploy/ strictly into the Kubernetes types and checks what
// docs/webhook.md promises of it; the ConfigMap's config must be examples/webhook's, and
// must compile.
func TestDeploy(t *testing.T) {
	docs := map[string][]byte{}
	files, err := filepath.Glob("../deploy/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var meta struct{ Kind string }
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			docs[meta.Kind] = doc
		}
	}
	decode := func(kind string, v any) {
		t.Helper()
		if err := yaml.UnmarshalStrict(docs[kind], v); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
	var dep appsv1.Deployment
	decode("Deployment", &dep)
	if *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	c := pod.Containers[0]
	if !*pod.SecurityContext.RunAsNonRoot || !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("the webhook's pod must run as non-root with a read-only root file system")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests missing: %v", c.Resources.Requests)
	}
	for _, flag := range []string{"--config=", "--tls-cert-file=", "--tls-private-key-file=", "--request-timeout=8s"} {
		if !slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, flag) }) {
			t.Errorf("args %v lack %s", c.Args, flag)
		}
	}
	var pdb policyv1.PodDisruptionBudget
	decode("PodDisruptionBudget", &pdb)
	var svc corev1.Service
	decode("Service", &svc)
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	decode("MutatingWebhookConfiguration", &mwc)
	wh := mwc.Webhooks[0]
	excluded := wh.NamespaceSelector.MatchExpressions[0].Values
	if !slices.Contains(excluded, "kube-system") || !slices.Contains(excluded, dep.Namespace) {
		t.Errorf("namespaceSelector excludes %v, want kube-system and %s", excluded, dep.Namespace)
	}
	if *wh.SideEffects != admissionregistrationv1.SideEffectClassNone || *wh.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy ||
		wh.FailurePolicy == nil || *wh.TimeoutSeconds <= 8 || *wh.TimeoutSeconds > 30 {
		t.Errorf("webhook %s: sideEffects, reinvocationPolicy, failurePolicy or timeoutSeconds (above the 8s deadline, at most 30) wrong", wh.Name)
	}
	// Every kind whose pod templates starpod knows is sent: its group and resource.
	sent := map[string]bool{}
	for _, r := range wh.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				sent[g+"/"+res] = true
			}
		}
	}
	for _, k := range kinds(nil) {
		group, kind, ok := strings.Cut(k, "/")
		if !ok {
			group, kind = "", k
		}
		if res := strings.ToLower(kind) + "s"; !sent[group+"/"+res] {
			t.Errorf("the webhook's rules lack %s (resource %s of group %q)", k, res, group)
		}
	}
	if wh.ClientConfig.Service.Name != svc.Name || wh.ClientConfig.Service.Namespace != svc.Namespace {
		t.Errorf("the webhook calls %v, not the Service", wh.ClientConfig.Service)
	}

	var cm corev1.ConfigMap
	decode("ConfigMap", &cm)
	dir := t.TempDir()
	for name, data := range cm.Data {
		want, err := os.ReadFile(filepath.Join("../examples/webhook", name))
		if err != nil || string(want) != data {
			t.Errorf("ConfigMap %s differs from examples/webhook/%s", name, name)
		}
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(ctx, filepath.Join(dir, "config.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

package integration

// This file tests "starpod webhook" under the traffic of a real cluster: a burst of creates
// queued rather than refused, the record of overlays accumulated through a template and a
// second webhook, and a hostile config written while it serves.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/starpod/starpod/webhook"
)

// trafficConfig has a Pod rule and a template rule in one namespace, %[1]s-ml.
const trafficConfig = `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: templates
  match: {namespaces: [%[1]s-ml], kinds: [apps/Deployment]}
  overlays: [template.star]
- name: gpu-pool
  match: {namespaces: [%[1]s-ml], kinds: [Pod], labelSelector: {matchLabels: {team: ml}}}
  overlays: [gpu.star]
  args: {pool: gpu-a100}
`

const trafficTemplateStar = `def overlay(pod, ctx):
    set_annotation(pod, "example.com/workload", ctx.workload.kind + " " + ctx.workload.name)
`

func TestWebhookTraffic(t *testing.T) {
	const id = "wht"
	w := startWebhook(t, id, map[string]string{
		"config.yaml":   fmt.Sprintf(trafficConfig, id),
		"gpu.star":      readExample(t, "overlay.star"),
		"template.star": trafficTemplateStar,
	}, "--workers-per-rule", "2")
	ml := w.namespaceFor("ml")
	w.waitActive(ml, gpuPod("probe"))
	ctx := context.Background()

	// A burst of 64 creates at once, with the default --max-in-flight (64) and two workers:
	// every admission waits its turn, none is refused, every pod is stored mutated.
	t.Run("Burst", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 64)
		pods := make([]*corev1.Pod, 64)
		for i := range 64 {
			wg.Go(func() {
				pods[i], errs[i] = kube.CoreV1().Pods(ml).Create(ctx, gpuPod(fmt.Sprintf("burst-%d", i)), metav1.CreateOptions{})
			})
		}
		wg.Wait()
		refused := 0
		for i, err := range errs {
			if err != nil {
				refused++
				t.Errorf("create %d: %v", i, err)
				continue
			}
			checkMutated(t, pods[i])
		}
		t.Logf("64 creates at once: %d refused", refused)
	})

	// The record accumulates: a pod made from a template that a rule changed keeps the
	// template's entry when a Pod rule changes it, and a second starpod webhook adds its own
	// entry to the first's, each once.
	t.Run("Record", func(t *testing.T) {
		w2 := startWebhook(t, id+"2", map[string]string{
			"config.yaml": fmt.Sprintf(`
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: second
  match: {namespaces: [%s]}
  overlays: [label.star]
`, ml),
			"label.star": "def overlay(pod):\n    set_label(pod, 'example.com/second', 'yes')\n",
		})
		w2.share(ml)
		w2.waitActive(ml, gpuPod("probe-second"))

		replicas := int32(1)
		spec := gpuPod("").Spec
		spec.RestartPolicy = corev1.RestartPolicyAlways
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "trainer"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "ml"}},
					Spec:       spec,
				},
			},
		}
		stored, err := kube.AppsV1().Deployments(ml).Create(ctx, dep, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tmplRecord := stored.Spec.Template.Annotations[webhook.AppliedAnnotation]
		if !strings.HasPrefix(tmplRecord, "templates/template.star@sha256:") || strings.Contains(tmplRecord, ",") {
			t.Fatalf("the template's record %q, want the template rule's entry alone", tmplRecord)
		}
		// A pod as the Deployment's controller makes it: the template's metadata and spec.
		pod := &corev1.Pod{ObjectMeta: *stored.Spec.Template.ObjectMeta.DeepCopy(), Spec: *stored.Spec.Template.Spec.DeepCopy()}
		pod.Name = "trainer-from-template"
		got, err := kube.CoreV1().Pods(ml).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkMutated(t, got)
		if got.Labels["example.com/second"] != "yes" {
			t.Errorf("the second webhook did not change the pod: labels %v", got.Labels)
		}
		entries := strings.Split(got.Annotations[webhook.AppliedAnnotation], ",")
		want := []string{"templates/template.star@sha256:", "gpu-pool/gpu.star@sha256:", "second/label.star@sha256:"}
		if len(entries) != len(want) {
			t.Fatalf("record %q, want one entry each of %q", entries, want)
		}
		for i, e := range entries {
			if !strings.HasPrefix(e, want[i]) {
				t.Errorf("record entry %d is %q, want %s...", i, e, want[i])
			}
		}
		if entries[0] != tmplRecord {
			t.Errorf("the template's entry %q became %q", tmplRecord, entries[0])
		}
	})

	// A config of one long anchored string and thousands of aliases to it, written while the
	// webhook serves, is refused; the webhook's memory stays small and the last good config
	// keeps serving.
	t.Run("HostileReload", func(t *testing.T) {
		var args strings.Builder
		args.WriteString("  args:\n    pool: gpu-a100\n    a0: &s " + strings.Repeat("x", 256<<10) + "\n")
		for i := 1; i < 1200; i++ {
			fmt.Fprintf(&args, "    a%d: *s\n", i)
		}
		cfg := strings.Replace(fmt.Sprintf(trafficConfig, id), "  args: {pool: gpu-a100}\n", args.String(), 1)
		if len(cfg) > 1<<20 {
			t.Fatalf("the hostile config is %d bytes, over the size bound", len(cfg))
		}
		w.write("config.yaml", cfg)
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(w.log.String(), "config refused") {
			if time.Now().After(deadline) {
				t.Fatalf("the hostile config was not refused:\n%s", w.log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(w.log.String(), "the values add up to more than 1Mi of text here (aliases repeat them)") {
			t.Errorf("the refusal does not name the bound:\n%s", w.log.String())
		}
		got, err := kube.CoreV1().Pods(ml).Create(ctx, gpuPod("after-hostile"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkMutated(t, got)
		if rss := w.peakRSS(); rss > 512<<20 {
			t.Errorf("the webhook's peak RSS is %d MiB, want the hostile config refused without growing", rss>>20)
		}
	})
}

package integration

// This file tests "starpod webhook" behind the shared API server: pods created through the
// API server are stored as the overlays made them, and each failure mode behaves as
// documented in docs/webhook.md.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/webhook"
)

var webhookLoad = flag.Int("webhook-load", 0, "TestWebhookLoad: create this many pods through the API server from 32 clients (the README's figure is 2000)")

// The webhook's config for TestWebhook: one rule per namespace, each showing one behaviour.
const webhookConfig = `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: gpu-pool
  match: {namespaces: [%[1]s-ml], kinds: [Pod], labelSelector: {matchLabels: {team: ml}}}
  overlays: [gpu.star]
  args: {pool: gpu-a100}
- name: quota
  match: {namespaces: [%[1]s-fail]}
  overlays: [quota.star]
  onError: Fail
- name: quota-soft
  match: {namespaces: [%[1]s-ignore]}
  overlays: [quota.star]
  onError: Ignore
- name: bomb
  match: {namespaces: [%[1]s-bomb]}
  overlays: [bomb.star]
- name: templates
  match: {namespaces: [%[1]s-workloads], kinds: [apps/Deployment, batch.volcano.sh/Job], labelSelector: {matchLabels: {team: ml}}}
  overlays: [template.star]
# reload is the last rule: Reload adds args to it
- name: reload
  match: {namespaces: [%[1]s-reload]}
  overlays: [reload.star]
`

// templateStar pins a template's pool and records ctx.workload in an annotation.
const templateStar = `def overlay(pod, ctx):
    set_node_selector(pod, "cloud.example.com/pool", "gpu-a100")
    set_annotation(pod, "example.com/workload", ctx.workload.kind + " " + ctx.workload.name + " " + ctx.workload.path)
`

const quotaStar = `def overlay(pod):
    fail("team ml is over its GPU quota")
`

const bombStar = `def overlay(pod):
    s = "a" * ((1 << 30) - 1)
`

// gpuPod is a pod that asks for GPUs, with the label the gpu-pool rule selects.
func gpuPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "ml"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "trainer", Image: "ghcr.io/example/trainer:v1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
			}},
		},
	}
}

// checkMutated checks that pod is what the example overlay makes of gpuPod.
func checkMutated(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if got := pod.Spec.NodeSelector["cloud.example.com/pool"]; got != "gpu-a100" {
		t.Errorf("pod %s: nodeSelector pool %q, want gpu-a100", pod.Name, got)
	}
	if len(pod.Spec.Tolerations) == 0 || pod.Spec.Tolerations[len(pod.Spec.Tolerations)-1].Key != "nvidia.com/gpu" {
		t.Errorf("pod %s: tolerations %v, want the nvidia.com/gpu toleration", pod.Name, pod.Spec.Tolerations)
	}
	env := pod.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "GPU_POOL" || env[0].Value != "gpu-a100" {
		t.Errorf("pod %s: env %v, want GPU_POOL=gpu-a100", pod.Name, env)
	}
	if !slices.ContainsFunc(strings.Split(pod.Annotations[webhook.AppliedAnnotation], ","), func(e string) bool {
		return strings.HasPrefix(e, "gpu-pool/gpu.star@sha256:")
	}) {
		t.Errorf("pod %s: annotation %s = %q", pod.Name, webhook.AppliedAnnotation, pod.Annotations[webhook.AppliedAnnotation])
	}
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "webhook", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestWebhook(t *testing.T) {
	const id = "whk"
	w := startWebhook(t, id, map[string]string{
		"config.yaml":   fmt.Sprintf(webhookConfig, id),
		"gpu.star":      readExample(t, "overlay.star"),
		"quota.star":    quotaStar,
		"bomb.star":     bombStar,
		"reload.star":   "def overlay(pod):\n    set_label(pod, 'version', 'one')\n",
		"template.star": templateStar,
	}, "--max-memory", "128Mi", "--workers-per-rule", "2")
	ml := w.namespaceFor("ml")
	w.waitActive(ml, gpuPod("probe"))
	ctx := context.Background()
	client, warns := warningClient(t)

	t.Run("Mutated", func(t *testing.T) {
		warns.take()
		if _, err := client.CoreV1().Pods(ml).Create(ctx, gpuPod("trainer-0"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := warns.take(); len(got) != 1 || got[0] != "starpod rule gpu-pool: changed by gpu.star" {
			t.Errorf("warnings %q, want the rule and overlay named", got)
		}
		stored, err := kube.CoreV1().Pods(ml).Get(ctx, "trainer-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkMutated(t, stored)

		// A pod the rule does not select is stored as it was sent.
		other := gpuPod("web-0")
		other.Labels["team"] = "web"
		if _, err := kube.CoreV1().Pods(ml).Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		stored, err = kube.CoreV1().Pods(ml).Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if stored.Spec.NodeSelector != nil || stored.Annotations[webhook.AppliedAnnotation] != "" {
			t.Errorf("a pod the rule does not select was changed: %v %v", stored.Spec.NodeSelector, stored.Annotations)
		}
	})

	t.Run("DryRun", func(t *testing.T) {
		got, err := kube.CoreV1().Pods(ml).Create(ctx, gpuPod("dry-0"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		checkMutated(t, got)
		if _, err := kube.CoreV1().Pods(ml).Get(ctx, "dry-0", metav1.GetOptions{}); !isNotFound(err) {
			t.Errorf("after a dry-run create: %v, want not found", err)
		}
		if !strings.Contains(w.log.String(), `"name":"dry-0","operation":"CREATE","dryRun":true`) {
			t.Errorf("the webhook did not log the dry run")
		}
	})

	t.Run("OnErrorFail", func(t *testing.T) {
		ns := w.namespaceFor("fail")
		_, err := kube.CoreV1().Pods(ns).Create(ctx, gpuPod("trainer-0"), metav1.CreateOptions{})
		if err == nil {
			t.Fatal("created, want the overlay's failure")
		}
		for _, want := range []string{`admission webhook "pods.starpod.dev" denied the request`, "starpod rule quota:", "quota.star:2:9", "team ml is over its GPU quota"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
		if _, err := kube.CoreV1().Pods(ns).Get(ctx, "trainer-0", metav1.GetOptions{}); !isNotFound(err) {
			t.Errorf("after a denied create: %v, want not found", err)
		}
	})

	t.Run("OnErrorIgnore", func(t *testing.T) {
		ns := w.namespaceFor("ignore")
		warns.take()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, gpuPod("trainer-0"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := warns.take()
		if len(got) != 1 || !strings.Contains(got[0], "team ml is over its GPU quota") || !strings.Contains(got[0], "onError: Ignore") {
			t.Errorf("warnings %q, want the ignored failure", got)
		}
		stored, err := kube.CoreV1().Pods(ns).Get(ctx, "trainer-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if stored.Spec.NodeSelector != nil || stored.Annotations[webhook.AppliedAnnotation] != "" {
			t.Errorf("stored changed: %v %v", stored.Spec.NodeSelector, stored.Annotations)
		}
	})

	// There is no Volcano controller here: the test creates a task's pod from the Job's
	// template as the controller would, and that pod is admitted like any other. The Job
	// itself is sent to the webhook but not mutated: the gpu-pool rule names Pods only
	// (Workloads tests the templates of Jobs).
	t.Run("VolcanoJob", func(t *testing.T) {
		ns := w.namespaceFor("vcjob")
		w.write("config.yaml", strings.Replace(fmt.Sprintf(webhookConfig, id), "namespaces: ["+id+"-ml]", "namespaces: ["+id+"-ml, "+ns+"]", 1))
		mustRun(t, "run", "-n", ns, "--app-id", "llama", example)
		job, err := vc.BatchV1alpha1().Jobs(ns).Get(ctx, "llama", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := job.Annotations[webhook.AppliedAnnotation]; ok {
			t.Errorf("the Volcano Job was mutated: %v", job.Annotations)
		}
		tmpl := job.Spec.Tasks[0].Template
		pod := &corev1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		pod.Name = "llama-trainer-0"
		pod.Labels["team"] = "ml"
		deadline := time.Now().Add(30 * time.Second)
		for i := 0; ; i++ {
			p := pod.DeepCopy()
			p.Name = fmt.Sprintf("%s-%d", pod.Name, i)
			stored, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if stored.Spec.NodeSelector["cloud.example.com/pool"] == "gpu-a100" {
				var env []string
				for _, e := range stored.Spec.Containers[0].Env {
					env = append(env, e.Name)
				}
				if !slices.Contains(env, "GPU_POOL") || !strings.HasPrefix(stored.Annotations[webhook.AppliedAnnotation], "gpu-pool/gpu.star@") {
					t.Errorf("the task's pod is half mutated: env %v, annotations %v", env, stored.Annotations)
				}
				if stored.Spec.NodeSelector["node.kubernetes.io/instance-type"] != "p4d.24xlarge" {
					t.Errorf("the template's node selector was lost: %v", stored.Spec.NodeSelector)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the task's pod was not mutated 30s after the config named its namespace")
			}
			time.Sleep(100 * time.Millisecond)
		}
		w.write("config.yaml", fmt.Sprintf(webhookConfig, id))
	})

	// Workloads: a Deployment and a Volcano Job are stored with the templates the overlay
	// made, and nothing else of them changed; a Deployment whose own labels the rule does not
	// select is stored as it was sent.
	t.Run("Workloads", func(t *testing.T) {
		ns := w.namespaceFor("workloads")
		warns.take()
		replicas := int32(2)
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"team": "ml"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
				},
			},
		}
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := warns.take(); len(got) != 1 || got[0] != "starpod rule templates: changed by template.star" {
			t.Errorf("warnings %q, want the rule and overlay named", got)
		}
		stored, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tmpl := stored.Spec.Template
		if tmpl.Spec.NodeSelector["cloud.example.com/pool"] != "gpu-a100" ||
			tmpl.Annotations["example.com/workload"] != "Deployment web spec.template" ||
			!strings.HasPrefix(tmpl.Annotations[webhook.AppliedAnnotation], "templates/template.star@sha256:") {
			t.Errorf("the Deployment's template is not mutated: %v %v", tmpl.Spec.NodeSelector, tmpl.Annotations)
		}
		if *stored.Spec.Replicas != 2 || stored.Spec.Template.Labels["app"] != "web" || stored.Annotations[webhook.AppliedAnnotation] != "" {
			t.Errorf("the Deployment changed outside its template: replicas %d, template labels %v, annotations %v",
				*stored.Spec.Replicas, stored.Spec.Template.Labels, stored.Annotations)
		}

		other := dep.DeepCopy()
		other.Name, other.Labels = "other", nil
		if _, err := kube.AppsV1().Deployments(ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if stored, err = kube.AppsV1().Deployments(ns).Get(ctx, "other", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.Template.Spec.NodeSelector != nil || stored.Spec.Template.Annotations != nil {
			t.Errorf("a Deployment the rule does not select was changed: %v %v", stored.Spec.Template.Spec.NodeSelector, stored.Spec.Template.Annotations)
		}

		task := func(name string) vcbatch.TaskSpec {
			return vcbatch.TaskSpec{Name: name, Replicas: 1, Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
					Containers: []corev1.Container{{Name: name, Image: "ghcr.io/example/mpi:v1"}}},
			}}
		}
		job := &vcbatch.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "mpi", Labels: map[string]string{"team": "ml"}},
			Spec:       vcbatch.JobSpec{SchedulerName: "volcano", MinAvailable: 2, Tasks: []vcbatch.TaskSpec{task("master"), task("worker")}},
		}
		if _, err := vc.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		vj, err := vc.BatchV1alpha1().Jobs(ns).Get(ctx, "mpi", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, task := range vj.Spec.Tasks {
			want := fmt.Sprintf("Job mpi spec.tasks[%d].template", i)
			if task.Template.Spec.NodeSelector["cloud.example.com/pool"] != "gpu-a100" || task.Template.Annotations["example.com/workload"] != want {
				t.Errorf("task %s: template not mutated: %v %v, want annotation %q", task.Name, task.Template.Spec.NodeSelector, task.Template.Annotations, want)
			}
			if task.Template.Spec.Containers[0].Image != "ghcr.io/example/mpi:v1" || task.Replicas != 1 {
				t.Errorf("task %s: changed outside what the overlay did: %+v", task.Name, task)
			}
		}
		if vj.Spec.MinAvailable != 2 || vj.Spec.SchedulerName != "volcano" {
			t.Errorf("the Job's spec changed: minAvailable %d, schedulerName %q", vj.Spec.MinAvailable, vj.Spec.SchedulerName)
		}
	})

	t.Run("MemoryBomb", func(t *testing.T) {
		bomb := w.namespaceFor("bomb")
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var bombs int
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := kube.CoreV1().Pods(bomb).Create(ctx, gpuPod(fmt.Sprintf("bomb-%d", i)), metav1.CreateOptions{})
				if err == nil || !strings.Contains(err.Error(), "exceeded the memory limit of 128Mi") {
					t.Errorf("bomb pod %d: %v, want denied with the memory limit", i, err)
				}
				bombs++
			}
		})
		var slowest time.Duration
		for i := range 30 {
			start := time.Now()
			p, err := kube.CoreV1().Pods(ml).Create(ctx, gpuPod(fmt.Sprintf("beside-bomb-%d", i)), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			slowest = max(slowest, time.Since(start))
			checkMutated(t, p)
		}
		close(stop)
		wg.Wait()
		t.Logf("%d bomb pods denied while 30 pods of another namespace were admitted; the slowest create took %s", bombs, slowest)
		if bombs == 0 {
			t.Errorf("no bomb pod was sent")
		}
	})

	t.Run("Reload", func(t *testing.T) {
		ns := w.namespaceFor("reload")
		label := func(name string) string {
			t.Helper()
			p, err := kube.CoreV1().Pods(ns).Create(ctx, gpuPod(name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return p.Labels["version"]
		}
		if got := label("a"); got != "one" {
			t.Fatalf("label version %q, want one", got)
		}
		w.write("reload.star", "def overlay(pod):\n    set_label(pod, 'version', 'two')\n")
		waitLabel(t, label, "two")
		// A broken version is refused; the last good one keeps serving.
		w.write("reload.star", "def overlay(pod):\n    set_label(pod, 'version', three)\n")
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(w.log.String(), "config refused") {
			if time.Now().After(deadline) {
				t.Fatal("the broken overlay was not refused")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := label("b"); got != "two" {
			t.Errorf("after a broken reload: label version %q, want two", got)
		}
		if !strings.Contains(w.log.String(), "undefined: three") {
			t.Errorf("the refusal does not name the error's place:\n%s", w.log.String())
		}
		w.write("config.yaml", fmt.Sprintf(webhookConfig, id)+"  args: {v: x}\n")
		w.write("reload.star", "def overlay(pod, ctx):\n    set_label(pod, 'version', 'four-' + ctx.args['v'])\n")
		waitLabel(t, label, "four-x")
	})
}

// waitLabel creates pods with create until one gets the label want: the webhook polls its
// files every 200ms.
func waitLabel(t *testing.T, create func(string) string, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		if got := create(fmt.Sprintf("wait-%s-%d", want, i)); got == want {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("label version %q 30s after the change, want %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWebhookLoad creates -webhook-load pods (0 skips) through the API server from 32 clients
// at once, in a namespace the webhook mutates, and checks that every pod was stored, and
// stored mutated. It reports the p50 and p99 of the creates and of the admissions.
func TestWebhookLoad(t *testing.T) {
	n := *webhookLoad
	if n == 0 {
		t.Skip("give -webhook-load 2000 to run")
	}
	const id = "whl"
	w := startWebhook(t, id, map[string]string{
		"config.yaml":   fmt.Sprintf(webhookConfig, id),
		"gpu.star":      readExample(t, "overlay.star"),
		"quota.star":    quotaStar,
		"bomb.star":     bombStar,
		"reload.star":   "def overlay(pod):\n    pass\n",
		"template.star": templateStar,
	}, "--max-in-flight", "256")
	ml := w.namespaceFor("ml")
	w.waitActive(ml, gpuPod("probe"))
	ctx := context.Background()
	const clients = 32
	durations := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	var mu sync.Mutex
	var errs []error
	for c := range clients {
		wg.Go(func() {
			for i := c; i < n; i += clients {
				t0 := time.Now()
				_, err := kube.CoreV1().Pods(ml).Create(ctx, gpuPod(fmt.Sprintf("load-%d", i)), metav1.CreateOptions{})
				durations[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(errs) > 0 {
		t.Fatalf("%d of %d creates failed; the first: %v", len(errs), n, errs[0])
	}
	list, err := kube.CoreV1().Pods(ml).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for i := range list.Items {
		if strings.HasPrefix(list.Items[i].Name, "load-") {
			stored++
			checkMutated(t, &list.Items[i])
		}
	}
	if stored != n {
		t.Errorf("%d pods stored, want %d", stored, n)
	}
	slices.Sort(durations)
	adm := w.admissionDurations()
	t.Logf("%d pods created through the API server by %d clients in %s (%.0f/s); create p50 %s p99 %s; admission (in the webhook) p50 %s p99 %s",
		n, clients, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(),
		pct(durations, 50), pct(durations, 99), pct(adm, 50), pct(adm, 99))
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[(len(ds)-1)*p/100].Round(10 * time.Microsecond)
}

// TestWebhookDown: with failurePolicy Fail, pods of the webhook's namespaces are not created
// while it is down, and the client is told which webhook failed.
func TestWebhookDown(t *testing.T) {
	const id = "whd"
	w := startWebhook(t, id, map[string]string{
		"config.yaml":   fmt.Sprintf(webhookConfig, id),
		"gpu.star":      readExample(t, "overlay.star"),
		"quota.star":    quotaStar,
		"bomb.star":     bombStar,
		"reload.star":   "def overlay(pod):\n    pass\n",
		"template.star": templateStar,
	})
	ml := w.namespaceFor("ml")
	w.waitActive(ml, gpuPod("probe"))
	w.stop()
	_, err := kube.CoreV1().Pods(ml).Create(context.Background(), gpuPod("trainer-0"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "pods.starpod.dev"`) {
		t.Errorf("create while the webhook is down: %v, want the failed call named", err)
	}
}

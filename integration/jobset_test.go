package integration

// This file tests "starpod run -s jobset" and the cluster commands on JobSets, against the
// shared API server with the JobSet CRD of the pinned sigs.k8s.io/jobset module installed.
// No JobSet, Job or Kueue controller runs: the tests write what they would.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/scheduler"
)

// jobSetCRDFile is the JobSet CRD in the sigs.k8s.io/jobset module that the main module pins.
const jobSetCRDFile = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"

// dyn is a dynamic client of the shared API server, for JobSets.
var dyn dynamic.Interface

var jobSetsResource = jobset.GroupVersion.WithResource("jobsets")

// installJobSetCRD installs the JobSet CRD as the JobSet project publishes it, from the module
// the main module requires, and waits until the API server serves it.
func installJobSetCRD(ctx context.Context, cfg *rest.Config) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/jobset").Output()
	if err != nil {
		return fmt.Errorf("go list -m sigs.k8s.io/jobset: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), jobSetCRDFile))
	if err != nil {
		return err
	}
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return fmt.Errorf("%s: %v", jobSetCRDFile, err)
	}
	client, err := apiext.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %v", crd.Name, err)
	}
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(jobSetsResource).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

// getJobSet returns the JobSet ns/name, or nil if there is none.
func getJobSet(t *testing.T, ns, name string) *jobset.JobSet {
	t.Helper()
	u, err := dyn.Resource(jobSetsResource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var js jobset.JobSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &js); err != nil {
		t.Fatal(err)
	}
	return &js
}

// updateJobSetStatus writes the status of the JobSet ns/name as JobSet's controller would.
func updateJobSetStatus(t *testing.T, ns, name string, set func(*jobset.JobSetStatus)) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		js := getJobSet(t, ns, name)
		set(&js.Status)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(js)
		if err != nil {
			return false, err
		}
		_, err = dyn.Resource(jobSetsResource).Namespace(ns).UpdateStatus(ctx, &unstructured.Unstructured{Object: obj}, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("status of jobset %s/%s: %v", ns, name, err)
	}
}

// admit resumes a JobSet, as Kueue does when it admits the workload.
func admit(t *testing.T, ns, name string) {
	t.Helper()
	patch := []byte(`{"spec":{"suspend":false}}`)
	if _, err := dyn.Resource(jobSetsResource).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// jobSetJob creates the Job of replicated job rj of js, as JobSet's controller does, and
// returns it.
func jobSetJob(t *testing.T, js *jobset.JobSet, rj int) *batchv1.Job {
	t.Helper()
	r := js.Spec.ReplicatedJobs[rj]
	job := &batchv1.Job{
		ObjectMeta: *r.Template.ObjectMeta.DeepCopy(),
		Spec:       *r.Template.Spec.DeepCopy(),
	}
	job.Name = js.Name + "-" + r.Name + "-0"
	job.Namespace = js.Namespace
	for k, v := range jobSetLabels(js, r.Name) {
		job.Labels[k] = v
		job.Spec.Template.Labels[k] = v
	}
	job.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(js, jobset.GroupVersion.WithKind("JobSet"))}
	got, err := kube.BatchV1().Jobs(js.Namespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// jobSetLabels returns the labels JobSet's controller puts on the Jobs and pods of a
// replicated job.
func jobSetLabels(js *jobset.JobSet, rj string) map[string]string {
	return map[string]string{
		jobset.JobSetNameKey:        js.Name,
		jobset.JobSetUIDKey:         string(js.UID),
		jobset.ReplicatedJobNameKey: rj,
		jobset.JobIndexKey:          "0",
	}
}

// jobSetPod creates the pod of completion index i of job, as the Job controller does, on
// node ("" for none), in phase.
func jobSetPod(t *testing.T, job *batchv1.Job, i int, node string, phase corev1.PodPhase) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: *job.Spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *job.Spec.Template.Spec.DeepCopy(),
	}
	pod.Name = fmt.Sprintf("%s-%d-abcde", job.Name, i)
	pod.Namespace = job.Namespace
	pod.Spec.NodeName = node
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, i)
	pod.Spec.Subdomain = job.Labels[jobset.JobSetNameKey]
	pod.Annotations[scheduler.CompletionIndexAnnotation] = fmt.Sprint(i)
	pod.Labels[scheduler.CompletionIndexAnnotation] = fmt.Sprint(i)
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	got, err := kube.CoreV1().Pods(job.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = phase
	if _, err := kube.CoreV1().Pods(job.Namespace).UpdateStatus(context.Background(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

var ddpArgs = []string{"dist.ddp", "-j", "2x8", "--script", "train.py"}

// TestJobSetDryRunServer: the JobSet of "dist.ddp -j 2x8" is one the API server accepts, with
// the JobSet CRD's schema and validation rules, and it is what the client dry run prints.
func TestJobSetDryRunServer(t *testing.T) {
	ns := namespace(t)
	r := mustRun(t, append([]string{"run", "-s", "jobset", "--dry-run=server", "--app-id", "ddp", "-n", ns}, ddpArgs...)...)
	if !strings.HasPrefix(r.stdout, "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n") || strings.Contains(r.stdout, "managedFields") {
		t.Errorf("server dry run output:\n%.300s", r.stdout)
	}
	var got jobset.JobSet
	if err := yaml.UnmarshalStrict([]byte(r.stdout), &got); err != nil {
		t.Fatalf("server dry run output: %v\n%s", err, r.stdout)
	}
	if got.UID == "" || got.CreationTimestamp.IsZero() {
		t.Errorf("server dry run printed %+v, want the server's object", got.ObjectMeta)
	}
	dry := mustRun(t, append([]string{"run", "-s", "jobset", "--dry-run", "--app-id", "ddp", "-n", ns}, ddpArgs...)...)
	var want jobset.JobSet
	if err := yaml.UnmarshalStrict([]byte(dry.stdout), &want); err != nil {
		t.Fatal(err)
	}
	// What the server adds: its own fields, and the CRD's defaults (a replicated job's group,
	// a port's protocol).
	got.UID, got.ResourceVersion, got.Generation, got.CreationTimestamp = "", "", 0, metav1.Time{}
	for i := range want.Spec.ReplicatedJobs {
		rj := &want.Spec.ReplicatedJobs[i]
		rj.GroupName = "default"
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			for p := range c.Ports {
				if c.Ports[p].Protocol == "" {
					c.Ports[p].Protocol = corev1.ProtocolTCP
				}
			}
		}
	}
	if diff := cmpJobSets(&want, &got); diff != "" {
		t.Errorf("server dry run differs from the client dry run (-client +server):\n%s", diff)
	}
	if js := getJobSet(t, ns, "ddp"); js != nil {
		t.Error("a server dry run created the JobSet")
	}
	// The pods find rank 0 at JobSet's DNS name and their rank in the completion index.
	c := got.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
	if c.Env[1].Value != "ddp-train-0-0.ddp" || !strings.Contains(strings.Join(c.Command, " "), "--rdzv_endpoint $(STARPOD_RANK0_HOST):29500") ||
		c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("container: %+v", c)
	}
	if *got.Spec.ReplicatedJobs[0].Template.Spec.CompletionMode != batchv1.IndexedCompletion || *got.Spec.ReplicatedJobs[0].Template.Spec.Completions != 2 {
		t.Errorf("job spec %+v, want an indexed Job of 2", got.Spec.ReplicatedJobs[0].Template.Spec)
	}
}

// cmpJobSets returns the differences of two JobSets as JSON text, or "".
func cmpJobSets(a, b *jobset.JobSet) string {
	ja, _ := json.MarshalIndent(a, "", " ")
	jb, _ := json.MarshalIndent(b, "", " ")
	if string(ja) == string(jb) {
		return ""
	}
	return fmt.Sprintf("client:\n%s\nserver:\n%s", ja, jb)
}

// TestJobSetLifecycle runs an app as a JobSet queued in Kueue and follows it through what
// Kueue, JobSet's controller and the Job controller would write: status, describe, list,
// logs, cancel and delete, by jobset:// handle and by bare app id.
func TestJobSetLifecycle(t *testing.T) {
	ns := namespace(t)
	handle := "jobset://" + ns + "/life"
	r := mustRun(t, append([]string{"run", "-s", "jobset", "--app-id", "life", "-n", ns, "--cfg", "queue=team-a,priority_class=high"}, ddpArgs...)...)
	if r.stdout != handle+"\n" {
		t.Fatalf("run printed %q, want the handle %s", r.stdout, handle)
	}
	js := getJobSet(t, ns, "life")
	if js == nil || js.Spec.Suspend == nil || !*js.Spec.Suspend || js.Labels[scheduler.LabelKueueQueue] != "team-a" || js.Labels[scheduler.LabelKueuePriorityClass] != "high" {
		t.Fatalf("created %+v, want a suspended JobSet with Kueue's labels", js)
	}

	// Queued: suspended, waiting for Kueue admission.
	r = mustRun(t, "status", handle)
	want := handle + " PENDING (Suspended: WaitingForKueueAdmission)\n  message: waiting for Kueue admission in queue \"team-a\"\n  train 0:PENDING 1:PENDING\n"
	if r.stdout != want {
		t.Errorf("status queued:\n%s\nwant:\n%s", r.stdout, want)
	}
	// Running: Kueue admitted it, JobSet made the Job, one pod runs, one is not scheduled.
	admit(t, ns, "life")
	job := jobSetJob(t, js, 0)
	jobSetPod(t, job, 0, "node-gone", corev1.PodRunning)
	jobSetPod(t, job, 1, "", corev1.PodPending)
	updateJobSetStatus(t, ns, "life", func(s *jobset.JobSetStatus) {
		s.ReplicatedJobsStatus = []jobset.ReplicatedJobStatus{{Name: "train", Active: 1}}
	})
	r = mustRun(t, "status", "-n", ns, "life") // a bare app id finds the JobSet
	if want := handle + " RUNNING (Running)\n  train 0:RUNNING 1:PENDING\n"; r.stdout != want {
		t.Errorf("status running:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = mustRun(t, "describe", "-o", "json", handle)
	var d struct {
		Handle string `json:"handle"`
		App    struct {
			Name string `json:"name"`
		} `json:"app"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Handle != handle || d.App.Name != "train" || d.Status.State != "RUNNING" {
		t.Errorf("describe: %+v %v\n%s", d, err, r.stdout)
	}
	r = mustRun(t, "list", "-n", ns)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(handle) + ` +train +RUNNING +`).MatchString(r.stdout) {
		t.Errorf("list:\n%s", r.stdout)
	}

	// Logs by role and replica: the pod on no node has none, and starpod says why; the pod on
	// an unknown node is the API's error; a replica that does not exist is refused.
	r = mustRun(t, "logs", handle+"/train/1")
	if r.stdout != "" || r.stderr != `train/1: pod "life-train-0-1-abcde" is not on a node yet (Pending): no logs`+"\n" {
		t.Errorf("logs of an unscheduled pod: %s", r)
	}
	r = mustFail(t, 1, `logs pod "life-train-0-0-abcde" container "train": .*node-gone`, "logs", handle+"/train/0")
	if strings.Contains(r.stderr, "life-train-0-1") {
		t.Errorf("logs of replica 0 also read replica 1:\n%s", r.stderr)
	}
	mustFail(t, 1, `logs jobset "life": got replica 2 of role "train", want one of 0, 1`, "logs", handle+"/train/2")
	mustFail(t, 1, `logs jobset "life": got role "trian", want one of train \(did you mean "train"\?\)`, "logs", handle+"/trian")

	// Cancel suspends it, and it is CANCELLED; a second cancel changes nothing.
	r = mustRun(t, "cancel", handle)
	if r.stdout != handle+": cancelled (JobSet suspended)\n" {
		t.Errorf("cancel: %s", r)
	}
	js = getJobSet(t, ns, "life")
	if !*js.Spec.Suspend || js.Annotations["starpod.dev/cancelled"] == "" {
		t.Errorf("after cancel: suspend %v, annotations %v", *js.Spec.Suspend, js.Annotations)
	}
	r = mustRun(t, "status", "-o", "json", handle)
	if !strings.Contains(r.stdout, `"state": "CANCELLED"`) {
		t.Errorf("status after cancel:\n%s", r.stdout)
	}
	r = mustRun(t, "cancel", "-n", ns, "life")
	if !strings.HasPrefix(r.stdout, handle+": nothing to cancel, app is CANCELLED") {
		t.Errorf("second cancel: %s", r)
	}

	// Delete removes it, by bare app id as well.
	r = mustRun(t, "delete", "-n", ns, "life")
	if r.stdout != handle+": deleted\n" {
		t.Errorf("delete: %s", r)
	}
	if getJobSet(t, ns, "life") != nil {
		t.Error("the JobSet is still there")
	}
	mustFail(t, 1, `get jobset "life": .*not found`, "status", handle)
}

// TestJobSetWait: run --wait follows the JobSet until JobSet's controller marks it
// Completed, showing each change of state on standard error; a failed JobSet exits 1 with its
// reason.
func TestJobSetWait(t *testing.T) {
	ns := namespace(t)
	for _, c := range []struct {
		name, cond, reason, state string
		code                      int
	}{
		{"done", "Completed", "AllJobsCompleted", "SUCCEEDED", 0},
		{"broke", "Failed", "FailedJobs", "FAILED", 1},
	} {
		run := startStarpod(t, append([]string{"run", "-s", "jobset", "--wait", "--app-id", c.name, "-n", ns}, ddpArgs...)...)
		waitFor(t, &run.stderr, "train/1 UNKNOWN\n")
		updateJobSetStatus(t, ns, c.name, func(s *jobset.JobSetStatus) {
			s.ReplicatedJobsStatus = []jobset.ReplicatedJobStatus{{Name: "train", Active: 1}}
		})
		waitFor(t, &run.stderr, "train/1 PENDING\n")
		updateJobSetStatus(t, ns, c.name, func(s *jobset.JobSetStatus) {
			s.Conditions = []metav1.Condition{{Type: c.cond, Status: metav1.ConditionTrue, Reason: c.reason, Message: "the test says so",
				LastTransitionTime: metav1.Now()}}
			s.TerminalState = c.cond
		})
		r := run.wait(t)
		if r.code != c.code || r.stdout != "jobset://"+ns+"/"+c.name+"\n" || !strings.Contains(r.stderr, c.state) {
			t.Errorf("%s: run --wait: %s", c.name, r)
		}
		if c.code != 0 && !strings.Contains(r.stderr, "ended FAILED: FailedJobs: the test says so") {
			t.Errorf("%s: no reason: %s", c.name, r.stderr)
		}
	}
}

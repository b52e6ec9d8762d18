package integration

// This file tests the starpod commands that talk to a cluster, against the shared API server.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/starpod/starpod/cluster"
	"github.com/starpod/starpod/scheduler"
)

const example = "examples/llama-ft/app.yaml" // relative to the repository, where starpod runs

// namespace creates a namespace for one test and returns its name: the test's name and the
// suffix, if any.
func namespace(t *testing.T, suffix ...string) string {
	t.Helper()
	name := strings.Join(append([]string{t.Name()}, suffix...), "-")
	name = strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(name, "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// mustRun runs starpod and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := starpod(t, args...)
	if r.code != 0 {
		t.Fatalf("starpod %s: %s", strings.Join(args, " "), r)
	}
	return r
}

// mustFail runs starpod and fails the test unless it exits code with stderr matching re.
func mustFail(t *testing.T, code int, re string, args ...string) result {
	t.Helper()
	r := starpod(t, args...)
	if r.code != code || !regexp.MustCompile(re).MatchString(r.stderr) {
		t.Fatalf("starpod %s: got %s\nwant exit %d and stderr matching %s", strings.Join(args, " "), r, code, re)
	}
	return r
}

// jobs returns the names of the Volcano Jobs in ns.
func jobs(t *testing.T, ns string) []string {
	t.Helper()
	list, err := vc.BatchV1alpha1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	return names
}

// setPhase writes the job's status as Volcano's controller would: the phase, and the pod
// phase of each task.
func setPhase(t *testing.T, ns, name string, phase vcbatch.JobPhase, tasks map[string]string) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		job, err := vc.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		now := metav1.Now()
		job.Status.State = vcbatch.JobState{Phase: phase, Reason: "Test", LastTransitionTime: now}
		job.Status.TaskStatusCount = map[string]vcbatch.TaskState{}
		for task, p := range tasks {
			job.Status.TaskStatusCount[task] = vcbatch.TaskState{Phase: map[corev1.PodPhase]int32{corev1.PodPhase(p): 1}}
		}
		job.Status.Conditions = append(job.Status.Conditions, vcbatch.JobCondition{Status: phase, LastTransitionTime: &now})
		_, err = vc.BatchV1alpha1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("set phase %s of %s/%s: %v", phase, ns, name, err)
	}
}

// serverFields clears what the API server adds to a created object.
func serverFields(job *vcbatch.Job) {
	// Typed clients drop the type, which the server stored.
	job.TypeMeta = metav1.TypeMeta{APIVersion: vcbatch.SchemeGroupVersion.String(), Kind: "Job"}
	job.UID = ""
	job.ResourceVersion = ""
	job.Generation = 0
	job.CreationTimestamp = metav1.Time{}
	job.ManagedFields = nil
}

func TestRunCreatesWhatDryRunPrints(t *testing.T) {
	ns := namespace(t)
	cfg := "--cfg=namespace=" + ns
	dry := mustRun(t, "run", "--dry-run", "--app-id", "llama", cfg, example)
	var want vcbatch.Job
	if err := yaml.UnmarshalStrict([]byte(dry.stdout), &want); err != nil {
		t.Fatalf("dry run output: %v\n%s", err, dry.stdout)
	}

	r := mustRun(t, "run", "--app-id", "llama", cfg, example)
	if got, want := r.stdout, "kubernetes://"+ns+"/llama\n"; got != want {
		t.Errorf("run printed %q, want the handle %q", got, want)
	}
	got, err := vc.BatchV1alpha1().Jobs(ns).Get(context.Background(), "llama", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID == "" || got.CreationTimestamp.IsZero() {
		t.Errorf("created job lacks uid or creation time: %+v", got.ObjectMeta)
	}
	serverFields(got)
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("created job differs from the dry run (-dry-run +created):\n%s", diff)
	}
	// Printed the same way, the two are the same text.
	out, err := scheduler.Marshal(got, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dry.stdout, string(out)); diff != "" {
		t.Errorf("created job, printed, differs from the dry run (-dry-run +created):\n%s", diff)
	}

	// The same app id again: reported as existing, and the first job is untouched.
	r = mustFail(t, 1, `app kubernetes://`+ns+`/llama already exists`, "run", "--app-id", "llama", cfg, example)
	if !strings.Contains(r.stderr, `cluster "integration" (https://127.0.0.1:`) || !strings.Contains(r.stderr, `namespace "`+ns+`": create job "llama"`) {
		t.Errorf("already-exists error does not name the cluster, namespace and job:\n%s", r.stderr)
	}
	again, err := vc.BatchV1alpha1().Jobs(ns).Get(context.Background(), "llama", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion == "" || again.UID != mustGet(t, ns, "llama").UID {
		t.Errorf("the first job changed")
	}
	if names := jobs(t, ns); len(names) != 1 {
		t.Errorf("jobs after a second run: got %v, want [llama]", names)
	}
}

func mustGet(t *testing.T, ns, name string) *vcbatch.Job {
	t.Helper()
	job, err := vc.BatchV1alpha1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func TestRunGeneratedID(t *testing.T) {
	ns := namespace(t)
	r := mustRun(t, "run", "--cfg", "namespace="+ns, example)
	m := regexp.MustCompile(`^kubernetes://` + ns + `/(llama-ft-[a-z0-9]+)\n$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("run printed %q, want a handle with a generated app id", r.stdout)
	}
	if names := jobs(t, ns); len(names) != 1 || names[0] != m[1] {
		t.Errorf("jobs: got %v, want [%s]", names, m[1])
	}
}

func TestRunDryRunServer(t *testing.T) {
	ns := namespace(t)
	r := mustRun(t, "run", "--dry-run=server", "--app-id", "checked", "--cfg", "namespace="+ns, example)
	var job vcbatch.Job
	if err := yaml.UnmarshalStrict([]byte(r.stdout), &job); err != nil {
		t.Fatalf("server dry run output: %v\n%s", err, r.stdout)
	}
	// The server filled in what it would have stored, and stored nothing.
	if job.Name != "checked" || job.UID == "" || job.CreationTimestamp.IsZero() {
		t.Errorf("server dry run printed %+v, want the server's object", job.ObjectMeta)
	}
	// A whole object, as kubectl create --dry-run=server -o yaml prints it, that kubectl can
	// read back: apiVersion and kind first, no managedFields.
	if !strings.HasPrefix(r.stdout, "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n") {
		t.Errorf("server dry run output does not start with apiVersion and kind:\n%.200s", r.stdout)
	}
	if strings.Contains(r.stdout, "managedFields") {
		t.Errorf("server dry run output has managedFields:\n%s", r.stdout)
	}
	// What it prints is what a run creates, but for what the server sets on each object.
	dry := mustRun(t, "run", "--dry-run", "--app-id", "checked", "--cfg", "namespace="+ns, example)
	var want vcbatch.Job
	if err := yaml.UnmarshalStrict([]byte(dry.stdout), &want); err != nil {
		t.Fatal(err)
	}
	serverFields(&job)
	if diff := cmp.Diff(&want, &job); diff != "" {
		t.Errorf("server dry run differs from the client dry run (-client +server):\n%s", diff)
	}
	if names := jobs(t, ns); len(names) != 0 {
		t.Errorf("jobs after --dry-run=server: got %v, want none", names)
	}
	r = mustRun(t, "run", "--dry-run=server", "-o", "json", "--app-id", "checked", "--cfg", "namespace="+ns, example)
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
		t.Fatal(err)
	}
	if obj["apiVersion"] != "batch.volcano.sh/v1alpha1" || obj["kind"] != "Job" {
		t.Errorf("server dry run -o json: apiVersion %v, kind %v", obj["apiVersion"], obj["kind"])
	}
	if meta, _ := obj["metadata"].(map[string]any); meta == nil || meta["managedFields"] != nil {
		t.Errorf("server dry run -o json: metadata %v, want one without managedFields", obj["metadata"])
	}
	if names := jobs(t, ns); len(names) != 0 {
		t.Errorf("jobs after --dry-run=server -o json: got %v, want none", names)
	}

	// A namespace that does not exist is the API's error, as the API states it.
	mustFail(t, 1, `namespace "nowhere": create job "checked": namespaces "nowhere" not found`,
		"run", "--dry-run=server", "--app-id", "checked", "--cfg", "namespace=nowhere", example)
}

// writeApp writes an app spec with an overlay to a temporary directory and returns the
// spec's path.
func writeApp(t *testing.T, overlay string) string {
	dir := t.TempDir()
	app := `name: bad
overlays: [overlay.star]
roles:
- name: worker
  image: busybox
  entrypoint: sh
  args: ["-c", "echo hello"]
  num_replicas: 2
  resource: {cpu: 1, mem_mb: 2048}
`
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(app), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "overlay.star"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "app.yaml")
}

func TestRunInvalidPodRejected(t *testing.T) {
	ns := namespace(t)
	// starpod's own checks: the overlay empties replica 1's image and names a volume badly.
	app := writeApp(t, `
def overlay(pod, ctx):
    if ctx.replica_id == 1:
        pod["spec"]["containers"][0]["image"] = ""
        pod["spec"]["volumes"].append({"name": "Bad_Volume", "emptyDir": {}})
    return pod
`)
	for _, args := range [][]string{
		{"run", "--cfg", "namespace=" + ns, app},
		{"run", "--dry-run=server", "--cfg", "namespace=" + ns, app},
	} {
		r := mustFail(t, 1, `spec\.containers\[0\]\.image`, args...)
		if !regexp.MustCompile(`spec\.volumes\[\d+\]\.name`).MatchString(r.stderr) {
			t.Errorf("starpod %s: stderr does not name the volume's field:\n%s", strings.Join(args, " "), r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("starpod %s: printed %q", strings.Join(args, " "), r.stdout)
		}
	}

	// The API server's checks: a termination message policy that no container may have
	// (starpod checks restart policies offline, not this). starpod sends the job, the server
	// rejects it whole, and the cause is shown with its field path.
	app = writeApp(t, `
def overlay(pod, ctx):
    if ctx.replica_id == 1:
        pod["spec"]["containers"][0]["terminationMessagePolicy"] = "Sometimes"
    return pod
`)
	for _, args := range [][]string{
		{"run", "--app-id", "bad", "--cfg", "namespace=" + ns, app},
		{"run", "--app-id", "bad", "--dry-run=server", "--cfg", "namespace=" + ns, app},
	} {
		mustFail(t, 1, `^cluster "integration" \(https://127\.0\.0\.1:\d+\), namespace "`+ns+`": create job "bad": `+
			`Job\.batch\.volcano\.sh "bad" is invalid: spec\.tasks\[1\]\.template\.spec\.containers\[0\]\.terminationMessagePolicy: Unsupported value: "Sometimes"`, args...)
	}
	if names := jobs(t, ns); len(names) != 0 {
		t.Errorf("jobs after a rejected run: got %v, want none", names)
	}
}

// TestServerRejectsJob sends a job that only the API server can reject (the CRD's schema),
// and checks that every cause is printed with its field path.
func TestServerRejectsJob(t *testing.T) {
	ns := namespace(t)
	c, err := cluster.Connect(cluster.Options{Kubeconfig: kubeconfig, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	job := &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "rejected"},
		Spec: vcbatch.JobSpec{
			MinAvailable: -1,
			Queue:        "default",
			Tasks: []vcbatch.TaskSpec{{
				Name:     "Bad_Task",
				Replicas: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
					RestartPolicy: "Sometimes",
				}},
			}},
		},
	}
	for _, dryRun := range []bool{true, false} {
		_, err = c.Submit(context.Background(), job, cluster.SubmitOptions{DryRun: dryRun})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("Submit(dry run %t): got %v, want an Invalid API error", dryRun, err)
		}
		causes := cluster.Causes(err)
		want := []string{"spec.minAvailable", "spec.tasks[0].name", "spec.tasks[0].template.spec.restartPolicy"}
		for _, w := range want {
			found := false
			for _, c := range causes {
				found = found || strings.HasPrefix(c, w+": ")
			}
			if !found {
				t.Errorf("causes %q: none for %s", causes, w)
			}
			if !strings.Contains(err.Error(), "\n\t"+w+": ") {
				t.Errorf("error does not show the cause for %s on a line of its own:\n%v", w, err)
			}
		}
		if !strings.HasPrefix(err.Error(), `cluster "integration" (https://127.0.0.1:`) || !strings.Contains(err.Error(), `namespace "`+ns+`": create job "rejected": `) {
			t.Errorf("error does not name the cluster, namespace and job:\n%v", err)
		}
	}
	if names := jobs(t, ns); len(names) != 0 {
		t.Errorf("jobs after a rejected job: got %v, want none", names)
	}
}

func TestStatus(t *testing.T) {
	ns := namespace(t)
	handle := "kubernetes://" + ns + "/st"
	mustRun(t, "run", "--app-id", "st", "--cfg", "namespace="+ns, example)

	// No status yet: Volcano's controller has not seen the job.
	r := mustRun(t, "status", handle)
	want := handle + " UNKNOWN\n  trainer 0:UNKNOWN 1:UNKNOWN 2:UNKNOWN 3:UNKNOWN\n"
	if r.stdout != want {
		t.Errorf("status of a new job:\ngot\n%s\nwant\n%s", r.stdout, want)
	}

	tasks := func(phases ...string) map[string]string {
		m := map[string]string{}
		for i, p := range phases {
			m[fmt.Sprintf("trainer-%d", i)] = p
		}
		return m
	}
	for _, test := range []struct {
		phase    vcbatch.JobPhase
		tasks    map[string]string
		app      cluster.AppState
		replicas []cluster.AppState
	}{
		{vcbatch.Pending, tasks("Pending", "Allocated", "Pipelined", "Bound"), cluster.Pending,
			[]cluster.AppState{cluster.Pending, cluster.Pending, cluster.Pending, cluster.Pending}},
		{vcbatch.Running, tasks("Running", "Running", "Binding", "Releasing"), cluster.Running,
			[]cluster.AppState{cluster.Running, cluster.Running, cluster.Pending, cluster.Running}},
		{vcbatch.Restarting, tasks("Failed", "Running", "Unknown", "Pending"), cluster.Running,
			[]cluster.AppState{cluster.Failed, cluster.Running, cluster.Unknown, cluster.Pending}},
		{vcbatch.Completing, tasks("Succeeded", "Succeeded", "Running", "Running"), cluster.Running,
			[]cluster.AppState{cluster.Succeeded, cluster.Succeeded, cluster.Running, cluster.Running}},
		{vcbatch.Terminating, tasks("Running"), cluster.Running,
			[]cluster.AppState{cluster.Running, cluster.Unknown, cluster.Unknown, cluster.Unknown}},
		{vcbatch.Aborting, tasks("Running", "Releasing"), cluster.Running,
			[]cluster.AppState{cluster.Running, cluster.Running, cluster.Unknown, cluster.Unknown}},
		{vcbatch.Completed, tasks("Succeeded", "Succeeded", "Succeeded", "Succeeded"), cluster.Succeeded,
			[]cluster.AppState{cluster.Succeeded, cluster.Succeeded, cluster.Succeeded, cluster.Succeeded}},
		{vcbatch.Aborted, tasks(), cluster.Cancelled,
			[]cluster.AppState{cluster.Unknown, cluster.Unknown, cluster.Unknown, cluster.Unknown}},
		{vcbatch.Terminated, tasks("Failed"), cluster.Failed,
			[]cluster.AppState{cluster.Failed, cluster.Unknown, cluster.Unknown, cluster.Unknown}},
		{vcbatch.Failed, tasks("Failed", "Succeeded"), cluster.Failed,
			[]cluster.AppState{cluster.Failed, cluster.Succeeded, cluster.Unknown, cluster.Unknown}},
	} {
		setPhase(t, ns, "st", test.phase, test.tasks)
		r := mustRun(t, "status", "-o", "json", handle)
		var st cluster.Status
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status -o json: %v\n%s", err, r.stdout)
		}
		if st.State != test.app || st.Phase != string(test.phase) || st.Name != "llama-ft" || st.Handle != handle {
			t.Errorf("phase %s: got state %s (phase %s, name %s, handle %s), want %s", test.phase, st.State, st.Phase, st.Name, st.Handle, test.app)
		}
		var got []cluster.AppState
		for _, role := range st.Roles {
			if role.Name != "trainer" {
				t.Errorf("phase %s: got role %q, want trainer", test.phase, role.Name)
			}
			for _, rep := range role.Replicas {
				got = append(got, rep.State)
			}
		}
		if diff := cmp.Diff(test.replicas, got); diff != "" {
			t.Errorf("phase %s: replica states (-want +got):\n%s", test.phase, diff)
		}
	}

	// A bare app id is found in the namespace --cfg names.
	r = mustRun(t, "status", "--cfg", "namespace="+ns, "st")
	if !strings.HasPrefix(r.stdout, handle+" FAILED (Failed: Test)\n") {
		t.Errorf("status of a bare app id:\n%s", r.stdout)
	}
	// An unknown app is the API's NotFound, naming cluster, namespace and job.
	mustFail(t, 1, `^cluster "integration" \(https://127\.0\.0\.1:\d+\), namespace "`+ns+`": get job "nope": jobs\.batch\.volcano\.sh "nope" not found\n$`,
		"status", "kubernetes://"+ns+"/nope")
}

func TestDescribe(t *testing.T) {
	ns := namespace(t)
	mustRun(t, "run", "--app-id", "desc", "--cfg", "namespace="+ns, example)
	setPhase(t, ns, "desc", vcbatch.Running, map[string]string{"trainer-0": "Running"})
	r := mustRun(t, "describe", "kubernetes://"+ns+"/desc")
	var d struct {
		Handle string            `json:"handle"`
		App    scheduler.App     `json:"app"`
		Labels map[string]string `json:"labels"`
		Status cluster.Status    `json:"status"`
	}
	if err := yaml.UnmarshalStrict([]byte(r.stdout), &d); err != nil {
		t.Fatalf("describe: %v\n%s", err, r.stdout)
	}
	want, err := scheduler.LoadApp(filepath.Join("..", example))
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, err := json.MarshalIndent(d.App, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wantJSON), string(gotJSON)); diff != "" {
		t.Errorf("described app differs from the spec (-spec +described):\n%s", diff)
	}
	if d.Handle != "kubernetes://"+ns+"/desc" || d.Status.State != cluster.Running || d.Labels[scheduler.LabelInstance] != "desc" {
		t.Errorf("describe: handle %s, state %s, labels %v", d.Handle, d.Status.State, d.Labels)
	}
}

func TestList(t *testing.T) {
	ns1, ns2 := namespace(t, "1"), namespace(t, "2")
	mustRun(t, "run", "--app-id", "one", "--cfg", "namespace="+ns1, example)
	mustRun(t, "run", "--app-id", "two", "--cfg", "namespace="+ns1, example)
	mustRun(t, "run", "--app-id", "three", "--cfg", "namespace="+ns2, example)
	setPhase(t, ns1, "one", vcbatch.Completed, nil)
	// A Volcano Job that starpod did not launch is not listed.
	other := &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns1},
		Spec: vcbatch.JobSpec{Queue: "default", Tasks: []vcbatch.TaskSpec{{
			Name: "t", Replicas: 1,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		}}},
	}
	if _, err := vc.BatchV1alpha1().Jobs(ns1).Create(context.Background(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := mustRun(t, "list", "--cfg", "namespace="+ns1)
	re := `^HANDLE +NAME +STATE +AGE\n` +
		`kubernetes://` + ns1 + `/(one|two) +llama-ft +(SUCCEEDED|UNKNOWN) +\d+[smhd]\S*\n` +
		`kubernetes://` + ns1 + `/(one|two) +llama-ft +(SUCCEEDED|UNKNOWN) +\d+[smhd]\S*\n$`
	if !regexp.MustCompile(re).MatchString(r.stdout) || !strings.Contains(r.stdout, "/one ") || !strings.Contains(r.stdout, "/two ") {
		t.Errorf("list:\n%s\nwant to match %s", r.stdout, re)
	}

	var apps []cluster.Status
	r = mustRun(t, "list", "-A", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &apps); err != nil {
		t.Fatalf("list -A -o json: %v\n%s", err, r.stdout)
	}
	got := map[string]cluster.AppState{}
	for _, a := range apps {
		if a.Namespace == ns1 || a.Namespace == ns2 {
			got[a.Handle] = a.State
		}
	}
	want := map[string]cluster.AppState{
		"kubernetes://" + ns1 + "/one":   cluster.Succeeded,
		"kubernetes://" + ns1 + "/two":   cluster.Unknown,
		"kubernetes://" + ns2 + "/three": cluster.Unknown,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list -A (-want +got):\n%s", diff)
	}

	// Without --cfg namespace, the context's namespace; an empty one says so.
	kc := contextNamespace(t, ns2)
	r = mustRun(t, "list", "--kubeconfig", kc)
	if !strings.Contains(r.stdout, "kubernetes://"+ns2+"/three ") || strings.Contains(r.stdout, ns1) {
		t.Errorf("list in the context's namespace %s:\n%s", ns2, r.stdout)
	}
	r = mustRun(t, "list", "--cfg", "namespace="+namespace(t, "empty"))
	if r.stdout != "" || !strings.HasPrefix(r.stderr, "no apps in namespace") {
		t.Errorf("list of an empty namespace: %s", r)
	}
}

// contextNamespace writes a copy of the shared kubeconfig whose context has namespace ns.
func contextNamespace(t *testing.T, ns string) string {
	t.Helper()
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	return file
}

// commands returns the Volcano Commands in ns.
func commands(t *testing.T, ns string) []vcbus.Command {
	t.Helper()
	list, err := vc.BusV1alpha1().Commands(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestCancel(t *testing.T) {
	ns := namespace(t)
	handle := "kubernetes://" + ns + "/c"
	mustRun(t, "run", "--app-id", "c", "--cfg", "namespace="+ns, example)
	setPhase(t, ns, "c", vcbatch.Running, nil)
	job := mustGet(t, ns, "c")

	r := mustRun(t, "cancel", handle)
	if r.stdout != handle+": cancel requested (AbortJob)\n" {
		t.Errorf("cancel printed %q", r.stdout)
	}
	cmds := commands(t, ns)
	if len(cmds) != 1 {
		t.Fatalf("commands after cancel: got %d, want 1", len(cmds))
	}
	cmd := cmds[0]
	controller := true
	wantRef := metav1.OwnerReference{
		APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "c", UID: job.UID,
		Controller: &controller, BlockOwnerDeletion: &controller,
	}
	if cmd.Action != "AbortJob" {
		t.Errorf("command action: got %q, want AbortJob", cmd.Action)
	}
	if diff := cmp.Diff(&wantRef, cmd.TargetObject); diff != "" {
		t.Errorf("command target (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]metav1.OwnerReference{wantRef}, cmd.OwnerReferences); diff != "" {
		t.Errorf("command owner references (-want +got):\n%s", diff)
	}

	// A second cancel before Volcano acts adds nothing.
	r = mustRun(t, "cancel", handle)
	if r.stdout != handle+": cancel requested already (AbortJob pending)\n" {
		t.Errorf("second cancel printed %q", r.stdout)
	}
	if n := len(commands(t, ns)); n != 1 {
		t.Errorf("commands after a second cancel: got %d, want 1", n)
	}

	// Volcano's controller consumes the command and aborts the job; the job stays.
	if err := vc.BusV1alpha1().Commands(ns).Delete(context.Background(), cmd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	setPhase(t, ns, "c", vcbatch.Aborting, nil)
	r = mustRun(t, "cancel", handle)
	if r.stdout != handle+": nothing to cancel, app is RUNNING (Aborting)\n" {
		t.Errorf("cancel of an aborting job printed %q", r.stdout)
	}
	setPhase(t, ns, "c", vcbatch.Aborted, nil)
	r = mustRun(t, "cancel", handle)
	if r.stdout != handle+": nothing to cancel, app is CANCELLED (Aborted)\n" {
		t.Errorf("cancel of an aborted job printed %q", r.stdout)
	}
	if n := len(commands(t, ns)); n != 0 {
		t.Errorf("commands after cancelling an aborted job: got %d, want 0", n)
	}
	r = mustRun(t, "status", handle)
	if !strings.HasPrefix(r.stdout, handle+" CANCELLED (Aborted: Test)\n") {
		t.Errorf("status after cancel:\n%s", r.stdout)
	}

	// A command left by an earlier job of the same name (no garbage collector runs here) is
	// replaced, not taken for this job's.
	mustRun(t, "run", "--app-id", "again", "--cfg", "namespace="+ns, example)
	mustRun(t, "cancel", "kubernetes://"+ns+"/again")
	mustRun(t, "delete", "kubernetes://"+ns+"/again")
	mustRun(t, "run", "--app-id", "again", "--cfg", "namespace="+ns, example)
	r = mustRun(t, "cancel", "kubernetes://"+ns+"/again")
	if !strings.HasSuffix(r.stdout, ": cancel requested (AbortJob)\n") {
		t.Errorf("cancel of a re-created job printed %q", r.stdout)
	}
	uid := mustGet(t, ns, "again").UID
	cmds = commands(t, ns)
	if len(cmds) != 1 || cmds[0].TargetObject.UID != uid {
		t.Errorf("commands after cancelling a re-created job: %+v, want one for uid %s", cmds, uid)
	}

	mustFail(t, 1, `namespace "`+ns+`": get job "gone": jobs.batch.volcano.sh "gone" not found`, "cancel", "kubernetes://"+ns+"/gone")
}

func TestDelete(t *testing.T) {
	ns := namespace(t)
	handle := "kubernetes://" + ns + "/d"
	mustRun(t, "run", "--app-id", "d", "--cfg", "namespace="+ns, example)
	r := mustRun(t, "delete", handle)
	if r.stdout != handle+": deleted\n" {
		t.Errorf("delete printed %q", r.stdout)
	}
	if names := jobs(t, ns); len(names) != 0 {
		t.Errorf("jobs after delete: %v", names)
	}
	mustFail(t, 1, `namespace "`+ns+`": delete job "d": jobs.batch.volcano.sh "d" not found`, "delete", handle)
	mustFail(t, 1, `get job "d": jobs.batch.volcano.sh "d" not found`, "status", handle)
}

// TestLifecycle walks the example through run, status, list, cancel and delete.
func TestLifecycle(t *testing.T) {
	ns := namespace(t)
	kc := contextNamespace(t, ns)
	r := mustRun(t, "run", "--kubeconfig", kc, "--cfg", "namespace="+ns, example)
	handle := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(handle, "kubernetes://"+ns+"/llama-ft-") {
		t.Fatalf("run printed %q, want a handle", r.stdout)
	}
	appID := strings.TrimPrefix(handle, "kubernetes://"+ns+"/")
	setPhase(t, ns, appID, vcbatch.Running, map[string]string{"trainer-0": "Running", "trainer-1": "Running", "trainer-2": "Pending", "trainer-3": "Pending"})
	r = mustRun(t, "status", "--kubeconfig", kc, handle)
	if want := handle + " RUNNING (Running: Test)\n  trainer 0:RUNNING 1:RUNNING 2:PENDING 3:PENDING\n"; r.stdout != want {
		t.Errorf("status:\ngot\n%s\nwant\n%s", r.stdout, want)
	}
	r = mustRun(t, "list", "--kubeconfig", kc)
	if !regexp.MustCompile(`\n` + regexp.QuoteMeta(handle) + ` +llama-ft +RUNNING +\d+[smhd]\S*\n$`).MatchString(r.stdout) {
		t.Errorf("list:\n%s", r.stdout)
	}
	mustRun(t, "cancel", "--kubeconfig", kc, handle)
	if n := len(commands(t, ns)); n != 1 {
		t.Errorf("commands after cancel: %d, want 1", n)
	}
	mustRun(t, "delete", "--kubeconfig", kc, appID)
	if names := jobs(t, ns); len(names) != 0 {
		t.Errorf("jobs after delete: %v", names)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in different goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until b holds want, or fails the test after a minute (a bound on a hang).
func waitFor(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return strings.Contains(b.String(), want), nil
	})
	if err != nil {
		t.Fatalf("output never showed %q; got:\n%s", want, b.String())
	}
}

func TestRunWait(t *testing.T) {
	ns := namespace(t)
	for _, test := range []struct {
		final vcbatch.JobPhase
		code  int
		last  string
	}{
		{vcbatch.Completed, 0, "SUCCEEDED (Completed: Test)"},
		{vcbatch.Failed, 1, "FAILED (Failed: Test)"},
		{vcbatch.Aborted, 1, "CANCELLED (Aborted: Test)"},
	} {
		id := strings.ToLower(string(test.final))
		handle := "kubernetes://" + ns + "/" + id
		run := startStarpod(t, "run", "--wait", "--app-id", id, "--cfg", "namespace="+ns, example)
		waitFor(t, &run.stderr, "trainer/3 UNKNOWN\n")
		setPhase(t, ns, id, vcbatch.Pending, map[string]string{"trainer-0": "Pending", "trainer-1": "Pending"})
		waitFor(t, &run.stderr, "trainer/1 PENDING\n")
		setPhase(t, ns, id, vcbatch.Running, map[string]string{"trainer-0": "Running", "trainer-1": "Pending"})
		waitFor(t, &run.stderr, "trainer/0 RUNNING\n")
		// A change that moves no state prints nothing.
		setPhase(t, ns, id, vcbatch.Running, map[string]string{"trainer-0": "Running", "trainer-1": "Bound"})
		setPhase(t, ns, id, test.final, map[string]string{"trainer-0": "Succeeded", "trainer-1": "Succeeded"})
		r := run.wait(t)
		// Standard output has the handle alone, for H=$(starpod run --wait ...); the progress
		// is on standard error.
		if got := r.stdout; got != handle+"\n" {
			t.Errorf("run --wait until %s: stdout %q, want the handle alone", test.final, got)
		}
		want := handle + " UNKNOWN\ntrainer/0 UNKNOWN\ntrainer/1 UNKNOWN\ntrainer/2 UNKNOWN\ntrainer/3 UNKNOWN\n" +
			handle + " PENDING (Pending: Test)\ntrainer/0 PENDING\ntrainer/1 PENDING\n" +
			handle + " RUNNING (Running: Test)\ntrainer/0 RUNNING\n" +
			handle + " " + test.last + "\ntrainer/0 SUCCEEDED\ntrainer/1 SUCCEEDED\n"
		progress, _, _ := strings.Cut(r.stderr, "app "+handle+" ended")
		if diff := cmp.Diff(want, progress); diff != "" {
			t.Errorf("run --wait until %s: output (-want +got):\n%s", test.final, diff)
		}
		if r.code != test.code {
			t.Errorf("run --wait until %s: exit %d, want %d; stderr:\n%s", test.final, r.code, test.code, r.stderr)
		}
		if test.code != 0 && !strings.Contains(r.stderr, "app "+handle+" ended "+strings.Fields(test.last)[0]) {
			t.Errorf("run --wait until %s: stderr %q does not say how the app ended", test.final, r.stderr)
		}
	}

	// status --wait follows an existing app; a deleted job ends the wait with an error.
	mustRun(t, "run", "--app-id", "deleted", "--cfg", "namespace="+ns, example)
	status := startStarpod(t, "status", "--wait", "kubernetes://"+ns+"/deleted")
	waitFor(t, &status.stdout, "trainer/3 UNKNOWN\n")
	mustRun(t, "delete", "kubernetes://"+ns+"/deleted")
	r := status.wait(t)
	if r.code == 0 {
		t.Errorf("status --wait of a deleted job succeeded")
	}
	if !strings.Contains(r.stderr, `watch job "deleted": the job was deleted`) {
		t.Errorf("status --wait of a deleted job: stderr %q", r.stderr)
	}
}

// volcanoPod makes the pod Volcano's controller would make for a task of job, as if the
// scheduler had put it on node ("" for none).
func volcanoPod(t *testing.T, job *vcbatch.Job, task int, node string) *corev1.Pod {
	t.Helper()
	spec := job.Spec.Tasks[task]
	pod := &corev1.Pod{
		ObjectMeta: *spec.Template.ObjectMeta.DeepCopy(),
		Spec:       *spec.Template.Spec.DeepCopy(),
	}
	pod.Name = fmt.Sprintf("%s-%s-0", job.Name, spec.Name)
	pod.Namespace = job.Namespace
	pod.Spec.NodeName = node
	pod.Labels[vcbatch.JobNameKey] = job.Name
	pod.Labels[vcbatch.TaskSpecKey] = spec.Name
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, vcbatch.SchemeGroupVersion.WithKind("Job"))}
	got, err := kube.CoreV1().Pods(job.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLogs checks what the API server can show without a kubelet: no pods yet, pods that
// are not scheduled, and the selection of pods and containers by role and replica.
func TestLogs(t *testing.T) {
	ns := namespace(t)
	handle := "kubernetes://" + ns + "/logs"
	mustRun(t, "run", "--app-id", "logs", "--cfg", "namespace="+ns, example)
	mustFail(t, 1, `^cluster "integration" \(https://127\.0\.0\.1:\d+\), namespace "`+ns+`": logs `+regexp.QuoteMeta(handle)+`: no pods yet \(app is UNKNOWN\)\n$`,
		"logs", handle)
	mustFail(t, 1, `logs job "logs": got role "trainr", want one of trainer \(did you mean "trainer"\?\)`, "logs", handle+"/trainr")
	mustFail(t, 1, `logs job "logs": got replica 7 of role "trainer", want one of 0, 1, 2, 3`, "logs", handle+"/trainer/7")

	job := mustGet(t, ns, "logs")
	volcanoPod(t, job, 0, "")          // not scheduled
	volcanoPod(t, job, 2, "node-gone") // on a node the API server does not know

	// A pod on no node has no logs: the API server answers an empty log, and starpod says why.
	r := mustRun(t, "logs", handle+"/trainer/0")
	if r.stdout != "" || r.stderr != `trainer/0: pod "logs-trainer-0-0" is not on a node yet (Pending): no logs`+"\n" {
		t.Errorf("logs of an unscheduled pod: %s", r)
	}
	// A pod on an unknown node: the API server cannot reach a kubelet, and says so.
	r = mustFail(t, 1, `^cluster "integration" \(https://127\.0\.0\.1:\d+\), namespace "`+ns+`": logs pod "logs-trainer-2-0" container "trainer-2": .*node-gone`,
		"logs", handle+"/trainer/2")
	if strings.Contains(r.stderr, "logs-trainer-0-0") {
		t.Errorf("logs of replica 2 also read replica 0:\n%s", r.stderr)
	}
	// Every replica: a note for one pod, the API's error for the other.
	r = mustFail(t, 1, `logs pod "logs-trainer-2-0" container "trainer-2": .*node-gone`, "logs", "--since", "1h", "--tail", "10", handle)
	if !strings.Contains(r.stderr, `trainer/0: pod "logs-trainer-0-0" is not on a node yet`) {
		t.Errorf("logs of every replica: no note for the unscheduled pod:\n%s", r.stderr)
	}
	mustFail(t, 1, `logs job "logs": pod "logs-trainer-0-0": got container "sidecar", want one of trainer-0`, "logs", "-c", "sidecar", handle+"/trainer/0")
	mustFail(t, 1, `no pods yet \(app is UNKNOWN\)`, "logs", handle+"/trainer/1")
}

// TestUnreachable checks that a kubeconfig that points nowhere fails with a clear message
// instead of hanging: a closed port, and a port that accepts connections but never answers.
func TestUnreachable(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	closed := writeServerKubeconfig(t, fmt.Sprintf("https://127.0.0.1:%d", port))
	r := starpodEnv(t, []string{"KUBECONFIG=" + closed}, "status", "app")
	want := fmt.Sprintf(`cluster "nowhere" (https://127.0.0.1:%d), namespace "default": get job "app": `, port)
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("status against a closed port: %s\nwant exit 1 and stderr starting %q, saying connection refused", r, want)
	}
	r = starpodEnv(t, []string{"KUBECONFIG=" + closed}, "run", "--app-id", "x", example)
	if r.code != 1 || !strings.Contains(r.stderr, `create job "x"`) || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("run against a closed port: %s", r)
	}

	// A listener that never accepts: the TCP handshake succeeds, TLS never does.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	silent := writeServerKubeconfig(t, "https://"+l.Addr().String())
	r = starpodEnv(t, []string{"KUBECONFIG=" + silent}, "list")
	if r.code != 1 || !strings.Contains(r.stderr, `cluster "nowhere" (https://`+l.Addr().String()+`), namespace "default": list jobs`) ||
		!strings.Contains(r.stderr, "TLS handshake timeout") {
		t.Errorf("list against a silent server: %s", r)
	}
}

// writeServerKubeconfig writes a kubeconfig for a server address, context "nowhere".
func writeServerKubeconfig(t *testing.T, server string) string {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "nowhere"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestWaitTerminal checks that on a terminal, --wait redraws one status block in place.
func TestWaitTerminal(t *testing.T) {
	ns := namespace(t)
	mustRun(t, "run", "--app-id", "tty", "--cfg", "namespace="+ns, example)
	handle := "kubernetes://" + ns + "/tty"
	cmd := exec.Command(starpodBin, "status", "--wait", handle)
	cmd.Env = []string{"HOME=" + t.TempDir(), "KUBECONFIG=" + kubeconfig, "TERM=xterm"}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out syncBuffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&out, tty) // ends with an error when the process exits
		close(copied)
	}()
	waitFor(t, &out, "3:UNKNOWN\r\n")
	setPhase(t, ns, "tty", vcbatch.Running, map[string]string{"trainer-0": "Running"})
	waitFor(t, &out, "0:RUNNING")
	setPhase(t, ns, "tty", vcbatch.Completed, map[string]string{"trainer-0": "Succeeded", "trainer-1": "Succeeded", "trainer-2": "Succeeded", "trainer-3": "Succeeded"})
	if err := cmd.Wait(); err != nil {
		t.Errorf("status --wait on a terminal: %v\n%q", err, out.String())
	}
	<-copied
	// The terminal turns \n into \r\n. Each block after the first erases the two lines of the
	// one before.
	erase := "\x1b[1A\x1b[2K\x1b[1A\x1b[2K"
	want := handle + " UNKNOWN\r\n  trainer 0:UNKNOWN 1:UNKNOWN 2:UNKNOWN 3:UNKNOWN\r\n" +
		erase + handle + " RUNNING (Running: Test)\r\n  trainer 0:RUNNING 1:UNKNOWN 2:UNKNOWN 3:UNKNOWN\r\n" +
		erase + handle + " SUCCEEDED (Completed: Test)\r\n  trainer 0:SUCCEEDED 1:SUCCEEDED 2:SUCCEEDED 3:SUCCEEDED\r\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("status --wait on a terminal (-want +got):\n%s", diff)
	}
}

// TestSubmitNamespace checks where Submit puts a job: in its own namespace if it has one,
// else in the kube context's.
func TestSubmitNamespace(t *testing.T) {
	ctxNS, ownNS := namespace(t, "context"), namespace(t, "own")
	c, err := cluster.Connect(cluster.Options{Kubeconfig: contextNamespace(t, ctxNS)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace() != ctxNS {
		t.Errorf("client namespace: got %q, want the context's %q", c.Namespace(), ctxNS)
	}
	newJob := func(ns string) *vcbatch.Job {
		return &vcbatch.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: ns},
			Spec: vcbatch.JobSpec{Queue: "default", Tasks: []vcbatch.TaskSpec{{
				Name: "t", Replicas: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
			}}},
		}
	}
	got, err := c.Submit(context.Background(), newJob(""), cluster.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != ctxNS || len(jobs(t, ctxNS)) != 1 {
		t.Errorf("job without a namespace: created in %q, want the context's %q", got.Namespace, ctxNS)
	}
	got, err = c.Submit(context.Background(), newJob(ownNS), cluster.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Namespace != ownNS || len(jobs(t, ownNS)) != 1 {
		t.Errorf("job with a namespace: created in %q, want %q", got.Namespace, ownNS)
	}
	// The status of a bare app id is looked up in the context's namespace.
	st, err := c.Status(context.Background(), cluster.Handle{AppID: "j"})
	if err != nil || st.Namespace != ctxNS {
		t.Errorf("status of a bare app id: %+v, %v; want namespace %q", st, err, ctxNS)
	}
}

// TestRunContextNamespace: without --cfg namespace=, run submits to the namespace of the
// kubeconfig context, and its dry run shows that namespace.
func TestRunContextNamespace(t *testing.T) {
	ns := namespace(t)
	kc := contextNamespace(t, ns)
	dry := mustRun(t, "run", "--dry-run", "--kubeconfig", kc, "--app-id", "ctx", example)
	if !strings.Contains(dry.stdout, "\n  namespace: "+ns+"\n") {
		t.Errorf("dry run does not show the context's namespace %s:\n%s", ns, dry.stdout)
	}
	r := mustRun(t, "run", "--kubeconfig", kc, "--app-id", "ctx", example)
	if got, want := strings.TrimSpace(r.stdout), "kubernetes://"+ns+"/ctx"; got != want {
		t.Errorf("handle: got %q, want %q", got, want)
	}
	mustRun(t, "status", "--kubeconfig", kc, "ctx")
	mustRun(t, "delete", "--kubeconfig", kc, "ctx")
}

// TestNamespaceFlag: -n/--namespace works on run and on every cluster command, and wins over
// --cfg namespace= and over the context's namespace.
func TestNamespaceFlag(t *testing.T) {
	ns, other := namespace(t), namespace(t, "other")
	kc := contextNamespace(t, other)
	r := mustRun(t, "run", "--kubeconfig", kc, "-n", ns, "--cfg", "namespace="+other, "--app-id", "nf", example)
	handle := "kubernetes://" + ns + "/nf"
	if got := strings.TrimSpace(r.stdout); got != handle {
		t.Errorf("run -n %s --cfg namespace=%s: handle %q, want %q", ns, other, got, handle)
	}
	if names := jobs(t, ns); len(names) != 1 {
		t.Errorf("jobs in %s: %v, want [nf]", ns, names)
	}
	if names := jobs(t, other); len(names) != 0 {
		t.Errorf("jobs in %s: %v, want none", other, names)
	}
	for _, args := range [][]string{
		{"status", "-n", ns, "nf"},
		{"status", "--namespace", ns, "--cfg", "namespace=" + other, "nf"},
		{"describe", "-n", ns, "nf"},
	} {
		r := mustRun(t, append([]string{"--kubeconfig", kc}, args...)...)
		if !strings.Contains(r.stdout, handle) {
			t.Errorf("starpod %s: output does not name %s:\n%s", strings.Join(args, " "), handle, r.stdout)
		}
	}
	r = mustRun(t, "list", "--kubeconfig", kc, "-n", ns)
	if !strings.Contains(r.stdout, handle+" ") {
		t.Errorf("list -n %s:\n%s", ns, r.stdout)
	}
	mustFail(t, 1, `namespace "`+other+`": get job "nf": .* not found`, "status", "--kubeconfig", kc, "nf")
	r = mustRun(t, "cancel", "--kubeconfig", kc, "-n", ns, "nf")
	if r.stdout != handle+": cancel requested (AbortJob)\n" {
		t.Errorf("cancel -n: %q", r.stdout)
	}
	r = mustRun(t, "delete", "--kubeconfig", kc, "-n", ns, "nf")
	if r.stdout != handle+": deleted\n" {
		t.Errorf("delete -n: %q", r.stdout)
	}
}

// TestListNewestFirst: list -A sorts newest first across namespaces, not by namespace first.
func TestListNewestFirst(t *testing.T) {
	nsA, nsB := namespace(t, "a"), namespace(t, "b")
	mustRun(t, "run", "--app-id", "older", "-n", nsA, example)
	time.Sleep(1100 * time.Millisecond) // creation times are in seconds
	mustRun(t, "run", "--app-id", "newer", "-n", nsB, example)
	for _, args := range [][]string{{"list", "-A", "-o", "json"}, {"list", "-A"}} {
		r := mustRun(t, args...)
		var order []string
		if args[len(args)-1] == "json" {
			var apps []cluster.Status
			if err := json.Unmarshal([]byte(r.stdout), &apps); err != nil {
				t.Fatalf("list -A -o json: %v\n%s", err, r.stdout)
			}
			for _, a := range apps {
				if a.Namespace == nsA || a.Namespace == nsB {
					order = append(order, a.Handle)
				}
			}
		} else {
			for _, line := range strings.Split(r.stdout, "\n") {
				if f := strings.Fields(line); len(f) > 0 && (strings.Contains(f[0], "/"+nsA+"/") || strings.Contains(f[0], "/"+nsB+"/")) {
					order = append(order, f[0])
				}
			}
		}
		want := []string{"kubernetes://" + nsB + "/newer", "kubernetes://" + nsA + "/older"}
		if diff := cmp.Diff(want, order); diff != "" {
			t.Errorf("starpod %s: order (-want +got):\n%s", strings.Join(args, " "), diff)
		}
	}
}

// TestForeignJob: a Volcano Job that starpod did not make is shown by status, every replica
// of its tasks included, but cancel and delete refuse it unless --force.
func TestForeignJob(t *testing.T) {
	ns := namespace(t)
	handle := "kubernetes://" + ns + "/foreign"
	foreign := &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: ns},
		Spec: vcbatch.JobSpec{Queue: "default", Tasks: []vcbatch.TaskSpec{{
			Name: "worker", Replicas: 3,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		}}},
	}
	if _, err := vc.BatchV1alpha1().Jobs(ns).Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := mustGet(t, ns, "foreign")
	job.Status.State = vcbatch.JobState{Phase: vcbatch.Running, Reason: "Test"}
	job.Status.TaskStatusCount = map[string]vcbatch.TaskState{"worker": {Phase: map[corev1.PodPhase]int32{"Running": 2, "Pending": 1}}}
	if _, err := vc.BatchV1alpha1().Jobs(ns).UpdateStatus(context.Background(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "status", handle)
	if want := handle + " RUNNING (Running: Test)\n  worker 0:RUNNING 1:RUNNING 2:PENDING\n"; r.stdout != want {
		t.Errorf("status of a task of 3 replicas:\ngot\n%s\nwant\n%s", r.stdout, want)
	}

	mustFail(t, 1, `^cluster "integration" \(https://127\.0\.0\.1:\d+\), namespace "`+ns+`": cancel job "foreign": `+
		`not made by starpod \(no starpod\.dev/app-spec annotation\); --force cancels it anyway\n$`, "cancel", handle)
	mustFail(t, 1, `^cluster "integration" \(https://127\.0\.0\.1:\d+\), namespace "`+ns+`": delete job "foreign": `+
		`not made by starpod \(no starpod\.dev/app-spec annotation\); --force deletes it anyway\n$`, "delete", handle)
	if n := len(commands(t, ns)); n != 0 {
		t.Errorf("commands after a refused cancel: %d, want 0", n)
	}
	if names := jobs(t, ns); len(names) != 1 {
		t.Errorf("jobs after a refused delete: %v, want [foreign]", names)
	}
	mustFail(t, 1, `was it made by starpod\?`, "describe", handle)

	r = mustRun(t, "cancel", "--force", handle)
	if r.stdout != handle+": cancel requested (AbortJob)\n" {
		t.Errorf("cancel --force printed %q", r.stdout)
	}
	r = mustRun(t, "delete", "--force", handle)
	if r.stdout != handle+": deleted\n" {
		t.Errorf("delete --force printed %q", r.stdout)
	}
	if names := jobs(t, ns); len(names) != 0 {
		t.Errorf("jobs after delete --force: %v", names)
	}
}

package cluster

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func TestAppStateOf(t *testing.T) {
	for phase, want := range map[vcbatch.JobPhase]AppState{
		"":                  Unknown,
		vcbatch.Pending:     Pending,
		vcbatch.Running:     Running,
		vcbatch.Restarting:  Running,
		vcbatch.Completing:  Running,
		vcbatch.Terminating: Running,
		vcbatch.Aborting:    Running,
		vcbatch.Completed:   Succeeded,
		vcbatch.Aborted:     Cancelled,
		vcbatch.Terminated:  Failed,
		vcbatch.Failed:      Failed,
		"Suspended":         Unknown,
	} {
		if got := AppStateOf(phase); got != want {
			t.Errorf("AppStateOf(%q) = %s, want %s", phase, got, want)
		}
	}
}

func TestReplicaStateOf(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]AppState{
		"":          Unknown,
		"Pending":   Pending,
		"Allocated": Pending,
		"Pipelined": Pending,
		"Binding":   Pending,
		"Bound":     Pending,
		"Running":   Running,
		"Releasing": Running,
		"Succeeded": Succeeded,
		"Failed":    Failed,
		"Unknown":   Unknown,
		"Evicted":   Unknown,
	} {
		if got := ReplicaStateOf(phase); got != want {
			t.Errorf("ReplicaStateOf(%q) = %s, want %s", phase, got, want)
		}
	}
}

func TestFinal(t *testing.T) {
	for s, want := range map[AppState]bool{
		Unknown: false, Pending: false, Running: false,
		Succeeded: true, Failed: true, Cancelled: true,
	} {
		if got := s.Final(); got != want {
			t.Errorf("%s.Final() = %t, want %t", s, got, want)
		}
	}
}

// task returns a task as the scheduler builds it: one replica, labelled with its role.
func task(role string, roleIndex, replica int) vcbatch.TaskSpec {
	name := role + "-" + itoa(replica)
	return vcbatch.TaskSpec{
		Name:     name,
		Replicas: 1,
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			labelRoleName:  role,
			labelRoleIndex: itoa(roleIndex),
			labelReplicaID: itoa(replica),
		}}},
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func counts(phase string) vcbatch.TaskState {
	return vcbatch.TaskState{Phase: map[corev1.PodPhase]int32{corev1.PodPhase(phase): 1}}
}

func TestStateOf(t *testing.T) {
	job := &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "llama-ft-x7k2", Namespace: "ml",
			Labels: map[string]string{labelAppName: "llama-ft"},
		},
		Spec: vcbatch.JobSpec{Tasks: []vcbatch.TaskSpec{
			// Out of order, to show that roles sort by index and replicas by id.
			task("trainer", 1, 1),
			task("trainer", 1, 0),
			task("dataloader", 0, 0),
			task("trainer", 1, 2),
		}},
		Status: vcbatch.JobStatus{
			State: vcbatch.JobState{Phase: vcbatch.Running, Reason: "MinAvailable"},
			TaskStatusCount: map[string]vcbatch.TaskState{
				"trainer-0":    counts("Running"),
				"trainer-1":    counts("Bound"),
				"dataloader-0": counts("Succeeded"),
				// After a restart: one pod failed, its successor runs.
				"trainer-2": {Phase: map[corev1.PodPhase]int32{"Failed": 1, "Running": 1, "Pending": 0}},
			},
		},
	}
	want := Status{
		Handle: "kubernetes://ml/llama-ft-x7k2", AppID: "llama-ft-x7k2", Namespace: "ml", Name: "llama-ft",
		State: Running, Phase: "Running", Reason: "MinAvailable",
		Roles: []RoleStatus{
			{Name: "dataloader", Replicas: []ReplicaStatus{{ID: 0, Task: "dataloader-0", State: Succeeded, Phase: "Succeeded"}}},
			{Name: "trainer", Replicas: []ReplicaStatus{
				{ID: 0, Task: "trainer-0", State: Running, Phase: "Running"},
				{ID: 1, Task: "trainer-1", State: Pending, Phase: "Bound"},
				{ID: 2, Task: "trainer-2", State: Running, Phase: "Running"},
			}},
		},
	}
	if diff := cmp.Diff(want, StateOf(job)); diff != "" {
		t.Errorf("StateOf (-want +got):\n%s", diff)
	}
}

func TestStateOfNoStatus(t *testing.T) {
	// A job made by hand: no labels, TorchX's task names, no status yet.
	job := &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"},
		Spec: vcbatch.JobSpec{Tasks: []vcbatch.TaskSpec{
			{Name: "worker-1"}, {Name: "worker-0"}, {Name: "ps"}, {Name: "a-b-c"},
		}},
	}
	want := Status{
		Handle: "kubernetes://default/j", AppID: "j", Namespace: "default", State: Unknown,
		Roles: []RoleStatus{
			{Name: "a-b-c", Replicas: []ReplicaStatus{{ID: 0, Task: "a-b-c", State: Unknown}}},
			{Name: "ps", Replicas: []ReplicaStatus{{ID: 0, Task: "ps", State: Unknown}}},
			{Name: "worker", Replicas: []ReplicaStatus{
				{ID: 0, Task: "worker-0", State: Unknown},
				{ID: 1, Task: "worker-1", State: Unknown},
			}},
		},
	}
	if diff := cmp.Diff(want, StateOf(job)); diff != "" {
		t.Errorf("StateOf (-want +got):\n%s", diff)
	}
}

func statusOf(app AppState, phase string, trainer ...AppState) Status {
	st := Status{Handle: "kubernetes://ml/app", State: app, Phase: phase}
	r := RoleStatus{Name: "trainer"}
	for i, s := range trainer {
		r.Replicas = append(r.Replicas, ReplicaStatus{ID: i, State: s})
	}
	st.Roles = []RoleStatus{r}
	return st
}

func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false)
	p.Update(statusOf(Unknown, "", Unknown, Unknown))
	p.Update(statusOf(Pending, "Pending", Pending, Unknown))
	p.Update(statusOf(Pending, "Pending", Pending, Pending))
	p.Update(statusOf(Running, "Running", Running, Running))
	p.Update(statusOf(Running, "Restarting", Running, Running))
	p.Update(statusOf(Failed, "Failed", Failed, Succeeded))
	// The app's line comes before its replicas' within one update.
	want := `kubernetes://ml/app UNKNOWN
trainer/0 UNKNOWN
trainer/1 UNKNOWN
kubernetes://ml/app PENDING (Pending)
trainer/0 PENDING
trainer/1 PENDING
kubernetes://ml/app RUNNING (Running)
trainer/0 RUNNING
trainer/1 RUNNING
kubernetes://ml/app FAILED (Failed)
trainer/0 FAILED
trainer/1 SUCCEEDED
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("progress lines (-want +got):\n%s", diff)
	}
}

func TestProgressLive(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, true)
	p.Update(statusOf(Pending, "Pending", Pending))
	p.Update(statusOf(Running, "Running", Running))
	want := "kubernetes://ml/app PENDING (Pending)\n  trainer 0:PENDING\n" +
		"\x1b[1A\x1b[2K\x1b[1A\x1b[2K" +
		"kubernetes://ml/app RUNNING (Running)\n  trainer 0:RUNNING\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("live progress (-want +got):\n%s", diff)
	}
}

func TestFormatStatus(t *testing.T) {
	st := Status{
		Handle: "kubernetes://ml/app", State: Failed, Phase: "Failed", Reason: "PodFailed",
		Message: "task trainer-1 failed",
		Roles: []RoleStatus{
			{Name: "ps", Replicas: []ReplicaStatus{{ID: 0, State: Succeeded}}},
			{Name: "trainer", Replicas: []ReplicaStatus{{ID: 0, State: Running}, {ID: 1, State: Failed}}},
		},
	}
	want := `kubernetes://ml/app FAILED (Failed: PodFailed)
  message: task trainer-1 failed
  ps      0:SUCCEEDED
  trainer 0:RUNNING 1:FAILED
`
	if diff := cmp.Diff(want, FormatStatus(st)); diff != "" {
		t.Errorf("FormatStatus (-want +got):\n%s", diff)
	}
}

func TestStatusEqual(t *testing.T) {
	a := statusOf(Running, "Running", Running, Pending)
	if !a.equal(statusOf(Running, "Running", Running, Pending)) {
		t.Errorf("equal statuses differ")
	}
	for _, b := range []Status{
		statusOf(Running, "Restarting", Running, Pending),
		statusOf(Pending, "Running", Running, Pending),
		statusOf(Running, "Running", Running, Running),
		statusOf(Running, "Running", Running),
	} {
		if a.equal(b) {
			t.Errorf("%v equals %v", a, b)
		}
	}
}

// TestStateOfSeveralReplicas: a task of several replicas (not starpod's, which has one replica
// per task) shows each of them, with the phases Volcano counts for the task.
func TestStateOfSeveralReplicas(t *testing.T) {
	job := &vcbatch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"},
		Spec: vcbatch.JobSpec{Tasks: []vcbatch.TaskSpec{
			{Name: "worker", Replicas: 4},
			{Name: "ps", Replicas: 1},
		}},
		Status: vcbatch.JobStatus{
			State: vcbatch.JobState{Phase: vcbatch.Running},
			TaskStatusCount: map[string]vcbatch.TaskState{
				"worker": {Phase: map[corev1.PodPhase]int32{"Pending": 1, "Running": 2}},
				"ps":     counts("Running"),
			},
		},
	}
	got := StateOf(job)
	want := []RoleStatus{
		{Name: "ps", Replicas: []ReplicaStatus{{ID: 0, Task: "ps", State: Running, Phase: "Running"}}},
		{Name: "worker", Replicas: []ReplicaStatus{
			{ID: 0, Task: "worker", State: Running, Phase: "Running"},
			{ID: 1, Task: "worker", State: Running, Phase: "Running"},
			{ID: 2, Task: "worker", State: Pending, Phase: "Pending"},
			{ID: 3, Task: "worker", State: Unknown},
		}},
	}
	if diff := cmp.Diff(want, got.Roles); diff != "" {
		t.Errorf("StateOf (-want +got):\n%s", diff)
	}
	if s := FormatStatus(got); !strings.Contains(s, "  worker 0:RUNNING 1:RUNNING 2:PENDING 3:UNKNOWN\n") {
		t.Errorf("FormatStatus:\n%s", s)
	}
}

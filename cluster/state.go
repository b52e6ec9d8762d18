package cluster

// This file defines app and replica states and their mapping from Volcano's phases.

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// An AppState is the state of an app or of one replica, with TorchX's names.
type AppState string

// The states. SUCCEEDED, FAILED and CANCELLED are final.
const (
	Unknown   AppState = "UNKNOWN"
	Pending   AppState = "PENDING"
	Running   AppState = "RUNNING"
	Succeeded AppState = "SUCCEEDED"
	Failed    AppState = "FAILED"
	Cancelled AppState = "CANCELLED"
)

// Final reports whether s is a state the app never leaves: SUCCEEDED, FAILED or CANCELLED.
func (s AppState) Final() bool {
	return s == Succeeded || s == Failed || s == Cancelled
}

// AppStateOf maps a Volcano job phase to an app state, as TorchX does: Pending is PENDING;
// Running, Restarting, Completing, Terminating and Aborting are RUNNING; Completed is
// SUCCEEDED; Aborted is CANCELLED; Terminated and Failed are FAILED; no phase, or one
// unknown to this version, is UNKNOWN.
func AppStateOf(phase vcbatch.JobPhase) AppState {
	switch phase {
	case vcbatch.Pending:
		return Pending
	case vcbatch.Running, vcbatch.Restarting, vcbatch.Completing, vcbatch.Terminating, vcbatch.Aborting:
		return Running
	case vcbatch.Completed:
		return Succeeded
	case vcbatch.Aborted:
		return Cancelled
	case vcbatch.Terminated, vcbatch.Failed:
		return Failed
	}
	return Unknown
}

// ReplicaStateOf maps the phase of a task's pod, as Volcano counts it in a job's
// status.taskStatusCount, to a replica state, as TorchX does: Pending, and Volcano's own
// Allocated, Pipelined, Binding and Bound, are PENDING; Running and Releasing are RUNNING;
// Succeeded is SUCCEEDED; Failed is FAILED; anything else is UNKNOWN.
func ReplicaStateOf(phase corev1.PodPhase) AppState {
	switch phase {
	case corev1.PodPending, "Allocated", "Pipelined", "Binding", "Bound":
		return Pending
	case corev1.PodRunning, "Releasing":
		return Running
	case corev1.PodSucceeded:
		return Succeeded
	case corev1.PodFailed:
		return Failed
	}
	return Unknown
}

// A Status is the state of an app and of each of its replicas.
type Status struct {
	Handle    string       `json:"handle"`
	AppID     string       `json:"app_id"`
	Namespace string       `json:"namespace"`
	Name      string       `json:"name,omitempty"` // the app's name in its spec
	State     AppState     `json:"state"`
	Phase     string       `json:"phase,omitempty"` // Volcano's job phase
	Reason    string       `json:"reason,omitempty"`
	Message   string       `json:"message,omitempty"`
	Created   time.Time    `json:"created,omitzero"`
	Roles     []RoleStatus `json:"roles"`
}

// A RoleStatus is the state of each replica of one role.
type RoleStatus struct {
	Name     string          `json:"name"`
	Replicas []ReplicaStatus `json:"replicas"`
}

// A ReplicaStatus is the state of one replica: one Volcano task of one pod.
type ReplicaStatus struct {
	ID    int      `json:"id"`
	Task  string   `json:"task"`
	State AppState `json:"state"`
	Phase string   `json:"phase,omitempty"` // the pod phase Volcano counted
}

// StateOf returns the status of the app that job runs. Roles are in the order of their role
// index, replicas in the order of their ids.
func StateOf(job *vcbatch.Job) Status {
	st := Status{
		Handle:    Handle{Namespace: job.Namespace, AppID: job.Name}.String(),
		AppID:     job.Name,
		Namespace: job.Namespace,
		Name:      appName(job),
		State:     AppStateOf(job.Status.State.Phase),
		Phase:     string(job.Status.State.Phase),
		Reason:    job.Status.State.Reason,
		Message:   job.Status.State.Message,
		Created:   job.CreationTimestamp.Time,
		Roles:     []RoleStatus{},
	}
	type roleKey struct {
		index int
		name  string
	}
	roles := map[roleKey][]ReplicaStatus{}
	for _, task := range job.Spec.Tasks {
		ref := taskReplica(task)
		rs := ReplicaStatus{ID: ref.replica, Task: task.Name, State: Unknown}
		if ts, ok := job.Status.TaskStatusCount[task.Name]; ok {
			phase := taskPhase(ts)
			rs.Phase = string(phase)
			rs.State = ReplicaStateOf(phase)
		}
		k := roleKey{ref.roleIndex, ref.role}
		roles[k] = append(roles[k], rs)
	}
	keys := make([]roleKey, 0, len(roles))
	for k := range roles {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].index != keys[j].index {
			return keys[i].index < keys[j].index
		}
		return keys[i].name < keys[j].name
	})
	for _, k := range keys {
		reps := roles[k]
		sort.SliceStable(reps, func(i, j int) bool { return reps[i].ID < reps[j].ID })
		st.Roles = append(st.Roles, RoleStatus{Name: k.name, Replicas: reps})
	}
	return st
}

// phaseOrder ranks the pod phases of a task whose counts name several, as after a restart:
// the first listed that has pods wins.
var phaseOrder = []corev1.PodPhase{
	corev1.PodRunning, "Releasing", corev1.PodFailed, corev1.PodSucceeded,
	"Bound", "Binding", "Pipelined", "Allocated", corev1.PodPending, corev1.PodUnknown,
}

// taskPhase returns the phase of a task's pod from Volcano's counts.
func taskPhase(ts vcbatch.TaskState) corev1.PodPhase {
	for _, p := range phaseOrder {
		if ts.Phase[p] > 0 {
			return p
		}
	}
	// A phase this version does not know: take the first in name order, for determinism.
	var names []string
	for p, n := range ts.Phase {
		if n > 0 {
			names = append(names, string(p))
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return corev1.PodPhase(names[0])
}

// A replicaRef places a task in its app: its role, the role's index and the replica id.
type replicaRef struct {
	role      string
	roleIndex int
	replica   int
}

// taskReplica returns the role and replica of a task of a job: from the labels the
// scheduler puts on each task's pod template, else from the task name, role-<replica> as
// TorchX names tasks.
func taskReplica(task vcbatch.TaskSpec) replicaRef {
	labels := task.Template.Labels
	ref := replicaRef{role: labels[labelRoleName], roleIndex: -1, replica: -1}
	if n, err := strconv.Atoi(labels[labelRoleIndex]); err == nil {
		ref.roleIndex = n
	}
	if n, err := strconv.Atoi(labels[labelReplicaID]); err == nil {
		ref.replica = n
	}
	if ref.role == "" || ref.replica < 0 {
		role, replica := task.Name, 0
		if i := strings.LastIndexByte(task.Name, '-'); i > 0 {
			if n, err := strconv.Atoi(task.Name[i+1:]); err == nil && n >= 0 {
				role, replica = task.Name[:i], n
			}
		}
		if ref.role == "" {
			ref.role = role
		}
		if ref.replica < 0 {
			ref.replica = replica
		}
	}
	if ref.roleIndex < 0 {
		ref.roleIndex = math.MaxInt // after the labelled roles, then by name
	}
	return ref
}

// appName returns the app's name from the job's labels, or "".
func appName(job *vcbatch.Job) string {
	if n := job.Labels[labelAppName]; n != "" {
		return n
	}
	return job.Labels[labelName]
}

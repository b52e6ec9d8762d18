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
// index, replicas in the order of their ids. Each task of starpod's is one replica; a task of
// several replicas (in a job that starpod did not make) shows each of them, numbered by the
// pod's index in the task, with the phases Volcano counts for the task given out in a fixed
// order (see taskPhases), since Volcano does not say which pod has which.
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
		ts := job.Status.TaskStatusCount[task.Name]
		if task.Replicas > 1 {
			// Not a task of starpod's, which has one replica each: show every pod of the
			// task, by its index in the task, as a replica of a role named after the task
			// (or its role label).
			k := roleKey{ref.roleIndex, task.Template.Labels[labelRoleName]}
			if k.name == "" {
				k.name = task.Name
			}
			phases := taskPhases(ts, int(task.Replicas))
			for i := range int(task.Replicas) {
				rs := ReplicaStatus{ID: i, Task: task.Name, State: Unknown}
				if i < len(phases) {
					rs.Phase = string(phases[i])
					rs.State = ReplicaStateOf(phases[i])
				}
				roles[k] = append(roles[k], rs)
			}
			continue
		}
		rs := ReplicaStatus{ID: ref.replica, Task: task.Name, State: Unknown}
		if phase := taskPhase(ts); phase != "" {
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

// taskPhases returns the phases of the pods of a task of n replicas from Volcano's counts,
// at most n of them. Volcano counts pods by phase, not which pod is in which: the phases come
// in the order of phaseOrder (then phases this version does not know, by name), so that
// replica i of a task is only the i-th of its pods in that order.
func taskPhases(ts vcbatch.TaskState, n int) []corev1.PodPhase {
	var out []corev1.PodPhase
	add := func(p corev1.PodPhase) {
		for range ts.Phase[p] {
			if len(out) < n {
				out = append(out, p)
			}
		}
	}
	known := map[corev1.PodPhase]bool{}
	for _, p := range phaseOrder {
		known[p] = true
		add(p)
	}
	var other []string
	for p := range ts.Phase {
		if !known[p] {
			other = append(other, string(p))
		}
	}
	sort.Strings(other)
	for _, p := range other {
		add(corev1.PodPhase(p))
	}
	return out
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
func appName(job *vcbatch.Job) string { return appNameOf(job.Labels) }

// appNameOf returns the app's name from the labels of its job or JobSet, or "".
func appNameOf(labels map[string]string) string {
	if n := labels[labelAppName]; n != "" {
		return n
	}
	return labels[labelName]
}

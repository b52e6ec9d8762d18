package cluster

// This file defines the operations on apps run as JobSets (jobset.x-k8s.io/v1alpha2) and the
// mapping of the states of a JobSet, its Jobs and their pods to app and replica states.

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/scheduler"
)

// AnnotationCancelled marks a JobSet that [Client.Cancel] suspended; its value is the time
// of the cancel, in RFC 3339.
const AnnotationCancelled = "starpod.dev/cancelled"

// The reasons a Status gives for a suspended JobSet.
const (
	// ReasonKueueAdmission: the JobSet is suspended in a Kueue queue, waiting for admission.
	ReasonKueueAdmission = "WaitingForKueueAdmission"
	// ReasonCancelled: starpod cancel suspended the JobSet.
	ReasonCancelled = "Cancelled"
)

// asJobSet returns h naming a JobSet.
func asJobSet(h Handle) Handle {
	h.Scheduler = scheduler.SchedulerJobSet
	return h
}

// isJobSet reports whether err, the error of reading the Volcano Job of h, means that h
// names a JobSet instead: h is a bare app id, there is no Volcano Job of that name (or no
// Volcano in the cluster), and there is a JobSet of that name.
func (c *Client) isJobSet(ctx context.Context, h Handle, err error) bool {
	if h.Scheduler != "" || !apierrors.IsNotFound(err) {
		return false
	}
	return c.jobSets(c.namespaceOf(h)).get(ctx, h.AppID, new(jobset.JobSet)) == nil
}

// Locate returns h with its namespace filled in as Resolve does and, for a bare app id, the
// scheduler of the object it names: a Volcano Job if there is one of that name, else a
// JobSet if there is one. An app id that names neither is returned as it is.
func (c *Client) Locate(ctx context.Context, h Handle) Handle {
	h = c.Resolve(h)
	if h.Scheduler != "" {
		return h
	}
	if err := c.jobs(h.Namespace).get(ctx, h.AppID, new(vcbatch.Job)); err != nil && c.isJobSet(ctx, h, err) {
		return asJobSet(h)
	}
	return h
}

// SubmitJobSet creates js on the cluster as [Client.Submit] creates a Volcano Job, and
// returns the JobSet as the API server stored it (or, in a dry run, would have).
func (c *Client) SubmitJobSet(ctx context.Context, js *jobset.JobSet, opts SubmitOptions) (*jobset.JobSet, error) {
	js = js.DeepCopy()
	got := new(jobset.JobSet)
	if err := c.create(ctx, js, c.jobSets, "jobset", scheduler.SchedulerJobSet, opts, got); err != nil {
		return nil, err
	}
	return got, nil
}

// GetJobSet returns the JobSet of the app h names.
func (c *Client) GetJobSet(ctx context.Context, h Handle) (*jobset.JobSet, error) {
	ns := c.namespaceOf(h)
	js := new(jobset.JobSet)
	if err := c.jobSets(ns).get(ctx, h.AppID, js); err != nil {
		return nil, c.errorf(ns, "get", err, "jobset %q", h.AppID)
	}
	return js, nil
}

// A Description is an app as it was submitted: its handle, the app spec read back from its
// Volcano Job or JobSet, their labels, and the app's status.
type Description struct {
	Handle string            `json:"handle"`
	App    *scheduler.App    `json:"app"`
	Labels map[string]string `json:"labels,omitempty"`
	Status Status            `json:"status"`
}

// Describe returns the description of the app h names, from its Volcano Job or JobSet.
func (c *Client) Describe(ctx context.Context, h Handle) (Description, error) {
	if !h.IsJobSet() {
		job, err := c.Get(ctx, h)
		if err == nil {
			spec, err := scheduler.AppFromJob(job)
			if err != nil {
				return Description{}, c.errorf(job.Namespace, "describe", err, "job %q", job.Name)
			}
			st := StateOf(job)
			return Description{Handle: st.Handle, App: spec, Labels: job.Labels, Status: st}, nil
		}
		if !c.isJobSet(ctx, h, err) {
			return Description{}, err
		}
		h = asJobSet(h)
	}
	js, st, err := c.jobSetStatus(ctx, h)
	if err != nil {
		return Description{}, err
	}
	spec, err := scheduler.AppFromJobSet(js)
	if err != nil {
		return Description{}, c.errorf(js.Namespace, "describe", err, "jobset %q", js.Name)
	}
	return Description{Handle: st.Handle, App: spec, Labels: js.Labels, Status: st}, nil
}

// jobSetStatus returns the JobSet of h and the status of its app, from the JobSet, its Jobs
// and their pods.
func (c *Client) jobSetStatus(ctx context.Context, h Handle) (*jobset.JobSet, Status, error) {
	js, err := c.GetJobSet(ctx, h)
	if err != nil {
		return nil, Status{}, err
	}
	st, err := c.jobSetState(ctx, js)
	return js, st, err
}

// jobSetState returns the status of the app of js, from js, its Jobs and their pods.
func (c *Client) jobSetState(ctx context.Context, js *jobset.JobSet) (Status, error) {
	jobs, pods, err := c.jobSetParts(ctx, js)
	if err != nil {
		return Status{}, err
	}
	return StateOfJobSet(js, jobs, pods), nil
}

// jobSetParts returns the Jobs of js and their pods: those labelled with its name and, when
// they carry it, its UID.
func (c *Client) jobSetParts(ctx context.Context, js *jobset.JobSet) ([]batchv1.Job, []corev1.Pod, error) {
	ns := js.Namespace
	sel := labels.Set{jobset.JobSetNameKey: js.Name}.String()
	jobs := new(batchv1.JobList)
	if err := c.kubeJobs(ns).list(ctx, metav1.ListOptions{LabelSelector: sel}, jobs); err != nil {
		return nil, nil, c.errorf(ns, "list", err, "jobs of jobset %q (%s)", js.Name, sel)
	}
	pods := new(corev1.PodList)
	if err := c.pods(ns).list(ctx, metav1.ListOptions{LabelSelector: sel}, pods); err != nil {
		return nil, nil, c.errorf(ns, "list", err, "pods of jobset %q (%s)", js.Name, sel)
	}
	ours := func(l map[string]string) bool {
		uid, ok := l[jobset.JobSetUIDKey]
		return !ok || uid == string(js.UID)
	}
	var outJobs []batchv1.Job
	for _, j := range jobs.Items {
		if ours(j.Labels) {
			outJobs = append(outJobs, j)
		}
	}
	var outPods []corev1.Pod
	for _, p := range pods.Items {
		if ours(p.Labels) {
			outPods = append(outPods, p)
		}
	}
	return outJobs, outPods, nil
}

// jobSetPhase returns the state of the app of js, and the phase, reason and message that
// say why: its Completed or Failed condition, a cancel, a suspension (waiting for Kueue
// admission when it is in a Kueue queue), else RUNNING while Jobs are active, PENDING before,
// and UNKNOWN while the JobSet has no status yet.
func jobSetPhase(js *jobset.JobSet) (state AppState, phase, reason, message string) {
	for _, cond := range js.Status.Conditions {
		if cond.Status != metav1.ConditionTrue {
			continue
		}
		switch jobset.JobSetConditionType(cond.Type) {
		case jobset.JobSetCompleted:
			return Succeeded, "Completed", cond.Reason, cond.Message
		case jobset.JobSetFailed:
			return Failed, "Failed", cond.Reason, cond.Message
		}
	}
	switch js.Status.TerminalState {
	case string(jobset.JobSetCompleted):
		return Succeeded, "Completed", "", ""
	case string(jobset.JobSetFailed):
		return Failed, "Failed", "", ""
	}
	if js.Spec.Suspend != nil && *js.Spec.Suspend {
		if at, ok := js.Annotations[AnnotationCancelled]; ok {
			return Cancelled, "Suspended", ReasonCancelled, "cancelled with starpod cancel at " + at
		}
		if q := js.Labels[scheduler.LabelKueueQueue]; q != "" {
			return Pending, "Suspended", ReasonKueueAdmission, fmt.Sprintf("waiting for Kueue admission in queue %q", q)
		}
		return Pending, "Suspended", "", ""
	}
	if len(js.Status.ReplicatedJobsStatus) == 0 && len(js.Status.Conditions) == 0 {
		return Unknown, "", "", ""
	}
	for _, rs := range js.Status.ReplicatedJobsStatus {
		if rs.Active > 0 || rs.Ready > 0 || rs.Succeeded > 0 {
			if js.Status.Restarts > 0 {
				return Running, "Running", "Restarted", fmt.Sprintf("restarted %d times", js.Status.Restarts)
			}
			return Running, "Running", "", ""
		}
	}
	return Pending, "Pending", "", ""
}

// StateOfJobSet returns the status of the app that js runs, given its Jobs and their pods
// (either may be nil: the replicas' states then follow the JobSet's alone). Roles are the
// replicated jobs in the order of their role index; a role's replica i is the pod of
// completion index i of its Job (of job index j, replica j*completions+i, for a replicated
// job of several Jobs). A replica's state is, in this order: SUCCEEDED if the app succeeded
// or its index is among the Job's completed indexes; FAILED if among its failed indexes;
// the state of the phase of its newest pod; the Job's if the Job is complete or failed;
// PENDING while the JobSet is suspended or has no pod for it yet; the app's if the app ended;
// else UNKNOWN.
func StateOfJobSet(js *jobset.JobSet, jobs []batchv1.Job, pods []corev1.Pod) Status {
	state, phase, reason, message := jobSetPhase(js)
	st := Status{
		Handle:    Handle{Namespace: js.Namespace, AppID: js.Name, Scheduler: scheduler.SchedulerJobSet}.String(),
		AppID:     js.Name,
		Namespace: js.Namespace,
		Name:      appNameOf(js.Labels),
		State:     state,
		Phase:     phase,
		Reason:    reason,
		Message:   message,
		Created:   js.CreationTimestamp.Time,
		Roles:     []RoleStatus{},
	}
	jobByName := map[string]*batchv1.Job{}
	for i := range jobs {
		jobByName[jobs[i].Name] = &jobs[i]
	}
	newest := map[jobSetPod]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		k, ok := jobSetPodKey(p)
		if !ok {
			continue
		}
		if old := newest[k]; old == nil || p.CreationTimestamp.After(old.CreationTimestamp.Time) {
			newest[k] = p
		}
	}
	type role struct {
		index int
		rs    RoleStatus
	}
	var roles []role
	for ri, rj := range js.Spec.ReplicatedJobs {
		tmpl := &rj.Template
		completions := 1
		if c := tmpl.Spec.Completions; c != nil {
			completions = int(*c)
		} else if p := tmpl.Spec.Parallelism; p != nil {
			completions = int(*p)
		}
		index := ri
		if n, err := strconv.Atoi(tmpl.Labels[labelRoleIndex]); err == nil {
			index = n
		}
		r := role{index: index, rs: RoleStatus{Name: rj.Name, Replicas: []ReplicaStatus{}}}
		for j := range int(max(rj.Replicas, 1)) {
			jobName := js.Name + "-" + rj.Name + "-" + strconv.Itoa(j)
			job := jobByName[jobName]
			var done, failed map[int]bool
			if job != nil {
				done = parseIndexes(job.Status.CompletedIndexes)
				if job.Status.FailedIndexes != nil {
					failed = parseIndexes(*job.Status.FailedIndexes)
				}
			}
			for i := range completions {
				rs := ReplicaStatus{ID: j*completions + i, Task: jobName + "-" + strconv.Itoa(i), State: Unknown}
				pod := newest[jobSetPod{rj.Name, j, i}]
				switch {
				case state == Succeeded || done[i]:
					rs.State, rs.Phase = Succeeded, string(corev1.PodSucceeded)
				case failed[i]:
					rs.State, rs.Phase = Failed, string(corev1.PodFailed)
				case pod != nil && pod.Status.Phase != "":
					rs.State, rs.Phase = ReplicaStateOf(pod.Status.Phase), string(pod.Status.Phase)
				case job != nil && jobCondition(job, batchv1.JobComplete):
					rs.State = Succeeded
				case job != nil && jobCondition(job, batchv1.JobFailed):
					rs.State = Failed
				case phase == "Suspended" && state != Cancelled:
					rs.State, rs.Phase = Pending, "Suspended"
				case state.Final():
					rs.State = state
				case state == Pending || state == Running:
					rs.State = Pending
				}
				r.rs.Replicas = append(r.rs.Replicas, rs)
			}
		}
		roles = append(roles, r)
	}
	sort.SliceStable(roles, func(i, j int) bool { return roles[i].index < roles[j].index })
	for _, r := range roles {
		st.Roles = append(st.Roles, r.rs)
	}
	return st
}

// A jobSetPod places a pod in its JobSet: its replicated job, the index of its Job in the
// replicated job and its completion index in the Job.
type jobSetPod struct {
	role       string
	job, index int
}

// jobSetPodKey returns where a pod of a JobSet belongs, from the labels that JobSet and the
// Job controller put on it, and the completion index annotation.
func jobSetPodKey(p *corev1.Pod) (jobSetPod, bool) {
	k := jobSetPod{role: p.Labels[jobset.ReplicatedJobNameKey]}
	if k.role == "" {
		k.role = p.Labels[labelRoleName]
	}
	job, err := strconv.Atoi(p.Labels[jobset.JobIndexKey])
	if err != nil {
		job = 0
	}
	idx := p.Annotations[scheduler.CompletionIndexAnnotation]
	if idx == "" {
		idx = p.Labels[scheduler.CompletionIndexAnnotation]
	}
	index, err := strconv.Atoi(idx)
	if k.role == "" || err != nil || index < 0 || job < 0 {
		return k, false
	}
	k.job, k.index = job, index
	return k, true
}

// jobCondition reports whether job has condition t with status True.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// maxIndexes bounds the indexes parseIndexes reads of one list: a Job has at most 100,000
// completions with indexes.
const maxIndexes = 100_000

// parseIndexes reads a list of completion indexes as the Job API writes them, "1,3-5,7";
// what it cannot read is left out.
func parseIndexes(s string) map[int]bool {
	if s == "" {
		return nil
	}
	out := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		for i := a; i <= b && len(out) < maxIndexes; i++ {
			out[i] = true
		}
	}
	return out
}

// waitJobSet is Wait for the JobSet of h.
func (c *Client) waitJobSet(ctx context.Context, h Handle, onChange func(Status)) (Status, error) {
	ns := c.namespaceOf(h)
	js, last, err := c.jobSetStatus(ctx, h)
	if err != nil {
		return Status{}, err
	}
	if onChange != nil {
		onChange(last)
	}
	for !last.State.Final() {
		err := c.follow(ctx, ns, c.jobSetTarget(ctx, js, &last, onChange))
		if err == nil {
			break
		}
		if !apierrors.IsGone(err) && !apierrors.IsResourceExpired(err) {
			return last, c.errorf(ns, "watch", err, "jobset %q", h.AppID)
		}
		// The watch fell too far behind: read the JobSet afresh and watch from there.
		now, st, err := c.jobSetStatus(ctx, h)
		if err != nil {
			return last, err
		}
		if now.UID != js.UID {
			return last, c.errorf(ns, "watch", errDeleted, "jobset %q", h.AppID)
		}
		js = now
		record(st, &last, onChange)
	}
	return last, nil
}

// jobSetTarget returns the watch target of a JobSet: each version's status is read with its
// Jobs and pods, and recorded.
func (c *Client) jobSetTarget(ctx context.Context, js *jobset.JobSet, last *Status, onChange func(Status)) *watchTarget {
	return &watchTarget{
		client: c.stream.sets, resource: "jobsets", name: js.Name, uid: js.UID, version: js.ResourceVersion,
		observe: func(obj runtime.Object) (bool, error) {
			now, ok := obj.(*jobset.JobSet)
			if !ok {
				return false, fmt.Errorf("got %T, want a JobSet", obj)
			}
			if now.UID != js.UID {
				return false, errDeleted
			}
			st, err := c.jobSetState(ctx, now)
			if err != nil {
				return false, err
			}
			return record(st, last, onChange), nil
		},
	}
}

// cancelJobSet is Cancel for a JobSet: it suspends the JobSet, which deletes its pods and
// keeps it, and marks it with AnnotationCancelled, so that its state is CANCELLED.
func (c *Client) cancelJobSet(ctx context.Context, h Handle, opts OpOptions) (CancelResult, error) {
	js, err := c.GetJobSet(ctx, h)
	if err != nil {
		return 0, err
	}
	if !opts.Force && !madeByStarpod(js.Annotations) {
		return 0, c.errorf(js.Namespace, "cancel", ErrNotStarpod, "jobset %q", js.Name)
	}
	if state, _, _, _ := jobSetPhase(js); state.Final() {
		return CancelDone, nil
	}
	// A merge patch; the UID makes it apply to this JobSet only, not to one made anew.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid":         js.UID,
			"annotations": map[string]string{AnnotationCancelled: time.Now().UTC().Format(time.RFC3339)},
		},
		"spec": map[string]any{"suspend": true},
	})
	if err != nil {
		return 0, err
	}
	if err := c.jobSets(js.Namespace).patch(ctx, js.Name, patch, new(jobset.JobSet)); err != nil {
		return 0, c.errorf(js.Namespace, "patch", err, "jobset %q (suspend)", js.Name)
	}
	return CancelSuspended, nil
}

// madeByStarpod reports whether an object of these annotations has the app spec annotation.
func madeByStarpod(annotations map[string]string) bool {
	_, ok := annotations[scheduler.AnnotationAppSpec]
	return ok
}

// listJobSets returns the status of every starpod JobSet of namespace ns (all if ""), from
// the JobSets alone. A cluster without JobSets gives none.
func (c *Client) listJobSets(ctx context.Context, ns, sel string) ([]Status, error) {
	list := new(jobset.JobSetList)
	if err := c.jobSets(ns).list(ctx, metav1.ListOptions{LabelSelector: sel}, list); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil // no JobSet CRD
		}
		return nil, c.errorf(ns, "list", err, "jobsets (%s)", sel)
	}
	out := make([]Status, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, StateOfJobSet(&list.Items[i], nil, nil))
	}
	return out, nil
}

// jobSetReplicas returns the replicas of a JobSet, for logs: every role and replica id its
// spec gives.
func jobSetReplicas(js *jobset.JobSet) []replicaRef {
	var refs []replicaRef
	for ri, rj := range js.Spec.ReplicatedJobs {
		completions := 1
		if c := rj.Template.Spec.Completions; c != nil {
			completions = int(*c)
		}
		index := ri
		if n, err := strconv.Atoi(rj.Template.Labels[labelRoleIndex]); err == nil {
			index = n
		}
		for id := range int(max(rj.Replicas, 1)) * completions {
			refs = append(refs, replicaRef{role: rj.Name, roleIndex: index, replica: id})
		}
	}
	return refs
}

// jobSetPodRef returns the replica a pod of js is, for logs.
func jobSetPodRef(js *jobset.JobSet) func(*corev1.Pod) (replicaRef, bool) {
	completions := map[string]int{}
	index := map[string]int{}
	for ri, rj := range js.Spec.ReplicatedJobs {
		completions[rj.Name] = 1
		if c := rj.Template.Spec.Completions; c != nil {
			completions[rj.Name] = int(*c)
		}
		index[rj.Name] = ri
		if n, err := strconv.Atoi(rj.Template.Labels[labelRoleIndex]); err == nil {
			index[rj.Name] = n
		}
	}
	return func(p *corev1.Pod) (replicaRef, bool) {
		if uid, ok := p.Labels[jobset.JobSetUIDKey]; ok && uid != string(js.UID) {
			return replicaRef{}, false
		}
		k, ok := jobSetPodKey(p)
		n, known := completions[k.role]
		if !ok || !known {
			return replicaRef{}, false
		}
		return replicaRef{role: k.role, roleIndex: index[k.role], replica: k.job*n + k.index}, true
	}
}

package cluster

// This file defines the operations on apps: submit, get, status, list, cancel and delete.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/starpod/starpod/scheduler"
)

// jobKind is the group, version and kind of Volcano Jobs.
var jobKind = vcbatch.SchemeGroupVersion.WithKind("Job")

// SubmitOptions are the options of [Client.Submit].
type SubmitOptions struct {
	// DryRun sends the job with server-side dry run: the API server validates it in full,
	// and nothing is created.
	DryRun bool
}

// An AlreadyExistsError reports that an app of the same id exists already.
type AlreadyExistsError struct {
	Handle Handle
}

func (e *AlreadyExistsError) Error() string {
	return fmt.Sprintf("app %s already exists", e.Handle)
}

// Submit creates job on the cluster and returns the job as the API server stored it (or, in a
// dry run, would have). A job with no namespace is put in the client's namespace. If a job of
// that name exists already, the *Error's cause is an *AlreadyExistsError, which itself wraps
// the API's error.
func (c *Client) Submit(ctx context.Context, job *vcbatch.Job, opts SubmitOptions) (*vcbatch.Job, error) {
	job = job.DeepCopy()
	got := new(vcbatch.Job)
	if err := c.create(ctx, job, c.jobs, "job", "", opts, got); err != nil {
		return nil, err
	}
	return got, nil
}

// An object is a Kubernetes object: a Volcano Job or a JobSet.
type object interface {
	runtime.Object
	metav1.Object
}

// create creates obj, of the kind named what, with the resource of its namespace that res
// gives, as Submit does, and decodes what the API server answers into into. sched is the
// scheduler of its handle.
func (c *Client) create(ctx context.Context, obj object, res func(ns string) resource, what, sched string, opts SubmitOptions, into runtime.Object) error {
	if obj.GetNamespace() == "" {
		obj.SetNamespace(c.namespace)
	}
	ns := obj.GetNamespace()
	// Strict: a field the cluster's CRD does not know is an error, not silently dropped, so
	// that what is created is what was printed.
	create := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if opts.DryRun {
		create.DryRun = []string{metav1.DryRunAll}
	}
	if err := res(ns).create(ctx, obj, create, into); err != nil {
		if apierrors.IsAlreadyExists(err) {
			err = &existsError{AlreadyExistsError{Handle{Namespace: ns, AppID: obj.GetName(), Scheduler: sched}}, err}
		}
		return c.errorf(ns, "create", err, "%s %q", what, obj.GetName())
	}
	return nil
}

// existsError is an AlreadyExistsError that keeps the API's error as its cause.
type existsError struct {
	AlreadyExistsError
	api error
}

func (e *existsError) Unwrap() []error { return []error{&e.AlreadyExistsError, e.api} }

// namespaceOf returns the namespace of h, or the client's.
func (c *Client) namespaceOf(h Handle) string {
	if h.Namespace != "" {
		return h.Namespace
	}
	return c.namespace
}

// Resolve returns h with its namespace filled in from the client's if it has none.
func (c *Client) Resolve(h Handle) Handle {
	h.Namespace = c.namespaceOf(h)
	return h
}

// Get returns the Volcano Job of the app h names.
func (c *Client) Get(ctx context.Context, h Handle) (*vcbatch.Job, error) {
	ns := c.namespaceOf(h)
	job := new(vcbatch.Job)
	if err := c.jobs(ns).get(ctx, h.AppID, job); err != nil {
		return nil, c.errorf(ns, "get", err, "job %q", h.AppID)
	}
	return job, nil
}

// Status returns the state of the app h names and of each of its replicas.
func (c *Client) Status(ctx context.Context, h Handle) (Status, error) {
	if !h.IsJobSet() {
		job, err := c.Get(ctx, h)
		if err == nil {
			return StateOf(job), nil
		}
		if !c.isJobSet(ctx, h, err) {
			return Status{}, err
		}
	}
	_, st, err := c.jobSetStatus(ctx, asJobSet(h))
	return st, err
}

// ListOptions are the options of [Client.List].
type ListOptions struct {
	// AllNamespaces lists the apps of every namespace instead of the client's.
	AllNamespaces bool
}

// List returns the status of every starpod app in the client's namespace (or in every
// namespace), newest first, then by namespace and app id. Only the Volcano Jobs and JobSets
// that starpod launched are listed; the replicas of a JobSet's app follow the JobSet's state
// alone (see StateOfJobSet), without reading its Jobs and pods.
func (c *Client) List(ctx context.Context, opts ListOptions) ([]Status, error) {
	ns := c.namespace
	if opts.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	sel := labelManagedBy + "=" + managedByValue
	sets, err := c.listJobSets(ctx, ns, sel)
	if err != nil {
		return nil, err
	}
	list := new(vcbatch.JobList)
	if err := c.jobs(ns).list(ctx, metav1.ListOptions{LabelSelector: sel}, list); err != nil {
		// A cluster of JobSets without Volcano lists its JobSets.
		if !apierrors.IsNotFound(err) || sets == nil {
			return nil, c.errorf(ns, "list", err, "jobs (%s)", sel)
		}
	}
	out := make([]Status, 0, len(list.Items)+len(sets))
	for i := range list.Items {
		out = append(out, StateOf(&list.Items[i]))
	}
	out = append(out, sets...)
	sortNewest(out)
	return out, nil
}

// sortNewest sorts apps newest first, across namespaces, then by namespace and app id.
func sortNewest(apps []Status) {
	sort.SliceStable(apps, func(i, j int) bool {
		a, b := apps[i], apps[j]
		if !a.Created.Equal(b.Created) {
			return a.Created.After(b.Created)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.AppID < b.AppID
	})
}

// ErrNotStarpod is the cause of the *Error with which [Client.Cancel] and [Client.Delete]
// refuse a Volcano Job that starpod did not make, unless forced.
var ErrNotStarpod = errors.New("not made by starpod (no " + scheduler.AnnotationAppSpec + " annotation)")

// MadeByStarpod reports whether starpod made job: whether it has the app spec annotation
// that [scheduler.AppFromJob] reads back, as "starpod describe" tells.
func MadeByStarpod(job *vcbatch.Job) bool {
	return madeByStarpod(job.Annotations)
}

// OpOptions are the options of [Client.Cancel] and [Client.Delete].
type OpOptions struct {
	// Force operates on a Volcano Job that starpod did not make too; without it, such a job
	// is refused with an error whose cause is ErrNotStarpod.
	Force bool
}

// CancelResult says what [Client.Cancel] did.
type CancelResult int

const (
	// CancelRequested means Cancel created the AbortJob command.
	CancelRequested CancelResult = iota
	// CancelPending means an AbortJob command for the job was waiting already.
	CancelPending
	// CancelDone means the job was aborting, aborted or finished already.
	CancelDone
	// CancelSuspended means Cancel suspended a JobSet.
	CancelSuspended
)

// Cancel stops the app h names the way Volcano intends: it creates a bus.volcano.sh/v1alpha1
// Command with action AbortJob that targets the job and is owned by it, as vcctl's "job
// suspend" does; Volcano's controller then aborts the job, which stays, in phase Aborted.
// Cancel is idempotent: a job that is aborting, aborted or finished, or that has an AbortJob
// command waiting already, is left as it is. A job that starpod did not make is refused
// unless opts.Force: the *Error's cause is ErrNotStarpod.
//
// A JobSet, which has no abort, is suspended instead: its Jobs' pods are deleted, the JobSet
// stays, marked with AnnotationCancelled, and its state is CANCELLED. (Kueue may resume a
// JobSet whose workload it admitted: "starpod delete" stops it for good.)
func (c *Client) Cancel(ctx context.Context, h Handle, opts OpOptions) (CancelResult, error) {
	if h.IsJobSet() {
		return c.cancelJobSet(ctx, h, opts)
	}
	job, err := c.Get(ctx, h)
	if err != nil {
		if c.isJobSet(ctx, h, err) {
			return c.cancelJobSet(ctx, asJobSet(h), opts)
		}
		return 0, err
	}
	if !opts.Force && !MadeByStarpod(job) {
		return 0, c.errorf(job.Namespace, "cancel", ErrNotStarpod, "job %q", job.Name)
	}
	if phase := job.Status.State.Phase; phase == vcbatch.Aborting || AppStateOf(phase).Final() {
		return CancelDone, nil
	}
	ref := metav1.NewControllerRef(job, jobKind)
	cmd := &vcbus.Command{
		ObjectMeta: metav1.ObjectMeta{
			Name:            abortCommandName(job.Name),
			Namespace:       job.Namespace,
			OwnerReferences: []metav1.OwnerReference{*ref},
			Labels:          map[string]string{labelManagedBy: managedByValue},
		},
		Action:       string(vcbus.AbortJobAction),
		TargetObject: ref,
		Reason:       "StarpodCancel",
		Message:      "cancelled with starpod cancel",
	}
	commands := c.commands(job.Namespace)
	err = commands.create(ctx, cmd, metav1.CreateOptions{}, new(vcbus.Command))
	if err == nil {
		return CancelRequested, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return 0, c.errorf(job.Namespace, "create", err, "command %q (AbortJob for job %q)", cmd.Name, job.Name)
	}
	// A command of that name exists: either it is waiting for this job, or it was left by an
	// earlier job of the same name (with no garbage collector to remove it), and is replaced.
	old := new(vcbus.Command)
	if err := commands.get(ctx, cmd.Name, old); err != nil {
		return 0, c.errorf(job.Namespace, "get", err, "command %q", cmd.Name)
	}
	if old.TargetObject != nil && old.TargetObject.UID == job.UID && old.Action == cmd.Action {
		return CancelPending, nil
	}
	pre := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}}
	if err := commands.delete(ctx, old.Name, pre); err != nil && !apierrors.IsNotFound(err) {
		return 0, c.errorf(job.Namespace, "delete", err, "stale command %q", old.Name)
	}
	if err := commands.create(ctx, cmd, metav1.CreateOptions{}, new(vcbus.Command)); err != nil {
		return 0, c.errorf(job.Namespace, "create", err, "command %q (AbortJob for job %q)", cmd.Name, job.Name)
	}
	return CancelRequested, nil
}

// abortCommandName returns the name of the AbortJob command for a job. One name per job makes
// a second cancel find the first one's command instead of adding another.
func abortCommandName(job string) string {
	const suffix = "-abortjob"
	if len(job)+len(suffix) > 253 {
		job = strings.TrimRight(job[:253-len(suffix)], "-.")
	}
	return job + suffix
}

// Delete removes the app h names: its Volcano Job (or JobSet) and, through the API server's
// garbage collection, the pods and commands the job owns (the Jobs and pods of a JobSet). A job that starpod did not make is refused
// unless opts.Force: the *Error's cause is ErrNotStarpod. The job is read first, and deleted
// on the condition of its UID, so that a job made anew under the same name in between is
// not deleted unchecked.
func (c *Client) Delete(ctx context.Context, h Handle, opts OpOptions) error {
	ns := c.namespaceOf(h)
	if h.IsJobSet() {
		return c.deleteObject(ctx, c.jobSets(ns), new(jobset.JobSet), "jobset", h.AppID, opts)
	}
	err := c.deleteObject(ctx, c.jobs(ns), new(vcbatch.Job), "job", h.AppID, opts)
	if err != nil && c.isJobSet(ctx, h, err) {
		return c.deleteObject(ctx, c.jobSets(ns), new(jobset.JobSet), "jobset", h.AppID, opts)
	}
	return err
}

// deleteObject deletes the object called name of r, of the kind named what, as Delete does;
// obj receives the object read first.
func (c *Client) deleteObject(ctx context.Context, r resource, obj object, what, name string, opts OpOptions) error {
	if err := r.get(ctx, name, obj); err != nil {
		return c.errorf(r.namespace, "delete", err, "%s %q", what, name)
	}
	if !opts.Force && !madeByStarpod(obj.GetAnnotations()) {
		return c.errorf(r.namespace, "delete", ErrNotStarpod, "%s %q", what, name)
	}
	uid := obj.GetUID()
	policy := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}}
	if err := r.delete(ctx, name, del); err != nil {
		return c.errorf(r.namespace, "delete", err, "%s %q", what, name)
	}
	return nil
}

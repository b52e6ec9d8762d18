package scheduler

// This file builds the JobSet of an app: one replicated job per role, an indexed Job whose
// one pod template serves every replica of the role.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/validate"
)

const (
	// SchedulerJobSet is the name of the JobSet scheduler ("starpod run -s jobset"), and the
	// value of ctx.scheduler in the overlays of its pod templates.
	SchedulerJobSet = "jobset"

	// LabelKueueQueue names the Kueue LocalQueue of a JobSet (the run option queue).
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
	// LabelKueuePriorityClass names the Kueue WorkloadPriorityClass of a JobSet (the run
	// option priority_class).
	LabelKueuePriorityClass = "kueue.x-k8s.io/priority-class"

	// ReplicaIDEnv holds, in every pod of a JobSet, the replica's index in its role: the
	// completion index of its pod in the role's indexed Job, which the Job controller writes
	// in the pod's CompletionIndexAnnotation. ${replica_id} stands for $(STARPOD_REPLICA_ID)
	// in a JobSet, and an overlay reaches the replica's index through it.
	ReplicaIDEnv = "STARPOD_REPLICA_ID"
	// CompletionIndexAnnotation is the annotation and label the Job controller puts on
	// each pod of an indexed Job: the pod's completion index.
	CompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index"

	// TemplateReplicaID is ctx.replica_id in the overlays of a JobSet: one pod template serves
	// every replica of a role, so the overlays run once per role, on no replica in
	// particular. A value that differs per replica is read at run time from $(STARPOD_REPLICA_ID).
	TemplateReplicaID = -1

	// noRestartRule names the rule of a JobSet's failure policy that fails the JobSet when
	// the Job of a role that does not restart the app fails.
	noRestartRule = "starpod_no_restart"
)

// BuildJobSet returns the JobSet (jobset.x-k8s.io/v1alpha2) that runs app, for the JobSet
// scheduler. Each role is one replicated job of one indexed Job whose completions and
// parallelism are the role's replicas; its pod template is built as Build builds a replica's
// pod, once per role, with the overlays applied once with ctx.replica_id TemplateReplicaID
// and ctx.scheduler "jobset". The replica's index is read at run time: ${replica_id} is
// $(STARPOD_REPLICA_ID), an env var of the pod's completion index, and ${rank0_env} is
// $(STARPOD_RANK0_HOST), the host name JobSet gives the pod of index 0 of the first role,
// <app id>-<role>-0-0.<app id>.
//
// Retries map onto the Job and the JobSet's failure policy: a role with retry_policy REPLICA
// retries each failed replica alone up to max_retries times (the Job's backoffLimitPerIndex,
// with maxFailedIndexes 0); the JobSet restarts as a whole at most the smallest max_retries of
// the APPLICATION roles (failurePolicy.maxRestarts), and a failure of any other role fails
// it (a FailJobSet rule). Elastic roles (min_replicas below num_replicas) are refused: an
// indexed Job runs a fixed number of pods, admitted together.
//
// With the run option queue, the JobSet has Kueue's queue-name label and is created
// suspended, for Kueue to admit; priority_class is Kueue's priority-class label.
//
// Its errors are those of Build, a *BuildError; the problems of a role's template are
// *ReplicaError values with ReplicaID TemplateReplicaID.
func BuildJobSet(ctx context.Context, app *App, cfg Config, opts BuildOptions) (*jobset.JobSet, error) {
	var errs []error
	specErr := app.problems()
	if specErr == nil {
		specErr = jobSetSpecErrors(app)
	}
	if specErr != nil {
		errs = append(errs, specErr)
	}
	errs = append(errs, cfg.validateFor(SchedulerJobSet)...)
	name, err := jobSetName(app, opts)
	if err != nil {
		errs = append(errs, err)
	}
	chains, cerrs := compileOverlays(ctx, app, opts)
	errs = append(errs, cerrs...)
	if specErr != nil || len(cerrs) > 0 {
		return nil, &BuildError{Errs: errs}
	}
	spec, err := json.Marshal(app)
	if err != nil {
		return nil, err
	}
	if len(spec) > maxSpecBytes {
		errs = append(errs, fmt.Errorf(
			"the app spec is %d bytes of JSON, want at most %d: it is kept in the JobSet's %s annotation",
			len(spec), maxSpecBytes, AnnotationAppSpec))
	}
	appName := normalize(app.Name)
	// The pods' priority class is not Kueue's workload priority class.
	podCfg := cfg
	podCfg.PriorityClass = ""
	b := &builder{app: app, cfg: &podCfg, opts: &opts, jobName: name, appName: appName}
	js := &jobset.JobSet{
		TypeMeta: metav1.TypeMeta{APIVersion: jobset.GroupVersion.String(), Kind: "JobSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: cfg.Namespace,
			Labels: map[string]string{
				LabelName:      appName,
				LabelInstance:  name,
				LabelManagedBy: ManagedBy,
				LabelAppName:   appName,
			},
			Annotations: map[string]string{AnnotationAppSpec: string(spec)},
		},
		Spec: jobset.JobSetSpec{
			// Replicas find each other by their host names before they are ready.
			Network:        &jobset.Network{EnableDNSHostnames: ptr(true), PublishNotReadyAddresses: ptr(true)},
			ReplicatedJobs: make([]jobset.ReplicatedJob, 0, len(app.Roles)),
			FailurePolicy:  failurePolicy(app),
		},
	}
	if cfg.Queue != "" {
		js.Labels[LabelKueueQueue] = cfg.Queue
		js.Spec.Suspend = ptr(true) // Kueue resumes it once it admits the workload
	}
	if cfg.PriorityClass != "" {
		js.Labels[LabelKueuePriorityClass] = cfg.PriorityClass
	}
	for ri := range app.Roles {
		rep := b.template(ctx, ri, chains[ri])
		if len(rep.errs) > 0 {
			errs = append(errs, rep.errs...)
			continue
		}
		js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, replicatedJob(&app.Roles[ri], rep))
	}
	if len(errs) > 0 {
		return nil, &BuildError{Errs: errs}
	}
	if n, err := jsonSize(js); err != nil {
		return nil, err
	} else if n > MaxJobBytes {
		return nil, &BuildError{Errs: []error{&JobSizeError{File: app.File, Limit: MaxJobBytes}}}
	}
	return js, nil
}

// problems returns the problems of the spec: those ParseApp or LoadApp found, if they
// returned the app with them, else those of validating it (an App made in Go); nil if none.
func (app *App) problems() *SpecError {
	if app.errs != nil {
		return app.errs
	}
	ferrs := app.validate()
	if len(ferrs) == 0 {
		return nil
	}
	se := &SpecError{File: app.File}
	for _, fe := range ferrs {
		se.Errors = append(se.Errors, &FieldError{Pos: app.position(field.NewPath(fe.Field)), Err: fe})
	}
	return se
}

// jobSetSpecErrors returns what a valid spec asks that a JobSet cannot give: elastic roles,
// and ${replica_id} in pod metadata, which one template for every replica cannot hold.
func jobSetSpecErrors(app *App) *SpecError {
	se := &SpecError{File: app.File}
	add := func(fe *field.Error) {
		se.Errors = append(se.Errors, &FieldError{Pos: app.position(field.NewPath(fe.Field)), Err: fe})
	}
	probe := macroValues{"replica_id": "\x00"}
	for i := range app.Roles {
		r := &app.Roles[i]
		p := field.NewPath("roles").Index(i)
		if r.MinReplicas != nil && *r.MinReplicas < r.Replicas() {
			add(field.Invalid(p.Child("min_replicas"), *r.MinReplicas, fmt.Sprintf(
				"got %d of %d replicas, want none or %d: an elastic role needs Volcano (-s kubernetes); "+
					"JobSet runs a role as an indexed Job of a fixed number of pods, which Kueue admits together, "+
					"and cannot start it with fewer", *r.MinReplicas, r.Replicas(), r.Replicas())))
		}
		for _, kind := range []string{"labels", "annotations"} {
			values := r.Metadata.Labels
			if kind == "annotations" {
				values = r.Metadata.Annotations
			}
			for _, k := range sortedKeys(values) {
				if v := probe.expand(values[k]); strings.ContainsRune(v, 0) {
					add(field.Invalid(p.Child("metadata", kind).Key(k), values[k],
						"${replica_id} differs per replica, and a JobSet has one pod template for every replica of a role: "+
							"use it in args or env, where it is $("+ReplicaIDEnv+")"))
				}
			}
		}
	}
	if len(se.Errors) == 0 {
		return nil
	}
	return se
}

// failurePolicy returns the JobSet's failure policy: restart the whole JobSet at most the
// smallest max_retries of the roles whose retry policy is APPLICATION, and fail it when the
// Job of any other role fails; nil (fail at the first failed Job) if no role restarts the app.
func failurePolicy(app *App) *jobset.FailurePolicy {
	var restarts int32
	var others []string
	for i := range app.Roles {
		r := &app.Roles[i]
		if r.MaxRetries > 0 && r.retryPolicy() == RetryApplication {
			if restarts == 0 || int32(r.MaxRetries) < restarts {
				restarts = int32(r.MaxRetries)
			}
			continue
		}
		others = append(others, r.Name)
	}
	if restarts == 0 {
		return nil
	}
	fp := &jobset.FailurePolicy{MaxRestarts: restarts}
	if len(others) > 0 {
		fp.Rules = []jobset.FailurePolicyRule{{Name: noRestartRule, Action: jobset.FailJobSet, TargetReplicatedJobs: others}}
	}
	return fp
}

// replicatedJob returns the replicated job of role r, of the pod template rep holds.
func replicatedJob(r *Role, rep *replica) jobset.ReplicatedJob {
	n := int32(r.Replicas())
	spec := batchv1.JobSpec{
		CompletionMode: ptr(batchv1.IndexedCompletion),
		Completions:    ptr(n),
		Parallelism:    ptr(n),
		Template:       corev1.PodTemplateSpec{ObjectMeta: rep.pod.ObjectMeta, Spec: rep.pod.Spec},
	}
	if r.MaxRetries > 0 && r.retryPolicy() == RetryReplica {
		// Each replica is retried alone, and the Job fails once one has used its retries.
		spec.BackoffLimitPerIndex = ptr(int32(r.MaxRetries))
		spec.MaxFailedIndexes = ptr(int32(0))
	} else {
		// A failed pod fails the Job: the JobSet's failure policy decides what follows.
		spec.BackoffLimit = ptr(int32(0))
	}
	labels := make(map[string]string, len(rep.labels))
	for k, v := range rep.labels {
		labels[k] = v
	}
	return jobset.ReplicatedJob{
		Name:     r.Name,
		Replicas: 1,
		Template: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
	}
}

// Rank0Host returns the host name that JobSet gives the pod of completion index 0 of the
// replicated job role of the JobSet name: <name>-<role>-0-0.<name>, the pod's host name in
// the JobSet's subdomain, which its headless Service of the same name resolves in the
// JobSet's namespace.
func Rank0Host(name, role string) string {
	return name + "-" + role + "-0-0." + name
}

// template builds the pod template of role ri: the pod of a replica, with the replica's
// values left to run time, the overlays of chain applied once, and what the scheduler owns
// set again and checked. The replica it returns holds the pod, the labels or the errors.
func (b *builder) template(ctx context.Context, ri int, chain engine.Chain) *replica {
	r := &b.app.Roles[ri]
	m := macroValues{
		"app_id":       b.jobName,
		"replica_id":   "$(" + ReplicaIDEnv + ")",
		"num_replicas": strconv.Itoa(r.Replicas()),
		"rank0_env":    "$(" + Rank0HostEnv + ")",
	}
	rep := &replica{role: ri, id: TemplateReplicaID}
	rep.labels = map[string]string{
		LabelName:      b.appName,
		LabelInstance:  b.jobName,
		LabelManagedBy: ManagedBy,
		LabelAppName:   b.appName,
		LabelRoleName:  r.Name,
		LabelRoleIndex: strconv.Itoa(ri),
	}
	rep.pod = b.parts(ri).pod(r, r.Name, m, false)
	owned := b.ownedEnv()
	setOwnedEnv(&rep.pod.Spec.Containers[0], owned)
	setPodLabels(rep.pod, rep.labels)
	if len(chain) > 0 {
		env := &engine.Env{
			AppID:       b.jobName,
			Role:        r.Name,
			ReplicaID:   TemplateReplicaID,
			NumReplicas: r.Replicas(),
			Scheduler:   SchedulerJobSet,
			Args:        b.opts.OverlayArgs,
		}
		out, errs := chain.ApplyEach(ctx, []*corev1.Pod{rep.pod}, []*engine.Env{env})
		if errs[0] != nil {
			rep.errs = []error{&ReplicaError{Role: r.Name, ReplicaID: TemplateReplicaID, Err: errs[0]}}
			return rep
		}
		rep.pod = out[0]
	}
	// What the scheduler owns is set again, whatever the overlays did to it.
	setPodLabels(rep.pod, rep.labels)
	var verrs field.ErrorList
	if c := mainContainer(rep.pod, r.Name); c != nil {
		setOwnedEnv(c, owned)
	} else {
		verrs = append(verrs, field.Required(field.NewPath("spec", "containers"),
			fmt.Sprintf("the role's container %q: it holds the role's entrypoint and the %s and %s env vars", r.Name, ReplicaIDEnv, Rank0HostEnv)))
	}
	verrs = append(verrs, validateTemplate(rep.pod, &b.checks, rep.labels)...)
	for _, e := range verrs {
		rep.errs = append(rep.errs, &ReplicaError{Role: r.Name, ReplicaID: TemplateReplicaID, Err: e})
	}
	return rep
}

// ownedEnv returns the env vars the scheduler sets first in the role's container: the
// replica's index and rank 0's host name, so that the role's env values may refer to them.
func (b *builder) ownedEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: ReplicaIDEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: "metadata.annotations['" + CompletionIndexAnnotation + "']",
		}}},
		{Name: Rank0HostEnv, Value: Rank0Host(b.jobName, b.app.Roles[0].Name)},
	}
}

// setOwnedEnv puts owned first in c's env, in place of any entries of the same names.
func setOwnedEnv(c *corev1.Container, owned []corev1.EnvVar) {
	env := make([]corev1.EnvVar, 0, len(owned)+len(c.Env))
	env = append(env, owned...)
	for _, e := range c.Env {
		if e.Name != ReplicaIDEnv && e.Name != Rank0HostEnv {
			env = append(env, e)
		}
	}
	c.Env = env
}

// mainContainer returns the container of pod called name, or nil.
func mainContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// validateTemplate checks a JobSet's pod template as validatePod checks a Volcano task's
// pod, and the fields that the Job and JobSet controllers own: the pod's name, namespace,
// host name and subdomain (rank 0's address is made of them), and restartPolicy Never
// (retries are the Job's and the JobSet's).
func validateTemplate(pod *corev1.Pod, checks *nameChecks, skip map[string]string) field.ErrorList {
	var errs field.ErrorList
	meta, spec := field.NewPath("metadata"), field.NewPath("spec")
	if pod.Name != "" {
		errs = append(errs, field.Forbidden(meta.Child("name"), "the Job controller names the pods of a JobSet; an overlay cannot"))
	}
	if pod.Namespace != "" {
		errs = append(errs, field.Forbidden(meta.Child("namespace"), "pods run in the JobSet's namespace (the run option namespace)"))
	}
	if pod.Spec.Hostname != "" {
		errs = append(errs, field.Forbidden(spec.Child("hostname"), "the Job controller sets each pod's host name, of which rank 0's address is made"))
	}
	if pod.Spec.Subdomain != "" {
		errs = append(errs, field.Forbidden(spec.Child("subdomain"), "JobSet sets the subdomain, of which rank 0's address is made"))
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), pod.Spec.RestartPolicy,
			[]string{string(corev1.RestartPolicyNever)}))
	}
	return append(errs, validate.Pod(pod, &validate.Options{Template: true, SkipLabels: skip, Cache: checks})...)
}

// AppFromJobSet reads back the app spec that BuildJobSet stored in the JobSet's
// AnnotationAppSpec.
func AppFromJobSet(js *jobset.JobSet) (*App, error) {
	return appFromAnnotation("JobSet", js.Name, js.Annotations)
}

// MarshalJobSet returns the JobSet as Marshal returns a job: YAML or JSON (format "yaml" or
// "json"), keys sorted, without nulls, status or empty objects.
func MarshalJobSet(js *jobset.JobSet, format string) ([]byte, error) {
	obj, err := object(js)
	if err != nil {
		return nil, err
	}
	return marshalObject(obj, format)
}

// checkLabelValue checks a run option that becomes a label value.
func checkLabelValue(v string) error {
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		return fmt.Errorf("got %q, want a label value: %s", v, msgs[0])
	}
	return nil
}

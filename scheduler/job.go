package scheduler

// This file builds the Volcano Job of an app: names, overlays, bookkeeping labels, tasks.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/validate"
)

// The labels that identify a job and its pods. Build sets them on each pod before the
// overlays run, so that overlays can use them, and again after, so that no overlay can change
// or remove them.
const (
	LabelName      = "app.kubernetes.io/name"       // the normalised app name
	LabelInstance  = "app.kubernetes.io/instance"   // the app id (the job's name)
	LabelManagedBy = "app.kubernetes.io/managed-by" // ManagedBy
	LabelAppName   = "starpod.dev/app-name"         // the normalised app name
	LabelRoleName  = "starpod.dev/role-name"        // pods only
	LabelRoleIndex = "starpod.dev/role-index"       // pods only: the role's index in the spec
	LabelReplicaID = "starpod.dev/replica-id"       // pods only: the replica's index in its role

	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "starpod"

	// AnnotationAppSpec holds the app spec as JSON on the job, so that the app can be read back
	// from the cluster with AppFromJob.
	AnnotationAppSpec = "starpod.dev/app-spec"

	// SchedulerKubernetes is the value of ctx.scheduler in overlays.
	SchedulerKubernetes = "kubernetes"
)

// BuildOptions configures Build. The zero value builds with a random app id, the app's own
// overlays only and the engine's default limits.
type BuildOptions struct {
	// AppID is the job's name. Empty means the normalised app name and a random suffix.
	AppID string
	// Overlays are overlay script files applied after the app's and the roles' overlays, in
	// order (the CLI's --overlay-script). Relative paths are relative to the working directory.
	Overlays []string
	// OverlayArgs is ctx.args in every overlay.
	OverlayArgs map[string]string
	// Engine configures the compilation of every overlay. If its Loader is nil, load()
	// reads modules from OverlayRoot, or from the directory of the loading overlay if
	// OverlayRoot is empty (see engine.DirLoader).
	Engine engine.Options
	// OverlayRoot is the directory that load() reads modules from (--overlay-root), and
	// that the overlay files the spec names must be inside. Empty means the spec's
	// directory (App.Dir) for the spec's overlay files.
	OverlayRoot string
	// Rand is the source of the random app id suffix; nil means crypto/rand.
	Rand io.Reader
}

// Build returns the Volcano Job that runs app. For each role and replica it builds the pod
// (role → pod with TorchX's semantics), applies the app's overlays, then the role's, then
// opts.Overlays, with ctx describing that replica, and then sets the bookkeeping labels.
// Each overlay file is compiled once. Every generated name is checked against Kubernetes'
// rules.
//
// The job has one task <role>-<replica> of one pod per replica. Elastic roles (min_replicas)
// give their first min_replicas tasks minAvailable 1 and the others 0, and the job's
// minAvailable is the sum over the tasks. A role with max_retries > 0 gives each of its tasks
// maxRetry and policies that restart the job (APPLICATION) or the task (REPLICA) when a pod
// fails or is evicted; the job's maxRetry is the smallest max_retries of the APPLICATION
// roles (unset, Volcano's default, when there are none).
//
// Build reports every problem it finds, not just the first: it returns a *BuildError whose
// errors are, in this order, a *SpecError (an invalid app: the problems ParseApp or LoadApp
// found, if they returned the app with them, else those of validating it), plain errors (bad
// run options, a bad or too long app id), the errors of the overlays in the order they apply
// (*SpecError values for files the spec names that cannot be read or are outside the overlay
// root, *fs.PathError, *bound.TypeError or *bound.SizeError values for those of
// opts.Overlays, *engine.Error values for those that do not compile), and *ReplicaError
// values in the order of roles and replicas (an overlay failed on a replica, or made its pod
// invalid), or a *JobSizeError if the overlays made the job larger than MaxJobBytes. A job
// that the spec alone makes larger than MaxJobBytes, or of more than MaxTasks tasks, is a
// problem of the spec, found before any replica is built. The replicas are built only if the
// app is valid and every overlay compiles, so that a spec's or an overlay's problem is not
// repeated for every replica; every overlay is compiled even if the spec has problems.
// Nothing is returned with an error.
func Build(ctx context.Context, app *App, cfg Config, opts BuildOptions) (*vcbatch.Job, error) {
	job, _, err := build(ctx, app, cfg, opts, nil)
	return job, err
}

// build is Build. If print is not nil, it also prints each task with print as soon as the
// task is built, and returns the texts in the order of the job's tasks; print returns the
// size of the task's JSON too, as jsonSize counts it.
func build(ctx context.Context, app *App, cfg Config, opts BuildOptions, print taskPrinter) (*vcbatch.Job, [][]byte, error) {
	// Every problem that can be found before the replicas are built is reported together:
	// those of the spec (kept by LoadApp and ParseApp, or found now in an App made in Go),
	// of the run options, of the app id, and of every overlay the app names or opts lists.
	var errs []error
	specOK := true
	if se := app.problems(); se != nil {
		errs = append(errs, se)
		specOK = false
	}
	for _, err := range cfg.validate() {
		errs = append(errs, err)
	}
	appName := normalize(app.Name) // at most a label value's length: validate checks it
	jobName, err := jobName(app, opts)
	if err != nil {
		errs = append(errs, err)
	}
	b := &builder{app: app, cfg: &cfg, opts: &opts, jobName: jobName, appName: appName, print: print}
	var job *vcbatch.Job
	if specOK {
		b.firstTask = taskName(app.Roles[0].Name, 0)
		if job, err = b.job(); err != nil {
			return nil, nil, err
		}
		// The job the spec makes must fit in what the API server accepts, before a
		// replica is built: macros can make it many times the spec's size.
		head, err := headSize(job)
		if err != nil {
			return nil, nil, err
		}
		fe, err := b.estimate(head)
		if err != nil {
			return nil, nil, err
		}
		if fe != nil {
			se := &SpecError{File: app.File, Errors: FieldErrors{{Pos: app.position(field.NewPath(fe.Field)), Err: fe}}}
			errs = append([]error{se}, errs...)
			specOK = false
		}
		b.limit = MaxJobBytes - tasksSize(head, 0, 1)
	}
	chains, cerrs := compileOverlays(ctx, app, opts)
	errs = append(errs, cerrs...)
	if !specOK || len(cerrs) > 0 {
		// Without a valid spec and every overlay there is nothing to build replicas from.
		return nil, nil, &BuildError{Errs: errs}
	}
	if n := len(job.Annotations[AnnotationAppSpec]); n > maxSpecBytes {
		errs = append(errs, fmt.Errorf(
			"the app spec is %d bytes of JSON, want at most %d: it is kept in the job's %s annotation",
			n, maxSpecBytes, AnnotationAppSpec))
	}

	// Build every replica's task, even if the run options or the app id are bad, so that the
	// problems of the replicas are reported with theirs: a chunk of replicas of one role at a
	// time and several chunks at once: a compiled overlay may be applied concurrently, and
	// each overlay applies to a whole chunk in one call (one round trip to a worker process).
	// Twice as many chunks as processors are under way, so that some are built and printed
	// while others are in worker processes. Results keep the order of roles and replicas.
	// Building stops once the tasks are larger than the API server accepts.
	var replicas []*replica
	var chunks [][]*replica
	procs := runtime.GOMAXPROCS(0)
	for ri := range app.Roles {
		n := app.Roles[ri].Replicas()
		size := min(max((n+procs-1)/procs, 1), maxChunk)
		for start := 0; start < n; start += size {
			chunk := make([]*replica, 0, min(size, n-start))
			for id := start; id < min(start+size, n); id++ {
				chunk = append(chunk, &replica{role: ri, id: id})
			}
			chunks = append(chunks, chunk)
			replicas = append(replicas, chunk...)
		}
	}
	sem := make(chan struct{}, 2*procs)
	var wg sync.WaitGroup
	for _, chunk := range chunks {
		sem <- struct{}{}
		if b.over.Load() {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			b.tasks(ctx, chunk, chains[chunk[0].role])
		})
	}
	wg.Wait()
	if b.over.Load() {
		// Which replicas were built before is a matter of timing: report only the size.
		errs = append(errs, &JobSizeError{File: app.File, Limit: MaxJobBytes})
		return nil, nil, &BuildError{Errs: errs}
	}
	var texts [][]byte
	job.Spec.Tasks = make([]vcbatch.TaskSpec, 0, len(replicas)) // a task is large: grow it once
	if print != nil {
		texts = make([][]byte, 0, len(replicas))
	}
	for _, rep := range replicas {
		if len(rep.errs) > 0 {
			errs = append(errs, rep.errs...)
			continue
		}
		job.Spec.Tasks = append(job.Spec.Tasks, *rep.task)
		// The gang: every task but the elastic ones above min_replicas.
		job.Spec.MinAvailable += minAvailable(&app.Roles[rep.role], rep.id)
		if print != nil {
			texts = append(texts, rep.text)
		}
	}
	if len(errs) > 0 {
		return nil, nil, &BuildError{Errs: errs}
	}

	// The job restarts at most as often as the least patient role that restarts it.
	for _, r := range app.Roles {
		if r.MaxRetries > 0 && r.retryPolicy() == RetryApplication {
			if job.Spec.MaxRetry == 0 || int32(r.MaxRetries) < job.Spec.MaxRetry {
				job.Spec.MaxRetry = int32(r.MaxRetries)
			}
		}
	}
	return job, texts, nil
}

// job returns the job of the app without its tasks, with the app spec in its annotation.
func (b *builder) job() (*vcbatch.Job, error) {
	spec, err := json.Marshal(b.app)
	if err != nil {
		return nil, err
	}
	return &vcbatch.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: vcbatch.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      b.jobName,
			Namespace: b.cfg.Namespace,
			Labels: map[string]string{
				LabelName:      b.appName,
				LabelInstance:  b.jobName,
				LabelManagedBy: ManagedBy,
				LabelAppName:   b.appName,
			},
			Annotations: map[string]string{AnnotationAppSpec: string(spec)},
		},
		Spec: vcbatch.JobSpec{
			SchedulerName:     b.cfg.SchedulerName,
			Queue:             b.cfg.Queue,
			PriorityClassName: b.cfg.PriorityClass,
			Plugins: map[string][]string{
				// Replicas must find each other before they are ready.
				"svc": {"--publish-not-ready-addresses"},
				"env": {},
			},
		},
	}, nil
}

// maxChunk bounds the replicas that Build hands to an overlay in one call.
const maxChunk = 64

// A replica is one replica of a role, and what building its task gave.
type replica struct {
	role, id int
	pod      *corev1.Pod
	labels   map[string]string
	task     *vcbatch.TaskSpec
	text     []byte // the task printed, if the builder prints
	size     int64  // the size of the task's JSON, if the builder prints
	errs     []error
}

// A taskPrinter prints a task as the only item of spec.tasks and returns its text and the
// size of the task's JSON.
type taskPrinter func(task *vcbatch.TaskSpec) (text []byte, size int64, err error)

// A builder holds what every replica's task is built from.
type builder struct {
	app       *App
	cfg       *Config
	opts      *BuildOptions
	jobName   string
	appName   string
	firstTask string
	checks    nameChecks
	print     taskPrinter // if not nil, prints each task

	// The parts of the pods of each role, made when a pod of the role is first built.
	partsMu   sync.Mutex
	roleParts []*roleParts

	// limit bounds the JSON of the tasks together; size is theirs so far, and over says
	// that it passed the limit, and that no more tasks should be built.
	limit int64
	size  atomic.Int64
	over  atomic.Bool
}

// tasks builds the tasks of reps, replicas of one role: their pods, the overlays (each
// applied to every pod in one call), the labels and the checks. Errors are *ReplicaError
// values.
func (b *builder) tasks(ctx context.Context, reps []*replica, chain engine.Chain) {
	for _, rep := range reps {
		b.pod(rep)
	}
	if len(chain) > 0 {
		r := &b.app.Roles[reps[0].role]
		pods := make([]*corev1.Pod, len(reps))
		envs := make([]*engine.Env, len(reps))
		for i, rep := range reps {
			pods[i] = rep.pod
			envs[i] = &engine.Env{
				AppID:       b.jobName,
				Role:        r.Name,
				ReplicaID:   rep.id,
				NumReplicas: r.Replicas(),
				Scheduler:   SchedulerKubernetes,
				Args:        b.opts.OverlayArgs,
			}
		}
		out, errs := chain.ApplyEach(ctx, pods, envs)
		for i, rep := range reps {
			rep.pod = out[i]
			if errs[i] != nil {
				rep.errs = []error{&ReplicaError{Role: r.Name, ReplicaID: rep.id, Err: errs[i]}}
			}
		}
	}
	// The last overlay checked its pods as pod templates already: what is left to check is
	// what Volcano owns (the bookkeeping labels are set again, and valid).
	checked := len(chain) > 0 && chain[len(chain)-1].Validation() == engine.ValidatePodTemplate
	for _, rep := range reps {
		if rep.errs == nil {
			b.task(rep, checked)
		}
		// The size of the tasks is what estimate found unless overlays changed them: it is
		// measured only then, or when the task is printed anyway, by the printer.
		if rep.errs == nil && (len(chain) > 0 || b.print != nil) {
			var text []byte
			var err error
			if b.print != nil {
				text, rep.size, err = b.print(rep.task)
			} else {
				rep.size, err = jsonSize(rep.task)
			}
			switch {
			case err != nil:
				rep.errs = []error{err}
			case b.size.Add(rep.size+1) > b.limit:
				b.over.Store(true)
			default:
				rep.text = text
			}
		}
		rep.pod, rep.labels = nil, nil
	}
}

// pod builds the pod of a replica, with the bookkeeping labels, for the overlays.
func (b *builder) pod(rep *replica) {
	b.podAs(rep, rep.role == 0 && rep.id == 0)
}

// macros returns the values of the macros for replica id of role r, the first replica of the
// job (rank0) or not.
func (b *builder) macros(r *Role, id int, rank0 bool) macroValues {
	return macroValues{
		"app_id":       b.jobName,
		"replica_id":   strconv.Itoa(id),
		"num_replicas": strconv.Itoa(r.Replicas()),
		"rank0_env":    "$(" + rank0Env(b.firstTask, rank0) + ")",
	}
}

// podAs builds the pod of a replica as pod does, as the first replica of the job (rank0) or
// not.
func (b *builder) podAs(rep *replica, rank0 bool) {
	r := &b.app.Roles[rep.role]
	name := taskName(r.Name, rep.id)
	m := b.macros(r, rep.id, rank0)
	rep.labels = map[string]string{
		LabelName:      b.appName,
		LabelInstance:  b.jobName,
		LabelManagedBy: ManagedBy,
		LabelAppName:   b.appName,
		LabelRoleName:  r.Name,
		LabelRoleIndex: strconv.Itoa(rep.role),
		LabelReplicaID: strconv.Itoa(rep.id),
	}
	rep.pod = b.parts(rep.role).pod(r, name, m, rank0)
	// Overlays see the labels (to use them in affinity selectors, say), and whatever they do
	// to them is undone by task.
	setPodLabels(rep.pod, rep.labels)
}

// parts returns the parts of the pods of role ri, made once.
func (b *builder) parts(ri int) *roleParts {
	b.partsMu.Lock()
	defer b.partsMu.Unlock()
	if b.roleParts == nil {
		b.roleParts = make([]*roleParts, len(b.app.Roles))
	}
	if b.roleParts[ri] == nil {
		b.roleParts[ri] = newRoleParts(&b.app.Roles[ri], b.cfg)
	}
	return b.roleParts[ri]
}

// task builds the task of a replica from the pod the overlays returned: it sets the
// bookkeeping labels again and checks the pod, as a pod template unless checked says the
// overlays did.
func (b *builder) task(rep *replica, checked bool) {
	r := &b.app.Roles[rep.role]
	pod := rep.pod
	setPodLabels(pod, rep.labels)
	if verrs := validatePod(pod, &b.checks, rep.labels, checked); len(verrs) > 0 {
		rep.errs = make([]error, len(verrs))
		for i, e := range verrs {
			rep.errs[i] = &ReplicaError{Role: r.Name, ReplicaID: rep.id, Err: e}
		}
		return
	}
	rep.task = b.newTask(rep)
}

// newTask returns the task of a replica, of its pod.
func (b *builder) newTask(rep *replica) *vcbatch.TaskSpec {
	r := &b.app.Roles[rep.role]
	pod := rep.pod
	task := &vcbatch.TaskSpec{
		Name:     taskName(r.Name, rep.id),
		Replicas: 1,
		Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
	}
	if r.MinReplicas != nil {
		task.MinAvailable = ptr(minAvailable(r, rep.id))
	}
	if r.MaxRetries > 0 {
		task.MaxRetry = int32(r.MaxRetries)
		task.Policies = retryPolicies(r.RetryPolicy)
	}
	return task
}

// minAvailable returns the pods of the task of replica id of role r that must run for the
// job to start: its one pod, or none for an elastic role's replicas above min_replicas.
func minAvailable(r *Role, id int) int32 {
	if r.MinReplicas != nil && id >= *r.MinReplicas {
		return 0
	}
	return 1
}

func (r *Role) retryPolicy() RetryPolicy {
	if r.RetryPolicy == "" {
		return RetryApplication
	}
	return r.RetryPolicy
}

// retryPolicies returns a task's lifecycle policies: a failed or evicted pod restarts the
// whole job (APPLICATION) or only its own task (REPLICA).
func retryPolicies(p RetryPolicy) []vcbatch.LifecyclePolicy {
	action := busv1alpha1.RestartJobAction
	if p == RetryReplica {
		action = busv1alpha1.RestartTaskAction
	}
	return []vcbatch.LifecyclePolicy{
		{Event: busv1alpha1.PodEvictedEvent, Action: action},
		{Event: busv1alpha1.PodFailedEvent, Action: action},
	}
}

// setPodLabels sets the bookkeeping labels on pod, replacing whatever an overlay put there.
func setPodLabels(pod *corev1.Pod, labels map[string]string) {
	if pod.Labels == nil {
		pod.Labels = make(map[string]string)
	}
	for k, v := range labels {
		pod.Labels[k] = v
	}
}

// maxSpecBytes bounds the app spec annotation; Kubernetes allows 256 KiB of annotations.
const maxSpecBytes = 128 << 10

// nameChecks remembers the problems of the names that pods had, which are mostly the same in
// every pod of a job: checking them is the dearest part of validatePod.
type nameChecks = validate.Cache

// validatePod checks what the engine's schema check cannot, and what the API server would
// reject (package validate's checks of a pod template), and the metadata that Volcano owns.
// The labels in skip are starpod's bookkeeping labels, which are checked once for the job.
// With checked, the pod was checked as a pod template already (by the overlay that made it,
// with every label), and only the metadata that Volcano owns is.
func validatePod(pod *corev1.Pod, checks *nameChecks, skip map[string]string, checked bool) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if pod.Name != "" {
		errs = append(errs, field.Forbidden(meta.Child("name"), "Volcano names the pods of a task; an overlay cannot"))
	}
	if pod.Namespace != "" {
		errs = append(errs, field.Forbidden(meta.Child("namespace"), "pods run in the job's namespace (the run option namespace)"))
	}
	if checked {
		return errs
	}
	return append(errs, validate.Pod(pod, &validate.Options{Template: true, SkipLabels: skip, Cache: checks})...)
}

// AppFromJob reads back the app spec that Build stored in the job's AnnotationAppSpec.
func AppFromJob(job *vcbatch.Job) (*App, error) {
	return appFromAnnotation("job", job.Name, job.Annotations)
}

// appFromAnnotation reads back the app spec from the AnnotationAppSpec of the object of kind
// and name.
func appFromAnnotation(kind, name string, annotations map[string]string) (*App, error) {
	s, ok := annotations[AnnotationAppSpec]
	if !ok {
		return nil, fmt.Errorf("%s %s has no %s annotation; was it made by starpod?", kind, name, AnnotationAppSpec)
	}
	var app App
	if err := json.Unmarshal([]byte(s), &app); err != nil {
		return nil, fmt.Errorf("%s %s: annotation %s: %w", kind, name, AnnotationAppSpec, err)
	}
	return &app, nil
}

package scheduler_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/scheduler"
)

// buildJobSet loads, builds and prints an app as "starpod run -s jobset --dry-run" does.
func buildJobSet(file string, cfg scheduler.Config, opts scheduler.BuildOptions, format string) (string, error) {
	app, err := scheduler.LoadApp(file)
	if app == nil {
		return "", err
	}
	js, err := scheduler.BuildJobSet(context.Background(), app, cfg, opts)
	if err != nil {
		return "", err
	}
	out, err := scheduler.MarshalJobSet(js, format)
	return string(out), err
}

// TestJobSetLlamaFT builds the llama-ft example for JobSet: as written, its elastic role is
// refused with the reason and the position of min_replicas; without min_replicas, the JobSet
// is testdata/jobset-llama-ft.golden.yaml (with -update, rewritten).
func TestJobSetLlamaFT(t *testing.T) {
	const file = "../examples/llama-ft/app.yaml"
	_, err := buildJobSet(file, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet), scheduler.BuildOptions{AppID: "demo"}, "yaml")
	var se *scheduler.SpecError
	if !errors.As(err, &se) || len(se.Errors) != 1 || se.Errors[0].Err.Field != "roles[0].min_replicas" || se.Errors[0].Pos.Line == 0 {
		t.Fatalf("got %v, want one *SpecError of roles[0].min_replicas with its position", err)
	}
	if !strings.Contains(err.Error(), "elastic role needs Volcano (-s kubernetes)") {
		t.Errorf("error does not say why: %v", err)
	}

	app, err := scheduler.LoadApp(file)
	if err != nil {
		t.Fatal(err)
	}
	app.Roles[0].MinReplicas = nil
	js, err := scheduler.BuildJobSet(context.Background(), app, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet),
		scheduler.BuildOptions{AppID: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := scheduler.MarshalJobSet(js, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/jobset-llama-ft.golden.yaml", string(got))
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", file, diff)
	}
}

// TestJobSetRetries checks the mapping of max_retries and retry_policy onto the Jobs and the
// JobSet's failure policy.
func TestJobSetRetries(t *testing.T) {
	app := mustParse(t, `
name: r
roles:
- {name: a, image: i, entrypoint: e, num_replicas: 2, max_retries: 3, resource: {cpu: 1, mem_mb: 100}}
- {name: b, image: i, entrypoint: e, max_retries: 2, retry_policy: APPLICATION, resource: {cpu: 1, mem_mb: 100}}
- {name: c, image: i, entrypoint: e, num_replicas: 4, max_retries: 5, retry_policy: REPLICA, resource: {cpu: 1, mem_mb: 100}}
- {name: d, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 100}}
`)
	js, err := scheduler.BuildJobSet(context.Background(), app, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet), scheduler.BuildOptions{AppID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	fp := js.Spec.FailurePolicy
	if fp == nil || fp.MaxRestarts != 2 {
		t.Fatalf("failurePolicy %+v, want maxRestarts 2, the smallest of the APPLICATION roles", fp)
	}
	if len(fp.Rules) != 1 || fp.Rules[0].Action != "FailJobSet" || !cmp.Equal(fp.Rules[0].TargetReplicatedJobs, []string{"c", "d"}) {
		t.Errorf("rules %+v, want FailJobSet for c and d", fp.Rules)
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		spec := rj.Template.Spec
		switch rj.Name {
		case "c":
			if spec.BackoffLimitPerIndex == nil || *spec.BackoffLimitPerIndex != 5 || *spec.MaxFailedIndexes != 0 || spec.BackoffLimit != nil {
				t.Errorf("c: %+v, want backoffLimitPerIndex 5, maxFailedIndexes 0", spec)
			}
		default:
			if spec.BackoffLimit == nil || *spec.BackoffLimit != 0 || spec.BackoffLimitPerIndex != nil {
				t.Errorf("%s: want backoffLimit 0", rj.Name)
			}
		}
		if *spec.Completions != *spec.Parallelism || *spec.CompletionMode != "Indexed" || rj.Replicas != 1 {
			t.Errorf("%s: want one indexed Job of parallelism = completions", rj.Name)
		}
	}

	// No role restarts the app: no failure policy, the first failed Job fails the JobSet.
	app = mustParse(t, `
name: r
roles:
- {name: a, image: i, entrypoint: e, max_retries: 1, retry_policy: REPLICA, resource: {cpu: 1, mem_mb: 100}}
`)
	js, err = scheduler.BuildJobSet(context.Background(), app, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet), scheduler.BuildOptions{AppID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if js.Spec.FailurePolicy != nil {
		t.Errorf("failurePolicy %+v, want none", js.Spec.FailurePolicy)
	}
}

// TestJobSetKueue: queue makes the JobSet suspended with Kueue's queue label, priority_class
// Kueue's priority class label, and neither reaches the pods.
func TestJobSetKueue(t *testing.T) {
	app := mustParse(t, `
name: k
roles:
- {name: a, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 100}}
`)
	cfg, err := scheduler.ParseConfigFor(scheduler.SchedulerJobSet, []string{"queue=team-a,priority_class=high"})
	if err != nil {
		t.Fatal(err)
	}
	js, err := scheduler.BuildJobSet(context.Background(), app, cfg, scheduler.BuildOptions{AppID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if js.Labels[scheduler.LabelKueueQueue] != "team-a" || js.Labels[scheduler.LabelKueuePriorityClass] != "high" {
		t.Errorf("labels %v, want Kueue's queue and priority class", js.Labels)
	}
	if js.Spec.Suspend == nil || !*js.Spec.Suspend {
		t.Error("a queued JobSet is not suspended")
	}
	if pc := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName; pc != "" {
		t.Errorf("pod priorityClassName %q, want none", pc)
	}
	// Without a queue, the JobSet runs at once.
	js, err = scheduler.BuildJobSet(context.Background(), app, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet), scheduler.BuildOptions{AppID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if js.Spec.Suspend != nil || js.Labels[scheduler.LabelKueueQueue] != "" {
		t.Errorf("unqueued JobSet: suspend %v, labels %v", js.Spec.Suspend, js.Labels)
	}
	// A queue name that is no label value is refused.
	if _, err := scheduler.ParseConfigFor(scheduler.SchedulerJobSet, []string{"queue=" + strings.Repeat("q", 64)}); err != nil {
		t.Fatal(err) // a DNS subdomain: ParseConfig accepts it, Build refuses it
	}
	cfg.Queue = strings.Repeat("q", 64)
	if _, err := scheduler.BuildJobSet(context.Background(), app, cfg, scheduler.BuildOptions{AppID: "k"}); err == nil ||
		!strings.Contains(err.Error(), "cfg queue") {
		t.Errorf("got %v, want an error of cfg queue", err)
	}
}

// TestJobSetRank checks what a replica finds at run time: its index from the completion
// index annotation, rank 0's host from JobSet's DNS name, both before the role's env.
func TestJobSetRank(t *testing.T) {
	app := mustParse(t, `
name: ddp
roles:
- name: trainer
  image: i
  entrypoint: torchrun
  num_replicas: 2
  args: ["--node_rank=${replica_id}", "--master_addr=${rank0_env}", "--nnodes=${num_replicas}"]
  env: {RANK_TEXT: "rank-${replica_id}"}
  resource: {cpu: 1, mem_mb: 100}
`)
	js, err := scheduler.BuildJobSet(context.Background(), app, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet), scheduler.BuildOptions{AppID: "ddp"})
	if err != nil {
		t.Fatal(err)
	}
	c := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
	want := []string{"torchrun", "--node_rank=$(STARPOD_REPLICA_ID)", "--master_addr=$(STARPOD_RANK0_HOST)", "--nnodes=2"}
	if !cmp.Equal(c.Command, want) {
		t.Errorf("command %q, want %q", c.Command, want)
	}
	if len(c.Env) != 3 || c.Env[0].Name != scheduler.ReplicaIDEnv ||
		c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" ||
		c.Env[1].Name != scheduler.Rank0HostEnv || c.Env[1].Value != "ddp-trainer-0-0.ddp" ||
		c.Env[2].Value != "rank-$(STARPOD_REPLICA_ID)" {
		t.Errorf("env %+v", c.Env)
	}
}

// TestJobSetOwnedFields: an overlay cannot change what the scheduler owns. Labels and the
// replica's env vars are set again after it; names, host names, the subdomain and the
// restart policy it sets are errors, of the role's pod template.
func TestJobSetOwnedFields(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(dir+"/"+name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app.yaml", `
name: owned
overlays: [sneaky.star]
roles:
- {name: main, image: i, entrypoint: e, num_replicas: 2, resource: {cpu: 1, mem_mb: 100}}
`)
	write("sneaky.star", `
def overlay(pod, ctx):
    if ctx.scheduler != "jobset" or ctx.replica_id != -1 or ctx.num_replicas != 2:
        fail("ctx %s" % ctx)
    pod["metadata"]["labels"]["starpod.dev/role-name"] = "other"
    pod["metadata"]["labels"]["example.com/mine"] = "kept"
    c = pod["spec"]["containers"][0]
    c["env"] = [{"name": "STARPOD_RANK0_HOST", "value": "evil"}, {"name": "X", "value": "$(STARPOD_REPLICA_ID)"}]
    if ctx.args.get("break") == "yes":
        pod["metadata"]["name"] = "mine"
        pod["spec"]["hostname"] = "mine"
        pod["spec"]["subdomain"] = "mine"
        pod["spec"]["restartPolicy"] = "OnFailure"
    return pod
`)
	app, err := scheduler.LoadApp(dir + "/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := scheduler.DefaultConfigFor(scheduler.SchedulerJobSet)
	js, err := scheduler.BuildJobSet(context.Background(), app, cfg, scheduler.BuildOptions{AppID: "owned"})
	if err != nil {
		t.Fatal(err)
	}
	pod := js.Spec.ReplicatedJobs[0].Template.Spec.Template
	if pod.Labels["starpod.dev/role-name"] != "main" || pod.Labels["example.com/mine"] != "kept" {
		t.Errorf("labels %v", pod.Labels)
	}
	env := pod.Spec.Containers[0].Env
	wantEnv := []corev1.EnvVar{
		{Name: scheduler.ReplicaIDEnv, ValueFrom: env[0].ValueFrom},
		{Name: scheduler.Rank0HostEnv, Value: "owned-main-0-0.owned"},
		{Name: "X", Value: "$(STARPOD_REPLICA_ID)"},
	}
	if env[0].ValueFrom == nil || !cmp.Equal(env, wantEnv) {
		t.Errorf("env %+v, want %+v", env, wantEnv)
	}

	_, err = scheduler.BuildJobSet(context.Background(), app, cfg, scheduler.BuildOptions{AppID: "owned", OverlayArgs: map[string]string{"break": "yes"}})
	var be *scheduler.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BuildError", err)
	}
	var fields []string
	for _, e := range be.Errs {
		var re *scheduler.ReplicaError
		if !errors.As(e, &re) || re.ReplicaID != scheduler.TemplateReplicaID || re.Role != "main" {
			t.Errorf("got %v, want a *ReplicaError of the template of role main", e)
			continue
		}
		fields = append(fields, strings.SplitN(strings.TrimPrefix(e.Error(), "role main pod template: pod: "), ":", 2)[0])
	}
	want := []string{"metadata.name", "spec.hostname", "spec.subdomain", "spec.restartPolicy"}
	if !cmp.Equal(fields, want) {
		t.Errorf("errors of %q, want %q:\n%v", fields, want, err)
	}
}

// TestJobSetMetadataReplicaID: ${replica_id} in pod metadata cannot be one template's value.
func TestJobSetMetadataReplicaID(t *testing.T) {
	app := mustParse(t, `
name: m
roles:
- name: a
  image: i
  entrypoint: e
  metadata: {annotations: {ok: "$${replica_id}", bad: "r-${replica_id}"}}
  resource: {cpu: 1, mem_mb: 100}
`)
	_, err := scheduler.BuildJobSet(context.Background(), app, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet), scheduler.BuildOptions{AppID: "m"})
	var se *scheduler.SpecError
	if !errors.As(err, &se) || len(se.Errors) != 1 || se.Errors[0].Err.Field != "roles[0].metadata.annotations[bad]" {
		t.Fatalf("got %v, want one error of roles[0].metadata.annotations[bad]", err)
	}
}

// TestJobSetAppIDLength: the app id must leave room for the longest pod host name.
func TestJobSetAppIDLength(t *testing.T) {
	app := mustParse(t, `
name: n
roles:
- {name: trainer, image: i, entrypoint: e, num_replicas: 10, resource: {cpu: 1, mem_mb: 100}}
`)
	cfg := scheduler.DefaultConfigFor(scheduler.SchedulerJobSet)
	// "-trainer-0-9" is 12 characters: an app id of 51 fits, 52 does not.
	if _, err := scheduler.BuildJobSet(context.Background(), app, cfg, scheduler.BuildOptions{AppID: "a" + strings.Repeat("b", 50)}); err != nil {
		t.Errorf("51 characters: %v", err)
	}
	_, err := scheduler.BuildJobSet(context.Background(), app, cfg, scheduler.BuildOptions{AppID: "a" + strings.Repeat("b", 51)})
	if err == nil || !strings.Contains(err.Error(), "is 64 characters, want at most 63") {
		t.Errorf("52 characters: got %v", err)
	}
	js, err := scheduler.BuildJobSet(context.Background(), app, cfg, scheduler.BuildOptions{})
	if err != nil || !strings.HasPrefix(js.Name, "n-") {
		t.Errorf("generated app id: %v %v", js, err)
	}
	back, err := scheduler.AppFromJobSet(js)
	if err != nil || back.Name != "n" {
		t.Errorf("AppFromJobSet: %v %v", back, err)
	}
}

// TestJobSetTooLarge: overlays that make the JobSet larger than the API server accepts give
// a *JobSizeError, and no JobSet.
func TestJobSetTooLarge(t *testing.T) {
	app := writeApp(t, map[string]string{
		"app.yaml": `name: grow
overlays: [grow.star]
roles:
- {name: a, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}}
- {name: b, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}}
- {name: c, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}}
- {name: d, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}}
`,
		"grow.star": "def overlay(pod):\n    pod[\"spec\"][\"containers\"][0][\"args\"] = [\"x\" * 900000]\n",
	})
	js, err := scheduler.BuildJobSet(context.Background(), app, scheduler.DefaultConfigFor(scheduler.SchedulerJobSet), scheduler.BuildOptions{AppID: "x"})
	var se *scheduler.JobSizeError
	if js != nil || !errors.As(err, &se) || se.Limit != scheduler.MaxJobBytes {
		t.Errorf("got %v, want a *JobSizeError and no JobSet", err)
	}
}

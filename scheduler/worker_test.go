package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/scheduler"
)

// writeApp writes files into a new directory and loads its app.yaml.
func writeApp(t *testing.T, files map[string]string) *scheduler.App {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	app, err := scheduler.LoadApp(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// buildBoth builds app with its overlays in process and in worker processes and checks that
// both give the same job, or the same errors; it returns what the in-process build gave.
func buildBoth(t *testing.T, app *scheduler.App) (string, error) {
	t.Helper()
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 2})
	defer pool.Close()
	var outs [2]string
	var errs [2]error
	for i, eopts := range []engine.Options{{}, {Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20}} {
		job, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(),
			scheduler.BuildOptions{AppID: "w", Engine: eopts, OverlayArgs: map[string]string{"zone": "z1"}})
		if err != nil {
			errs[i] = err
			continue
		}
		data, err := scheduler.Marshal(job, "yaml")
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = string(data)
	}
	if diff := cmp.Diff(outs[0], outs[1]); diff != "" {
		t.Errorf("job (-in-process +worker):\n%s", diff)
	}
	if (errs[0] == nil) != (errs[1] == nil) || errs[0] != nil && errs[0].Error() != errs[1].Error() {
		t.Errorf("in-process error:\n%v\nworker error:\n%v", errs[0], errs[1])
	}
	return outs[0], errs[0]
}

const workerApp = `
name: w
overlays: [ctx.star]
roles:
- {name: a, image: i, entrypoint: e, num_replicas: 150, resource: {cpu: 1, mem_mb: 100}, overlays: [fail.star]}
- {name: b, image: i, entrypoint: e, num_replicas: 3, resource: {cpu: 1, mem_mb: 100}}
`

// TestBuildWorkers checks that Build gives the same job with the overlays in worker
// processes, where each overlay gets a chunk of replicas in one call, as in process: every
// replica with its own ctx, in order.
func TestBuildWorkers(t *testing.T) {
	app := writeApp(t, map[string]string{
		"app.yaml": workerApp,
		"ctx.star": "def overlay(pod, ctx):\n" +
			"    pod[\"metadata\"][\"annotations\"] = {\"ctx\": \"%s/%s/%d/%d/%s\" % (ctx.app_id, ctx.role, ctx.replica_id, ctx.num_replicas, ctx.args[\"zone\"])}\n",
		"fail.star": "def overlay(pod, ctx):\n    pod[\"spec\"][\"priority\"] = ctx.replica_id * 7\n",
	})
	out, err := buildBoth(t, app)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ctx: w/a/0/150/z1", "ctx: w/a/149/150/z1", "ctx: w/b/2/3/z1", "priority: 1043"} {
		if !strings.Contains(out, want) {
			t.Errorf("the job has no %q", want)
		}
	}
}

// TestBuildWorkersErrors checks that Build reports every replica an overlay fails on, in
// order of roles and replicas and with the same text, in worker processes as in process:
// script errors, invalid pods and a pod the overlays leave invalid, across chunks.
func TestBuildWorkersErrors(t *testing.T) {
	app := writeApp(t, map[string]string{
		"app.yaml": workerApp,
		"ctx.star": "def overlay(pod, ctx):\n    pass\n",
		"fail.star": "def overlay(pod, ctx):\n" +
			"    if ctx.replica_id in (3, 70, 149):\n" +
			"        fail(\"no replica %d\" % ctx.replica_id)\n" +
			"    if ctx.replica_id == 100:\n" +
			"        pod[\"spec\"][\"priorty\"] = 1\n" +
			"    if ctx.replica_id == 120:\n" +
			"        pod[\"spec\"][\"containers\"][0][\"name\"] = \"Bad_Name\"\n",
	})
	_, err := buildBoth(t, app)
	var be *scheduler.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BuildError", err)
	}
	var got []string
	for _, e := range be.Errs {
		var re *scheduler.ReplicaError
		if !errors.As(e, &re) {
			t.Fatalf("got %T %v, want a *ReplicaError", e, e)
		}
		kind := "pod"
		var ee *engine.Error
		if errors.As(re, &ee) {
			kind = "overlay"
		}
		got = append(got, fmt.Sprintf("%s/%d/%s", re.Role, re.ReplicaID, kind))
	}
	want := []string{"a/3/overlay", "a/70/overlay", "a/100/overlay", "a/120/pod", "a/149/overlay"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s\n%v", diff, err)
	}
}

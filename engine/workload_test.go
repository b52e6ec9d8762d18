package engine_test

import (
	"context"
	"testing"

	"github.com/starpod/starpod/engine"
)

// TestCtxWorkload checks that ctx.workload shows the workload of a pod template, in this
// process and in a worker, and is None for a bare pod.
func TestCtxWorkload(t *testing.T) {
	src := `
def overlay(pod, ctx):
    w = ctx.workload
    if w == None:
        got = "None"
    else:
        got = repr((w.kind, w.api_version, w.name, w.namespace, w.path))
    pod["metadata"]["annotations"] = {"workload": got}
`
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	env := &engine.Env{Workload: &engine.Workload{Kind: "CronJob", APIVersion: "batch/v1", Name: "nightly",
		Namespace: "ops", Path: "spec.jobTemplate.spec.template"}}
	for _, opts := range []*engine.Options{nil, workerOptions(pool)} {
		o := compile(t, src, opts)
		for _, test := range []struct {
			env  *engine.Env
			want string
		}{
			{env, `("CronJob", "batch/v1", "nightly", "ops", "spec.jobTemplate.spec.template")`},
			{&engine.Env{}, "None"},
			{nil, "None"},
		} {
			got, err := o.Apply(context.Background(), testPod(), test.env)
			if err != nil {
				t.Fatal(err)
			}
			if got.Annotations["workload"] != test.want {
				t.Errorf("isolation %v: ctx.workload = %s, want %s", opts != nil, got.Annotations["workload"], test.want)
			}
		}
	}
}

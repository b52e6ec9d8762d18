package scheduler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestJobSizeExact checks that the size Build estimates from three pods of each role is the
// size of the JSON of the job it builds, before overlays, whatever the replicas' digits and
// the macros.
func TestJobSizeExact(t *testing.T) {
	for _, spec := range []string{
		`
name: one
roles:
- {name: r, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}}
`,
		`
name: several
roles:
- name: trainer
  image: ghcr.io/example/trainer:v1
  entrypoint: torchrun
  args: ["--nnodes=${num_replicas}", "--rdzv=${rank0_env}:29500", "--id=${replica_id}-${replica_id}", "${app_id}", "<&>"]
  env: {RANK: "r${replica_id}", ID: "${app_id}", IP: "[FIELD_PATH]status.podIP"}
  num_replicas: 150
  min_replicas: 20
  max_retries: 2
  retry_policy: REPLICA
  resource: {cpu: 2, gpu: 1, mem_mb: 1000, capabilities: {node.kubernetes.io/instance-type: p4d}}
  port_map: {rdzv: 29500}
  mounts: [{type: bind, src: /mnt, dst: /data, read_only: true}, {type: device, src: /dev/fuse}]
  metadata: {labels: {rep: "x${replica_id}"}, annotations: {who: "${app_id}/${replica_id}"}}
- {name: ps, image: i, entrypoint: e, args: ["${replica_id}", "${rank0_env}"], num_replicas: 11, resource: {cpu: 1, mem_mb: 1}}
- {name: one, image: i, entrypoint: e, num_replicas: 1, max_retries: 1, resource: {cpu: 1, mem_mb: 1}}
- {name: many, image: i, entrypoint: e, num_replicas: 1000, resource: {cpu: 1, mem_mb: 1}}
`,
	} {
		app, err := ParseApp("app.yaml", []byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		opts := BuildOptions{AppID: "size-test"}
		job, err := Build(context.Background(), app, cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(job)
		if err != nil {
			t.Fatal(err)
		}
		b := &builder{app: app, cfg: &cfg, opts: &opts, jobName: job.Name, appName: normalize(app.Name),
			firstTask: taskName(app.Roles[0].Name, 0)}
		head, err := headSize(job)
		if err != nil {
			t.Fatal(err)
		}
		got, tasks, _, _, err := b.jobSize(head, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(len(data)); got != want || tasks != countTasks(app) {
			t.Errorf("%s: estimated %d bytes of %d tasks, want %d bytes of %d", app.Name, got, tasks, want, countTasks(app))
		}
	}
}

func countTasks(app *App) int {
	n := 0
	for i := range app.Roles {
		n += app.Roles[i].Replicas()
	}
	return n
}

// TestExpandedLen checks expandedLen against expand.
func TestExpandedLen(t *testing.T) {
	m := macroValues{"app_id": "job-1", "replica_id": "12", "num_replicas": "300", "rank0_env": "$(X)"}
	for _, s := range []string{"", "plain", "${app_id}", "a${replica_id}b${num_replicas}c", "$${app_id}", "$$${app_id}",
		"${rank0_env}${rank0_env}", strings.Repeat("${app_id}", 100), "x$${"} {
		if got, want := expandedLen(m, s), int64(len(m.expand(s))); got != want {
			t.Errorf("expandedLen(%q) = %d, want %d", s, got, want)
		}
	}
}

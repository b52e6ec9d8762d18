package integration

// This file tests "starpod run COMPONENT" against the shared API server: a component's job is
// created as its dry run prints it, and the cluster commands see its app.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/scheduler"
)

func TestRunComponent(t *testing.T) {
	ns := namespace(t)
	ddp := []string{"dist.ddp", "-j", "2:4x8", "--script", "train.py", "--", "--lr", "0.1"}
	cfg := "--cfg=namespace=" + ns
	dry := mustRun(t, append([]string{"run", "--dry-run", "--app-id", "ddp", cfg}, ddp...)...)
	var want vcbatch.Job
	if err := yaml.UnmarshalStrict([]byte(dry.stdout), &want); err != nil {
		t.Fatalf("dry run output: %v\n%s", err, dry.stdout)
	}
	mustRun(t, append([]string{"run", "--dry-run=server", "--app-id", "ddp", cfg}, ddp...)...)

	r := mustRun(t, append([]string{"run", "--app-id", "ddp", cfg}, ddp...)...)
	if got, want := r.stdout, "kubernetes://"+ns+"/ddp\n"; got != want {
		t.Errorf("run printed %q, want the handle %q", got, want)
	}
	got := mustGet(t, ns, "ddp")
	serverFields(got)
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("created job differs from the dry run (-dry-run +created):\n%s", diff)
	}
	for i, task := range got.Spec.Tasks {
		cmd := task.Template.Spec.Containers[0].Command
		host := "$(VC_TRAIN_0_HOSTS)"
		if i == 0 {
			host = "$(" + scheduler.Rank0HostEnv + ")"
		}
		wantCmd := "torchrun --rdzv_backend c10d --rdzv_endpoint " + host + ":29500 --rdzv_id 'ddp' --nnodes 2:4 --nproc_per_node 8 --tee 3 --role '' train.py --lr 0.1"
		if len(cmd) != 3 || cmd[2] != wantCmd {
			t.Errorf("task %d runs %q, want bash -c %q", i, cmd, wantCmd)
		}
	}

	// describe reads the component's app back from the job.
	d := mustRun(t, "describe", "kubernetes://"+ns+"/ddp")
	var desc struct {
		App scheduler.App `json:"app"`
	}
	if err := yaml.Unmarshal([]byte(d.stdout), &desc); err != nil {
		t.Fatalf("describe: %v\n%s", err, d.stdout)
	}
	if len(desc.App.Roles) != 1 || desc.App.Roles[0].Name != "train" || desc.App.Roles[0].Replicas() != 4 {
		t.Errorf("describe: got app %+v", desc.App)
	}
}

// TestRunComponentProjectConfig runs a component with a project config ($STARPOD_CONFIG): its
// run options and component arguments reach the created job, and the command line wins.
func TestRunComponentProjectConfig(t *testing.T) {
	ns := namespace(t)
	config := filepath.Join(t.TempDir(), "starpod.yaml")
	data := "run_options:\n  kubernetes:\n    namespace: " + ns + "\n    queue: research\n" +
		"components:\n  utils.echo:\n    msg: from the config\n    image: busybox\n"
	if err := os.WriteFile(config, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "STARPOD_CONFIG=" + config}
	r := starpodEnv(t, env, "run", "--app-id", "echo", "utils.echo", "--image", "alpine:3")
	if r.code != 0 || r.stdout != "kubernetes://"+ns+"/echo\n" {
		t.Fatalf("run: %s", r)
	}
	job, err := vc.BatchV1alpha1().Jobs(ns).Get(context.Background(), "echo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Tasks[0].Template.Spec.Containers[0]
	if job.Spec.Queue != "research" || c.Image != "alpine:3" || strings.Join(c.Command, " ") != "echo from the config" {
		t.Errorf("job: queue %q, image %q, command %q; want research, alpine:3 (the command line's), echo from the config",
			job.Spec.Queue, c.Image, c.Command)
	}
}

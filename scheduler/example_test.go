package scheduler_test

import (
	"context"
	"fmt"

	"github.com/starpod/starpod/scheduler"
)

func ExampleParseApp() {
	_, err := scheduler.ParseApp("app.yaml", []byte(`
name: llama-ft
roles:
- name: trainer
  image: ghcr.io/example/trainer:v1
  entrypoint: torchrun
  num_replica: 4
  resource: {cpu: 32, mem_mb: 0}
`))
	fmt.Println(err)
	// Output:
	// app.yaml:7:3: roles[0].num_replica: unknown field; did you mean "num_replicas"?
	// app.yaml:8:31: roles[0].resource.mem_mb: must be > 0
}

func ExampleBuild() {
	app, err := scheduler.ParseApp("app.yaml", []byte(`
name: llama-ft
roles:
- name: trainer
  image: ghcr.io/example/trainer:v1
  entrypoint: torchrun
  args: ["--nnodes=${num_replicas}", "--rdzv-endpoint=${rank0_env}:29500", "train.py"]
  num_replicas: 2
  resource: {cpu: 32, gpu: 8, mem_mb: 262144}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	job, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(),
		scheduler.BuildOptions{AppID: "demo"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, task := range job.Spec.Tasks {
		c := task.Template.Spec.Containers[0]
		fmt.Println(task.Name, c.Command, c.Resources.Requests.Cpu(), c.Resources.Limits.Memory())
	}
	// Output:
	// trainer-0 [torchrun --nnodes=2 --rdzv-endpoint=$(STARPOD_RANK0_HOST):29500 train.py] 31900m 262144M
	// trainer-1 [torchrun --nnodes=2 --rdzv-endpoint=$(VC_TRAINER_0_HOSTS):29500 train.py] 31900m 262144M
}

package component_test

import (
	"context"
	"fmt"
	"log"

	"github.com/starpod/starpod/component"
)

// Load a builtin component, parse a command line as "starpod run dist.ddp ..." would, and get
// the app it returns.
func ExampleLoad() {
	ctx := context.Background()
	c, err := component.Load(ctx, "dist.ddp", nil)
	if err != nil {
		log.Fatal(err)
	}
	args, err := c.ParseArgs([]string{"-j", "2:4x8", "--script", "train.py", "--", "--lr", "0.1"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	app, err := c.App(ctx, args)
	if err != nil {
		log.Fatal(err)
	}
	r := app.Roles[0]
	fmt.Println(c.Summary)
	fmt.Println(app.Name, r.Name, *r.MinReplicas, *r.NumReplicas, r.PortMap["c10d"])
	fmt.Println(r.Entrypoint, r.Args[0])
	fmt.Println(r.Args[1])
	// Output:
	// Distributed data parallel app: one role of several replicas, each running torchrun.
	// train train 2 4 29500
	// bash -c
	// torchrun --rdzv_backend c10d --rdzv_endpoint ${rank0_env}:29500 --rdzv_id '${app_id}' --nnodes 2:4 --nproc_per_node 8 --tee 3 --role '' train.py --lr 0.1
}

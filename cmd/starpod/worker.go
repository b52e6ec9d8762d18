package main

// This file defines the hidden worker subcommand: the process in which overlays run with a
// memory limit.

import (
	"errors"
	"sync"

	"github.com/spf13/cobra"

	"github.com/starpod/starpod/engine"
)

func newWorkerCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Serve as an overlay worker process (used by starpod itself)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			engine.ServeWorkerIfRequested() // a worker's main has served already
			return errors.New("not started as a worker by starpod")
		},
	}
}

// workerPool is the pool of worker processes of every overlay the command runs: this
// binary, re-executed with its hidden worker subcommand. It starts a second worker only once
// the first has kept applies waiting four times as long as a start took: a command is often
// done before another worker would have paid for its start.
var workerPool = sync.OnceValue(func() *engine.WorkerPool {
	return engine.NewWorkerPool(&engine.WorkerPoolOptions{Args: []string{"worker"}, OnDemand: true})
})

package main

// This file defines the hidden worker subcommand, the process in which overlays run with a
// memory limit, and the command's pool of them.

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

// workers holds the pool of worker processes of every overlay the command runs: this
// binary, re-executed with its hidden worker subcommand. It starts a second worker only once
// the first has kept applies waiting four times as long as a start took: a command is often
// done before another worker would have paid for its start.
var workers struct {
	sync.Mutex
	pool *engine.WorkerPool
}

// workerPool returns the command's pool of workers, made when first asked for.
func workerPool() *engine.WorkerPool {
	workers.Lock()
	defer workers.Unlock()
	if workers.pool == nil {
		workers.pool = engine.NewWorkerPool(&engine.WorkerPoolOptions{Args: []string{"worker"}, OnDemand: true})
	}
	return workers.pool
}

// closeWorkers stops the command's workers and waits until they have exited, so that none
// outlives the command; a command run after it gets a new pool.
func closeWorkers() {
	workers.Lock()
	p := workers.pool
	workers.pool = nil
	workers.Unlock()
	if p != nil {
		p.Close()
	}
}

// killWorkers kills the command's workers without waiting, for a process about to exit at
// once.
func killWorkers() {
	workers.Lock()
	defer workers.Unlock()
	if workers.pool != nil {
		workers.pool.Kill()
	}
}

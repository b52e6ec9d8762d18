package main

// This file is a temporary stand-in for submitting jobs to a cluster; the cluster code
// replaces it with the same names.

import (
	"context"
	"errors"

	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// submitOptions configures submitJob.
type submitOptions struct {
	Kubeconfig, Context string
	DryRunServer, Wait  bool
	Output              string
}

// submitJob submits job to the cluster (or, with DryRunServer, has the API server check it).
func submitJob(ctx context.Context, a *app, job *vcbatch.Job, opts submitOptions) error {
	return errors.New("submitting to a cluster is not available in this build; use --dry-run")
}

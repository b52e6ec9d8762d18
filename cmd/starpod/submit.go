package main

// This file defines the submission of a built job to a cluster, for "starpod run".

import (
	"context"
	"fmt"
	"io"

	"github.com/starpod/starpod/cluster"
	"github.com/starpod/starpod/scheduler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// submitOptions configures submitJob.
type submitOptions struct {
	Kubeconfig, Context string
	DryRunServer, Wait  bool
	Output              string // the format of a server dry run's job: yaml or json
}

// submitJob submits job to the cluster that opts select, in the job's namespace or else the
// context's. It prints the app's handle, or with DryRunServer the job as the API server
// would have stored it (nothing is created). With Wait it then follows the app until it
// ends, showing each change of state on standard error (standard output has only the
// handle, for H=$(starpod run --wait ...)), and fails (exit 1) unless the app succeeded.
func submitJob(ctx context.Context, a *app, job *vcbatch.Job, opts submitOptions) error {
	c, err := connect(cluster.Options{Kubeconfig: opts.Kubeconfig, Context: opts.Context})
	if err != nil {
		return err
	}
	got, err := c.Submit(ctx, job, cluster.SubmitOptions{DryRun: opts.DryRunServer})
	if err != nil {
		return err
	}
	if opts.DryRunServer {
		// As "kubectl create --dry-run=server -o yaml" prints it: a whole object, which
		// kubectl can read back (the decoder of typed objects drops apiVersion and kind),
		// without the managedFields that kubectl hides too.
		got.TypeMeta = metav1.TypeMeta{APIVersion: vcbatch.SchemeGroupVersion.String(), Kind: "Job"}
		got.ManagedFields = nil
		out, err := scheduler.Marshal(got, opts.Output)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(out)
		return err
	}
	return submitted(ctx, a, c, cluster.Handle{Namespace: got.Namespace, AppID: got.Name}, opts)
}

// submitJobSet is submitJob for a JobSet.
func submitJobSet(ctx context.Context, a *app, js *jobset.JobSet, opts submitOptions) error {
	c, err := connect(cluster.Options{Kubeconfig: opts.Kubeconfig, Context: opts.Context})
	if err != nil {
		return err
	}
	got, err := c.SubmitJobSet(ctx, js, cluster.SubmitOptions{DryRun: opts.DryRunServer})
	if err != nil {
		return err
	}
	if opts.DryRunServer {
		// As submitJob prints a Volcano Job.
		got.TypeMeta = metav1.TypeMeta{APIVersion: jobset.GroupVersion.String(), Kind: "JobSet"}
		got.ManagedFields = nil
		out, err := scheduler.MarshalJobSet(got, opts.Output)
		if err != nil {
			return err
		}
		_, err = a.stdout.Write(out)
		return err
	}
	h := cluster.Handle{Namespace: got.Namespace, AppID: got.Name, Scheduler: scheduler.SchedulerJobSet}
	return submitted(ctx, a, c, h, opts)
}

// submitted prints the handle of the app submitted and, with opts.Wait, follows it.
func submitted(ctx context.Context, a *app, c *cluster.Client, h cluster.Handle, opts submitOptions) error {
	fmt.Fprintln(a.stdout, h)
	if !opts.Wait {
		return nil
	}
	return waitApp(ctx, a, c, h, a.stderr)
}

// waitApp follows the app h names until it ends, showing its states on w: a live block on
// a terminal, one line per change otherwise. It returns exit code 1 unless the app
// succeeded.
func waitApp(ctx context.Context, a *app, c *cluster.Client, h cluster.Handle, w io.Writer) error {
	h = c.Resolve(h)
	p := cluster.NewProgress(w, liveOutput(w))
	st, err := c.Wait(ctx, h, p.Update)
	if err != nil {
		return err
	}
	if st.State != cluster.Succeeded {
		fmt.Fprintf(a.stderr, "app %s ended %s%s\n", h, st.State, reasonNote(st))
		return &exitCodeError{exitError}
	}
	return nil
}

// reasonNote returns ": reason: message" from a status, as far as it has them.
func reasonNote(st cluster.Status) string {
	s := ""
	if st.Reason != "" {
		s += ": " + st.Reason
	}
	if st.Message != "" {
		s += ": " + st.Message
	}
	return s
}

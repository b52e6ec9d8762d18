package main

// This file defines run --diff: a unified diff of the pod template of each task before and
// after the overlays (apply's --diff is internal/pipeline's).

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/internal/pipeline"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/scheduler"
)

// diffTasks returns the diff of the pod template of each task of a job that the overlays
// changed: before is the job built without any overlay, after the job built with them, and
// spec names the app spec in the headers ("app.yaml task trainer-0").
func diffTasks(spec string, before, after *vcbatch.Job, color bool) ([]byte, error) {
	byName := make(map[string]*corev1.PodTemplateSpec, len(before.Spec.Tasks))
	for i := range before.Spec.Tasks {
		byName[before.Spec.Tasks[i].Name] = &before.Spec.Tasks[i].Template
	}
	var out []byte
	for i := range after.Spec.Tasks {
		task := &after.Spec.Tasks[i]
		a, err := stream.MarshalYAML(&task.Template)
		if err != nil {
			return nil, err
		}
		var b []byte
		if t, ok := byName[task.Name]; ok {
			if b, err = stream.MarshalYAML(t); err != nil {
				return nil, err
			}
		}
		d, err := pipeline.UnifiedDiff(fmt.Sprintf("%s task %s", spec, task.Name), b, a, color)
		if err != nil {
			return nil, err
		}
		out = append(out, d...)
	}
	return out, nil
}

// withoutOverlays returns a copy of app and opts that names no overlay: the job it builds is
// the one the overlays start from.
func withoutOverlays(app *scheduler.App, opts scheduler.BuildOptions) (*scheduler.App, scheduler.BuildOptions) {
	bare := *app
	bare.Overlays = nil
	bare.Roles = slices.Clone(app.Roles)
	for i := range bare.Roles {
		bare.Roles[i].Overlays = nil
	}
	opts.Overlays = nil
	return &bare, opts
}

// runDiff prints, for run --dry-run --diff, the diff of each task's pod that the overlays
// changed. Both jobs are built with the same app id, random or not, so that only the
// overlays' changes differ.
func runDiff(ctx context.Context, a *app, spec *scheduler.App, cfg scheduler.Config, opts scheduler.BuildOptions) error {
	var seed []byte // of the random app id suffix, when there is one
	if opts.AppID == "" && opts.Rand == nil {
		seed = make([]byte, 64)
		if _, err := rand.Read(seed); err != nil {
			return err
		}
	}
	build := func(app *scheduler.App, opts scheduler.BuildOptions) (*vcbatch.Job, error) {
		if seed != nil {
			opts.Rand = bytes.NewReader(seed)
		}
		return scheduler.Build(ctx, app, cfg, opts)
	}
	after, err := build(spec, opts)
	if err != nil {
		return printErrors(a, err)
	}
	before, err := build(withoutOverlays(spec, opts))
	if err != nil {
		return printErrors(a, err)
	}
	out, err := diffTasks(spec.File, before, after, colorOutput(a.stdout))
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(out)
	return err
}

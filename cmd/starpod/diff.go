package main

// This file defines --diff: a unified diff of a document's YAML before and after the
// overlays, coloured on a terminal.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/scheduler"
)

// diffContext is the number of unchanged lines around each change, as diff -u shows.
const diffContext = 3

// unifiedDiff returns the unified diff of before and after, headed by the name of the
// document: "--- name" and "+++ name (after the overlays)". It returns nil when they are
// equal. Coloured, removed lines are red, added lines green and hunk headers cyan, as
// git diff colours them.
func unifiedDiff(name string, before, after []byte, color bool) ([]byte, error) {
	if bytes.Equal(before, after) {
		return nil, nil
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        splitLines(before),
		B:        splitLines(after),
		FromFile: name,
		ToFile:   name + " (after the overlays)",
		Context:  diffContext,
	})
	if err != nil {
		return nil, err
	}
	if !color {
		return []byte(text), nil
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimSuffix(line, "\n")
		var code string
		switch {
		case strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ "):
			code = "1" // bold
		case strings.HasPrefix(line, "@@"):
			code = "36" // cyan
		case strings.HasPrefix(line, "-"):
			code = "31" // red
		case strings.HasPrefix(line, "+"):
			code = "32" // green
		}
		if code == "" {
			b.WriteString(line)
			continue
		}
		fmt.Fprintf(&b, "\x1b[%sm%s\x1b[0m\n", code, body)
	}
	return []byte(b.String()), nil
}

// diffOptions are those of apply --diff.
type diffOptions struct {
	color bool
}

// pod returns the diff of a pod document whose pod the overlays turned from in to out, both
// encoded as apply encodes a changed pod; nothing when the overlays changed nothing.
func (o *diffOptions) pod(doc *stream.Document, in, out *corev1.Pod, d *convert.PodDefaults) ([]byte, error) {
	if unchanged(in, out) {
		return nil, nil
	}
	before, err := encodePod(in, d, "yaml")
	if err != nil {
		return nil, err
	}
	after, err := encodePod(out, d, "yaml")
	if err != nil {
		return nil, err
	}
	return unifiedDiff(fmt.Sprintf("%s document %d", doc.File, doc.Index+1), before, after, o.color)
}

// document returns the diff of a document holding pod templates, from its YAML before the
// overlays to its YAML after them, both encoded as apply encodes a changed document.
func (o *diffOptions) document(doc *stream.Document, before, after []byte) ([]byte, error) {
	return unifiedDiff(fmt.Sprintf("%s document %d", doc.File, doc.Index+1), before, after, o.color)
}

// splitLines splits text into lines, each with its newline, and the last without one if it
// has none.
func splitLines(text []byte) []string {
	lines := strings.SplitAfter(string(text), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

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
		a, err := encode(&task.Template, "yaml")
		if err != nil {
			return nil, err
		}
		var b []byte
		if t, ok := byName[task.Name]; ok {
			if b, err = encode(t, "yaml"); err != nil {
				return nil, err
			}
		}
		d, err := unifiedDiff(fmt.Sprintf("%s task %s", spec, task.Name), b, a, color)
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

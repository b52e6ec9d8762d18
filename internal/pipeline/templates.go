package pipeline

// This file defines what a pipeline does with pod templates: the ctx of each, and the errors
// of documents that hold templates.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

// EnvOf returns env with ctx.workload of t: None for a pod. Commands that apply overlays to
// the templates of workload.Find use it, as the pipeline does.
func EnvOf(env *engine.Env, t *workload.Template) *engine.Env {
	if t.Workload == nil {
		return env
	}
	e := engine.Env{}
	if env != nil {
		e = *env
	}
	w := t.Workload
	e.Workload = &engine.Workload{Kind: w.Kind, APIVersion: w.APIVersion, Name: w.Name, Namespace: w.Namespace, Path: w.Path}
	return &e
}

// templateError puts the document in front of each line of a *workload.Error.
func templateError(doc *stream.Document, err error) error {
	var we *workload.Error
	if !errors.As(err, &we) {
		return fmt.Errorf("%s:%d: %v", doc.File, doc.Line, err)
	}
	where := fmt.Sprintf("%s:%d: %s %q: ", doc.File, doc.Line, we.Kind, we.Name)
	var b strings.Builder
	for i, fe := range we.Fields {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(where + fe.Error())
	}
	if more := we.MoreText(); more != "" {
		b.WriteString("\n" + where + more)
	}
	return errors.New(b.String())
}

// templateApplyError puts the document and the template an overlay failed on in front of the
// overlay's error, and its backtrace after it.
func templateApplyError(doc *stream.Document, t *workload.Template, err error) error {
	return overlayError(templateWhere(doc, t), err)
}

// templateWhere says where an overlay failed on template t of doc.
func templateWhere(doc *stream.Document, t *workload.Template) string {
	if t.Workload == nil {
		return fmt.Sprintf("%s:%d: pod %q at %s", doc.File, doc.Line, t.Pod.Name, t.Path)
	}
	return fmt.Sprintf("%s:%d: %s %q: %s", doc.File, doc.Line, t.Workload.Kind, t.Workload.Name, t.Path)
}

// overlayError puts where, the document and the pod or template an overlay failed on, in front
// of every line of the overlay's error, and the error's backtrace after it.
func overlayError(where string, err error) error {
	var b strings.Builder
	for i, line := range strings.Split(err.Error(), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(where + ": " + line)
	}
	var e *engine.Error
	if errors.As(err, &e) && e.Backtrace != "" {
		b.WriteString("\n" + e.Backtrace)
	}
	return errors.New(b.String())
}

// headComment returns the comment lines at the head of a YAML document's text, such as Helm's
// "# Source: chart/templates/deployment.yaml", which a document encoded anew keeps.
func headComment(raw []byte) []byte {
	n := 0
	for n < len(raw) {
		end := bytes.IndexByte(raw[n:], '\n')
		if end < 0 {
			break
		}
		line := bytes.TrimSpace(raw[n : n+end])
		if len(line) > 0 && line[0] != '#' {
			break
		}
		n += end + 1
	}
	return raw[:n:n]
}

// A TemplateError is the error of one pod template of [ApplyTemplates]: of the overlays on
// it, or of putting their result back into its object.
type TemplateError struct {
	Object   int   // the object's index in objs
	Template int   // the template's index in the object's Templates
	Err      error // an error of the chain, or a *workload.Error of putting the result back
	Put      bool  // whether Err is of putting the result back
}

// ApplyTemplates applies chain to the pod templates of objs (nil objects hold none), all at
// once, each with the ctx EnvOf gives it, and puts each result back into its object. It
// returns the error of each template that failed, in order; every other result is put back.
// It is what "starpod fn" does with the items of a ResourceList, which reports every error.
func ApplyTemplates(ctx context.Context, chain engine.Chain, env *engine.Env, objs []*workload.Object) []TemplateError {
	type ref struct{ obj, template int }
	var pods []*corev1.Pod
	var envs []*engine.Env
	var refs []ref
	for i, obj := range objs {
		if obj == nil {
			continue
		}
		for j, t := range obj.Templates {
			pods = append(pods, t.Pod)
			envs = append(envs, EnvOf(env, t))
			refs = append(refs, ref{i, j})
		}
	}
	if len(pods) == 0 {
		return nil
	}
	out, errs := chain.ApplyEach(ctx, pods, envs)
	var terrs []TemplateError
	for k, err := range errs {
		r := refs[k]
		if err == nil {
			if err = objs[r.obj].Put(r.template, out[k]); err == nil {
				continue
			}
			terrs = append(terrs, TemplateError{Object: r.obj, Template: r.template, Err: err, Put: true})
			continue
		}
		terrs = append(terrs, TemplateError{Object: r.obj, Template: r.template, Err: err})
	}
	return terrs
}

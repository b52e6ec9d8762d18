package webhook

// This file defines what the webhook does with one AdmissionRequest: the rules that match,
// their overlays in order, and the response.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/starpod/starpod/engine"
)

// AppliedAnnotation is the annotation that records, on an object the overlays changed, the
// overlays applied to it: "RULE/FILE@sha256:HASH" for each, comma-separated, in order; HASH
// is the first 12 hex digits of the file's sha256. The record accumulates: the entries an
// object already carries (from its template, another webhook, an earlier invocation) are
// kept, first, and an admission adds those it lacks.
const AppliedAnnotation = "starpod.dev/overlays"

// maxWarning bounds the length of one warning; the API server passes at most 4 KiB of each.
const maxWarning = 1024

// Outcomes of an admission, as logs and metrics name them.
const (
	outcomeUnchanged = "unchanged" // allowed with no patch
	outcomeMutated   = "mutated"   // allowed with a patch
	outcomeIgnored   = "ignored"   // a rule failed with onError Ignore; allowed
	outcomeDenied    = "denied"    // a rule failed with onError Fail
	outcomeError     = "error"     // the request itself was bad
	outcomeRefused   = "refused"   // over the concurrency limit
)

// result is what one admission did, for the response, the log line and the metrics.
type result struct {
	resp    *admissionv1.AdmissionResponse
	name    string            // the object's name (or generateName), once decoded
	rules   []string          // the rules that matched, in order
	outcome string            // the admission's outcome
	byRule  map[string]string // each matched rule's outcome
}

// admit applies the rules of c to the request's object.
func admit(ctx context.Context, c *compiled, req *admissionv1.AdmissionRequest) *result {
	res := &result{
		resp:    &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true},
		outcome: outcomeUnchanged,
		byRule:  make(map[string]string),
	}
	// Only new objects are mutated: most of a pod is immutable once created.
	if req.Operation != admissionv1.Create || req.SubResource != "" || len(req.Object.Raw) == 0 {
		return res
	}
	kind := kindOf(req.Kind)
	var matched []*rule
	var obj object
	for _, r := range c.rules {
		if r.namespaces != nil && !r.namespaces[req.Namespace] || !containsKind(r.kinds, kind) {
			continue
		}
		if obj == nil {
			o, err := decodeObject(kind, req.Namespace, req.Object.Raw, c.workloads)
			if err != nil {
				return deny(res, http.StatusBadRequest, err.Error(), outcomeError)
			}
			obj = o
			res.name = o.name()
		}
		if r.matches(req.Namespace, kind, obj.labels()) {
			matched = append(matched, r)
			res.rules = append(res.rules, r.Name)
		}
	}
	if len(matched) == 0 {
		return res
	}
	orig := obj.pods()
	if len(orig) == 0 {
		return res // a workload with no template (a ReplicationController without one)
	}
	envs := obj.workloads()
	cur := make([]*corev1.Pod, len(orig))
	for i, p := range orig {
		cur[i] = p.DeepCopy()
	}
	var applied []string
	changed := false
	for _, r := range matched {
		next, changedBy, err := applyRule(ctx, r, cur, envs)
		if err == nil && len(changedBy) > 0 {
			err = obj.check(next) // a pod template the rule named, say
		}
		if err != nil {
			msg := fmt.Sprintf("starpod rule %s: %v", r.Name, err)
			if r.onError() == Fail {
				res.byRule[r.Name] = outcomeDenied
				return deny(res, http.StatusForbidden, msg, outcomeDenied)
			}
			res.byRule[r.Name] = outcomeIgnored
			res.outcome = outcomeIgnored
			res.resp.Warnings = append(res.resp.Warnings, clip(msg+" (onError: Ignore; the rule's changes were left out)"))
			continue
		}
		res.byRule[r.Name] = outcomeUnchanged
		if len(changedBy) > 0 {
			changed = true
			res.byRule[r.Name] = outcomeMutated
			res.resp.Warnings = append(res.resp.Warnings,
				clip(fmt.Sprintf("starpod rule %s: changed by %s", r.Name, strings.Join(changedBy, ", "))))
		}
		for _, o := range r.overlays {
			applied = append(applied, fmt.Sprintf("%s/%s@sha256:%s", r.Name, o.name, o.hash[:12]))
		}
		cur = next
	}
	if !changed {
		// Nothing changed: no patch, no annotation. A reinvocation after the overlays ran
		// once ends here.
		return res
	}
	for i, p := range cur {
		if p.Annotations == nil {
			p.Annotations = make(map[string]string)
		}
		p.Annotations[AppliedAnnotation] = record(orig[i].Annotations[AppliedAnnotation], p.Annotations[AppliedAnnotation], applied)
	}
	before, err := obj.encode()
	if err != nil {
		return deny(res, http.StatusInternalServerError, err.Error(), outcomeError)
	}
	if err := obj.setPods(cur); err != nil {
		// check passed the results of every rule, and the annotation breaks no rule.
		return deny(res, http.StatusInternalServerError, "starpod: "+err.Error(), outcomeError)
	}
	after, err := obj.encode()
	if err != nil {
		return deny(res, http.StatusInternalServerError, err.Error(), outcomeError)
	}
	patch, err := makePatch(req.Object.Raw, before, after)
	if err != nil {
		return deny(res, http.StatusInternalServerError, "starpod: making the patch: "+err.Error(), outcomeError)
	}
	if patch != nil {
		pt := admissionv1.PatchTypeJSONPatch
		res.resp.Patch, res.resp.PatchType = patch, &pt
		if res.outcome == outcomeUnchanged {
			res.outcome = outcomeMutated
		}
	}
	return res
}

// applyRule applies r's overlays in order to each of pods, with ctx.workload of pods[i] from
// workloads[i], and returns the new pods and the overlays that changed any of them. An error
// is the first overlay's that failed.
//
// The admission waits in r's queue for one of the rule's workers until ctx's deadline, and is
// refused at once if the queue says it cannot be served by then. The overlays run within ctx:
// one still running at its deadline stops there with an error saying the caller's deadline
// passed; in a worker, which is told the deadline, the worker goes back to its pool rather
// than being killed and replaced, and the admission's turn passes to the next. A ctx canceled
// before its deadline (the API server gone) kills the worker at once.
func applyRule(ctx context.Context, r *rule, pods []*corev1.Pod, workloads []*engine.Workload) ([]*corev1.Pod, []string, error) {
	t, err := r.queue.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer t.release(true)
	return runRule(ctx, r, pods, workloads)
}

// runRule applies r's overlays, as applyRule says, once the admission's turn has come.
func runRule(ctx context.Context, r *rule, pods []*corev1.Pod, workloads []*engine.Workload) ([]*corev1.Pod, []string, error) {
	env := &engine.Env{Args: r.Args}
	envs := make([]*engine.Env, len(pods))
	for i := range envs {
		envs[i] = env
		if workloads[i] != nil {
			envs[i] = &engine.Env{Args: r.Args, Workload: workloads[i]}
		}
	}
	var changedBy []string
	enc := encodePods(pods) // of the pods the next overlay gets
	for _, o := range r.overlays {
		var out []*corev1.Pod
		var err error
		if len(pods) == 1 {
			var p *corev1.Pod
			p, err = o.Apply(ctx, pods[0], envs[0])
			out = []*corev1.Pod{p}
		} else {
			var errs []error
			out, errs = o.ApplyEach(ctx, pods, envs)
			for _, e := range errs {
				if e != nil {
					err = e
					break
				}
			}
		}
		if err != nil {
			return nil, nil, err
		}
		next := encodePods(out)
		if !sameEncodings(enc, next) {
			changedBy = append(changedBy, o.name)
		}
		pods, enc = out, next
	}
	return pods, changedBy, nil
}

// encodePods returns the protobuf encodings of pods, which say whether two pods are the same
// as apimachinery's semantic equality says, at a fraction of its cost: quantities are written
// in their canonical form, times as seconds and nanoseconds, map keys in order, and an empty
// list or map as a missing one. A pod that cannot be encoded has a nil encoding.
func encodePods(pods []*corev1.Pod) [][]byte {
	out := make([][]byte, len(pods))
	for i, p := range pods {
		out[i], _ = p.Marshal()
	}
	return out
}

// sameEncodings reports whether a and b, encodings of encodePods, are of the same pods; one
// that could not be encoded differs from any.
func sameEncodings(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == nil || b[i] == nil || !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func containsKind(kinds []string, kind string) bool {
	for _, k := range kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// deny makes res a refusal with code and msg.
func deny(res *result, code int32, msg, outcome string) *result {
	res.resp.Allowed = false
	res.resp.Warnings = nil
	res.resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: code, Message: msg}
	res.outcome = outcome
	return res
}

// record returns the value of AppliedAnnotation for a pod that carried sent when it came and
// kept after the overlays, to which the overlays applied adds: the entries of sent, then
// those of kept, then applied, each once, in that order.
func record(sent, kept string, applied []string) string {
	var out []string
	seen := make(map[string]bool)
	add := func(e string) {
		if e = strings.TrimSpace(e); e != "" && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for _, v := range []string{sent, kept} {
		for _, e := range strings.Split(v, ",") {
			add(e)
		}
	}
	for _, e := range applied {
		add(e)
	}
	return strings.Join(out, ",")
}

// clip bounds a warning's length.
func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > maxWarning {
		s = s[:maxWarning-3] + "..."
	}
	return s
}

package engine

// This file defines chains: several overlays applied in order.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// A Chain applies several overlays in order, each to the pod the one before returned.
type Chain []*Overlay

// Apply applies every overlay of c in order to pod; an error is the *Error of the first overlay
// that failed, which names it.
func (c Chain) Apply(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, error) {
	if len(c) == 0 {
		return pod.DeepCopy(), nil
	}
	for _, o := range c {
		var err error
		if pod, err = o.Apply(ctx, pod, env); err != nil {
			return nil, err
		}
	}
	return pod, nil
}

// ApplyBatch applies every overlay of c in order to each of pods, as Apply does, with env as
// the ctx of every pod, and returns the results in order. If a pod fails, it returns the
// results of the pods before it and the *Error of the first overlay that failed on that pod:
// len(out) is the index of the pod that failed. That pod is the first in the order of pods
// that Apply would fail on, as if each pod were applied in turn; the pods after it may have
// been applied by some overlays. Each overlay gets the pods in one [Overlay.ApplyBatch] call,
// so with [WorkerProcess] isolation each overlay makes one round trip to a worker.
func (c Chain) ApplyBatch(ctx context.Context, pods []*corev1.Pod, env *Env) ([]*corev1.Pod, error) {
	if len(c) == 0 {
		out := make([]*corev1.Pod, len(pods))
		for i, pod := range pods {
			out[i] = pod.DeepCopy()
		}
		return out, nil
	}
	out := pods
	var failed error
	for _, o := range c {
		if len(out) == 0 {
			break
		}
		// An overlay that fails on a pod stops there, and the overlays after it still
		// apply to the pods before that pod: one of them may fail first.
		res, err := o.ApplyBatch(ctx, out, env)
		if err != nil {
			failed = err
		}
		out = res
	}
	return out, failed
}

// ApplyEach applies every overlay of c in order to each of pods, as Apply does, with envs[i]
// as the ctx of pods[i] (see [Overlay.ApplyEach]). It returns a result and an error for each
// pod; a pod's error is the *Error of the first overlay that failed on it, and the overlays
// after it do not see that pod. Each overlay gets all the pods still going in one call, so
// with [WorkerProcess] isolation each overlay makes one round trip to a worker.
func (c Chain) ApplyEach(ctx context.Context, pods []*corev1.Pod, envs []*Env) ([]*corev1.Pod, []error) {
	if envs != nil && len(envs) != len(pods) {
		panic(fmt.Sprintf("engine: ApplyEach of %d pods with %d envs", len(pods), len(envs)))
	}
	out := make([]*corev1.Pod, len(pods))
	errs := make([]error, len(pods))
	if len(c) == 0 {
		for i, pod := range pods {
			out[i] = pod.DeepCopy()
		}
		return out, errs
	}
	cur, curEnvs := pods, envs
	index := make([]int, len(pods)) // the index in pods of each pod of cur
	for i := range index {
		index[i] = i
	}
	for _, o := range c {
		res, es := o.ApplyEach(ctx, cur, curEnvs)
		next, nextIndex := res[:0], index[:0]
		var nextEnvs []*Env
		if curEnvs != nil {
			nextEnvs = make([]*Env, 0, len(cur))
		}
		for j, err := range es {
			if err != nil {
				errs[index[j]] = err
				continue
			}
			next, nextIndex = append(next, res[j]), append(nextIndex, index[j])
			if curEnvs != nil {
				nextEnvs = append(nextEnvs, curEnvs[j])
			}
		}
		cur, index, curEnvs = next, nextIndex, nextEnvs
		if len(cur) == 0 {
			break
		}
	}
	for j, i := range index {
		out[i] = cur[j]
	}
	return out, errs
}

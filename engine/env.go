package engine

// This file defines the ctx an overlay sees: the replica a scheduler builds, the workload whose
// pod template it is, and the args.

import (
	"sort"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// Env is what an overlay sees as its ctx parameter. A pod that a scheduler builds is replica
// ReplicaID of the NumReplicas of its role, and Scheduler names the scheduler. Outside a
// scheduler (Scheduler is empty) the pod is no replica, and ctx.replica_id and
// ctx.num_replicas are None, whatever ReplicaID and NumReplicas hold: replica 0 is never
// mistaken for "no replica". The zero value is the ctx of an overlay run outside a scheduler:
// empty strings, None and no args.
type Env struct {
	AppID       string            // ctx.app_id
	Role        string            // ctx.role
	ReplicaID   int               // ctx.replica_id, when Scheduler is set
	NumReplicas int               // ctx.num_replicas, when Scheduler is set
	Scheduler   string            // ctx.scheduler, e.g. "kubernetes"; empty outside a scheduler
	Args        map[string]string // ctx.args, e.g. from starpod's --overlay-arg KEY=VALUE
	Workload    *Workload         // ctx.workload; nil (None) for a bare pod
}

// A Workload is the object whose pod template an overlay is applied to, as ctx.workload
// shows it: ctx.workload.kind, .api_version, .name, .namespace and .path, the template's
// field path in the object (spec.template, spec.tasks[0].template).
type Workload struct {
	Kind, APIVersion, Name, Namespace, Path string
}

// value returns w as a frozen Starlark struct, or None for nil.
func (w *Workload) value() starlark.Value {
	if w == nil {
		return starlark.None
	}
	s := starlarkstruct.FromStringDict(starlark.String("workload"), starlark.StringDict{
		"kind":        starlark.String(w.Kind),
		"api_version": starlark.String(w.APIVersion),
		"name":        starlark.String(w.Name),
		"namespace":   starlark.String(w.Namespace),
		"path":        starlark.String(w.Path),
	})
	s.Freeze()
	return s
}

// value returns env as a frozen Starlark struct.
func (env *Env) value() starlark.Value {
	if env == nil {
		env = &Env{}
	}
	args := starlark.NewDict(len(env.Args))
	keys := make([]string, 0, len(env.Args))
	for k := range env.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args.SetKey(starlark.String(k), starlark.String(env.Args[k]))
	}
	var replica, replicas starlark.Value = starlark.None, starlark.None
	if env.Scheduler != "" {
		replica, replicas = starlark.MakeInt(env.ReplicaID), starlark.MakeInt(env.NumReplicas)
	}
	s := starlarkstruct.FromStringDict(starlark.String("ctx"), starlark.StringDict{
		"app_id":       starlark.String(env.AppID),
		"role":         starlark.String(env.Role),
		"replica_id":   replica,
		"num_replicas": replicas,
		"scheduler":    starlark.String(env.Scheduler),
		"args":         args,
		"workload":     env.Workload.value(),
	})
	s.Freeze()
	return s
}

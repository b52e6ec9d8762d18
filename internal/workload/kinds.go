package workload

// This file defines the table of kinds whose pod templates Find knows without a rule.

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// A typedKind is a kind of k8s.io/api: its objects decode strictly as their Go type, and
// templates returns each pod template of one with its path.
type typedKind struct {
	apiVersion string
	new        func() any
	templates  func(obj any) []typedTemplate
}

// A typedTemplate is a pod template of a decoded object and its path.
type typedTemplate struct {
	path string
	t    *corev1.PodTemplateSpec
}

func one(path string, t *corev1.PodTemplateSpec) []typedTemplate {
	return []typedTemplate{{path, t}}
}

// typedKinds are the kinds of k8s.io/api that hold pod templates, by group and kind. Only
// the version named matches; an object of another version (batch/v1beta1 CronJob) holds no
// template for Find.
var typedKinds = map[groupKind]typedKind{
	{"", "PodTemplate"}: {"v1", func() any { return new(corev1.PodTemplate) },
		func(o any) []typedTemplate { return one("template", &o.(*corev1.PodTemplate).Template) }},
	{"", "ReplicationController"}: {"v1", func() any { return new(corev1.ReplicationController) },
		func(o any) []typedTemplate {
			rc := o.(*corev1.ReplicationController)
			if rc.Spec.Template == nil {
				return nil
			}
			return one("spec.template", rc.Spec.Template)
		}},
	{"apps", "Deployment"}: {"apps/v1", func() any { return new(appsv1.Deployment) },
		func(o any) []typedTemplate { return one("spec.template", &o.(*appsv1.Deployment).Spec.Template) }},
	{"apps", "ReplicaSet"}: {"apps/v1", func() any { return new(appsv1.ReplicaSet) },
		func(o any) []typedTemplate { return one("spec.template", &o.(*appsv1.ReplicaSet).Spec.Template) }},
	{"apps", "StatefulSet"}: {"apps/v1", func() any { return new(appsv1.StatefulSet) },
		func(o any) []typedTemplate { return one("spec.template", &o.(*appsv1.StatefulSet).Spec.Template) }},
	{"apps", "DaemonSet"}: {"apps/v1", func() any { return new(appsv1.DaemonSet) },
		func(o any) []typedTemplate { return one("spec.template", &o.(*appsv1.DaemonSet).Spec.Template) }},
	{"batch", "Job"}: {"batch/v1", func() any { return new(batchv1.Job) },
		func(o any) []typedTemplate { return one("spec.template", &o.(*batchv1.Job).Spec.Template) }},
	{"batch", "CronJob"}: {"batch/v1", func() any { return new(batchv1.CronJob) },
		func(o any) []typedTemplate {
			return one("spec.jobTemplate.spec.template", &o.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template)
		}},
}

// typedPaths are the parsed paths of the templates of typedKinds.
var typedPaths = map[string]Path{
	"template":                       mustPath("template"),
	"spec.template":                  mustPath("spec.template"),
	"spec.jobTemplate.spec.template": mustPath("spec.jobTemplate.spec.template"),
}

func mustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// A groupKind is an API group and a kind.
type groupKind struct{ group, kind string }

// customKinds are the custom resources whose pod templates Find knows: each template is
// decoded strictly as a corev1.PodTemplateSpec, and everything around it is kept as it is.
// Any version of the group matches.
var customKinds = []Rule{
	mustRule("batch.volcano.sh/Job=spec.tasks[*].template"),
	mustRule("jobset.x-k8s.io/JobSet=spec.replicatedJobs[*].template.spec.template"),
	mustRule("kubeflow.org/PyTorchJob=spec.pytorchReplicaSpecs.*.template"),
	mustRule("kubeflow.org/TFJob=spec.tfReplicaSpecs.*.template"),
	mustRule("kubeflow.org/MPIJob=spec.mpiReplicaSpecs.*.template"),
	mustRule("kubeflow.org/XGBoostJob=spec.xgbReplicaSpecs.*.template"),
	mustRule("kubeflow.org/PaddleJob=spec.paddleReplicaSpecs.*.template"),
	mustRule("ray.io/RayCluster=spec.headGroupSpec.template", "spec.workerGroupSpecs[*].template"),
	mustRule("ray.io/RayJob=spec.rayClusterSpec.headGroupSpec.template", "spec.rayClusterSpec.workerGroupSpecs[*].template"),
	mustRule("leaderworkerset.x-k8s.io/LeaderWorkerSet=spec.leaderWorkerTemplate.leaderTemplate",
		"spec.leaderWorkerTemplate.workerTemplate"),
}

// mustRule parses a rule of the table, with more paths for the same kind.
func mustRule(s string, more ...string) Rule {
	r, err := ParseRule(s)
	if err != nil {
		panic(err)
	}
	for _, m := range more {
		p, err := ParsePath(m)
		if err != nil {
			panic(err)
		}
		r.Paths = append(r.Paths, p)
	}
	return r
}

// Kinds returns the group/kind of every kind Find knows without a rule, in the form of a
// rule's left side (v1 Pod and List as "Pod" and "List").
func Kinds() []string {
	out := []string{"Pod", "List"}
	for _, gk := range []groupKind{{"", "PodTemplate"}, {"", "ReplicationController"}, {"apps", "Deployment"},
		{"apps", "ReplicaSet"}, {"apps", "StatefulSet"}, {"apps", "DaemonSet"}, {"batch", "Job"}, {"batch", "CronJob"}} {
		out = append(out, gkString(gk))
	}
	for _, r := range customKinds {
		out = append(out, gkString(groupKind{r.Group, r.Kind}))
	}
	return out
}

func gkString(gk groupKind) string {
	if gk.group == "" {
		return gk.kind
	}
	return gk.group + "/" + gk.kind
}

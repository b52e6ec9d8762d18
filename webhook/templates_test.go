package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// workloadOverlay pins the pool and records ctx.workload on the template.
const workloadOverlay = `
def overlay(pod, ctx):
    set_node_selector(pod, "cloud.example.com/pool", "a100")
    w = ctx.workload
    set_annotation(pod, "example.com/workload", "%s %s %s %s %s" % (w.api_version, w.kind, w.name, w.namespace, w.path))
`

const workloadConfig = `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
podTemplates:
- example.com/Trainer=spec.workers[*].template
rules:
- name: pool
  match:
    namespaces: [ml]
    kinds: [apps/Deployment, batch/CronJob, batch.volcano.sh/Job, example.com/Trainer]
    labelSelector: {matchLabels: {team: ml}}
  overlays: [pool.star]
`

// workloadRequest makes an AdmissionRequest to create the object in objYAML, of gvk and
// resource, in namespace ml.
func workloadRequest(t testing.TB, gvk metav1.GroupVersionKind, resource, objYAML string) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(objYAML))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	json.Unmarshal(raw, &meta)
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-" + meta.Metadata.Name),
		Kind:      gvk,
		Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource},
		Namespace: "ml",
		Name:      meta.Metadata.Name,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}
}

const deploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml, labels: {team: ml}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, resources: {}}]
`

const cronJobYAML = `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, labels: {team: ml}}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: train, image: trainer}]
`

const volcanoJobYAML = `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: mpi, namespace: ml, labels: {team: ml}}
spec:
  minAvailable: 3
  schedulerName: volcano
  futureField: {kept: true}
  tasks:
  - name: master
    replicas: 1
    template:
      spec:
        restartPolicy: OnFailure
        containers: [{name: master, image: mpi}]
  - name: worker
    replicas: 2
    template:
      metadata: {labels: {role: worker}}
      spec:
        restartPolicy: OnFailure
        containers: [{name: worker, image: mpi}]
`

func TestMutateWorkloads(t *testing.T) {
	applied := "pool/pool.star@sha256:" + hash([]byte(workloadOverlay))[:12]
	tests := []struct {
		name     string
		gvk      metav1.GroupVersionKind
		resource string
		yaml     string
		patch    string
	}{{
		"Deployment", metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", deploymentYAML,
		`[` +
			`{"op":"add","path":"/spec/template/metadata/annotations","value":{"example.com/workload":"apps/v1 Deployment web ml spec.template","starpod.dev/overlays":"` + applied + `"}},` +
			`{"op":"add","path":"/spec/template/spec/nodeSelector","value":{"cloud.example.com/pool":"a100"}}` +
			`]`,
	}, {
		"CronJob", metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, "cronjobs", cronJobYAML,
		`[` +
			`{"op":"add","path":"/spec/jobTemplate/spec/template/metadata","value":{"annotations":{"example.com/workload":"batch/v1 CronJob nightly ml spec.jobTemplate.spec.template","starpod.dev/overlays":"` + applied + `"}}},` +
			`{"op":"add","path":"/spec/jobTemplate/spec/template/spec/nodeSelector","value":{"cloud.example.com/pool":"a100"}}` +
			`]`,
	}, {
		"VolcanoJob", metav1.GroupVersionKind{Group: "batch.volcano.sh", Version: "v1alpha1", Kind: "Job"}, "jobs", volcanoJobYAML,
		`[` +
			`{"op":"add","path":"/spec/tasks/0/template/metadata","value":{"annotations":{"example.com/workload":"batch.volcano.sh/v1alpha1 Job mpi ml spec.tasks[0].template","starpod.dev/overlays":"` + applied + `"}}},` +
			`{"op":"add","path":"/spec/tasks/0/template/spec/nodeSelector","value":{"cloud.example.com/pool":"a100"}},` +
			`{"op":"add","path":"/spec/tasks/1/template/metadata/annotations","value":{"example.com/workload":"batch.volcano.sh/v1alpha1 Job mpi ml spec.tasks[1].template","starpod.dev/overlays":"` + applied + `"}},` +
			`{"op":"add","path":"/spec/tasks/1/template/spec/nodeSelector","value":{"cloud.example.com/pool":"a100"}}` +
			`]`,
	}, {
		"CustomResource", metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Trainer"}, "trainers", `
apiVersion: example.com/v1
kind: Trainer
metadata: {name: t, labels: {team: ml}}
spec:
  workers:
  - template:
      spec: {containers: [{name: w, image: w}]}
`,
		`[` +
			`{"op":"add","path":"/spec/workers/0/template/metadata","value":{"annotations":{"example.com/workload":"example.com/v1 Trainer t ml spec.workers[0].template","starpod.dev/overlays":"` + applied + `"}}},` +
			`{"op":"add","path":"/spec/workers/0/template/spec/nodeSelector","value":{"cloud.example.com/pool":"a100"}}` +
			`]`,
	}}
	f := newFixture(t, map[string]string{"config.yaml": workloadConfig, "pool.star": workloadOverlay}, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := workloadRequest(t, tt.gvk, tt.resource, tt.yaml)
			resp := f.review(req)
			if !resp.Allowed {
				t.Fatalf("not allowed: %v", resp.Result)
			}
			if string(resp.Patch) != tt.patch {
				t.Errorf("patch:\n got %s\nwant %s", resp.Patch, tt.patch)
			}
			if want := []string{"starpod rule pool: changed by pool.star"}; strings.Join(resp.Warnings, "|") != strings.Join(want, "|") {
				t.Errorf("warnings = %q, want %q", resp.Warnings, want)
			}
			// A reinvocation with the patched object changes nothing: an empty patch.
			_, raw := patched(t, req, resp)
			req2 := workloadRequest(t, tt.gvk, tt.resource, string(raw))
			resp2 := f.review(req2)
			if !resp2.Allowed || resp2.Patch != nil {
				t.Errorf("reinvocation: allowed %v, patch %s; want allowed with no patch", resp2.Allowed, resp2.Patch)
			}
		})
	}
}

// TestWorkloadNotMatched: a workload whose own labels do not match the selector (its
// template's do) is not mutated, nor is a kind the rule does not name.
func TestWorkloadNotMatched(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": workloadConfig, "pool.star": workloadOverlay}, nil)
	for _, req := range []*admissionv1.AdmissionRequest{
		workloadRequest(t, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments",
			strings.Replace(deploymentYAML, "labels: {team: ml}}", "labels: {}}", 1)+"      # the template's labels\n"),
		workloadRequest(t, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, "statefulsets",
			strings.Replace(deploymentYAML, "kind: Deployment", "kind: StatefulSet", 1)),
	} {
		resp := f.review(req)
		if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) > 0 {
			t.Errorf("%s: allowed %v, patch %s, warnings %q; want allowed, unchanged", req.Kind.Kind, resp.Allowed, resp.Patch, resp.Warnings)
		}
	}
}

// TestWorkloadUnchanged: overlays that change no template give an empty patch.
func TestWorkloadUnchanged(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": workloadConfig, "pool.star": "def overlay(pod, ctx):\n    pass\n"}, nil)
	req := workloadRequest(t, metav1.GroupVersionKind{Group: "batch.volcano.sh", Version: "v1alpha1", Kind: "Job"}, "jobs", volcanoJobYAML)
	resp := f.review(req)
	if !resp.Allowed || resp.Patch != nil || resp.PatchType != nil || len(resp.Warnings) > 0 {
		t.Errorf("allowed %v, patch %s, warnings %q; want allowed with no patch", resp.Allowed, resp.Patch, resp.Warnings)
	}
}

// TestWorkloadTemplateName: an overlay that names a template fails its rule, with the field
// path: the object is refused (onError: Fail), or admitted unchanged with a warning (Ignore).
func TestWorkloadTemplateName(t *testing.T) {
	named := "def overlay(pod, ctx):\n    pod[\"metadata\"][\"name\"] = \"named\"\n"
	f := newFixture(t, map[string]string{"config.yaml": workloadConfig, "pool.star": named}, nil)
	req := workloadRequest(t, metav1.GroupVersionKind{Group: "batch.volcano.sh", Version: "v1alpha1", Kind: "Job"}, "jobs", volcanoJobYAML)
	resp := f.review(req)
	if resp.Allowed || resp.Patch != nil {
		t.Fatalf("allowed %v, patch %s; want denied", resp.Allowed, resp.Patch)
	}
	want := `starpod rule pool: spec.tasks[0].template.metadata.name: Forbidden: a pod template has no name: got "named"`
	if resp.Result == nil || resp.Result.Code != 403 || resp.Result.Message != want {
		t.Errorf("result %+v, want 403 %q", resp.Result, want)
	}
}

func TestConfigWorkloadKinds(t *testing.T) {
	for _, tt := range []struct{ config, want string }{
		{"podTemplates: [example.com/Trainer]\n", `c.yaml:3:16: podTemplates[0]: got "example.com/Trainer", rule "example.com/Trainer": got no =, want GROUP/KIND=PATH`},
		{"rules:\n- name: a\n  overlays: [a.star]\n  match: {kinds: [batch/CronJobs]}\n", `(did you mean "batch/CronJob"?)`},
		{"rules:\n- name: a\n  overlays: [a.star]\n  match: {kinds: [example.com/Trainer]}\n", `c.yaml:6:19: rules[0].match.kinds[0]: got "example.com/Trainer"`},
	} {
		_, err := ParseConfig("c.yaml", []byte("apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\n"+tt.config))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config %q: got %v, want an error with %q", tt.config, err, tt.want)
		}
	}
	if _, err := ParseConfig("c.yaml", []byte(workloadConfig)); err != nil {
		t.Errorf("workloadConfig: %v", err)
	}
}

func TestWorkloadTemplateNameIgnored(t *testing.T) {
	named := "def overlay(pod, ctx):\n    pod[\"metadata\"][\"name\"] = \"named\"\n"
	config := strings.Replace(workloadConfig, "  overlays: [pool.star]\n", "  overlays: [pool.star]\n  onError: Ignore\n", 1)
	f := newFixture(t, map[string]string{"config.yaml": config, "pool.star": named}, nil)
	req := workloadRequest(t, metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", deploymentYAML)
	resp := f.review(req)
	if !resp.Allowed || resp.Patch != nil {
		t.Fatalf("allowed %v, patch %s; want allowed with no patch", resp.Allowed, resp.Patch)
	}
	want := []string{`starpod rule pool: spec.template.metadata.name: Forbidden: a pod template has no name: got "named" (onError: Ignore; the rule's changes were left out)`}
	if strings.Join(resp.Warnings, "|") != strings.Join(want, "|") {
		t.Errorf("warnings = %q, want %q", resp.Warnings, want)
	}
}

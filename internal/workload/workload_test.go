package workload

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/stream"
)

// parse returns the untyped data of one YAML document.
func parse(t *testing.T, text string) any {
	t.Helper()
	doc, err := stream.NewReader("in.yaml", strings.NewReader(text)).Next()
	if err != nil {
		t.Fatal(err)
	}
	return doc.Object
}

const container = `
        containers:
        - name: main
          image: busybox`

// where lists each template of o as "path kind/name workloadPath", and the image of its
// first container.
func where(o *Object) []string {
	var out []string
	for _, t := range o.Templates {
		s := "<root>"
		if t.Path != nil {
			s = t.Path.String()
		}
		if t.Workload != nil {
			s += " " + t.Workload.APIVersion + " " + t.Workload.Kind + "/" + t.Workload.Name + " " + t.Workload.Path
		} else {
			s += " pod/" + t.Pod.Name
		}
		if t.Pod.APIVersion != "v1" || t.Pod.Kind != "Pod" {
			s += " NOT A POD"
		}
		out = append(out, s)
	}
	return out
}

func TestFind(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		rules []string
		want  []string
	}{
		{"Pod", `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: main, image: busybox}]`, nil, []string{"<root> pod/p"}},
		{"PodTemplate", `
apiVersion: v1
kind: PodTemplate
metadata: {name: pt}
template:
  spec:
    containers: [{name: main, image: busybox}]`, nil, []string{"template v1 PodTemplate/pt template"}},
		{"ReplicationController", `
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox}]`, nil, []string{"spec.template v1 ReplicationController/rc spec.template"}},
		{"ReplicationController without template", `
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec: {replicas: 1}`, nil, nil},
		{"Deployment", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: busybox}]`, nil, []string{"spec.template apps/v1 Deployment/web spec.template"}},
		{"ReplicaSet", `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox}]`, nil, []string{"spec.template apps/v1 ReplicaSet/rs spec.template"}},
		{"StatefulSet", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox}]`, nil, []string{"spec.template apps/v1 StatefulSet/db spec.template"}},
		{"DaemonSet", `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox}]`, nil, []string{"spec.template apps/v1 DaemonSet/agent spec.template"}},
		{"Job", `
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox}]`, nil, []string{"spec.template batch/v1 Job/once spec.template"}},
		{"CronJob", `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: main, image: busybox}]`, nil, []string{"spec.jobTemplate.spec.template batch/v1 CronJob/nightly spec.jobTemplate.spec.template"}},
		{"CronJob of another version", `
apiVersion: batch/v1beta1
kind: CronJob
metadata: {name: nightly}
spec: {}`, nil, nil},
		{"Volcano Job", `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  minAvailable: 2
  tasks:
  - name: ps
    replicas: 1
    template:
      spec:
        containers: [{name: main, image: busybox}]
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{name: main, image: busybox}]`, nil, []string{
			"spec.tasks[0].template batch.volcano.sh/v1alpha1 Job/train spec.tasks[0].template",
			"spec.tasks[1].template batch.volcano.sh/v1alpha1 Job/train spec.tasks[1].template"}},
		{"JobSet", `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        template:
          spec:
            containers: [{name: main, image: busybox}]`, nil, []string{
			"spec.replicatedJobs[0].template.spec.template jobset.x-k8s.io/v1alpha2 JobSet/js spec.replicatedJobs[0].template.spec.template"}},
		{"PyTorchJob", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: pytorch, image: busybox}]
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, image: busybox}]`, nil, []string{
			"spec.pytorchReplicaSpecs[Master].template kubeflow.org/v1 PyTorchJob/pt spec.pytorchReplicaSpecs[Master].template",
			"spec.pytorchReplicaSpecs[Worker].template kubeflow.org/v1 PyTorchJob/pt spec.pytorchReplicaSpecs[Worker].template"}},
		{"TFJob", `
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf}
spec:
  tfReplicaSpecs:
    PS:
      template:
        spec:
          containers: [{name: tensorflow, image: busybox}]`, nil, []string{
			"spec.tfReplicaSpecs[PS].template kubeflow.org/v1 TFJob/tf spec.tfReplicaSpecs[PS].template"}},
		{"MPIJob", `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers: [{name: launcher, image: busybox}]`, nil, []string{
			"spec.mpiReplicaSpecs[Launcher].template kubeflow.org/v2beta1 MPIJob/mpi spec.mpiReplicaSpecs[Launcher].template"}},
		{"RayCluster", `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers: [{name: ray-head, image: busybox}]
  workerGroupSpecs:
  - groupName: small
    template:
      spec:
        containers: [{name: ray-worker, image: busybox}]`, nil, []string{
			"spec.headGroupSpec.template ray.io/v1 RayCluster/rc spec.headGroupSpec.template",
			"spec.workerGroupSpecs[0].template ray.io/v1 RayCluster/rc spec.workerGroupSpecs[0].template"}},
		{"RayJob", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj}
spec:
  entrypoint: python x.py
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: ray-head, image: busybox}]
    workerGroupSpecs:
    - groupName: a
      template:
        spec:
          containers: [{name: ray-worker, image: busybox}]`, nil, []string{
			"spec.rayClusterSpec.headGroupSpec.template ray.io/v1 RayJob/rj spec.rayClusterSpec.headGroupSpec.template",
			"spec.rayClusterSpec.workerGroupSpecs[0].template ray.io/v1 RayJob/rj spec.rayClusterSpec.workerGroupSpecs[0].template"}},
		{"LeaderWorkerSet", `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws}
spec:
  leaderWorkerTemplate:
    size: 4
    leaderTemplate:
      spec:
        containers: [{name: leader, image: busybox}]
    workerTemplate:
      spec:
        containers: [{name: worker, image: busybox}]`, nil, []string{
			"spec.leaderWorkerTemplate.leaderTemplate leaderworkerset.x-k8s.io/v1 LeaderWorkerSet/lws spec.leaderWorkerTemplate.leaderTemplate",
			"spec.leaderWorkerTemplate.workerTemplate leaderworkerset.x-k8s.io/v1 LeaderWorkerSet/lws spec.leaderWorkerTemplate.workerTemplate"}},
		{"List, recursively", `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec:
    containers: [{name: main, image: busybox}]
- apiVersion: v1
  kind: Service
  metadata: {name: svc}
- apiVersion: v1
  kind: List
  items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      template:
        spec:
          containers: [{name: main, image: busybox}]`, nil, []string{
			"items[0] pod/a",
			"items[2].items[0].spec.template apps/v1 Deployment/web spec.template"}},
		{"user rule", `
apiVersion: example.com/v1
kind: Trainer
metadata: {name: t}
spec:
  workers:
  - template:
      spec:
        containers: [{name: main, image: busybox}]
  - template:
      spec:
        containers: [{name: main, image: busybox}]`, []string{"example.com/Trainer=spec.workers[*].template"}, []string{
			"spec.workers[0].template example.com/v1 Trainer/t spec.workers[0].template",
			"spec.workers[1].template example.com/v1 Trainer/t spec.workers[1].template"}},
		{"user rule of a built-in kind replaces it", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  extra: {template: {spec: {containers: [{name: main, image: busybox}]}}}`, []string{"apps/Deployment=spec.extra.template"}, []string{
			"spec.extra.template apps/v1 Deployment/web spec.extra.template"}},
		{"Service", `
apiVersion: v1
kind: Service
metadata: {name: svc}
spec: {ports: [{port: 80}]}`, nil, nil},
		{"custom resource without a rule", `
apiVersion: example.com/v1
kind: Trainer
metadata: {name: t}
spec: {template: {whatever: 1}}`, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &Options{}
			for _, r := range tt.rules {
				rule, err := ParseRule(r)
				if err != nil {
					t.Fatal(err)
				}
				opts.Rules = append(opts.Rules, rule)
			}
			o, err := Find(parse(t, tt.doc), opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, where(o)); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
			// Every template is a pod with the template's container.
			for _, tmpl := range o.Templates {
				if len(tmpl.Pod.Spec.Containers) != 1 || tmpl.Pod.Spec.Containers[0].Image != "busybox" {
					t.Errorf("%v: got containers %v, want one of image busybox", tmpl.Path, tmpl.Pod.Spec.Containers)
				}
			}
		})
	}
}

// fieldErrors returns "type path" of each field error of err, an *Error.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v (%T), want an *Error", err, err)
	}
	var out []string
	for _, fe := range e.Fields {
		out = append(out, string(fe.Type)+" "+fe.Field)
	}
	return out
}

func TestFindErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"unknown field in a Deployment", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replica: 2
  template:
    spec:
      containers: [{name: main, image: busybox, imagePullPolicy: 3}]`, []string{
			string(field.ErrorTypeForbidden) + " spec.replica",
			string(field.ErrorTypeTypeInvalid) + " spec.template.spec.containers[0].imagePullPolicy"}},
		{"unknown field in a Volcano task template", `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  anythingElse: kept
  tasks:
  - name: a
    template:
      spec:
        containerz: []`, []string{string(field.ErrorTypeForbidden) + " spec.tasks[0].template.spec.containerz"}},
		{"tasks not a list", `
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  tasks: {a: 1}`, []string{string(field.ErrorTypeInvalid) + " spec.tasks"}},
		{"bad pod in a List", `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a, labelz: {}}`, []string{string(field.ErrorTypeForbidden) + " items[0].metadata.labelz"}},
		{"List item not an object", `
apiVersion: v1
kind: List
items: [1]`, []string{string(field.ErrorTypeInvalid) + " items[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Find(parse(t, tt.doc), nil)
			if err == nil {
				t.Fatal("got no error")
			}
			if diff := cmp.Diff(tt.want, fieldErrors(t, err)); diff != "" {
				t.Errorf("field errors (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: busybox, resources: {}}, {name: side, image: busybox}]`

func TestPut(t *testing.T) {
	o, err := Find(parse(t, deployment), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Put(0, o.Templates[0].Pod.DeepCopy()); err != nil || o.Changed() {
		t.Fatalf("Put of the same pod: got changed %v, %v; want unchanged", o.Changed(), err)
	}
	pod := o.Templates[0].Pod.DeepCopy()
	pod.Labels["gpu"] = "yes"
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: "Exists"}}
	if err := o.Put(0, pod); err != nil {
		t.Fatal(err)
	}
	if !o.Changed() {
		t.Fatal("got unchanged, want changed")
	}
	got, err := stream.MarshalYAML(o.Root)
	if err != nil {
		t.Fatal(err)
	}
	// The side container gets no resources: {} that its data did not hold; main keeps its own.
	want := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  template:
    metadata:
      labels:
        app: web
        gpu: "yes"
    spec:
      containers:
      - image: busybox
        name: main
        resources: {}
      - image: busybox
        name: side
      tolerations:
      - key: gpu
        operator: Exists
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
}

func TestPutTemplateRules(t *testing.T) {
	o, err := Find(parse(t, deployment), nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := o.Templates[0].Pod.DeepCopy()
	pod.Name, pod.Namespace = "x", "y"
	pod.Status.Phase = corev1.PodRunning
	err = o.Put(0, pod)
	want := []string{
		string(field.ErrorTypeForbidden) + " spec.template.metadata.name",
		string(field.ErrorTypeForbidden) + " spec.template.metadata.namespace",
		string(field.ErrorTypeForbidden) + " spec.template.status",
	}
	if diff := cmp.Diff(want, fieldErrors(t, err)); diff != "" {
		t.Errorf("field errors (-want +got):\n%s", diff)
	}
	if o.Changed() {
		t.Error("a failed Put changed the document")
	}
}

func TestPutPodInList(t *testing.T) {
	o, err := Find(parse(t, `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
  spec:
    containers: [{name: main, image: busybox}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := o.Templates[0].Pod.DeepCopy()
	pod.Spec.NodeName = "n1"
	if err := o.Put(0, pod); err != nil {
		t.Fatal(err)
	}
	got, _ := stream.MarshalYAML(o.Root)
	want := `apiVersion: v1
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: a
  spec:
    containers:
    - image: busybox
      name: main
    nodeName: n1
kind: List
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("document (-want +got):\n%s", diff)
	}
}

func TestParseRule(t *testing.T) {
	for _, bad := range []string{"Trainer", "example.com/=spec.t", "a/B=", "a/B=spec..t", "a/B=spec.t[0]", "a/B=spec.t]"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q): got no error", bad)
		}
	}
	r, err := ParseRule("Trainer=spec.workers[*].template")
	if err != nil || r.Group != "" || r.Kind != "Trainer" || r.Paths[0].String() != "spec.workers[*].template" {
		t.Errorf("got %+v, %v", r, err)
	}
}

// TestTypedPaths checks that the path of every template of typedKinds is parsed.
func TestTypedPaths(t *testing.T) {
	for gk, tk := range typedKinds {
		for _, tt := range tk.templates(tk.new()) {
			if _, ok := typedPaths[tt.path]; !ok {
				t.Errorf("%v: path %s not in typedPaths", gk, tt.path)
			}
		}
	}
}

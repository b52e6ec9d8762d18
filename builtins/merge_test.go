package builtins_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/builtins"
	"github.com/starpod/starpod/internal/convert"
)

// trainingPod returns the shared training pod fixture as Starlark values, as an overlay sees it.
func trainingPod(t testing.TB) starlark.Value {
	t.Helper()
	data, err := os.ReadFile("../testdata/pods/training.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		t.Fatal(err)
	}
	v, err := convert.ToStarlark(&pod)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// anyOrder makes cmp.Diff ignore the order of list items.
var anyOrder = cmpopts.SortSlices(func(a, b any) bool { return fmt.Sprint(a) < fmt.Sprint(b) })

// call calls the predeclared builtin name with args.
func call(t testing.TB, name string, args ...starlark.Value) starlark.Value {
	t.Helper()
	v, err := starlark.Call(new(starlark.Thread), builtins.Predeclared()[name], args, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestMergeAgreesWithStrategicMerge checks that, on lists that have a Kubernetes patch merge
// key, merge(pod, patch) gives what kubectl's strategic merge patch gives, since merge reads
// its merge keys from the same schema. Only the order of new list items may differ: merge
// appends them, strategic merge interleaves them in the patch's order.
func TestMergeAgreesWithStrategicMerge(t *testing.T) {
	for _, test := range []struct{ name, patch string }{
		{"labels", `{"metadata": {"labels": {"team": "research", "app.kubernetes.io/component": None, "new": "x"}}}`},
		{"same container", `{"spec": {"containers": [{"name": "trainer", "image": "llama-ft:2.5",
			"env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "LOGLEVEL", "value": "DEBUG"}],
			"ports": [{"containerPort": 9090, "name": "prom"}, {"containerPort": 6006, "name": "tensorboard"}],
			"volumeMounts": [{"name": "scratch", "mountPath": "/cache"}, {"name": "tmp", "mountPath": "/tmp"}],
			"resources": {"limits": {"memory": "1100Gi"}, "requests": {"ephemeral-storage": None}}}]}}`},
		{"sidecar and volumes", `{"spec": {"containers": [{"name": "logs", "image": "fluent-bit:3"}],
			"initContainers": [{"name": "fetch", "image": "busybox"}],
			"volumes": [{"name": "dshm", "emptyDir": {"sizeLimit": "128Gi"}}, {"name": "tmp", "emptyDir": {}}],
			"imagePullSecrets": [{"name": "registry"}]}}`},
		{"env valueFrom", `{"spec": {"containers": [{"name": "trainer", "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}}]}]}}`},
		{"scalars", `{"spec": {"schedulerName": "default-scheduler", "priorityClassName": None, "terminationGracePeriodSeconds": 30}}`},
	} {
		t.Run(test.name, func(t *testing.T) {
			patch, err := starlark.Eval(new(starlark.Thread), "patch", test.patch, nil)
			if err != nil {
				t.Fatal(err)
			}
			pod := trainingPod(t)
			merged, err := convert.ToGo(call(t, "merge", pod, patch), nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := convert.ToGo(call(t, "strategic_merge", pod, patch), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, merged, anyOrder); diff != "" {
				t.Errorf("merge differs from strategic_merge (-strategic_merge +merge):\n%s", diff)
			}
			if eq, err := starlark.Equal(pod, trainingPod(t)); err != nil || !eq {
				t.Errorf("merge or strategic_merge changed the pod")
			}
		})
	}
}

// TestMergeIdempotent checks the property that overlays rely on when they run again: for any
// two pods a and b, merging b into merge(a, b) gives merge(a, b). The pods are those of every
// example (input and expected output) and the shared training pod, each also as a plain dict
// (not a pod, so every list merges by "name"), and each also with every list doubled.
func TestMergeIdempotent(t *testing.T) {
	files, err := filepath.Glob("../examples/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../testdata/pods/training.yaml")
	var values []starlark.Value
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var pod corev1.Pod
		if yaml.Unmarshal(data, &pod) != nil || pod.Kind != "Pod" {
			continue // an app, a job or an env
		}
		v, err := convert.ToStarlark(&pod)
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v, call(t, "merge", v, v, starlark.String("append")), starlark.NewDict(0))
		plain := starlark.NewDict(1)
		plain.SetKey(starlark.String("doc"), v)
		values = append(values, plain)
	}
	if len(values) < 20 {
		t.Fatalf("found %d pods, want at least 20", len(values))
	}
	for i, a := range values {
		for j, b := range values {
			once := call(t, "merge", a, b)
			twice := call(t, "merge", once, b)
			if eq, err := starlark.EqualDepth(once, twice, 100); err != nil || !eq {
				t.Fatalf("values %d and %d: merging twice differs from merging once:\nonce:  %s\ntwice: %s", i, j, once, twice)
			}
		}
	}
}

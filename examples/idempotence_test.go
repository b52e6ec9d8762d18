package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/exampletest"
	"github.com/starpod/starpod/scheduler"
)

// TestIdempotent checks that every overlay of the examples is idempotent on every pod of the
// examples: applied to the pod it returned, with the same ctx, it returns that pod again.
// Overlays run again (in chains, on admission reinvocation, on re-renders), and a second run
// must not grow the pod. The overlays are those of the pod examples and of the app examples
// (app.yaml's and its roles'); the pods are every pod example's input and expected output and
// the shared training pod; the ctxs are each pod example's, replicas 0 and 2 of 4, and none
// (outside a scheduler). A first apply may fail (an overlay meant for other pods); each
// overlay must succeed on some pod.
func TestIdempotent(t *testing.T) {
	examples, err := exampletest.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	type overlay struct {
		name string
		o    *engine.Overlay
	}
	var overlays []overlay
	pods := map[string]*corev1.Pod{"testdata/pods/training.yaml": readPod(t, "../testdata/pods/training.yaml")}
	envs := map[string]*engine.Env{
		"no ctx":      nil,
		"replica 0/4": {AppID: "demo", Role: "trainer", ReplicaID: 0, NumReplicas: 4, Scheduler: "kubernetes"},
		"replica 2/4": {AppID: "demo", Role: "trainer", ReplicaID: 2, NumReplicas: 4, Scheduler: "kubernetes", Args: map[string]string{"team": "research"}},
	}
	for _, e := range examples {
		o, err := e.Compile(context.Background(), engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		overlays = append(overlays, overlay{e.Script, o})
		pods[filepath.Join(e.Dir, "pod.yaml")] = e.Pod
		pods[e.Expected] = readPod(t, e.Expected)
		envs[e.Name+"/env.yaml"] = e.Env
	}
	apps, err := filepath.Glob("*/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range apps {
		app, err := scheduler.LoadApp(file)
		if err != nil {
			t.Fatal(err)
		}
		scripts := slices.Clone(app.Overlays)
		for _, r := range app.Roles {
			scripts = append(scripts, r.Overlays...)
		}
		for _, script := range scripts {
			path := filepath.Join(app.Dir, script)
			if slices.ContainsFunc(overlays, func(o overlay) bool { return o.name == path }) {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			o, err := engine.Compile(context.Background(), path, src, &engine.Options{Loader: engine.DirLoader(filepath.Dir(path))})
			if err != nil {
				t.Fatal(err)
			}
			overlays = append(overlays, overlay{path, o})
		}
	}
	if len(overlays) < len(examples)+2 {
		t.Fatalf("found %d overlays, want the %d of the pod examples and those of the app examples", len(overlays), len(examples))
	}

	for _, o := range overlays {
		t.Run(o.name, func(t *testing.T) {
			applied := 0
			for podName, pod := range pods {
				for envName, env := range envs {
					once, err := o.o.Apply(context.Background(), pod, env)
					if err != nil {
						continue
					}
					applied++
					twice, err := o.o.Apply(context.Background(), once, env)
					if err != nil {
						t.Errorf("%s, %s: the second apply failed: %v", podName, envName, err)
						continue
					}
					if diff := cmp.Diff(toYAML(t, once), toYAML(t, twice)); diff != "" {
						t.Errorf("%s, %s: applying the overlay twice differs from applying it once (-once +twice):\n%s", podName, envName, diff)
					}
				}
			}
			if applied == 0 {
				t.Errorf("the overlay failed on every pod")
			}
		})
	}
}

// readPod reads a pod from a YAML file, strictly.
func readPod(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pod := new(corev1.Pod)
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pod
}

func toYAML(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	data, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

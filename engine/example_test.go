package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing/fstest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/starpod/starpod/engine"
)

// Compile an overlay once, then apply it to a pod.
func Example() {
	src := `
def overlay(pod, ctx):
    pod["metadata"]["labels"] = {"replica": str(ctx.replica_id)}
    pod["spec"]["nodeSelector"] = {"pool": "gpu"}
`
	overlay, err := engine.Compile(context.Background(), "label.star", []byte(src), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trainer-3"}}
	got, err := overlay.Apply(context.Background(), pod, &engine.Env{ReplicaID: 3, NumReplicas: 4, Scheduler: "kubernetes"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Labels, got.Spec.NodeSelector)
	// Output:
	// map[replica:3] map[pool:gpu]
}

// Errors name the overlay, the script position and the pod field path.
func ExampleError() {
	overlay, err := engine.Compile(context.Background(), "typo.star", []byte(`
def overlay(pod):
    pod["spec"]["tolerration"] = []
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = overlay.Apply(context.Background(), &corev1.Pod{}, nil)
	fmt.Println(err)
	var e *engine.Error
	if errors.As(err, &e) {
		fmt.Println(e.Overlay, e.Fields[0].Field)
	}
	// Output:
	// typo.star:3:16: spec.tolerration: unknown field; did you mean "tolerations"?
	// typo.star spec.tolerration
}

// A limit that was hit is a *LimitError.
func ExampleLimitError() {
	overlay, _ := engine.Compile(context.Background(), "loop.star", []byte(`
def overlay(pod):
    for i in range(1 << 40):
        pass
`), &engine.Options{MaxSteps: 1000})
	_, err := overlay.Apply(context.Background(), &corev1.Pod{}, nil)
	var lim *engine.LimitError
	if errors.As(err, &lim) {
		fmt.Println(lim.Limit, lim.Value)
	}
	fmt.Println(err)
	// Output:
	// steps 1000
	// loop.star:3:5: exceeded the limit of 1000 execution steps
}

// A Chain applies overlays in order.
func ExampleChain() {
	a, _ := engine.Compile(context.Background(), "a.star", []byte("def overlay(pod):\n    pod[\"metadata\"][\"name\"] += \"-a\"\n"), nil)
	b, _ := engine.Compile(context.Background(), "b.star", []byte("def overlay(pod):\n    pod[\"metadata\"][\"name\"] += \"-b\"\n"), nil)
	got, err := engine.Chain{a, b}.Apply(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Name)
	// Output:
	// p-a-b
}

// Explain says which fields an overlay changed, and which line wrote each.
func ExampleOverlay_Explain() {
	overlay, err := engine.Compile(context.Background(), "gpu.star", []byte(`
def overlay(pod):
    pod["spec"]["nodeSelector"] = {"pool": "gpu"}
    pod["metadata"]["labels"]["team"] = "ml"
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"team": "web"}}}
	_, changes, err := overlay.Explain(context.Background(), pod, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range changes {
		fmt.Println(c)
	}
	// Output:
	// gpu.star:4:30: metadata.labels[team]: "web" -> "ml"
	// gpu.star:3:16: spec.nodeSelector[pool]: (none) -> "gpu"
}

// ApplyEach applies a chain to many pods, each with its own ctx, and gives each pod its own
// result or error.
func ExampleChain_ApplyEach() {
	overlay, err := engine.Compile(context.Background(), "rank.star", []byte(`
def overlay(pod, ctx):
    if ctx.replica_id == 2:
        fail("no replica 2")
    pod["metadata"]["labels"] = {"rank": str(ctx.replica_id)}
`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var pods []*corev1.Pod
	var envs []*engine.Env
	for i := range 3 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("worker-", i)}})
		envs = append(envs, &engine.Env{Role: "worker", ReplicaID: i, NumReplicas: 3, Scheduler: "kubernetes"})
	}
	out, errs := engine.Chain{overlay}.ApplyEach(context.Background(), pods, envs)
	for i := range pods {
		if errs[i] != nil {
			fmt.Println(pods[i].Name, errs[i])
			continue
		}
		fmt.Println(out[i].Name, out[i].Labels)
	}
	// Output:
	// worker-0 map[rank:0]
	// worker-1 map[rank:1]
	// worker-2 rank.star:4:13: fail: no replica 2
}

// Overlays load modules through a Loader.
func ExampleFSLoader() {
	modules := fstest.MapFS{"lib/gpu.star": {Data: []byte("def gpus(n):\n    return {\"nvidia.com/gpu\": str(n)}\n")}}
	overlay, err := engine.Compile(context.Background(), "overlay.star", []byte(`
load("lib/gpu.star", "gpus")

def overlay(pod):
    pod["spec"]["containers"][0]["resources"] = {"limits": gpus(8)}
`), &engine.Options{Loader: engine.FSLoader(modules)})
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	got, err := overlay.Apply(context.Background(), pod, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", resource.DecimalSI))
	// Output:
	// 8
}

// With WorkerProcess isolation, overlays compile and apply in worker processes that limit
// their own memory: a script that takes too much gets a *LimitError, and the program goes on.
// The workers run this program again, which must call ServeWorkerIfRequested first thing in
// main (this package's tests do so in TestMain).
func ExampleServeWorkerIfRequested() {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := &engine.Options{Isolation: engine.WorkerProcess, Workers: pool, MaxMemory: 128 << 20, Timeout: time.Minute}
	bomb, err := engine.Compile(context.Background(), "bomb.star", []byte(`
def overlay(pod):
    s = "ab" * 1024
    for i in range(40):
        s += s
`), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = bomb.Apply(context.Background(), &corev1.Pod{}, nil)
	var lim *engine.LimitError
	if errors.As(err, &lim) {
		fmt.Println(lim.Limit, lim.Value)
	}
	// Output:
	// memory 128Mi
}

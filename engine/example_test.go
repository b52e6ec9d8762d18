package engine_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
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

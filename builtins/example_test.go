package builtins_test

import (
	"fmt"
	"log"

	"go.starlark.net/starlark"

	"github.com/starpod/starpod/builtins"
)

// An overlay's helpers come from Predeclared.
func ExamplePredeclared() {
	const src = `
def overlay(pod):
    for c in containers(pod):
        set_env(c, "NCCL_DEBUG", "INFO")
    add_toleration(pod, "nvidia.com/gpu", effect = "NoSchedule")
    return merge(pod, {"spec": {"containers": [{"name": "trainer", "image": "trainer:v2"}]}})

pod = overlay({"spec": {"containers": [{"name": "trainer", "image": "trainer:v1"}]}})
print(get(pod, "spec.containers[name=trainer].image"))
print(len(pod["spec"]["containers"]), pod["spec"]["tolerations"])
print(quantity.mul("8Gi", 2))
`
	thread := &starlark.Thread{Print: func(_ *starlark.Thread, msg string) { fmt.Println(msg) }}
	if _, err := starlark.ExecFile(thread, "overlay.star", src, builtins.Predeclared()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// trainer:v2
	// 1 [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
	// 16Gi
}

// Docs describes every builtin, for help texts.
func ExampleDocs() {
	for _, d := range builtins.Docs() {
		if d.Name == "get" {
			fmt.Printf("%s\n  %s\n", d.Signature(), d.Summary)
		}
	}
	// Output:
	// get(value, path, default=None)
	//   Returns the value at path, or default if it is missing.
}

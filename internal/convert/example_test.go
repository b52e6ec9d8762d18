package convert_test

import (
	"fmt"
	"log"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/convert"
)

func ExampleToStarlark() {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Labels: map[string]string{"team": "ml", "app": "llama"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "trainer:1.0",
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
				},
				Ports: []corev1.ContainerPort{{ContainerPort: 29500}},
			}},
		},
	}
	x, err := convert.ToStarlark(pod)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(x)
	// Output:
	// {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "trainer", "labels": {"app": "llama", "team": "ml"}}, "spec": {"containers": [{"name": "main", "image": "trainer:1.0", "ports": [{"containerPort": 29500}], "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}, "status": {}}
}

func ExampleDecode() {
	// A pod as a Starlark overlay might return it, with two mistakes.
	const src = `pod = {
    "metadata": {"name": "trainer"},
    "spec": {
        "containers": [{"name": "main", "ports": [{"containerPort": "29500"}]}],
        "tolerration": [],
    },
}`
	globals, err := starlark.ExecFileOptions(&syntax.FileOptions{}, &starlark.Thread{}, "overlay.star", src, nil)
	if err != nil {
		log.Fatal(err)
	}

	var pod corev1.Pod
	errs, err := convert.Decode(globals["pod"], &pod, field.NewPath("pod"), nil)
	if err != nil {
		log.Fatal(err) // a *convert.SizeError
	}
	for _, e := range errs {
		fmt.Println(e)
	}
	fmt.Println(pod.Name)
	// Output:
	// pod.spec.containers[0].ports[0].containerPort: Invalid value: got string, want int
	// pod.spec.tolerration: Forbidden: unknown field; did you mean "tolerations"?
	// trainer
}

func ExampleToGo() {
	x := starlark.NewList([]starlark.Value{starlark.MakeInt(1), starlark.String("a"), starlark.None})
	v, err := convert.ToGo(x, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%#v\n", v)
	// Output:
	// []interface {}{1, "a", interface {}(nil)}
}

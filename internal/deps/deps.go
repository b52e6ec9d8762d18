// Package deps pins the module's dependencies while the packages that use them are written.
// It is removed once every dependency has a real importer.
package deps

import (
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/spf13/cobra"
	_ "go.starlark.net/lib/json"
	_ "go.starlark.net/lib/math"
	_ "go.starlark.net/starlark"
	_ "go.starlark.net/starlarkstruct"
	_ "go.starlark.net/starlarktest"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/api/resource"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "sigs.k8s.io/yaml"
	_ "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	_ "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	_ "volcano.sh/apis/pkg/client/clientset/versioned"
)

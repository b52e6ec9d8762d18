package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: {server: "https://127.0.0.1:6443"}
- name: b
  cluster: {server: "https://127.0.0.1:7443"}
users:
- name: u
  user: {token: t}
contexts:
- name: with-ns
  context: {cluster: a, user: u, namespace: ml}
- name: without-ns
  context: {cluster: b, user: u}
current-context: with-ns
`

// writeKubeconfig writes the kubeconfig to a temporary file, points $KUBECONFIG and $HOME
// away from the user's own, and returns the file's name.
func writeKubeconfig(t *testing.T) string {
	dir := t.TempDir()
	file := filepath.Join(dir, "config")
	if err := os.WriteFile(file, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", dir)
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // never in-cluster
	return file
}

func TestConnectNamespace(t *testing.T) {
	file := writeKubeconfig(t)
	for _, test := range []struct {
		opts          Options
		env           string // $KUBECONFIG
		wantNS, wantC string
	}{
		{Options{Kubeconfig: file}, "", "ml", `"with-ns" (https://127.0.0.1:6443)`},
		{Options{Kubeconfig: file, Namespace: "team"}, "", "team", `"with-ns" (https://127.0.0.1:6443)`},
		{Options{Kubeconfig: file, Context: "without-ns"}, "", "default", `"without-ns" (https://127.0.0.1:7443)`},
		{Options{Context: "without-ns", Namespace: "x"}, file, "x", `"without-ns" (https://127.0.0.1:7443)`},
		{Options{}, file, "ml", `"with-ns" (https://127.0.0.1:6443)`},
	} {
		t.Setenv("KUBECONFIG", test.env)
		c, err := Connect(test.opts)
		if err != nil {
			t.Errorf("Connect(%+v): %v", test.opts, err)
			continue
		}
		if c.Namespace() != test.wantNS || c.Name() != test.wantC {
			t.Errorf("Connect(%+v): got namespace %q, cluster %s; want %q, %s", test.opts, c.Namespace(), c.Name(), test.wantNS, test.wantC)
		}
		if h := c.Resolve(Handle{AppID: "a"}); h.Namespace != test.wantNS {
			t.Errorf("Resolve of a bare id: got namespace %q, want %q", h.Namespace, test.wantNS)
		}
		if h := c.Resolve(Handle{Namespace: "other", AppID: "a"}); h.Namespace != "other" {
			t.Errorf("Resolve of a full handle: got namespace %q, want other", h.Namespace)
		}
	}
}

func TestConnectErrors(t *testing.T) {
	file := writeKubeconfig(t)
	for _, test := range []struct {
		opts Options
		want string
	}{
		{Options{}, ErrNoConfig.Error()},
		{Options{Kubeconfig: filepath.Join(t.TempDir(), "missing")}, "kubeconfig: stat "},
		{Options{Kubeconfig: file, Context: "nope"}, `kubeconfig: context "nope" does not exist`},
	} {
		_, err := Connect(test.opts)
		if err == nil || !strings.HasPrefix(err.Error(), test.want) {
			t.Errorf("Connect(%+v): got error %v, want prefix %q", test.opts, err, test.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	gk := schema.GroupKind{Group: "batch.volcano.sh", Kind: "Job"}
	invalid := apierrors.NewInvalid(gk, "app", field.ErrorList{
		field.Required(field.NewPath("spec", "tasks").Index(0).Child("template", "spec", "containers").Index(0).Child("image"), ""),
		field.Invalid(field.NewPath("spec", "tasks").Index(1).Child("name"), "A", "must be lower case"),
	})
	err := error(&Error{Cluster: `"kind" (https://127.0.0.1:6443)`, Namespace: "ml", Op: "create", Object: `job "app"`, Err: invalid})
	want := `cluster "kind" (https://127.0.0.1:6443), namespace "ml": create job "app": ` + invalid.Error() + `
	spec.tasks[0].template.spec.containers[0].image: Required value
	spec.tasks[1].name: Invalid value: "A": must be lower case`
	if got := err.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !apierrors.IsInvalid(err) {
		t.Errorf("IsInvalid(%v) = false, want true through Unwrap", err)
	}

	one := apierrors.NewInvalid(gk, "app", field.ErrorList{field.Required(field.NewPath("spec", "queue"), "")})
	err = &Error{Cluster: "c", Namespace: "ml", Op: "create", Object: `job "app"`, Err: one}
	want = `cluster c, namespace "ml": create job "app": Job.batch.volcano.sh "app" is invalid: spec.queue: Required value`
	if got := err.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, "app")
	err = &Error{Cluster: "in-cluster (https://10.0.0.1:443)", Op: "get", Object: `job "app"`, Err: notFound}
	want = `cluster in-cluster (https://10.0.0.1:443): get job "app": jobs.batch.volcano.sh "app" not found`
	if got := err.Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if Causes(errors.New("plain")) != nil || Causes(notFound) != nil {
		t.Errorf("Causes of an error without causes is not nil")
	}
}

func TestAlreadyExists(t *testing.T) {
	api := apierrors.NewAlreadyExists(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, "app")
	err := error(&Error{Cluster: "c", Namespace: "ml", Op: "create", Object: `job "app"`,
		Err: &existsError{AlreadyExistsError{Handle{"ml", "app", ""}}, api}})
	var exists *AlreadyExistsError
	if !errors.As(err, &exists) || exists.Handle != (Handle{"ml", "app", ""}) {
		t.Errorf("errors.As(%v, *AlreadyExistsError) failed", err)
	}
	if !apierrors.IsAlreadyExists(err) {
		t.Errorf("IsAlreadyExists(%v) = false", err)
	}
	if want := `cluster c, namespace "ml": create job "app": app kubernetes://ml/app already exists`; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}

func TestAbortCommandName(t *testing.T) {
	if got := abortCommandName("app"); got != "app-abortjob" {
		t.Errorf("abortCommandName(app) = %q", got)
	}
	long := strings.Repeat("a", 250)
	if got := abortCommandName(long); len(got) != 253 || !strings.HasSuffix(got, "-abortjob") {
		t.Errorf("abortCommandName(250 a's) = %q (%d)", got, len(got))
	}
}

package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/starpod/starpod/scheduler"
)

func mustParse(t *testing.T, spec string) *scheduler.App {
	t.Helper()
	app, err := scheduler.ParseApp("app.yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	return app
}

func TestAppFromJob(t *testing.T) {
	app := mustParse(t, "name: x\nroles:"+goodRole+"  env: {B: b, A: a}\n  num_replicas: 2\n")
	job, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := scheduler.AppFromJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(app, got, cmpopts.IgnoreUnexported(scheduler.App{}), cmpopts.IgnoreFields(scheduler.App{}, "Dir", "File")); diff != "" {
		t.Errorf("app mismatch (-want +got):\n%s", diff)
	}
	delete(job.Annotations, scheduler.AnnotationAppSpec)
	if _, err := scheduler.AppFromJob(job); err == nil {
		t.Error("got no error for a job without the annotation")
	}
}

func TestBuildBadConfig(t *testing.T) {
	app := mustParse(t, "name: x\nroles:"+goodRole)
	_, err := scheduler.Build(context.Background(), app, scheduler.Config{ReservedMemMB: -1}, scheduler.BuildOptions{AppID: "Bad"})
	var be *scheduler.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a *BuildError", err)
	}
	want := `cfg namespace: required
cfg queue: required
cfg scheduler_name: required
cfg reserved_memmb: got -1, want >= 0
app id "Bad": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error mismatch (-want +got):\n%s", diff)
	}
}

func TestBuildDefaults(t *testing.T) {
	// No --app-id: the normalised name and a random suffix.
	app := mustParse(t, "name: My_App\nroles:"+goodRole)
	job, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(job.Name, "my-app-") || len(job.Name) != len("my-app-")+8 {
		t.Errorf("got job name %q, want my-app- and 8 characters", job.Name)
	}
	if got := job.Spec.Tasks[0].Template.Labels[scheduler.LabelInstance]; got != job.Name {
		t.Errorf("got instance label %q, want %q", got, job.Name)
	}
}

func TestMarshalFormat(t *testing.T) {
	app := mustParse(t, "name: x\nroles:"+goodRole)
	job, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.Marshal(job, "xml"); err == nil || err.Error() != `output format "xml": want yaml or json` {
		t.Errorf("got %v", err)
	}
	out, err := scheduler.Marshal(job, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, noise := range []string{"null", "status:", "creationTimestamp", "{}"} {
		if strings.Contains(string(out), noise) {
			t.Errorf("output contains %q:\n%s", noise, out)
		}
	}
}

func TestBuildValidatesApp(t *testing.T) {
	// An App made in Go is validated like a loaded one.
	app := &scheduler.App{Name: "x", File: "made-in-go"}
	_, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "x"})
	if err == nil || err.Error() != "made-in-go: roles: required: an app needs at least one role" {
		t.Errorf("got %v", err)
	}
}

func TestBuildSpecTooBig(t *testing.T) {
	app := mustParse(t, "name: x\nroles:"+goodRole)
	app.Roles[0].Args = []string{strings.Repeat("x", 200<<10)}
	_, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "x"})
	if err == nil || !strings.Contains(err.Error(), "want at most 131072") {
		t.Errorf("got %v", err)
	}
}

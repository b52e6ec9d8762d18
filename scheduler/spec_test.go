package scheduler_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/scheduler"
)

const goodRole = `
- name: trainer
  image: example/trainer
  entrypoint: train
  resource: {cpu: 1, mem_mb: 1000}
`

// problem is what a test expects of one FieldError: its type, path and position.
type problem struct {
	Type      field.ErrorType
	Field     string
	Line, Col int
}

func TestParseAppErrors(t *testing.T) {
	for _, test := range []struct {
		name, spec string
		want       []problem
	}{
		{"empty", ``, []problem{{field.ErrorTypeRequired, "<nil>", 0, 0}}},
		{"not a mapping", `[1]`, []problem{{field.ErrorTypeTypeInvalid, "<nil>", 1, 1}}},
		{"syntax", "name: [a\nroles: x\n", []problem{{field.ErrorTypeInvalid, "<nil>", 1, 1}}},
		{"name too long for a label", `
name: ` + strings.Repeat("a", 64) + `
roles:
- name: trainer
  image: example/trainer
  entrypoint: train
  resource: {cpu: 1, mem_mb: 1000}
`, []problem{{field.ErrorTypeInvalid, "name", 2, 7}}},
		{"no name, no roles", `overlays: []`, []problem{
			{field.ErrorTypeRequired, "name", 1, 1},
			{field.ErrorTypeRequired, "roles", 1, 1},
		}},
		{"unknown keys everywhere", `
name: x
overlay: [a.star]
roles:
- name: trainer
  image: example/trainer
  entrypoint: train
  replicas: 2
  resource: {cpu: 1, mem_mb: 1000, memMB: 3}
  mounts: [{type: bind, src: /a, dst: /b, readonly: true}]
`, []problem{
			{field.ErrorTypeForbidden, "overlay", 3, 1},
			{field.ErrorTypeForbidden, "roles[0].replicas", 8, 3},
			{field.ErrorTypeForbidden, "roles[0].resource.memMB", 9, 36},
			{field.ErrorTypeForbidden, "roles[0].mounts[0].readonly", 10, 43},
		}},
		{"wrong types", `
name: 3
roles:
- name: trainer
  image: example/trainer
  entrypoint: train
  args: x
  env: {N: 4}
  num_replicas: two
  resource: {cpu: many, mem_mb: 1.5}
  port_map: [1]
`, []problem{
			{field.ErrorTypeTypeInvalid, "name", 2, 7},
			{field.ErrorTypeTypeInvalid, "roles[0].args", 7, 9},
			{field.ErrorTypeTypeInvalid, "roles[0].env[N]", 8, 12},
			{field.ErrorTypeTypeInvalid, "roles[0].num_replicas", 9, 17},
			{field.ErrorTypeTypeInvalid, "roles[0].resource.cpu", 10, 19},
			{field.ErrorTypeTypeInvalid, "roles[0].resource.mem_mb", 10, 33},
			{field.ErrorTypeTypeInvalid, "roles[0].port_map", 11, 13},
		}},
		{"duplicate keys", `
name: x
name: y
roles:` + goodRole + `  env: {A: "1", A: "2"}
`, []problem{
			{field.ErrorTypeDuplicate, "name", 3, 1},
			{field.ErrorTypeDuplicate, "roles[0].env[A]", 9, 17},
		}},
		{"bad values", `
name: x
roles:
- name: Trainer_1
  image: ""
  entrypoint: train
  num_replicas: 1
  min_replicas: 2
  max_retries: -1
  retry_policy: ROLE
  resource: {cpu: 0, gpu: -1, mem_mb: 0, devices: {efa: 0}, capabilities: {zone: a}}
  port_map: {RDZV_PORT: 70000}
  env: {1X: a, POD_IP: "[FIELD_PATH]"}
`, []problem{
			{field.ErrorTypeInvalid, "roles[0].name", 4, 9},
			{field.ErrorTypeRequired, "roles[0].image", 5, 10},
			{field.ErrorTypeInvalid, "roles[0].min_replicas", 8, 17},
			{field.ErrorTypeInvalid, "roles[0].max_retries", 9, 16},
			{field.ErrorTypeInvalid, "roles[0].retry_policy", 10, 17},
			{field.ErrorTypeInvalid, "roles[0].resource.cpu", 11, 19},
			{field.ErrorTypeInvalid, "roles[0].resource.gpu", 11, 27},
			{field.ErrorTypeInvalid, "roles[0].resource.mem_mb", 11, 39},
			{field.ErrorTypeInvalid, "roles[0].resource.devices[efa]", 11, 57},
			{field.ErrorTypeInvalid, "roles[0].resource.devices[efa]", 11, 57},
			{field.ErrorTypeNotSupported, "roles[0].resource.capabilities[zone]", 11, 82},
			{field.ErrorTypeInvalid, "roles[0].port_map[RDZV_PORT]", 12, 25},
			{field.ErrorTypeInvalid, "roles[0].port_map[RDZV_PORT]", 12, 25},
			{field.ErrorTypeInvalid, "roles[0].port_map[RDZV_PORT]", 12, 25},
			{field.ErrorTypeInvalid, "roles[0].env[1X]", 13, 13},
			{field.ErrorTypeInvalid, "roles[0].env[POD_IP]", 13, 24},
		}},
		{"retry policy", `
name: x
roles:` + goodRole + `  retry_policy: replica
  num_replicas: 0
  min_replicas: 1
`, []problem{
			{field.ErrorTypeNotSupported, "roles[0].retry_policy", 8, 17},
			{field.ErrorTypeInvalid, "roles[0].num_replicas", 9, 17},
		}},
		{"too many replicas", `
name: x
roles:` + goodRole + `  num_replicas: 1001
`, []problem{{field.ErrorTypeInvalid, "roles[0].num_replicas", 8, 17}}},
		{"bad mounts", `
name: x
roles:` + goodRole + `  mounts:
  - {type: bind, src: data, dst: /data, perm: r}
  - {type: volume, src: Bad_Claim, dst: /data}
  - {type: device, src: /dev/fuse, read_only: true, perm: x}
  - {type: nfs, src: /a, dst: /dev/shm}
  - {src: /a, dst: b}
`, []problem{
			{field.ErrorTypeInvalid, "roles[0].mounts[0].src", 9, 23},
			{field.ErrorTypeForbidden, "roles[0].mounts[0].perm", 9, 47},
			{field.ErrorTypeInvalid, "roles[0].mounts[1].src", 10, 25},
			{field.ErrorTypeDuplicate, "roles[0].mounts[1].dst", 10, 41},
			{field.ErrorTypeForbidden, "roles[0].mounts[2].read_only", 11, 47},
			{field.ErrorTypeInvalid, "roles[0].mounts[2].perm", 11, 59},
			{field.ErrorTypeNotSupported, "roles[0].mounts[3].type", 12, 12},
			{field.ErrorTypeForbidden, "roles[0].mounts[3].dst", 12, 31},
			{field.ErrorTypeRequired, "roles[0].mounts[4].type", 13, 5},
			{field.ErrorTypeInvalid, "roles[0].mounts[4].dst", 13, 20},
		}},
		{"macros", `
name: x
roles:` + goodRole + `  args: ["${replica}", "${foo}", "${app_id"]
  env: {A: "${rank0_env}"}
  metadata: {labels: {app.kubernetes.io/name: x, ok: "${role}"}}
`, []problem{
			{field.ErrorTypeInvalid, "roles[0].env[A]", 9, 12},
			{field.ErrorTypeForbidden, "roles[0].metadata.labels[app.kubernetes.io/name]", 10, 47},
		}},
		{"field paths", `
name: x
roles:` + goodRole + `  env: {A: "[FIELD_PATH]status.podIP", B: "[FIELD_PATH]metadata.labels['app.kubernetes.io/name']", C: "[FIELD_PATH]spec.foo", D: "[FIELD_PATH]metadata.labels['a b']"}
`, []problem{
			{field.ErrorTypeInvalid, "roles[0].env[C]", 8, 103},
			{field.ErrorTypeInvalid, "roles[0].env[D]", 8, 130},
		}},
		{"tiny cpu, gpus as devices, label values", `
name: x
roles:
- name: trainer
  image: example/trainer
  entrypoint: train
  resource: {cpu: 0.0001, gpu: 4, mem_mb: 1000, devices: {nvidia.com/gpu: 4, vpc.amazonaws.com/efa: 1}}
  metadata:
    labels: {team: ml platform, ok: a.b_c-1, empty: "", long: ` + strings.Repeat("x", 64) + `, macro: "${app_id}-${replica_id}"}
    annotations: {"bad key!": x, note: any text at all}
`, []problem{
			{field.ErrorTypeInvalid, "roles[0].resource.cpu", 7, 19},
			{field.ErrorTypeForbidden, "roles[0].resource.devices[nvidia.com/gpu]", 7, 75},
			{field.ErrorTypeInvalid, "roles[0].metadata.labels[team]", 9, 20},
			{field.ErrorTypeInvalid, "roles[0].metadata.labels[long]", 9, 63},
			{field.ErrorTypeInvalid, "roles[0].metadata.annotations[bad key!]", 10, 31},
		}},
		{"cpu rounds to a millicore", `
name: x
roles:
- {name: a, image: i, entrypoint: e, resource: {cpu: 0.0005, mem_mb: 1}}
- {name: b, image: i, entrypoint: e, resource: {cpu: 0.00049, mem_mb: 1}}
- {name: c, image: i, entrypoint: e, resource: {cpu: .nan, mem_mb: 1}}
- {name: d, image: i, entrypoint: e, resource: {cpu: .inf, mem_mb: 1}}
- {name: e, image: i, entrypoint: e, resource: {cpu: 1e20, mem_mb: 1}}
- {name: f, image: i, entrypoint: e, resource: {cpu: 1e9, mem_mb: 1}}
`, []problem{
			{field.ErrorTypeInvalid, "roles[1].resource.cpu", 5, 54},
			{field.ErrorTypeInvalid, "roles[2].resource.cpu", 6, 54},
			{field.ErrorTypeInvalid, "roles[3].resource.cpu", 7, 54},
			{field.ErrorTypeInvalid, "roles[4].resource.cpu", 8, 54},
		}},
		{"duplicate roles", `
name: x
roles:` + goodRole + goodRole, []problem{{field.ErrorTypeDuplicate, "roles[1].name", 9, 9}}},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := scheduler.ParseApp("app.yaml", []byte(test.spec))
			var se *scheduler.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("got error %v, want a *SpecError", err)
			}
			var got []problem
			for _, fe := range se.Errors {
				got = append(got, problem{fe.Err.Type, fe.Err.Field, fe.Pos.Line, fe.Pos.Col})
			}
			if diff := cmp.Diff(test.want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s\nerror:\n%v", diff, err)
			}
		})
	}
}

func TestSpecErrorMessages(t *testing.T) {
	spec := `name: x
roles:
- name: trainer
  image: example/trainer
  entrypoint: train
  resource: {cpu: 1, mem_mb: 0, memMB: 3}
  retry_policy: ROLE
  args: ["${replica}"]
`
	// ${replica} is not a macro: as in TorchX, it is kept as it is.
	_, err := scheduler.ParseApp("app.yaml", []byte(spec))
	if err == nil {
		t.Fatal("got no error")
	}
	// Decoding and validation errors come together, in file order, except those about
	// mem_mb, which the misspelt memMB was probably meant to set.
	want := `app.yaml:6:33: roles[0].resource.memMB: unknown field; did you mean "mem_mb"?
app.yaml:7:17: roles[0].retry_policy: got "ROLE", not supported: Volcano restarts one task or the whole job, not all the tasks of a role; want REPLICA (restart the failed replica) or APPLICATION (restart every role)`
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
	spec = strings.Replace(spec, ", memMB: 3", "", 1)
	_, err = scheduler.ParseApp("app.yaml", []byte(spec))
	want = `app.yaml:6:30: roles[0].resource.mem_mb: must be > 0
app.yaml:7:17: roles[0].retry_policy: got "ROLE", not supported: Volcano restarts one task or the whole job, not all the tasks of a role; want REPLICA (restart the failed replica) or APPLICATION (restart every role)`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

func TestParseAppEmpty(t *testing.T) {
	_, err := scheduler.ParseApp("app.yaml", nil)
	if want := "app.yaml: got an empty file, want an app spec"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	_, err = scheduler.ParseApp("app.yaml", []byte("name: a\n---\nname: b\n"))
	if want := "app.yaml:2:1: got several YAML documents, want one"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestLoadApp(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(file, []byte("name: x\nroles:"+goodRole+"  num_replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	app, err := scheduler.LoadApp(file)
	if err != nil {
		t.Fatal(err)
	}
	if app.Dir != dir || app.File != file {
		t.Errorf("got Dir %q, File %q, want %q, %q", app.Dir, app.File, dir, file)
	}
	if got := app.Roles[0].Replicas(); got != 3 {
		t.Errorf("got %d replicas, want 3", got)
	}
	if _, err := scheduler.LoadApp(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want a not-exist error", err)
	}
}

func TestParseAppPartial(t *testing.T) {
	// A spec with problems comes back decoded as far as it could be, with its problems.
	app, err := scheduler.ParseApp("app.yaml", []byte("name: x\noverlays: [a.star]\nroles:"+goodRole+"  num_replica: 2\n  overlays: [b.star]\n"))
	var se *scheduler.SpecError
	if !errors.As(err, &se) {
		t.Fatalf("got error %v, want a *SpecError", err)
	}
	if app == nil {
		t.Fatal("got no app with the *SpecError")
	}
	if got, want := [][]string{app.Overlays, app.Roles[0].Overlays}, [][]string{{"a.star"}, {"b.star"}}; !cmp.Equal(got, want) {
		t.Errorf("got overlays %q, want %q", got, want)
	}
	// A file that is not one YAML document gives no app.
	for _, data := range []string{"", "name: [\n", "name: a\n---\nname: b\n"} {
		if app, err := scheduler.ParseApp("app.yaml", []byte(data)); app != nil || err == nil {
			t.Errorf("%q: got app %v and error %v, want no app and an error", data, app, err)
		}
	}
}

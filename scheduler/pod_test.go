package scheduler

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRoleParts checks that the pods of a role's replicas share the parts no macro changes,
// and are otherwise those rolePod builds one at a time.
func TestRoleParts(t *testing.T) {
	r := &Role{Name: "r", Image: "i", Entrypoint: "e", Args: []string{"--id=${replica_id}"},
		Env:      []EnvVar{{Name: "ID", Value: "${replica_id}"}, {Name: "IP", Value: FieldPathPrefix + "status.podIP"}},
		Resource: Resource{CPU: 2, MemMB: 1000, GPU: 1, Capabilities: map[string]string{InstanceTypeLabel: "p4d"}},
		PortMap:  map[string]int{"rdzv": 29500},
		Mounts:   []Mount{{Type: MountBind, Src: "/a", Dst: "/b"}, {Type: MountDevice, Src: "/dev/x"}},
		Metadata: Metadata{Labels: map[string]string{"id": "${replica_id}"}}}
	cfg := DefaultConfig()
	cfg.ServiceAccount = "sa"
	rp := newRoleParts(r, &cfg)
	m := func(id string) macroValues { return macroValues{"replica_id": id} }
	a, b := rp.pod(r, "r-0", m("0"), true), rp.pod(r, "r-1", m("1"), false)
	for i, pod := range [...]struct {
		got   any
		id    string
		rank0 bool
	}{{a, "0", true}, {b, "1", false}} {
		want := rolePod(r, "r-"+pod.id, m(pod.id), &cfg, pod.rank0)
		if diff := cmp.Diff(want, pod.got); diff != "" {
			t.Errorf("replica %d (-rolePod +parts):\n%s", i, diff)
		}
	}
	same := func(what string, x, y any) {
		t.Helper()
		if reflect.ValueOf(x).Pointer() != reflect.ValueOf(y).Pointer() {
			t.Errorf("%s: not shared", what)
		}
	}
	ca, cb := &a.Spec.Containers[0], &b.Spec.Containers[0]
	same("volumes", a.Spec.Volumes, b.Spec.Volumes)
	same("node selector", a.Spec.NodeSelector, b.Spec.NodeSelector)
	same("mounts", ca.VolumeMounts, cb.VolumeMounts)
	same("ports", ca.Ports, cb.Ports)
	same("limits", ca.Resources.Limits, cb.Resources.Limits)
	same("security context", ca.SecurityContext, cb.SecurityContext)
	if ca.Command[1] == cb.Command[1] || a.Labels["id"] == b.Labels["id"] {
		t.Errorf("the macros of the replicas: got %q and %q, %q and %q", ca.Command[1], cb.Command[1], a.Labels["id"], b.Labels["id"])
	}
}

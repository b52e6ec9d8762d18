package builtins

// This file defines the pod helpers. Each one upserts, so an overlay that calls them twice
// gives the same pod as one that calls them once.

import (
	"fmt"
	"sort"

	"go.starlark.net/starlark"
)

// dictField returns the dict in d[key], creating it (in place of a missing key or None).
func dictField(d *starlark.Dict, key string) (*starlark.Dict, error) {
	v, found, _ := d.Get(starlark.String(key))
	if found && v != starlark.None {
		sub, ok := v.(*starlark.Dict)
		if !ok {
			return nil, fmt.Errorf("%s: got %s, want dict", key, v.Type())
		}
		return sub, nil
	}
	sub := new(starlark.Dict)
	if err := d.SetKey(starlark.String(key), sub); err != nil {
		return nil, err
	}
	return sub, nil
}

// listField returns the list in d[key], creating it (in place of a missing key or None).
func listField(d *starlark.Dict, key string) (*starlark.List, error) {
	v, found, _ := d.Get(starlark.String(key))
	if found && v != starlark.None {
		l, ok := v.(*starlark.List)
		if !ok {
			return nil, fmt.Errorf("%s: got %s, want list", key, v.Type())
		}
		return l, nil
	}
	l := starlark.NewList(nil)
	if err := d.SetKey(starlark.String(key), l); err != nil {
		return nil, err
	}
	return l, nil
}

// podField returns the dict pod[section][key] (section is "spec" or "metadata"), creating
// the missing dicts.
func podField(pod *starlark.Dict, section, key string) (*starlark.Dict, error) {
	s, err := dictField(pod, section)
	if err != nil {
		return nil, err
	}
	d, err := dictField(s, key)
	if err != nil {
		return nil, fmt.Errorf("%s.%v", section, err)
	}
	return d, nil
}

// podList returns the list pod["spec"][key], creating the missing dict and list.
func podList(pod *starlark.Dict, key string) (*starlark.List, error) {
	spec, err := dictField(pod, "spec")
	if err != nil {
		return nil, err
	}
	l, err := listField(spec, key)
	if err != nil {
		return nil, fmt.Errorf("spec.%v", err)
	}
	return l, nil
}

// upsert replaces the first dict of l whose field key equals item's, or appends item.
func upsert(l *starlark.List, key string, item *starlark.Dict) error {
	if i := find(listItems(l), key, item); i >= 0 {
		return l.SetIndex(i, item)
	}
	return l.Append(item)
}

// listItems returns the items of l.
func listItems(l *starlark.List) []starlark.Value {
	items := make([]starlark.Value, l.Len())
	for i := range items {
		items[i] = l.Index(i)
	}
	return items
}

// dictOf returns a new dict of the given keys and values, skipping None values.
func dictOf(kv ...any) *starlark.Dict {
	d := starlark.NewDict(len(kv) / 2)
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1].(starlark.Value)
		if v != starlark.None {
			d.SetKey(starlark.String(kv[i].(string)), v)
		}
	}
	return d
}

// containers implements containers(pod, init=False).
//
// It returns the live list pod["spec"]["containers"] (or "initContainers"), creating it if
// missing, so that changes to it or its items change the pod.
func containers(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pod *starlark.Dict
	var init bool
	if err := unpackArgs(b.Name(), args, kwargs, "pod", &pod, "init?", &init); err != nil {
		return nil, err
	}
	key := "containers"
	if init {
		key = "initContainers"
	}
	l, err := podList(pod, key)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	return l, nil
}

// setEnv implements set_env(container, name, value).
//
// It sets the environment variable name of container, in place: replaces the item of
// container["env"] with that name, keeping its position, or appends one. value is a string,
// an int (written in decimal) or a dict, which becomes valueFrom ({"fieldRef": ...}).
func setEnv(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var container *starlark.Dict
	var name string
	var value starlark.Value
	if err := unpackArgs(b.Name(), args, kwargs, "container", &container, "name", &name, "value", &value); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, errorf(b, "for parameter name: got \"\", want a variable name")
	}
	var item *starlark.Dict
	switch v := value.(type) {
	case starlark.String:
		item = dictOf("name", starlark.String(name), "value", v)
	case starlark.Int:
		item = dictOf("name", starlark.String(name), "value", starlark.String(v.String()))
	case *starlark.Dict:
		from, err := (&merger{copying: make(map[starlark.Value]bool)}).copy(v, nil)
		if err != nil {
			return nil, errorf(b, "for parameter value: %v", err)
		}
		item = dictOf("name", starlark.String(name), "valueFrom", from)
	default:
		return nil, errorf(b, "for parameter value: got %s, want string, int or dict (valueFrom)", value.Type())
	}
	env, err := listField(container, "env")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	if err := upsert(env, "name", item); err != nil {
		return nil, errorf(b, "%v", err)
	}
	return starlark.None, nil
}

// Toleration operators and effects, as corev1 defines them.
var (
	tolerationOperators = []string{"Exists", "Equal"}
	taintEffects        = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
)

// addToleration implements add_toleration(pod, key, operator="Exists", value=None,
// effect=None, toleration_seconds=None).
//
// It appends the toleration to pod["spec"]["tolerations"] unless an equal one is there.
func addToleration(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pod *starlark.Dict
	var key string
	operator := "Exists"
	var value, effect, seconds starlark.Value = starlark.None, starlark.None, starlark.None
	if err := unpackArgs(b.Name(), args, kwargs, "pod", &pod, "key", &key, "operator?", &operator,
		"value?", &value, "effect?", &effect, "toleration_seconds?", &seconds); err != nil {
		return nil, err
	}
	if !contains(tolerationOperators, operator) {
		return nil, errorf(b, "for parameter operator: got %q, want \"Exists\" or \"Equal\"%s", operator, didYouMean(operator, tolerationOperators))
	}
	if value != starlark.None {
		if _, ok := value.(starlark.String); !ok {
			return nil, errorf(b, "for parameter value: got %s, want string or None", value.Type())
		}
		if operator == "Exists" {
			return nil, errorf(b, "got a value with operator \"Exists\", want operator \"Equal\"")
		}
	}
	if effect != starlark.None {
		e, ok := effect.(starlark.String)
		if !ok {
			return nil, errorf(b, "for parameter effect: got %s, want string or None", effect.Type())
		}
		if !contains(taintEffects, string(e)) {
			return nil, errorf(b, "for parameter effect: got %q, want \"NoSchedule\", \"PreferNoSchedule\" or \"NoExecute\"%s", string(e), didYouMean(string(e), taintEffects))
		}
	}
	if seconds != starlark.None {
		if _, ok := seconds.(starlark.Int); !ok {
			return nil, errorf(b, "for parameter toleration_seconds: got %s, want int or None", seconds.Type())
		}
		if effect != starlark.String("NoExecute") {
			return nil, errorf(b, "got toleration_seconds with effect %s, want effect \"NoExecute\"", effect)
		}
	}
	var k starlark.Value = starlark.String(key)
	if key == "" {
		k = starlark.None // tolerates every taint
		if operator != "Exists" {
			return nil, errorf(b, "got an empty key with operator %q, want operator \"Exists\"", operator)
		}
	}
	t := dictOf("key", k, "operator", starlark.String(operator), "value", value, "effect", effect, "tolerationSeconds", seconds)
	tols, err := podList(pod, "tolerations")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	for i := range tols.Len() {
		if eq, err := starlark.Equal(tols.Index(i), t); err == nil && eq {
			return starlark.None, nil
		}
	}
	if err := tols.Append(t); err != nil {
		return nil, errorf(b, "%v", err)
	}
	return starlark.None, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// addVolume implements add_volume(pod, volume, mount_path, containers=None, read_only=False,
// sub_path=None).
//
// It upserts volume (a dict with a "name") into pod["spec"]["volumes"] by name, and a mount
// of it at mount_path into every container, or the named ones (init containers included),
// upserting by mountPath.
func addVolume(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pod, volume *starlark.Dict
	var mountPath string
	var names starlark.Value = starlark.None
	var readOnly bool
	var subPath starlark.Value = starlark.None
	if err := unpackArgs(b.Name(), args, kwargs, "pod", &pod, "volume", &volume, "mount_path", &mountPath,
		"containers?", &names, "read_only?", &readOnly, "sub_path?", &subPath); err != nil {
		return nil, err
	}
	nameV, found, _ := volume.Get(starlark.String("name"))
	name, ok := nameV.(starlark.String)
	if !found || !ok || name == "" {
		return nil, errorf(b, "for parameter volume: got no \"name\", want a volume with a name")
	}
	if mountPath == "" {
		return nil, errorf(b, "for parameter mount_path: got \"\", want a path")
	}
	if subPath != starlark.None {
		if _, ok := subPath.(starlark.String); !ok {
			return nil, errorf(b, "for parameter sub_path: got %s, want string or None", subPath.Type())
		}
	}
	var ro starlark.Value = starlark.None
	if readOnly {
		ro = starlark.True
	}

	// Find the containers first, so that a bad name changes nothing.
	regular, err := podList(pod, "containers")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	var targets []*starlark.Dict
	if names == starlark.None {
		for i := range regular.Len() {
			c, ok := regular.Index(i).(*starlark.Dict)
			if !ok {
				return nil, errorf(b, "spec.containers[%d]: got %s, want dict", i, regular.Index(i).Type())
			}
			targets = append(targets, c)
		}
	} else {
		targets, err = namedContainers(pod, names)
		if err != nil {
			return nil, errorf(b, "%v", err)
		}
	}

	v, err := (&merger{copying: make(map[starlark.Value]bool)}).copy(volume, nil)
	if err != nil {
		return nil, errorf(b, "for parameter volume: %v", err)
	}
	volumes, err := podList(pod, "volumes")
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	if err := upsert(volumes, "name", v.(*starlark.Dict)); err != nil {
		return nil, errorf(b, "%v", err)
	}
	for _, c := range targets {
		mounts, err := listField(c, "volumeMounts")
		if err != nil {
			return nil, errorf(b, "container %s: %v", get1(c, "name"), err)
		}
		m := dictOf("name", name, "mountPath", starlark.String(mountPath), "readOnly", ro, "subPath", subPath)
		if err := upsert(mounts, "mountPath", m); err != nil {
			return nil, errorf(b, "%v", err)
		}
	}
	return starlark.None, nil
}

// namedContainers returns the containers and init containers of pod with the given names, a
// list of strings.
func namedContainers(pod *starlark.Dict, names starlark.Value) ([]*starlark.Dict, error) {
	l, ok := names.(*starlark.List)
	if !ok {
		return nil, fmt.Errorf("for parameter containers: got %s, want list of names or None", names.Type())
	}
	byName := make(map[string]*starlark.Dict)
	var all []string
	for _, key := range []string{"containers", "initContainers"} {
		list, _ := get1(pod, "spec", key).(*starlark.List)
		if list == nil {
			continue
		}
		for i := range list.Len() {
			c, ok := list.Index(i).(*starlark.Dict)
			if !ok {
				continue
			}
			if n, ok := get1(c, "name").(starlark.String); ok {
				if _, dup := byName[string(n)]; !dup {
					byName[string(n)] = c
					all = append(all, string(n))
				}
			}
		}
	}
	sort.Strings(all)
	var out []*starlark.Dict
	for i := range l.Len() {
		n, ok := l.Index(i).(starlark.String)
		if !ok {
			return nil, fmt.Errorf("for parameter containers: at index %d: got %s, want string", i, l.Index(i).Type())
		}
		c, ok := byName[string(n)]
		if !ok {
			return nil, fmt.Errorf("for parameter containers: the pod has no container %q%s", string(n), didYouMean(string(n), all))
		}
		out = append(out, c)
	}
	return out, nil
}

// get1 returns x[keys[0]][keys[1]]..., or nil if any is missing or not a dict.
func get1(x starlark.Value, keys ...string) starlark.Value {
	for _, k := range keys {
		d, ok := x.(*starlark.Dict)
		if !ok {
			return nil
		}
		v, found, _ := d.Get(starlark.String(k))
		if !found {
			return nil
		}
		x = v
	}
	return x
}

// setNodeSelector implements set_node_selector(pod, key, value): pod["spec"]["nodeSelector"][key] = value.
func setNodeSelector(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return setMapEntry(b, args, kwargs, "spec", "nodeSelector")
}

// setLabel implements set_label(pod, key, value): pod["metadata"]["labels"][key] = value.
func setLabel(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return setMapEntry(b, args, kwargs, "metadata", "labels")
}

// setAnnotation implements set_annotation(pod, key, value): pod["metadata"]["annotations"][key] = value.
func setAnnotation(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return setMapEntry(b, args, kwargs, "metadata", "annotations")
}

// setMapEntry sets pod[section][field][key] = value, a string, creating missing dicts; None
// removes the key.
func setMapEntry(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple, section, field string) (starlark.Value, error) {
	var pod *starlark.Dict
	var key string
	var value starlark.Value
	if err := unpackArgs(b.Name(), args, kwargs, "pod", &pod, "key", &key, "value", &value); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errorf(b, "for parameter key: got \"\", want a key")
	}
	switch value.(type) {
	case starlark.String:
	case starlark.NoneType:
		if m, ok := get1(pod, section, field).(*starlark.Dict); ok {
			if _, _, err := m.Delete(starlark.String(key)); err != nil {
				return nil, errorf(b, "%v", err)
			}
		}
		return starlark.None, nil
	default:
		return nil, errorf(b, "for parameter value: got %s, want string or None", value.Type())
	}
	m, err := podField(pod, section, field)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	if err := m.SetKey(starlark.String(key), value); err != nil {
		return nil, errorf(b, "%v", err)
	}
	return starlark.None, nil
}

// setResources implements set_resources(container, requests=None, limits=None).
//
// requests and limits are dicts from resource name to quantity (string or int), merged into
// container["resources"]; a None quantity removes that resource. Quantities are stored in
// canonical form ("1000m" becomes "1").
func setResources(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var container *starlark.Dict
	var requests, limits starlark.Value = starlark.None, starlark.None
	if err := unpackArgs(b.Name(), args, kwargs, "container", &container, "requests?", &requests, "limits?", &limits); err != nil {
		return nil, err
	}
	// Check everything before changing anything.
	type entry struct {
		field, name string
		q           starlark.Value // canonical string, or None
	}
	var entries []entry
	for _, arg := range []struct {
		param, field string
		v            starlark.Value
	}{{"requests", "requests", requests}, {"limits", "limits", limits}} {
		if arg.v == starlark.None {
			continue
		}
		d, ok := arg.v.(*starlark.Dict)
		if !ok {
			return nil, errorf(b, "for parameter %s: got %s, want dict or None", arg.param, arg.v.Type())
		}
		for _, item := range d.Items() {
			name, ok := item[0].(starlark.String)
			if !ok {
				return nil, errorf(b, "for parameter %s: got %s key, want string", arg.param, item[0].Type())
			}
			if item[1] == starlark.None {
				entries = append(entries, entry{arg.field, string(name), starlark.None})
				continue
			}
			var q quantityArg
			if err := q.Unpack(item[1]); err != nil {
				return nil, errorf(b, "for parameter %s: %s: %v", arg.param, string(name), err)
			}
			entries = append(entries, entry{arg.field, string(name), starlark.String(canonical(&q.q))})
		}
	}
	for _, e := range entries {
		if e.q == starlark.None {
			if m, ok := get1(container, "resources", e.field).(*starlark.Dict); ok {
				if _, _, err := m.Delete(starlark.String(e.name)); err != nil {
					return nil, errorf(b, "%v", err)
				}
			}
			continue
		}
		res, err := dictField(container, "resources")
		if err != nil {
			return nil, errorf(b, "%v", err)
		}
		m, err := dictField(res, e.field)
		if err != nil {
			return nil, errorf(b, "resources.%v", err)
		}
		if err := m.SetKey(starlark.String(e.name), e.q); err != nil {
			return nil, errorf(b, "%v", err)
		}
	}
	return starlark.None, nil
}

var podDocs = []Doc{{
	Name:    "containers",
	Params:  "(pod, init=False)",
	Summary: "Returns the pod's list of containers (or init containers), creating it if missing.",
	Notes:   "The list is the pod's own, so changing it or its items changes the pod.",
	Example: `pod = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
[c["name"] for c in containers(pod)]`,
	Result: `["a", "b"]`,
}, {
	Name:    "set_env",
	Params:  "(container, name, value)",
	Summary: "Sets the environment variable name of a container, replacing one of that name in place.",
	Notes:   "value is a string, an int (written in decimal), or a dict, which becomes valueFrom.",
	Example: `c = {"name": "a", "env": [{"name": "X", "value": "1"}]}
set_env(c, "X", "2")
set_env(c, "POD_IP", {"fieldRef": {"fieldPath": "status.podIP"}})
c["env"]`,
	Result: `[{"name": "X", "value": "2"}, {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]`,
}, {
	Name:    "add_toleration",
	Params:  `(pod, key, operator="Exists", value=None, effect=None, toleration_seconds=None)`,
	Summary: "Adds a toleration to the pod unless it has an equal one.",
	Notes: "An empty key with operator Exists tolerates every taint. A value needs operator `\"Equal\"`, and " +
		"toleration_seconds needs effect `\"NoExecute\"`.",
	Example: `pod = {"spec": {}}
add_toleration(pod, "nvidia.com/gpu", effect = "NoSchedule")
add_toleration(pod, "nvidia.com/gpu", effect = "NoSchedule")
pod["spec"]["tolerations"]`,
	Result: `[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]`,
}, {
	Name:    "add_volume",
	Params:  "(pod, volume, mount_path, containers=None, read_only=False, sub_path=None)",
	Summary: "Adds a volume to the pod and mounts it at mount_path.",
	Notes: "volume is a dict with a name, upserted into spec.volumes by name. The mount is upserted by " +
		"mountPath into every container, or into the containers and init containers named in the list " +
		"containers; an unknown name is an error and changes nothing.",
	Example: `pod = {"spec": {"containers": [{"name": "a"}]}}
add_volume(pod, {"name": "shm", "emptyDir": {"medium": "Memory"}}, "/dev/shm")
pod`,
	Result: `{"spec": {"containers": [{"name": "a", "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}], "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}]}}`,
}, {
	Name:    "set_node_selector",
	Params:  "(pod, key, value)",
	Summary: "Sets a node selector label of the pod; None removes it.",
	Example: `pod = {"spec": {}}
set_node_selector(pod, "node.kubernetes.io/instance-type", "p4d.24xlarge")
pod`,
	Result: `{"spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "p4d.24xlarge"}}}`,
}, {
	Name:    "set_label",
	Params:  "(pod, key, value)",
	Summary: "Sets a label of the pod; None removes it.",
	Example: `pod = {"metadata": {"labels": {"old": "x"}}}
set_label(pod, "team", "ml")
set_label(pod, "old", None)
pod["metadata"]["labels"]`,
	Result: `{"team": "ml"}`,
}, {
	Name:    "set_annotation",
	Params:  "(pod, key, value)",
	Summary: "Sets an annotation of the pod; None removes it.",
	Example: `pod = {}
set_annotation(pod, "sidecar.istio.io/inject", "false")
pod`,
	Result: `{"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}}`,
}, {
	Name:    "set_resources",
	Params:  "(container, requests=None, limits=None)",
	Summary: "Sets resource requests and limits of a container.",
	Notes: "requests and limits are dicts from resource name to quantity (a string, or an int), merged into " +
		"the container's resources; a None quantity removes that resource. Quantities are stored in canonical " +
		"form.",
	Example: `c = {"name": "a"}
set_resources(c, requests = {"cpu": "500m", "memory": "1024Mi"}, limits = {"nvidia.com/gpu": 8})
c["resources"]`,
	Result: `{"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "8"}}`,
}}

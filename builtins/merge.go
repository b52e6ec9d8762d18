package builtins

// This file defines merge, the deep merge that knows the Kubernetes patch merge keys.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/spell"
)

// List modes of merge.
const (
	modeMerge   = "merge"
	modeAppend  = "append"
	modeReplace = "replace"
)

var modes = []string{modeMerge, modeAppend, modeReplace}

// podSchema is the strategic merge patch schema of a Pod, from the field tags of corev1.Pod.
var podSchema = func() strategicpatch.PatchMetaFromStruct {
	s, err := strategicpatch.NewPatchMetaFromStruct(corev1.Pod{})
	if err != nil {
		panic(err) // corev1.Pod is a struct
	}
	return s
}()

// merge implements merge(base, patch, lists="merge", keys=None).
//
// Dicts merge key by key, and a None in the patch deletes the key. A dict and a list at the
// same place are an error; any other pair of differing values is replaced by the patch's.
// Lists merge by mode: "replace" takes the patch's list, "append" concatenates, and "merge"
// matches dict items by a key field, merges the matched ones and appends the rest, except
// the items equal to one base already has. The key field of a list is, in order: keys[path];
// the Kubernetes patch merge key of the field when base is a pod; keys[""]; "name" for a
// list the Pod schema does not describe (every list when base is not a pod). So in the merge
// mode, merging a patch into the result of merging it gives that result again: overlays run
// again (in chains, on admission reinvocation, on re-renders) and must not grow the pod.
//
// base counts as a pod when it is a dict whose "kind" is "Pod", or that has no "kind" and has
// a "spec" or "metadata" key.
func merge(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var base, patchV, lists, keys starlark.Value = nil, nil, starlark.String(modeMerge), starlark.None
	if err := unpackArgs(b.Name(), args, kwargs, "base", &base, "patch", &patchV, "lists?", &lists, "keys?", &keys); err != nil {
		return nil, err
	}
	m := &merger{patching: make(map[starlark.Value]bool), copying: make(map[starlark.Value]bool)}
	if isPod(base) {
		m.root = podSchema
	}
	if err := m.setModes(lists); err != nil {
		return nil, errorf(b, "%v", err)
	}
	if err := m.setKeys(keys); err != nil {
		return nil, errorf(b, "%v", err)
	}
	v, err := m.value(base, patchV, nil, "", m.root, nil)
	if err != nil {
		return nil, errorf(b, "%v", err)
	}
	return v, nil
}

// isPod reports whether x looks like a pod: a dict whose kind is "Pod", or that has no kind
// and has a spec or metadata.
func isPod(x starlark.Value) bool {
	d, ok := x.(*starlark.Dict)
	if !ok {
		return false
	}
	if kind, found, _ := d.Get(starlark.String("kind")); found {
		return kind == starlark.String("Pod")
	}
	for _, k := range []string{"spec", "metadata"} {
		if _, found, _ := d.Get(starlark.String(k)); found {
			return true
		}
	}
	return false
}

// A merger holds the options of one merge call.
type merger struct {
	root        strategicpatch.LookupPatchMeta // the schema of base, or nil
	defaultMode string                         // the mode of lists not in modes
	modes       map[string]string              // field path -> list mode
	keys        map[string]string              // field path -> key field
	defaultKey  string                         // keys[""]
	patching    map[starlark.Value]bool        // the patch dicts and lists being merged, to catch cycles
	copying     map[starlark.Value]bool        // the dicts and lists being copied, to catch cycles
}

// setModes sets the list modes from the lists argument: a mode, or a dict from field path to
// mode with "" for every other list.
func (m *merger) setModes(lists starlark.Value) error {
	m.defaultMode = modeMerge
	switch lists := lists.(type) {
	case starlark.String:
		mode, err := checkMode(string(lists))
		if err != nil {
			return fmt.Errorf("for parameter lists: %v", err)
		}
		m.defaultMode = mode
	case *starlark.Dict:
		m.modes = make(map[string]string)
		for _, item := range lists.Items() {
			path, ok := item[0].(starlark.String)
			if !ok {
				return fmt.Errorf("lists: got %s key, want string", item[0].Type())
			}
			mode, ok := item[1].(starlark.String)
			if !ok {
				return fmt.Errorf("lists[%q]: got %s, want string", string(path), item[1].Type())
			}
			mo, err := checkMode(string(mode))
			if err != nil {
				return fmt.Errorf("lists[%q]: %v", string(path), err)
			}
			if path == "" {
				m.defaultMode = mo
				continue
			}
			if err := m.checkPath(string(path)); err != nil {
				return fmt.Errorf("lists: %v", err)
			}
			m.modes[string(path)] = mo
		}
	default:
		return fmt.Errorf("for parameter lists: got %s, want string or dict", lists.Type())
	}
	return nil
}

// checkMode returns mode if it is a list mode.
func checkMode(mode string) (string, error) {
	for _, m := range modes {
		if mode == m {
			return mode, nil
		}
	}
	return "", fmt.Errorf("got %q, want %q, %q or %q%s", mode, modeMerge, modeAppend, modeReplace, didYouMean(mode, modes))
}

// setKeys sets the key fields from the keys argument: None, or a dict from field path to the
// name of the item field to match on, with "" for every list that has no other key.
func (m *merger) setKeys(keys starlark.Value) error {
	switch keys := keys.(type) {
	case starlark.NoneType:
	case *starlark.Dict:
		m.keys = make(map[string]string)
		for _, item := range keys.Items() {
			path, ok := item[0].(starlark.String)
			if !ok {
				return fmt.Errorf("keys: got %s key, want string", item[0].Type())
			}
			key, ok := item[1].(starlark.String)
			if !ok {
				return fmt.Errorf("keys[%q]: got %s, want string", string(path), item[1].Type())
			}
			if key == "" {
				return fmt.Errorf("keys[%q]: got \"\", want a field name", string(path))
			}
			if path == "" {
				m.defaultKey = string(key)
				continue
			}
			if err := m.checkPath(string(path)); err != nil {
				return fmt.Errorf("keys: %v", err)
			}
			m.keys[string(path)] = string(key)
		}
	default:
		return fmt.Errorf("for parameter keys: got %s, want dict or None", keys.Type())
	}
	return nil
}

// checkPath checks the syntax of a dotted field path and, when base is a pod, that it names a
// list field of a Pod.
func (m *merger) checkPath(path string) error {
	segs := strings.Split(path, ".")
	for _, s := range segs {
		if s == "" || strings.ContainsAny(s, "[]\"' ") {
			return fmt.Errorf("invalid field path %q: want field names separated by dots, as in spec.containers.env", path)
		}
	}
	if m.root == nil {
		return nil
	}
	t := reflect.TypeFor[corev1.Pod]()
	for i, s := range segs {
		t = itemType(t)
		if t.Kind() == reflect.Map {
			t = t.Elem() // any key
			continue
		}
		if t.Kind() != reflect.Struct || isScalar(t) {
			return fmt.Errorf("field path %q: %s has no fields", path, strings.Join(segs[:i], "."))
		}
		names := jsonFields(t)
		f, ok := names[s]
		if !ok {
			cands := make([]string, 0, len(names))
			for n := range names {
				cands = append(cands, n)
			}
			sort.Strings(cands)
			return fmt.Errorf("field path %q: a Pod has no field %s%s", path, strings.Join(segs[:i+1], "."), didYouMean(s, cands))
		}
		t = f
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k := t.Kind(); k != reflect.Slice && k != reflect.Array {
		return fmt.Errorf("field path %q: got %s field, want a list", path, kindName(t))
	}
	return nil
}

// itemType strips pointers and slices from t: the type of a list's items, or t.
func itemType(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			t = t.Elem()
		default:
			return t
		}
	}
}

// isScalar reports whether values of type t have a JSON form of their own, as
// resource.Quantity and metav1.Time have.
func isScalar(t reflect.Type) bool {
	m := reflect.TypeFor[json.Marshaler]()
	return t.Implements(m) || reflect.PointerTo(t).Implements(m)
}

// elemType strips pointers, slices and maps from t, leaving the type of one item.
func elemType(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}

// kindName names the JSON kind of a field of type t.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isScalar(t) {
		return "scalar"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "dict"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return "number"
}

// jsonFields returns the JSON field names of struct type t and their types, including those
// of inlined embedded structs.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type)
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) && elemType(f.Type).Kind() == reflect.Struct {
			for n, ft := range jsonFields(elemType(f.Type)) {
				fields[n] = ft
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// didYouMean returns ` (did you mean "x"?)` for the candidate nearest to name, or "".
func didYouMean(name string, candidates []string) string {
	if n := spell.Nearest(name, candidates); n != "" && n != name {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

// value merges patch into base at path p (dotted: its field path without indexes), where
// schema describes the value (nil if unknown) and meta the list field holding it, if any.
func (m *merger) value(base, patch starlark.Value, p *field.Path, dotted string, schema strategicpatch.LookupPatchMeta, meta *strategicpatch.PatchMeta) (starlark.Value, error) {
	switch patch := patch.(type) {
	case *starlark.Dict:
		switch base := base.(type) {
		case *starlark.Dict:
			return m.dict(base, patch, p, dotted, schema)
		case *starlark.List:
			return nil, fmt.Errorf("%sgot dict in patch, want list as in base", at(p))
		}
	case *starlark.List:
		switch base := base.(type) {
		case *starlark.List:
			return m.list(base, patch, p, dotted, schema, meta)
		case *starlark.Dict:
			return nil, fmt.Errorf("%sgot list in patch, want dict as in base", at(p))
		}
	}
	return m.copy(patch, p)
}

// dict merges dict patch into dict base.
func (m *merger) dict(base, patch *starlark.Dict, p *field.Path, dotted string, schema strategicpatch.LookupPatchMeta) (*starlark.Dict, error) {
	if err := enter(m.patching, patch, p); err != nil {
		return nil, err
	}
	defer delete(m.patching, patch)

	out := starlark.NewDict(base.Len())
	for _, item := range base.Items() {
		k, bv := item[0], item[1]
		kp, kd := child(p, dotted, k)
		pv, found, _ := patch.Get(k)
		var v starlark.Value
		var err error
		switch {
		case !found:
			v, err = m.copy(bv, kp)
		case pv == starlark.None:
			continue
		default:
			sub, meta := lookup(schema, k, pv)
			v, err = m.value(bv, pv, kp, kd, sub, meta)
		}
		if err != nil {
			return nil, err
		}
		if err := out.SetKey(k, v); err != nil {
			return nil, fmt.Errorf("%s%v", at(kp), err)
		}
	}
	for _, item := range patch.Items() {
		k, pv := item[0], item[1]
		if pv == starlark.None {
			continue
		}
		if _, found, _ := base.Get(k); found {
			continue
		}
		kp, _ := child(p, dotted, k)
		v, err := m.copy(pv, kp)
		if err != nil {
			return nil, err
		}
		if err := out.SetKey(k, v); err != nil {
			return nil, fmt.Errorf("%s%v", at(kp), err)
		}
	}
	return out, nil
}

// lookup returns the schema of the field k of a struct with the given schema, and the patch
// metadata of that field if it is a list (as pv shows), or nils if unknown.
func lookup(schema strategicpatch.LookupPatchMeta, k, pv starlark.Value) (strategicpatch.LookupPatchMeta, *strategicpatch.PatchMeta) {
	key, ok := k.(starlark.String)
	if schema == nil || !ok {
		return nil, nil
	}
	if s, ok := schema.(strategicpatch.PatchMetaFromStruct); ok && elemType(s.T).Kind() != reflect.Struct {
		return nil, nil // a map or scalar: no fields
	}
	if _, ok := pv.(*starlark.List); ok {
		sub, meta, err := schema.LookupPatchMetadataForSlice(string(key))
		if err != nil {
			return nil, nil
		}
		return sub, &meta
	}
	sub, _, err := schema.LookupPatchMetadataForStruct(string(key))
	if err != nil {
		return nil, nil
	}
	return sub, nil
}

// list merges list patch into list base; schema describes the items and meta the field.
func (m *merger) list(base, patch *starlark.List, p *field.Path, dotted string, schema strategicpatch.LookupPatchMeta, meta *strategicpatch.PatchMeta) (*starlark.List, error) {
	if err := enter(m.patching, patch, p); err != nil {
		return nil, err
	}
	defer delete(m.patching, patch)

	mode := m.defaultMode
	if mo, ok := m.modes[dotted]; ok {
		mode = mo
	}
	if mode == modeReplace {
		return m.copyList(patch, p)
	}

	// items holds the result; fresh[i] tells whether items[i] is already a copy.
	items := make([]starlark.Value, 0, base.Len()+patch.Len())
	fresh := make([]bool, 0, base.Len()+patch.Len())
	for i := range base.Len() {
		items = append(items, base.Index(i))
		fresh = append(fresh, false)
	}
	key := ""
	if mode == modeMerge {
		key = m.key(dotted, meta)
	}
	for j := range patch.Len() {
		pv := patch.Index(j)
		i := -1
		if key != "" {
			i = find(items, key, pv)
		}
		if i < 0 && mode == modeMerge && hasItem(base, pv) {
			continue // already there: merging again changes nothing
		}
		if i < 0 {
			v, err := m.copy(pv, p.Index(len(items)))
			if err != nil {
				return nil, err
			}
			items = append(items, v)
			fresh = append(fresh, true)
			continue
		}
		v, err := m.dict(items[i].(*starlark.Dict), pv.(*starlark.Dict), p.Index(i), dotted, schema)
		if err != nil {
			return nil, err
		}
		items[i], fresh[i] = v, true
	}
	for i, v := range items {
		if !fresh[i] {
			c, err := m.copy(v, p.Index(i))
			if err != nil {
				return nil, err
			}
			items[i] = c
		}
	}
	return starlark.NewList(items), nil
}

// key returns the item field that the list at dotted path matches on, or "" if none.
func (m *merger) key(dotted string, meta *strategicpatch.PatchMeta) string {
	if k, ok := m.keys[dotted]; ok {
		return k
	}
	if meta != nil {
		if k := meta.GetPatchMergeKey(); k != "" {
			return k
		}
	}
	if m.defaultKey != "" {
		return m.defaultKey
	}
	if meta == nil {
		return "name" // no schema
	}
	return ""
}

// maxCompareDepth bounds the depth of the list items merge compares; deeper ones are not
// equal. (starlark.Equal stops at 10, less than some pod fields are deep.)
const maxCompareDepth = 64

// hasItem reports whether an item of list equals x.
func hasItem(list *starlark.List, x starlark.Value) bool {
	for i := range list.Len() {
		if eq, err := starlark.EqualDepth(list.Index(i), x, maxCompareDepth); err == nil && eq {
			return true
		}
	}
	return false
}

// find returns the index of the first dict in items whose field key equals that of the dict
// x, or -1 if x is not a dict with that field or no item matches.
func find(items []starlark.Value, key string, x starlark.Value) int {
	d, ok := x.(*starlark.Dict)
	if !ok {
		return -1
	}
	want, found, _ := d.Get(starlark.String(key))
	if !found {
		return -1
	}
	for i, item := range items {
		d, ok := item.(*starlark.Dict)
		if !ok {
			continue
		}
		got, found, _ := d.Get(starlark.String(key))
		if !found {
			continue
		}
		if eq, err := starlark.Equal(got, want); err == nil && eq {
			return i
		}
	}
	return -1
}

// copy returns a deep copy of x: new dicts and lists, the same immutable values.
func (m *merger) copy(x starlark.Value, p *field.Path) (starlark.Value, error) {
	switch x := x.(type) {
	case *starlark.Dict:
		if err := enter(m.copying, x, p); err != nil {
			return nil, err
		}
		defer delete(m.copying, x)
		out := starlark.NewDict(x.Len())
		for _, item := range x.Items() {
			kp, _ := child(p, "", item[0])
			v, err := m.copy(item[1], kp)
			if err != nil {
				return nil, err
			}
			if err := out.SetKey(item[0], v); err != nil {
				return nil, fmt.Errorf("%s%v", at(kp), err)
			}
		}
		return out, nil
	case *starlark.List:
		return m.copyList(x, p)
	case starlark.Tuple:
		out := make(starlark.Tuple, len(x))
		for i, v := range x {
			c, err := m.copy(v, p.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return x, nil
}

// copyList returns a deep copy of list x.
func (m *merger) copyList(x *starlark.List, p *field.Path) (*starlark.List, error) {
	if err := enter(m.copying, x, p); err != nil {
		return nil, err
	}
	defer delete(m.copying, x)
	out := make([]starlark.Value, x.Len())
	for i := range x.Len() {
		v, err := m.copy(x.Index(i), p.Index(i))
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return starlark.NewList(out), nil
}

// enter adds the dict or list x to the set of values being walked, and fails if it is
// already there: a value that contains itself. The caller deletes it when done.
func enter(walking map[starlark.Value]bool, x starlark.Value, p *field.Path) error {
	if walking[x] {
		return fmt.Errorf("%scycle: the %s contains itself", at(p), x.Type())
	}
	walking[x] = true
	return nil
}

// child returns the field path and the dotted path of the field k below p and dotted.
func child(p *field.Path, dotted string, k starlark.Value) (*field.Path, string) {
	name, ok := starlark.AsString(k)
	if !ok {
		name = k.String()
	}
	if dotted != "" {
		dotted += "."
	}
	return p.Child(name), dotted + name
}

// at returns "p: ", or "" for the top level.
func at(p *field.Path) string {
	if p == nil {
		return ""
	}
	return p.String() + ": "
}

// errorf returns an error prefixed with the builtin's name.
func errorf(b *starlark.Builtin, format string, args ...any) error {
	return fmt.Errorf(b.Name()+": "+format, args...)
}

var mergeDocs = []Doc{{
	Name:    "merge",
	Params:  `(base, patch, lists="merge", keys=None)`,
	Summary: "Returns a new deep merge of patch into base.",
	Notes: "Dicts merge key by key, and a None in patch deletes the key; a dict against a list is an error, " +
		"any other value is replaced. Lists merge by mode: `\"replace\"` takes patch's list, `\"append\"` " +
		"concatenates whatever the lists hold, and `\"merge\"` (the default) merges the dict items that have the same key field, in " +
		"place, and appends the rest, except the items equal to one that base's list already has: merging a patch " +
		"twice gives the same value as merging it once, so an overlay that runs again (in a chain, on admission " +
		"reinvocation, on a re-render) does not grow the pod (`drop: [\"ALL\"]` stays one `\"ALL\"`). The key field of a list is `keys[path]`; else, when base is a pod (a dict whose kind " +
		"is Pod, or that has spec or metadata and no kind), the Kubernetes patch merge key of the field " +
		"(containers, env, volumes by name, volumeMounts by mountPath, ports by containerPort, ...); else " +
		"`keys[\"\"]`; else `\"name\"` for a list the Pod schema does not describe. Pod lists without a merge key " +
		"(tolerations, args, capabilities) gain the patch's items they lack; where repeats matter (args), " +
		"name the list in `lists` with `\"append\"` or `\"replace\"`. " +
		"`lists` may be a dict from field path to mode, and `keys` a dict from field " +
		"path to key field: `lists={\"spec.tolerations\": \"replace\", \"\": \"merge\"}`, " +
		"`keys={\"spec.tolerations\": \"key\"}`. Field paths are dotted, without indexes (`spec.containers.env`), " +
		"`\"\"` stands for every other list, and with a pod they must name list fields of a Pod.",
	Example: `base = {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}}
merge(base, {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "2"}, {"name": "Y", "value": "3"}]}]}})`,
	Result: `{"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "2"}, {"name": "Y", "value": "3"}]}]}}`,
}}

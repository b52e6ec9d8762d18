package scheduler

// This file defines the app spec types and their loading and validation.

import (
	"errors"
	"fmt"
	"github.com/starpod/starpod/internal/yamlfile"
	"io/fs"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/starpod/starpod/internal/bound"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// An App is an application of one or more roles, as written in an app spec file. It mirrors
// TorchX's AppDef.
type App struct {
	Name     string   `yaml:"name" json:"name"`
	Overlays []string `yaml:"overlays" json:"overlays,omitempty"` // relative to Dir
	Roles    []Role   `yaml:"roles" json:"roles"`

	// Dir is the directory that relative overlay paths are resolved against: the directory
	// of the spec file for LoadApp, the working directory for ParseApp. Unless
	// BuildOptions.OverlayRoot says otherwise, the overlay files must be inside it.
	Dir string `yaml:"-" json:"-"`
	// File is the spec's file name as given to LoadApp or ParseApp; errors name it.
	File string `yaml:"-" json:"-"`

	pos map[string]Position // field path → position in File, for errors found later
	// errs holds the problems ParseApp found, if it returned the app with them.
	errs *SpecError
}

// position returns the position in the spec file of the value at the field path p.
func (app *App) position(p *field.Path) Position {
	if app.pos == nil {
		return Position{}
	}
	return yamlfile.PositionOf(app.pos, p.String())
}

// A Role is a set of identical replicas, each run as one pod. It mirrors TorchX's Role.
type Role struct {
	Name        string         `yaml:"name" json:"name"`
	Image       string         `yaml:"image" json:"image"`
	Entrypoint  string         `yaml:"entrypoint" json:"entrypoint"`
	Args        []string       `yaml:"args" json:"args,omitempty"`
	Env         []EnvVar       `yaml:"env" json:"env,omitempty"`
	NumReplicas *int           `yaml:"num_replicas" json:"num_replicas,omitempty"` // nil means 1
	MinReplicas *int           `yaml:"min_replicas" json:"min_replicas,omitempty"` // nil: not elastic
	MaxRetries  int            `yaml:"max_retries" json:"max_retries,omitempty"`
	RetryPolicy RetryPolicy    `yaml:"retry_policy" json:"retry_policy,omitempty"` // "" means APPLICATION
	Resource    Resource       `yaml:"resource" json:"resource"`
	PortMap     map[string]int `yaml:"port_map" json:"port_map,omitempty"`
	Mounts      []Mount        `yaml:"mounts" json:"mounts,omitempty"`
	Metadata    Metadata       `yaml:"metadata" json:"metadata,omitzero"`
	Overlays    []string       `yaml:"overlays" json:"overlays,omitempty"` // relative to App.Dir
}

// Replicas returns the number of replicas of the role: NumReplicas, or 1 if it is not set.
func (r *Role) Replicas() int {
	if r.NumReplicas == nil {
		return 1
	}
	return *r.NumReplicas
}

// An EnvVar is one entry of a role's env mapping. The spec's order is kept.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// FieldPathPrefix marks an env value that is a reference to a field of the pod, such as
// "[FIELD_PATH]status.podIP"; it becomes valueFrom.fieldRef.
const FieldPathPrefix = "[FIELD_PATH]"

// RetryPolicy says what is restarted when a replica fails.
type RetryPolicy string

// The retry policies. ROLE, which TorchX names but does not implement, is rejected: Volcano
// can restart one task (a replica here) or the whole job, not a group of tasks.
const (
	RetryApplication RetryPolicy = "APPLICATION" // restart the whole job
	RetryReplica     RetryPolicy = "REPLICA"     // restart only the failed replica
	RetryRole        RetryPolicy = "ROLE"        // rejected
)

// A Resource is what each replica of a role needs. It mirrors TorchX's Resource.
type Resource struct {
	CPU          float64           `yaml:"cpu" json:"cpu"`
	GPU          int               `yaml:"gpu" json:"gpu,omitempty"`
	MemMB        int64             `yaml:"mem_mb" json:"mem_mb"`
	Devices      map[string]int    `yaml:"devices" json:"devices,omitempty"`
	Capabilities map[string]string `yaml:"capabilities" json:"capabilities,omitempty"`
}

// InstanceTypeLabel is the only capability the scheduler understands: it becomes a node
// selector.
const InstanceTypeLabel = "node.kubernetes.io/instance-type"

// The mount types.
const (
	MountBind   = "bind"   // a host path
	MountVolume = "volume" // a PersistentVolumeClaim named by Src
	MountDevice = "device" // a host device; makes the container privileged
)

// A Mount is a volume mounted into each replica's container.
type Mount struct {
	Type     string `yaml:"type" json:"type"`
	Src      string `yaml:"src" json:"src"`
	Dst      string `yaml:"dst" json:"dst,omitempty"`             // for device, defaults to Src
	ReadOnly bool   `yaml:"read_only" json:"read_only,omitempty"` // bind and volume only
	Perm     string `yaml:"perm" json:"perm,omitempty"`           // device only: letters of "rwm"; default "rwm"
}

// Metadata holds labels and annotations added to each replica's pod.
type Metadata struct {
	Labels      map[string]string `yaml:"labels" json:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations" json:"annotations,omitempty"`
}

// LoadApp reads, decodes and validates the app spec file at path. Relative overlay paths in
// the spec are resolved against the file's directory. It returns a *SpecError listing every
// problem, an *fs.PathError if the file cannot be read, a *bound.TypeError if it is not a
// regular file (a directory, a device, a named pipe), or a *bound.SizeError if it is larger
// than MaxSpecFile. Like [ParseApp], it returns the app decoded as far as it could be
// together with a *SpecError.
func LoadApp(path string) (*App, error) {
	data, err := readFile(path, MaxSpecFile, "app spec")
	if err != nil {
		return nil, err
	}
	app, err := ParseApp(path, data)
	if app != nil {
		app.Dir = filepath.Dir(path)
	}
	return app, err
}

// readFile is bound.ReadFile, whose *fs.PathError for a file it cannot look at says "open",
// as os.ReadFile's does: to the user, the file could not be opened.
func readFile(name string, limit int64, what string) ([]byte, error) {
	data, err := bound.ReadFile(name, limit, what)
	var perr *fs.PathError
	if errors.As(err, &perr) && perr.Op == "stat" {
		err = &fs.PathError{Op: "open", Path: perr.Path, Err: perr.Err}
	}
	return data, err
}

// ParseApp decodes and validates the app spec data, naming it name in errors. Relative
// overlay paths are left relative to the working directory (Dir is "."). It returns a
// *SpecError listing every problem. Data larger than MaxSpecFile is refused, and what YAML
// aliases add is bounded (see AliasFactor): an alias that passes the bound is the one
// problem reported.
//
// If the data is one YAML document, ParseApp returns the app decoded as far as it could be
// even with a *SpecError, as go/parser returns a partial syntax tree, and the app keeps the
// error: [Build] and [Render] report its problems together with those of the overlays the
// app names and of the app id, and build no job.
func ParseApp(name string, data []byte) (*App, error) {
	root, err := yamlfile.Parse(name, data, &yamlfile.Options{What: "app spec", MaxBytes: MaxSpecFile, NoEmpty: true})
	if err != nil {
		return nil, &SpecError{File: name, Errors: err.(*yamlfile.Error).Errors}
	}
	d := yamlfile.NewDecoder(root, "spec")
	d.Hooks = map[reflect.Type]func(*yamlfile.Decoder, *yaml.Node, reflect.Value, *field.Path){envVarsType: decodeEnv}
	app := &App{Dir: ".", File: name}
	d.Decode(root, reflect.ValueOf(app).Elem(), nil)
	// Check what was decoded too, so that every problem is reported at once, but leave out
	// what would only repeat a decoding error, and all of it if the aliases stopped the
	// decoding half-way.
	if !d.Stopped() {
		for _, err := range app.validate() {
			d.AddAt(err)
		}
	}
	errs := d.Errors()
	errs.Sort()
	app.pos = d.Positions()
	if len(errs) > 0 {
		app.errs = &SpecError{File: name, Errors: errs}
		return app, app.errs
	}
	return app, nil
}

// validate checks the decoded app and returns every problem.
func (app *App) validate() field.ErrorList {
	var errs field.ErrorList
	if app.Name == "" {
		errs = append(errs, field.Required(field.NewPath("name"), ""))
	} else if n := normalize(app.Name); n == "" {
		errs = append(errs, field.Invalid(field.NewPath("name"), app.Name,
			"want a name with at least one letter"))
	} else if len(n) > maxNameLen {
		// The normalised name is the value of two labels: refused, not cut where no one sees.
		errs = append(errs, field.Invalid(field.NewPath("name"), app.Name, fmt.Sprintf(
			"%d characters once normalised, want at most %d: it is the value of the %s and %s labels",
			len(n), maxNameLen, LabelName, LabelAppName)))
	}
	errs = append(errs, validateOverlays(app.Overlays, field.NewPath("overlays"))...)
	rolesPath := field.NewPath("roles")
	if len(app.Roles) == 0 {
		errs = append(errs, field.Required(rolesPath, "an app needs at least one role"))
	}
	names := make(map[string]bool)
	for i := range app.Roles {
		r := &app.Roles[i]
		p := rolesPath.Index(i)
		if names[r.Name] && r.Name != "" {
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		}
		names[r.Name] = true
		errs = append(errs, r.validate(p)...)
	}
	if err := app.validateTasks(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// validateOverlays checks the overlay paths of a spec: each names a file relative to the
// spec's directory. Whether it stays inside the overlay root is checked when it is read.
func validateOverlays(overlays []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, o := range overlays {
		switch {
		case o == "":
			errs = append(errs, field.Required(p.Index(i), "want a file name"))
		case filepath.IsAbs(o) || strings.HasPrefix(o, "/"):
			errs = append(errs, field.Invalid(p.Index(i), o, "want a path relative to the spec's directory"))
		}
	}
	return errs
}

// envFieldPaths are the pod fields that an env var can refer to (besides labels and
// annotations), as Kubernetes' validation allows them.
var envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// isEnvFieldPath reports whether an env var can refer to the pod field path.
func isEnvFieldPath(path string) bool {
	if slices.Contains(envFieldPaths, path) {
		return true
	}
	for _, prefix := range []string{"metadata.labels['", "metadata.annotations['"} {
		if key, ok := strings.CutPrefix(path, prefix); ok && strings.HasSuffix(key, "']") {
			return len(content.IsLabelKey(strings.TrimSuffix(key, "']"))) == 0
		}
	}
	return false
}

// maxReplicas bounds a role's replicas.
const maxReplicas = 1000

// maxRoleNameLen leaves room in a task name "<role>-<replica>" and in the job name.
const maxRoleNameLen = 40

// validName reports whether the role's name is one that validate accepts.
func (r *Role) validName() bool {
	return r.Name != "" && len(content.IsDNS1123Label(r.Name)) == 0 && len(r.Name) <= maxRoleNameLen
}

func (r *Role) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if msgs := content.IsDNS1123Label(r.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("name"), r.Name,
			"want a lower-case DNS label (a-z, 0-9 and '-', starting and ending with a letter or digit)"))
	} else if len(r.Name) > maxRoleNameLen {
		errs = append(errs, field.TooLong(p.Child("name"), r.Name, maxRoleNameLen))
	}
	if r.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	if r.Entrypoint == "" {
		errs = append(errs, field.Required(p.Child("entrypoint"), ""))
	}
	for i, a := range r.Args {
		if strings.Contains(a, "${") { // the path is made only for an arg that may need it
			errs = append(errs, checkMacros(a, p.Child("args").Index(i), true)...)
		}
	}
	for _, e := range r.Env {
		ep := p.Child("env").Key(e.Name)
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(ep, e.Name, msg))
		}
		if e.Name == Rank0HostEnv {
			errs = append(errs, field.Forbidden(ep, "starpod sets "+Rank0HostEnv+" for ${rank0_env}"))
		}
		if path, ok := strings.CutPrefix(e.Value, FieldPathPrefix); ok {
			if !isEnvFieldPath(path) {
				errs = append(errs, field.Invalid(ep, e.Value, "want "+FieldPathPrefix+" and a pod field that env can refer to: "+
					strings.Join(envFieldPaths, ", ")+", metadata.labels['KEY'] or metadata.annotations['KEY']"))
			}
			continue
		}
		errs = append(errs, checkMacros(e.Value, ep, false)...)
	}
	if r.NumReplicas != nil && *r.NumReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("num_replicas"), *r.NumReplicas, "must be >= 1"))
	} else if r.NumReplicas != nil && *r.NumReplicas > maxReplicas {
		errs = append(errs, field.Invalid(p.Child("num_replicas"), *r.NumReplicas,
			fmt.Sprintf("must be <= %d: each replica is a task of one Volcano Job, which must fit in one Kubernetes object", maxReplicas)))
	}
	if r.MinReplicas != nil {
		mp := p.Child("min_replicas")
		switch {
		case *r.MinReplicas < 1:
			errs = append(errs, field.Invalid(mp, *r.MinReplicas, "must be >= 1"))
		case *r.MinReplicas > r.Replicas() && r.Replicas() >= 1:
			errs = append(errs, field.Invalid(mp, *r.MinReplicas,
				fmt.Sprintf("must be <= num_replicas (%d)", r.Replicas())))
		}
	}
	if r.MaxRetries < 0 {
		errs = append(errs, field.Invalid(p.Child("max_retries"), r.MaxRetries, "must be >= 0"))
	}
	switch r.RetryPolicy {
	case "", RetryApplication, RetryReplica:
	case RetryRole:
		errs = append(errs, field.Invalid(p.Child("retry_policy"), string(r.RetryPolicy),
			"not supported: Volcano restarts one task or the whole job, not all the tasks of a role; "+
				"want REPLICA (restart the failed replica) or APPLICATION (restart every role)"))
	default:
		errs = append(errs, field.NotSupported(p.Child("retry_policy"), string(r.RetryPolicy),
			[]RetryPolicy{RetryApplication, RetryReplica}))
	}
	errs = append(errs, r.Resource.validate(p.Child("resource"))...)
	for _, name := range sortedKeys(r.PortMap) {
		pp := p.Child("port_map").Key(name)
		for _, msg := range validation.IsValidPortName(name) {
			errs = append(errs, field.Invalid(pp, name, "bad port name: "+msg))
		}
		for _, msg := range validation.IsValidPortNum(r.PortMap[name]) {
			errs = append(errs, field.Invalid(pp, r.PortMap[name], msg))
		}
	}
	dsts := make(map[string]bool)
	for i := range r.Mounts {
		errs = append(errs, r.Mounts[i].validate(p.Child("mounts").Index(i), dsts)...)
	}
	mp := p.Child("metadata")
	for _, k := range sortedKeys(r.Metadata.Labels) {
		kp := mp.Child("labels").Key(k)
		for _, msg := range content.IsLabelKey(k) {
			errs = append(errs, field.Invalid(kp, k, "bad label key: "+msg))
		}
		if strings.HasPrefix(k, "starpod.dev/") || strings.HasPrefix(k, "app.kubernetes.io/") {
			errs = append(errs, field.Forbidden(kp, "this label is set by starpod"))
		}
		if v := r.Metadata.Labels[k]; !strings.Contains(v, "${") {
			for _, msg := range content.IsLabelValue(v) {
				errs = append(errs, field.Invalid(kp, v, "bad label value: "+msg))
			}
		} else {
			// Checked in each replica's pod, once the macros are substituted.
			errs = append(errs, checkMacros(v, kp, false)...)
		}
	}
	for _, k := range sortedKeys(r.Metadata.Annotations) {
		kp := mp.Child("annotations").Key(k)
		for _, msg := range content.IsLabelKey(k) {
			errs = append(errs, field.Invalid(kp, k, "bad annotation key: "+msg))
		}
		errs = append(errs, checkMacros(r.Metadata.Annotations[k], kp, false)...)
	}
	errs = append(errs, validateOverlays(r.Overlays, p.Child("overlays"))...)
	return errs
}

// maxCPU is the largest cpu of a resource: a billion cores, far beyond any node, and far
// within the int64 count of millicores of a quantity.
const maxCPU = 1e9

func (res *Resource) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch mcpu := math.Round(res.CPU * 1000); {
	case math.IsInf(res.CPU, 0):
		errs = append(errs, field.Invalid(p.Child("cpu"), res.CPU, fmt.Sprintf("got %g, want a finite number", res.CPU)))
	case !(mcpu >= 1): // NaN too
		errs = append(errs, field.Invalid(p.Child("cpu"), res.CPU,
			fmt.Sprintf("got %g, want at least 0.001: the CPU limit is cpu*1000 millicores, rounded", res.CPU)))
	case res.CPU > maxCPU: // the millicores must fit in an int64 quantity
		errs = append(errs, field.Invalid(p.Child("cpu"), res.CPU, fmt.Sprintf("got %g, want at most %g", res.CPU, float64(maxCPU))))
	}
	if res.GPU < 0 {
		errs = append(errs, field.Invalid(p.Child("gpu"), res.GPU, "must be >= 0"))
	}
	if res.MemMB <= 0 {
		errs = append(errs, field.Invalid(p.Child("mem_mb"), res.MemMB, "must be > 0"))
	}
	for _, name := range sortedKeys(res.Devices) {
		dp := p.Child("devices").Key(name)
		if name == gpuDevice {
			errs = append(errs, field.Forbidden(dp,
				"set gpu instead: GPUs are requested and limited together, devices only limited"))
			continue
		}
		for _, msg := range content.IsLabelKey(name) {
			errs = append(errs, field.Invalid(dp, name, "bad resource name: "+msg))
		}
		if !strings.Contains(name, "/") {
			errs = append(errs, field.Invalid(dp, name, "want a vendor-prefixed name such as vpc.amazonaws.com/efa"))
		}
		if res.Devices[name] < 1 {
			errs = append(errs, field.Invalid(dp, res.Devices[name], "must be > 0"))
		}
	}
	for _, name := range sortedKeys(res.Capabilities) {
		cp := p.Child("capabilities").Key(name)
		if name != InstanceTypeLabel {
			errs = append(errs, field.NotSupported(cp, name, []string{InstanceTypeLabel}))
			continue
		}
		for _, msg := range content.IsLabelValue(res.Capabilities[name]) {
			errs = append(errs, field.Invalid(cp, res.Capabilities[name], "bad label value: "+msg))
		}
	}
	return errs
}

func (m *Mount) validate(p *field.Path, dsts map[string]bool) field.ErrorList {
	var errs field.ErrorList
	dst := m.Dst
	switch m.Type {
	case MountBind, MountVolume:
		if m.Perm != "" {
			errs = append(errs, field.Forbidden(p.Child("perm"), "only device mounts have perm"))
		}
		if m.Dst == "" {
			errs = append(errs, field.Required(p.Child("dst"), ""))
		}
	case MountDevice:
		if m.ReadOnly {
			errs = append(errs, field.Forbidden(p.Child("read_only"), "device mounts use perm"))
		}
		if strings.Trim(m.Perm, "rwm") != "" {
			errs = append(errs, field.Invalid(p.Child("perm"), m.Perm, `want letters of "rwm"`))
		}
		if dst == "" {
			dst = m.Src
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), "want bind, volume or device"))
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type,
			[]string{MountBind, MountVolume, MountDevice}))
	}
	switch {
	case m.Src == "":
		errs = append(errs, field.Required(p.Child("src"), ""))
	case m.Type == MountVolume:
		for _, msg := range content.IsDNS1123Subdomain(m.Src) {
			errs = append(errs, field.Invalid(p.Child("src"), m.Src, "bad claim name: "+msg))
		}
	case !filepath.IsAbs(m.Src):
		errs = append(errs, field.Invalid(p.Child("src"), m.Src, "want an absolute path"))
	}
	if dst != "" {
		dp := p.Child("dst")
		if !filepath.IsAbs(dst) {
			errs = append(errs, field.Invalid(dp, dst, "want an absolute path"))
		} else if filepath.Clean(dst) == shmPath {
			errs = append(errs, field.Forbidden(dp, shmPath+" is the pod's shared memory volume; change it with an overlay"))
		} else if dsts[filepath.Clean(dst)] {
			errs = append(errs, field.Duplicate(dp, dst))
		}
		dsts[filepath.Clean(dst)] = true
	}
	return errs
}

// sortedKeys returns the keys of m in order.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var envVarsType = reflect.TypeFor[[]EnvVar]()

// decodeEnv decodes a mapping of names to strings into []EnvVar, keeping the order.
func decodeEnv(d *yamlfile.Decoder, node *yaml.Node, v reflect.Value, path *field.Path) {
	if node.Kind != yaml.MappingNode {
		d.Add(node, field.TypeInvalid(path, nil, fmt.Sprintf("got %s, want mapping", yamlfile.KindName(node))))
		return
	}
	var env []EnvVar
	d.EachKey(node, path, path.Key, func(key string, _, val *yaml.Node) {
		val, ok := d.Follow(val, path.Key(key))
		if !ok {
			return
		}
		d.SetPosition(path.Key(key), val)
		if s, ok := d.Scalar(val, path.Key(key), "!!str", "string"); ok {
			env = append(env, EnvVar{Name: key, Value: s})
		}
	})
	v.Set(reflect.ValueOf(env))
}

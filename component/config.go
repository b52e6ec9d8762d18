package component

// This file defines the project config, .starpod.yaml, in the spirit of TorchX's .torchxconfig.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/internal/yamlfile"
	"github.com/starpod/starpod/scheduler"
)

// ConfigFile is the name of the project config in the working directory.
const ConfigFile = ".starpod.yaml"

// ConfigEnv is the environment variable that names the project config file instead.
const ConfigEnv = "STARPOD_CONFIG"

// MaxConfigFile bounds the size of a project config.
const MaxConfigFile = 1 << 20

// A Config is a project config:
//
//	run_options:              # per scheduler: the --cfg keys of "starpod runopts"
//	  kubernetes:
//	    queue: gpu
//	    namespace: ml
//	components:               # default arguments per component, by parameter name
//	  dist.ddp:
//	    image: team/torch:2.4
//	    j: 2x8
//	    env: {LOGLEVEL: INFO, CUDA_VISIBLE_DEVICES: "0,1"}  # a map stays a map
//	named_resources:          # more named resources for -h, in the shape of an app's resource
//	  team_a100:
//	    cpu: 32
//	    gpu: 4
//	    mem_mb: 262144
//	    capabilities: {node.kubernetes.io/instance-type: a2-highgpu-4g}
//	overlays: [spot.star]     # overlays applied to every app run, before --overlay-script
//
// It is read as an app spec is: strictly, each problem with its file:line:col and field
// path, unknown keys and component names with a did-you-mean, its size and what its aliases
// add bounded. Values on the command line win over the file, and the file over the builtin
// defaults.
type Config struct {
	RunOptions     map[string]map[string]any     `yaml:"run_options"`
	Components     map[string]map[string]any     `yaml:"components"`
	NamedResources map[string]scheduler.Resource `yaml:"named_resources"`
	// Overlays are relative to the file's directory, and must be inside it (or inside the
	// overlay root: see CheckOverlays).
	Overlays []string `yaml:"overlays"`

	// File is the path the config was read from; empty when there is none.
	File string `yaml:"-"`

	pos map[string]yamlfile.Position // where each field path's value is
}

// LoadConfig reads the project config: the file $STARPOD_CONFIG names if it is set (it must
// exist), else .starpod.yaml in the working directory if there is one. With neither it returns
// an empty Config. It returns a *ConfigError.
func LoadConfig() (*Config, error) {
	path, must := os.Getenv(ConfigEnv), true
	if path == "" {
		path, must = ConfigFile, false
	}
	data, err := bound.ReadFile(path, MaxConfigFile, "project config")
	if errors.Is(err, fs.ErrNotExist) && !must {
		return &Config{}, nil
	}
	var perr *fs.PathError
	if errors.As(err, &perr) && perr.Op == "stat" {
		err = &fs.PathError{Op: "open", Path: perr.Path, Err: perr.Err} // to the user, it could not be opened
	}
	if err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	return ParseConfig(path, data)
}

// ParseConfig decodes the project config data, read from the file named path, strictly, as
// an app spec is decoded, and checks its scheduler names, component names and overlay paths.
// It returns a *ConfigError whose Err is a *yamlfile.Error listing every problem.
func ParseConfig(path string, data []byte) (*Config, error) {
	fail := func(err error) error { return &ConfigError{File: path, Err: err} }
	root, err := yamlfile.Parse(path, data, &yamlfile.Options{What: "project config", MaxBytes: MaxConfigFile})
	if err != nil {
		return nil, fail(err)
	}
	c := &Config{File: path}
	if root == nil {
		return c, nil
	}
	d := yamlfile.NewDecoder(root, "config")
	d.Decode(root, reflect.ValueOf(c).Elem(), nil)
	c.pos = d.Positions()
	if !d.Stopped() {
		for _, err := range c.validate() {
			d.AddAt(err)
		}
	}
	if errs := d.Errors(); len(errs) > 0 {
		errs.Sort()
		return nil, fail(&yamlfile.Error{File: path, Errors: errs})
	}
	return c, nil
}

// validate checks the decoded config: its schedulers and component names, and that no
// overlay path is empty (CheckOverlays checks where they lead).
func (c *Config) validate() field.ErrorList {
	var errs field.ErrorList
	for _, s := range sortedKeys(c.RunOptions) {
		if scheduler.OptionsOf(s) == nil {
			errs = append(errs, field.NotSupported(field.NewPath("run_options").Key(s), s, scheduler.Schedulers))
		}
	}
	builtins := BuiltinNames()
	for _, name := range sortedKeys(c.Components) {
		p := field.NewPath("components").Key(name)
		switch {
		case strings.Contains(name, ".star:"):
			// FILE.star:FUNCTION: the file is read when the component runs.
		case IsComponent(name) && slices.Contains(builtins, name):
		default:
			detail := "unknown component; want a builtin (" + strings.Join(builtins, ", ") + ") or FILE.star:FUNCTION"
			if near := spell.Nearest(name, builtins); near != "" {
				detail = fmt.Sprintf("unknown component; did you mean %q?", near)
			}
			errs = append(errs, field.Invalid(p, nil, detail))
		}
	}
	for i, o := range c.Overlays {
		p := field.NewPath("overlays").Index(i)
		switch {
		case o == "":
			errs = append(errs, field.Required(p, "want a file name"))
		}
	}
	return errs
}

// CheckOverlays checks that each overlay of the config is a relative path inside root, the directory the
// overlays of an app spec must be in (--overlay-root), or the config's directory when root
// is empty, symbolic links included, without reading any. It returns a *ConfigError.
func (c *Config) CheckOverlays(root string) error {
	if len(c.Overlays) == 0 {
		return nil
	}
	where := "the overlay root " + root
	if root == "" {
		root = filepath.Dir(c.File)
		where = "the config's directory " + root
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return &ConfigError{File: c.File, Err: err}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return &ConfigError{File: c.File, Err: err}
	}
	defer r.Close()
	var errs yamlfile.FieldErrors
	for i, path := range c.OverlayPaths() {
		p := field.NewPath("overlays").Index(i)
		if filepath.IsAbs(c.Overlays[i]) || strings.HasPrefix(c.Overlays[i], "/") {
			errs = append(errs, &yamlfile.FieldError{Pos: yamlfile.PositionOf(c.pos, p.String()),
				Err: field.Invalid(p, c.Overlays[i], "want a path relative to the config's directory")})
			continue
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return &ConfigError{File: c.File, Err: err}
		}
		rel, err := filepath.Rel(absRoot, abs)
		outside := err != nil || !filepath.IsLocal(rel)
		if !outside {
			// os.Root refuses a symbolic link that leads out; a missing file is
			// reported when the overlay is read.
			if _, err := r.Stat(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
				_, serr := os.Stat(path)
				outside = serr == nil
			}
		}
		if outside {
			errs = append(errs, &yamlfile.FieldError{Pos: yamlfile.PositionOf(c.pos, p.String()),
				Err: field.Invalid(p, c.Overlays[i], "want a file inside "+where)})
		}
	}
	if len(errs) > 0 {
		return &ConfigError{File: c.File, Err: &yamlfile.Error{File: c.File, Errors: errs}}
	}
	return nil
}

// FieldError returns a *ConfigError for the problem detail of the value at the field path
// p, at the line and column of that value: "file:line:col: p: detail".
func (c *Config) FieldError(p *field.Path, detail string) error {
	fe := &yamlfile.FieldError{Pos: c.Position(p.String()), Err: field.Invalid(p, nil, detail)}
	return &ConfigError{File: c.File, Err: &yamlfile.Error{File: c.File, Errors: yamlfile.FieldErrors{fe}}}
}

// Position returns where the value of the field path p (such as run_options.kubernetes) is
// written in the file, or of its nearest ancestor; the zero Position if unknown.
func (c *Config) Position(p string) yamlfile.Position {
	if c.pos == nil {
		return yamlfile.Position{}
	}
	return yamlfile.PositionOf(c.pos, p)
}

// A ConfigError is a project config that cannot be read or decoded.
type ConfigError struct {
	File string
	Err  error
}

func (e *ConfigError) Error() string {
	var ye *yamlfile.Error
	if errors.As(e.Err, &ye) {
		return ye.Error() // each problem names the file, line and column
	}
	return e.File + ": " + e.Err.Error()
}
func (e *ConfigError) Unwrap() error { return e.Err }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Settings returns the run options of the scheduler as --cfg settings, sorted by key.
func (c *Config) Settings(schedulerName string) []string {
	opts := c.RunOptions[schedulerName]
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, k+"="+flagText(opts[k]))
	}
	return out
}

// ComponentArgs returns the default arguments of the component name as text, to show them:
// a list as a,b,c and a map as K=V,K=V. ParseArgs takes the values themselves.
func (c *Config) ComponentArgs(name string) map[string]string {
	args := c.Components[name]
	if len(args) == 0 {
		return nil
	}
	out := make(map[string]string, len(args))
	for k, v := range args {
		out[k] = flagText(v)
	}
	return out
}

// OverlayPaths returns the config's overlays, relative to the working directory.
func (c *Config) OverlayPaths() []string {
	var out []string
	for _, o := range c.Overlays {
		if !filepath.IsAbs(o) && c.File != "" {
			o = filepath.Join(filepath.Dir(c.File), o)
		}
		out = append(out, o)
	}
	return out
}

// flagText writes a YAML value as the command line would give it: a list as a,b,c and a map
// as K=V,K=V (sorted).
func flagText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = flagText(x)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + flagText(v[k])
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

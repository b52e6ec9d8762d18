package component

// This file defines the project config, .starpod.yaml, in the spirit of TorchX's .torchxconfig.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/internal/bound"
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
//	components:               # default arguments per component, as on the command line
//	  dist.ddp:
//	    image: team/torch:2.4
//	    j: 2x8
//	    env: {LOGLEVEL: INFO}  # or "LOGLEVEL=INFO"
//	named_resources:          # more named resources for -h, in the shape of an app's resource
//	  team_a100:
//	    cpu: 32
//	    gpu: 4
//	    mem_mb: 262144
//	    capabilities: {node.kubernetes.io/instance-type: a2-highgpu-4g}
//	overlays: [spot.star]     # overlays applied to every app run, before --overlay-script
//
// Values on the command line win over the file, and the file over the builtin defaults.
type Config struct {
	RunOptions     map[string]map[string]any     `json:"run_options,omitempty"`
	Components     map[string]map[string]any     `json:"components,omitempty"`
	NamedResources map[string]scheduler.Resource `json:"named_resources,omitempty"`
	Overlays       []string                      `json:"overlays,omitempty"` // relative to the file's directory

	// File is the path the config was read from; empty when there is none.
	File string `json:"-"`
}

// LoadConfig reads the project config: the file $STARPOD_CONFIG names if it is set (it must
// exist), else .starpod.yaml in the working directory if there is one. With neither it returns
// an empty Config. Unknown keys are errors (strict decoding). It returns a *ConfigError.
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

// ParseConfig decodes the project config data, read from the file named path, strictly.
// It returns a *ConfigError.
func ParseConfig(path string, data []byte) (*Config, error) {
	c := &Config{}
	if err := yaml.UnmarshalStrict(data, c); err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	c.File = path
	for s := range c.RunOptions {
		if scheduler.OptionsOf(s) == nil {
			return nil, &ConfigError{File: path, Err: fmt.Errorf("run_options: unknown scheduler %q, want %s", s, strings.Join(scheduler.Schedulers, " or "))}
		}
	}
	for name := range c.Components {
		if !IsComponent(name) {
			return nil, &ConfigError{File: path, Err: fmt.Errorf("components: %q is not a component name (a builtin such as dist.ddp, or FILE.star:FUNCTION)", name)}
		}
	}
	for i, o := range c.Overlays {
		if o == "" {
			return nil, &ConfigError{File: path, Err: fmt.Errorf("overlays[%d]: want a file name", i)}
		}
	}
	return c, nil
}

// A ConfigError is a project config that cannot be read or decoded.
type ConfigError struct {
	File string
	Err  error
}

func (e *ConfigError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

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

// ComponentArgs returns the default arguments of the component name, as command line values.
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

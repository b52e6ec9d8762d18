package scheduler

// This file defines the scheduler's run options (the --cfg keys).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/starpod/starpod/internal/spell"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Config holds the run options of the Kubernetes scheduler. Start from DefaultConfig; the
// zero Config is not valid (Build rejects an empty namespace, queue or scheduler name).
type Config struct {
	Namespace        string
	Queue            string
	ServiceAccount   string
	PriorityClass    string
	SchedulerName    string
	ReservedMilliCPU int64
	ReservedMemMB    int64
	// EFADeviceCount, when set, overrides every role's vpc.amazonaws.com/efa device count;
	// 0 removes the device.
	EFADeviceCount *int64
}

// EFADevice is the resource name of AWS Elastic Fabric Adapter devices.
const EFADevice = "vpc.amazonaws.com/efa"

// A ConfigOption describes one run option: its key, its default as text ("" for none) and
// its help. ConfigOptions drives both ParseConfig and "starpod runopts".
type ConfigOption struct {
	Name    string
	Default string
	Help    string
	set     func(c *Config, value string) error
}

// ConfigOptions lists the run options in the order "starpod runopts" shows them.
var ConfigOptions = []ConfigOption{
	{"namespace", "default", "Kubernetes namespace of the job", func(c *Config, v string) error {
		c.Namespace = v
		return dnsLabel(v)
	}},
	{"queue", "default", "Volcano queue to submit the job to", func(c *Config, v string) error {
		c.Queue = v
		return dnsSubdomain(v)
	}},
	{"service_account", "", "service account of every pod", func(c *Config, v string) error {
		c.ServiceAccount = v
		return dnsSubdomain(v)
	}},
	{"priority_class", "", "priority class of the job and of every pod", func(c *Config, v string) error {
		c.PriorityClass = v
		return dnsSubdomain(v)
	}},
	{"scheduler_name", "volcano", "Kubernetes scheduler that places the pods", func(c *Config, v string) error {
		c.SchedulerName = v
		return dnsSubdomain(v)
	}},
	{"reserved_millicpu", "100", "CPU (millicores) left for the node's agents: request = limit - this, at least 0",
		func(c *Config, v string) error { return parseNonNegative(v, &c.ReservedMilliCPU) }},
	{"reserved_memmb", "1024", "memory (MB) left for the node's agents: request = limit - this, at least 0",
		func(c *Config, v string) error { return parseNonNegative(v, &c.ReservedMemMB) }},
	{"efa_device_count", "", "EFA devices (" + EFADevice + ") for every role: 0 removes them; unset keeps each role's own",
		func(c *Config, v string) error {
			var n int64
			if err := parseNonNegative(v, &n); err != nil {
				return err
			}
			c.EFADeviceCount = &n
			return nil
		}},
}

// DefaultConfig returns the Config of the defaults in ConfigOptions.
func DefaultConfig() Config {
	var c Config
	for _, o := range ConfigOptions {
		if o.Default != "" {
			if err := o.set(&c, o.Default); err != nil {
				panic(fmt.Sprintf("scheduler: bad default of %s: %v", o.Name, err))
			}
		}
	}
	return c
}

// A Setting is one key=value pair of the --cfg settings.
type Setting struct {
	Key, Value string
}

// SplitSettings splits --cfg settings, each a comma-separated list of key=value pairs as in
// --cfg namespace=ml,queue=gpu, into their pairs in order. It does not check the keys.
func SplitSettings(settings []string) ([]Setting, error) {
	var pairs []Setting
	for _, setting := range settings {
		for _, kv := range strings.Split(setting, ",") {
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("cfg %q: got no value, want key=value", kv)
			}
			pairs = append(pairs, Setting{Key: strings.TrimSpace(k), Value: v})
		}
	}
	return pairs, nil
}

// ParseConfig returns DefaultConfig with the settings applied (see [SplitSettings]). An
// unknown key is an error with a did-you-mean hint.
func ParseConfig(settings []string) (Config, error) {
	c := DefaultConfig()
	pairs, err := SplitSettings(settings)
	if err != nil {
		return c, err
	}
	names := make([]string, len(ConfigOptions))
	for i, o := range ConfigOptions {
		names[i] = o.Name
	}
	for _, kv := range pairs {
		o := findOption(kv.Key)
		if o == nil {
			msg := fmt.Sprintf("unknown cfg key %q", kv.Key)
			if near := spell.Nearest(kv.Key, names); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			return c, fmt.Errorf("%s (see starpod runopts kubernetes)", msg)
		}
		if err := o.set(&c, kv.Value); err != nil {
			return c, fmt.Errorf("cfg %s: %w", kv.Key, err)
		}
	}
	return c, nil
}

func findOption(name string) *ConfigOption {
	for i := range ConfigOptions {
		if ConfigOptions[i].Name == name {
			return &ConfigOptions[i]
		}
	}
	return nil
}

// validate checks a Config built by hand.
func (c *Config) validate() []error {
	var errs []error
	check := func(name, v string, f func(string) error, required bool) {
		if v == "" {
			if required {
				errs = append(errs, fmt.Errorf("cfg %s: required", name))
			}
			return
		}
		if err := f(v); err != nil {
			errs = append(errs, fmt.Errorf("cfg %s: %w", name, err))
		}
	}
	check("namespace", c.Namespace, dnsLabel, true)
	check("queue", c.Queue, dnsSubdomain, true)
	check("scheduler_name", c.SchedulerName, dnsSubdomain, true)
	check("service_account", c.ServiceAccount, dnsSubdomain, false)
	check("priority_class", c.PriorityClass, dnsSubdomain, false)
	if c.ReservedMilliCPU < 0 {
		errs = append(errs, fmt.Errorf("cfg reserved_millicpu: got %d, want >= 0", c.ReservedMilliCPU))
	}
	if c.ReservedMemMB < 0 {
		errs = append(errs, fmt.Errorf("cfg reserved_memmb: got %d, want >= 0", c.ReservedMemMB))
	}
	if c.EFADeviceCount != nil && *c.EFADeviceCount < 0 {
		errs = append(errs, fmt.Errorf("cfg efa_device_count: got %d, want >= 0", *c.EFADeviceCount))
	}
	return errs
}

func parseNonNegative(v string, out *int64) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("got %q, want an integer >= 0", v)
	}
	*out = n
	return nil
}

func dnsLabel(v string) error {
	if msgs := content.IsDNS1123Label(v); len(msgs) > 0 {
		return fmt.Errorf("got %q, want a DNS label: %s", v, msgs[0])
	}
	return nil
}

func dnsSubdomain(v string) error {
	if msgs := content.IsDNS1123Subdomain(v); len(msgs) > 0 {
		return fmt.Errorf("got %q, want a DNS subdomain: %s", v, msgs[0])
	}
	return nil
}

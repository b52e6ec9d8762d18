package scheduler

// This file defines the scheduler's run options (the --cfg keys).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/starpod/starpod/internal/spell"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Config holds the run options of a scheduler: the Kubernetes (Volcano) scheduler's, listed
// in ConfigOptions, or JobSet's, listed in JobSetConfigOptions, which share their keys and
// differ in defaults and meaning (see [OptionsOf]). Start from DefaultConfig or
// DefaultConfigFor; the zero Config is not valid for Build (which rejects an empty namespace,
// queue or scheduler name), only for BuildJobSet with a namespace.
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

// JobSetConfigOptions lists the run options of the JobSet scheduler ("starpod runopts
// jobset"): the keys of ConfigOptions, with JobSet's and Kueue's meaning of queue,
// priority_class and scheduler_name, which have no default.
var JobSetConfigOptions = jobSetOptions()

func jobSetOptions() []ConfigOption {
	opts := append([]ConfigOption(nil), ConfigOptions...)
	for i := range opts {
		switch o := &opts[i]; o.Name {
		case "namespace":
			o.Help = "Kubernetes namespace of the JobSet"
		case "queue":
			o.Default, o.Help = "", "Kueue LocalQueue (label "+LabelKueueQueue+"); the JobSet is created suspended for Kueue to admit"
		case "priority_class":
			o.Help = "Kueue WorkloadPriorityClass of the JobSet (label " + LabelKueuePriorityClass + "); pods get no priorityClassName"
		case "scheduler_name":
			o.Default, o.Help = "", "Kubernetes scheduler that places the pods; unset: the cluster's default"
		}
	}
	return opts
}

// OptionsOf returns the run options of the scheduler named sched: SchedulerKubernetes
// (ConfigOptions) or SchedulerJobSet (JobSetConfigOptions). It returns nil for any other name.
func OptionsOf(sched string) []ConfigOption {
	switch sched {
	case SchedulerKubernetes:
		return ConfigOptions
	case SchedulerJobSet:
		return JobSetConfigOptions
	}
	return nil
}

// Schedulers are the names of the schedulers, in the order "starpod runopts" lists them.
var Schedulers = []string{SchedulerKubernetes, SchedulerJobSet}

// DefaultConfig returns the Config of the defaults in ConfigOptions.
func DefaultConfig() Config { return DefaultConfigFor(SchedulerKubernetes) }

// DefaultConfigFor returns the Config of the defaults of the run options of the scheduler
// sched (see OptionsOf).
func DefaultConfigFor(sched string) Config {
	var c Config
	for _, o := range OptionsOf(sched) {
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
	return ParseConfigFor(SchedulerKubernetes, settings)
}

// ParseConfigFor is ParseConfig for the run options of the scheduler sched (see OptionsOf).
func ParseConfigFor(sched string, settings []string) (Config, error) {
	options := OptionsOf(sched)
	if options == nil {
		return Config{}, fmt.Errorf("unknown scheduler %q, want %s", sched, strings.Join(Schedulers, " or "))
	}
	c := DefaultConfigFor(sched)
	pairs, err := SplitSettings(settings)
	if err != nil {
		return c, err
	}
	names := make([]string, len(options))
	for i, o := range options {
		names[i] = o.Name
	}
	for _, kv := range pairs {
		o := findOption(options, kv.Key)
		if o == nil {
			msg := fmt.Sprintf("unknown cfg key %q", kv.Key)
			if near := spell.Nearest(kv.Key, names); near != "" {
				msg += fmt.Sprintf("; did you mean %q?", near)
			}
			return c, fmt.Errorf("%s (see starpod runopts %s)", msg, sched)
		}
		if err := o.set(&c, kv.Value); err != nil {
			return c, fmt.Errorf("cfg %s: %w", kv.Key, err)
		}
	}
	return c, nil
}

func findOption(options []ConfigOption, name string) *ConfigOption {
	for i := range options {
		if options[i].Name == name {
			return &options[i]
		}
	}
	return nil
}

// validate checks a Config built by hand for the Kubernetes scheduler.
func (c *Config) validate() []error { return c.validateFor(SchedulerKubernetes) }

// validateFor checks a Config built by hand for the scheduler sched: Volcano needs a queue
// and a scheduler name, JobSet neither.
func (c *Config) validateFor(sched string) []error {
	volcano := sched == SchedulerKubernetes
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
	check("queue", c.Queue, dnsSubdomain, volcano)
	check("scheduler_name", c.SchedulerName, dnsSubdomain, volcano)
	check("service_account", c.ServiceAccount, dnsSubdomain, false)
	check("priority_class", c.PriorityClass, dnsSubdomain, false)
	if !volcano {
		// Kueue's queue and priority class are label values.
		check("queue", c.Queue, checkLabelValue, false)
		check("priority_class", c.PriorityClass, checkLabelValue, false)
	}
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

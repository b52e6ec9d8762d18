// Package validate checks a pod as the API server would before it stores it: what the
// strict schema check of package convert cannot see. It is the one set of these checks that
// starpod has: "starpod apply" and the engine (engine.Options.Validation) check the pods the
// overlays return with it, and package scheduler the pod of every task.
//
// To check a pod, use [Pod]; to check the pod template of a workload (a Job's, a
// Deployment's, a Volcano task's), whose name and namespace the controller sets, use [Pod]
// with Options.Template, and Options.Unnamed to forbid it a name and a namespace. A [Cache] remembers the problems of the label keys and values and
// the DNS labels that many pods share, which are the dearest part of the checks.
//
// What is checked: the name and namespace (when set, and not for a template), label and
// annotation keys and label values, node selector labels, toleration keys, operators and
// effects, volume and container names (DNS labels, unique), a
// container for every pod, an image for every container, volume mounts of known volumes, the
// enumerations restartPolicy, dnsPolicy, imagePullPolicy and port protocol, port names and
// numbers, env names and env entries with both a value and a source, and requests not above
// limits (equal for resources that cannot be overcommitted). These are the checks that
// matter most for overlays, not the whole of the API server's validation.
package validate

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Options says which variant of the checks to run. The zero value checks a whole pod.
type Options struct {
	// Template checks a pod template: its name and namespace are not checked, as the
	// controller that makes pods of it sets them.
	Template bool

	// Unnamed checks the rule of a workload's pod template that the controller names and
	// places its pods: a name or a namespace other than InName and InNamespace, those the
	// template came with (the API server keeps and ignores them), is Forbidden. It is apart
	// from Template because a caller may say so in words of its own (a scheduler whose pods
	// Volcano names).
	Unnamed             bool
	InName, InNamespace string

	// SkipLabels are labels checked already (a scheduler's bookkeeping labels): a label of
	// the pod with the same key and value is not checked again.
	SkipLabels map[string]string

	// Cache remembers the problems of names across calls. Nil uses none.
	Cache *Cache
}

// A Cache remembers the problems of the label keys and values, the DNS labels (volume and
// container names), and the env and port names that pods had, which are mostly the same in
// many pods. It holds at most maxCached names, so that a long-lived process that sees names
// without end (a label unique to each pod) does not grow with them. It is safe for
// concurrent use; its zero value is empty and ready.
type Cache struct {
	keys, values, dns, env, ports sync.Map // string → []string, the problems
	n                             atomic.Int64
}

// maxCached bounds the names a Cache holds.
const maxCached = 50_000

func (c *Cache) check(m *sync.Map, s string, check func(string) []string) []string {
	if c == nil {
		return check(s)
	}
	if msgs, ok := m.Load(s); ok {
		return msgs.([]string)
	}
	msgs := check(s)
	if c.n.Add(1) <= maxCached {
		m.Store(s, msgs)
	}
	return msgs
}

func (c *Cache) labelKey(k string) []string {
	if c == nil {
		return content.IsLabelKey(k)
	}
	return c.check(&c.keys, k, content.IsLabelKey)
}

func (c *Cache) labelValue(v string) []string {
	if c == nil {
		return content.IsLabelValue(v)
	}
	return c.check(&c.values, v, content.IsLabelValue)
}

func (c *Cache) dnsLabel(s string) []string {
	if c == nil {
		return content.IsDNS1123Label(s)
	}
	return c.check(&c.dns, s, content.IsDNS1123Label)
}

func (c *Cache) envName(s string) []string {
	if c == nil {
		return validation.IsEnvVarName(s)
	}
	return c.check(&c.env, s, validation.IsEnvVarName)
}

func (c *Cache) portName(s string) []string {
	if c == nil {
		return validation.IsValidPortName(s)
	}
	return c.check(&c.ports, s, validation.IsValidPortName)
}

// The values of the enumerated pod fields. An empty value is left for the API server to
// default.
var (
	RestartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	DNSPolicies     = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	PullPolicies    = []corev1.PullPolicy{corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent}
	Protocols       = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

	TolerationOperators = []corev1.TolerationOperator{corev1.TolerationOpExists, corev1.TolerationOpEqual}
	TaintEffects        = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
)

// Pod checks pod and returns every problem with its field path (metadata.name,
// spec.containers[0].image, ...), in the order of the fields. opts may be nil.
func Pod(pod *corev1.Pod, opts *Options) field.ErrorList {
	if opts == nil {
		opts = &Options{}
	}
	c := opts.Cache
	var errs field.ErrorList
	// Paths are made for the errors only: a pod that passes makes none.
	meta := func() *field.Path { return field.NewPath("metadata") }
	if opts.Unnamed {
		if pod.Name != opts.InName {
			errs = append(errs, field.Forbidden(meta().Child("name"), fmt.Sprintf("a pod template has no name: got %q", pod.Name)))
		}
		if pod.Namespace != opts.InNamespace {
			errs = append(errs, field.Forbidden(meta().Child("namespace"), fmt.Sprintf("a pod template has no namespace: got %q", pod.Namespace)))
		}
	}
	if !opts.Template {
		if pod.Name != "" {
			for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
				errs = append(errs, field.Invalid(meta().Child("name"), pod.Name, msg))
			}
		}
		if pod.Namespace != "" {
			for _, msg := range c.dnsLabel(pod.Namespace) {
				errs = append(errs, field.Invalid(meta().Child("namespace"), pod.Namespace, msg))
			}
		}
	}
	for _, k := range sortedKeys(pod.Labels) {
		if v, ok := opts.SkipLabels[k]; ok && v == pod.Labels[k] {
			continue
		}
		for _, msg := range c.labelKey(k) {
			errs = append(errs, field.Invalid(meta().Child("labels").Key(k), k, msg))
		}
		for _, msg := range c.labelValue(pod.Labels[k]) {
			errs = append(errs, field.Invalid(meta().Child("labels").Key(k), pod.Labels[k], msg))
		}
	}
	for _, k := range sortedKeys(pod.Annotations) {
		for _, msg := range c.labelKey(k) {
			errs = append(errs, field.Invalid(meta().Child("annotations").Key(k), k, msg))
		}
	}
	spec := func() *field.Path { return field.NewPath("spec") }
	volumes := make(map[string]bool, len(pod.Spec.Volumes))
	for i, v := range pod.Spec.Volumes {
		p := func() *field.Path { return spec().Child("volumes").Index(i).Child("name") }
		for _, msg := range c.dnsLabel(v.Name) {
			errs = append(errs, field.Invalid(p(), v.Name, msg))
		}
		if volumes[v.Name] {
			errs = append(errs, field.Duplicate(p(), v.Name))
		}
		volumes[v.Name] = true
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec().Child("containers"), "a pod needs a container"))
	}
	names := make(map[string]bool, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		p := func() *field.Path { return spec().Child("initContainers").Index(i) }
		errs = append(errs, container(p, &pod.Spec.InitContainers[i], names, volumes, c)...)
	}
	for i := range pod.Spec.Containers {
		p := func() *field.Path { return spec().Child("containers").Index(i) }
		errs = append(errs, container(p, &pod.Spec.Containers[i], names, volumes, c)...)
	}
	for _, k := range sortedKeys(pod.Spec.NodeSelector) {
		p := func() *field.Path { return spec().Child("nodeSelector").Key(k) }
		for _, msg := range c.labelKey(k) {
			errs = append(errs, field.Invalid(p(), k, msg))
		}
		for _, msg := range c.labelValue(pod.Spec.NodeSelector[k]) {
			errs = append(errs, field.Invalid(p(), pod.Spec.NodeSelector[k], msg))
		}
	}
	for i, t := range pod.Spec.Tolerations {
		p := func() *field.Path { return spec().Child("tolerations").Index(i) }
		if t.Key != "" {
			for _, msg := range c.labelKey(t.Key) {
				errs = append(errs, field.Invalid(p().Child("key"), t.Key, msg))
			}
		}
		if t.Operator != "" && !slices.Contains(TolerationOperators, t.Operator) {
			errs = append(errs, field.NotSupported(p().Child("operator"), t.Operator, TolerationOperators))
		}
		if t.Effect != "" && !slices.Contains(TaintEffects, t.Effect) {
			errs = append(errs, field.NotSupported(p().Child("effect"), t.Effect, TaintEffects))
		}
	}
	if p := pod.Spec.RestartPolicy; p != "" && !slices.Contains(RestartPolicies, p) {
		errs = append(errs, field.NotSupported(spec().Child("restartPolicy"), p, RestartPolicies))
	}
	if p := pod.Spec.DNSPolicy; p != "" && !slices.Contains(DNSPolicies, p) {
		errs = append(errs, field.NotSupported(spec().Child("dnsPolicy"), p, DNSPolicies))
	}
	return errs
}

// container checks the container c at the path p gives (made only for an error); names holds
// the names of the pod's containers so far, and volumes those of its volumes.
func container(p func() *field.Path, c *corev1.Container, names, volumes map[string]bool, cache *Cache) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range cache.dnsLabel(c.Name) {
		errs = append(errs, field.Invalid(p().Child("name"), c.Name, msg))
	}
	if names[c.Name] {
		errs = append(errs, field.Duplicate(p().Child("name"), c.Name))
	}
	names[c.Name] = true
	if c.Image == "" {
		errs = append(errs, field.Required(p().Child("image"), "every container needs an image"))
	}
	for i, vm := range c.VolumeMounts {
		if !volumes[vm.Name] {
			errs = append(errs, field.Invalid(p().Child("volumeMounts").Index(i).Child("name"), vm.Name,
				"want the name of one of the pod's volumes"))
		}
	}
	if c.ImagePullPolicy != "" && !slices.Contains(PullPolicies, c.ImagePullPolicy) {
		errs = append(errs, field.NotSupported(p().Child("imagePullPolicy"), c.ImagePullPolicy, PullPolicies))
	}
	var ports map[string]bool // the names so far
	for i, port := range c.Ports {
		pp := func() *field.Path { return p().Child("ports").Index(i) }
		if port.Name != "" {
			for _, msg := range cache.portName(port.Name) {
				errs = append(errs, field.Invalid(pp().Child("name"), port.Name, msg))
			}
			if ports[port.Name] {
				errs = append(errs, field.Duplicate(pp().Child("name"), port.Name))
			}
			if ports == nil {
				ports = make(map[string]bool, len(c.Ports))
			}
			ports[port.Name] = true
		}
		for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(pp().Child("containerPort"), port.ContainerPort,
				fmt.Sprintf("got %d, %s", port.ContainerPort, msg)))
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(pp().Child("hostPort"), port.HostPort,
					fmt.Sprintf("got %d, %s (or 0 for none)", port.HostPort, msg)))
			}
		}
		if port.Protocol != "" && !slices.Contains(Protocols, port.Protocol) {
			errs = append(errs, field.NotSupported(pp().Child("protocol"), port.Protocol, Protocols))
		}
	}
	for i, e := range c.Env {
		ep := func() *field.Path { return p().Child("env").Index(i) }
		if e.Name == "" {
			errs = append(errs, field.Required(ep().Child("name"), ""))
		} else {
			for _, msg := range cache.envName(e.Name) {
				errs = append(errs, field.Invalid(ep().Child("name"), e.Name, msg))
			}
		}
		if e.Value != "" && e.ValueFrom != nil {
			errs = append(errs, field.Invalid(ep().Child("valueFrom"), nil, "got both value and valueFrom, want one"))
		}
	}
	errs = append(errs, resources(&c.Resources, p)...)
	return errs
}

// Resources checks that no request of a container is above its limit, and that a resource
// that cannot be overcommitted (a device, hugepages) has a limit equal to its request, as the
// API server does. p is the container's path.
func Resources(res *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	return resources(res, func() *field.Path { return p })
}

// resources is Resources with the path that p gives, made only for an error.
func resources(res *corev1.ResourceRequirements, path func() *field.Path) field.ErrorList {
	var errs field.ErrorList
	p := func(fields ...string) *field.Path { return path().Child("resources", fields...) }
	for _, name := range sortedKeys(res.Requests) {
		req := res.Requests[name]
		lim, ok := res.Limits[name]
		switch {
		case !ok && !OvercommitAllowed(name):
			errs = append(errs, field.Required(p("limits").Key(string(name)),
				fmt.Sprintf("%s cannot be overcommitted: want a limit equal to the request %s", name, req.String())))
		case !ok:
		case !OvercommitAllowed(name) && req.Cmp(lim) != 0:
			errs = append(errs, field.Invalid(p("requests").Key(string(name)), req.String(),
				fmt.Sprintf("want the limit %s: %s cannot be overcommitted", lim.String(), name)))
		case req.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(p("requests").Key(string(name)), req.String(),
				fmt.Sprintf("want at most the limit %s", lim.String())))
		}
	}
	return errs
}

// OvercommitAllowed reports whether a container may request less of the resource than its
// limit: as for Kubernetes, native resources (no domain, or kubernetes.io/) other than
// hugepages.
func OvercommitAllowed(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.HasPrefix(s, corev1.ResourceDefaultNamespacePrefix)
	return native && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
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

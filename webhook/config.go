package webhook

// This file defines the WebhookConfig file, its checks, and how its rules become compiled
// overlays.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/spell"
	"github.com/starpod/starpod/internal/workload"
	"github.com/starpod/starpod/internal/yamlfile"
)

// APIVersion and Kind identify a webhook config file.
const (
	APIVersion = "starpod.dev/v1alpha1"
	Kind       = "WebhookConfig"
)

// maxConfig bounds the size of a config file.
const maxConfig = 1 << 20

// A Config is the webhook's configuration: rules that select overlays per admitted object.
// Rules match the object as it was sent, and apply in order: each rule's overlays see the
// object as the rules before it left it.
type Config struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	// PodTemplates name the pod templates of more kinds, as GROUP/KIND=PATH[,PATH...] (the
	// --pod-template flag of starpod apply): a custom resource's, or another path of a kind
	// starpod knows. Their kinds may then be named in match.kinds.
	PodTemplates []string `json:"podTemplates,omitempty" yaml:"podTemplates"`
	Rules        []Rule   `json:"rules" yaml:"rules"`
}

// A Rule applies its overlays, in order, to the objects it matches.
type Rule struct {
	Name     string            `json:"name" yaml:"name"`
	Match    Match             `json:"match" yaml:"match"`
	Overlays []string          `json:"overlays" yaml:"overlays"` // files, relative to the config file's directory
	Args     map[string]string `json:"args,omitempty" yaml:"args"`
	OnError  OnError           `json:"onError,omitempty" yaml:"onError"`
}

// A Match selects objects. Every part given must match; an empty part matches everything.
type Match struct {
	Namespaces []string `json:"namespaces,omitempty" yaml:"namespaces"`
	Kinds      []string `json:"kinds,omitempty" yaml:"kinds"` // default [Pod]; GROUP/KIND of a workload
	// LabelSelector matches the admitted object's own labels: a Pod's, or a workload's
	// metadata.labels (not its templates').
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty" yaml:"labelSelector"`
}

// OnError says what happens to an object when one of a rule's overlays fails on it.
type OnError string

const (
	// Fail rejects the object with the overlay's error (the default).
	Fail OnError = "Fail"
	// Ignore admits the object as it was before the rule, with a warning.
	Ignore OnError = "Ignore"
)

// kinds returns the kinds of object the webhook mutates, as match.kinds names them: Pod,
// the workload kinds whose pod templates internal/workload knows (apps/Deployment,
// batch/CronJob, batch.volcano.sh/Job, ...), and the kinds of rules. Pod templates of
// workload kinds come with decodeObject (object.go).
func kinds(rules []workload.Rule) []string {
	var out []string
	for _, k := range workload.Kinds() {
		if k != "List" { // the API server admits no List
			out = append(out, k)
		}
	}
	for _, r := range rules {
		k := r.Kind
		if r.Group != "" {
			k = r.Group + "/" + k
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// ParseConfig decodes and checks a config file's contents, strictly, as internal/yamlfile
// reads every config: data over 1 MiB is refused, what aliases add is bounded, and so is the
// text the values add up to; an unknown field (with a did-you-mean), a duplicate key or a
// value of the wrong type is an error. file names the file in errors. It returns a
// *yamlfile.Error that lists every problem as file:line:col: field.path: detail.
func ParseConfig(file string, data []byte) (*Config, error) {
	opts := &yamlfile.Options{What: "overlay webhook config", MaxBytes: maxConfig, NoEmpty: true}
	root, err := yamlfile.Parse(file, data, opts)
	if err != nil {
		return nil, err
	}
	var c Config
	d := yamlfile.NewDecoder(root, opts.What)
	d.MaxText = maxConfig // aliases of a long string would be copied into each admission's ctx.args
	d.Hooks = map[reflect.Type]func(*yamlfile.Decoder, *yaml.Node, reflect.Value, *field.Path){
		reflect.TypeFor[metav1.LabelSelector](): decodeSelector,
	}
	d.Decode(root, reflect.ValueOf(&c).Elem(), nil)
	switch {
	case d.Stopped():
	case len(d.Errors()) == 0:
		for _, e := range c.validate() {
			d.AddAt(e)
		}
	}
	if errs := d.Errors(); len(errs) > 0 {
		errs.Sort()
		return nil, &yamlfile.Error{File: file, Errors: errs}
	}
	return &c, nil
}

// selectorYAML is a metav1.LabelSelector as a config writes it.
type selectorYAML struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	} `yaml:"matchExpressions"`
}

// decodeSelector decodes a label selector, whose type carries no yaml tags.
func decodeSelector(d *yamlfile.Decoder, node *yaml.Node, v reflect.Value, path *field.Path) {
	var sy selectorYAML
	d.Decode(node, reflect.ValueOf(&sy).Elem(), path)
	sel := metav1.LabelSelector{MatchLabels: sy.MatchLabels}
	for _, e := range sy.MatchExpressions {
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values})
	}
	v.Set(reflect.ValueOf(sel))
}

// validate checks c, naming each problem by its field path.
func (c *Config) validate() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), c.APIVersion, []string{APIVersion}))
	}
	if c.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), c.Kind, []string{Kind}))
	}
	var rules []workload.Rule
	for i, s := range c.PodTemplates {
		r, err := workload.ParseRule(s)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath("podTemplates").Index(i), s, err.Error()))
			continue
		}
		rules = append(rules, r)
	}
	known := kinds(rules)
	names := make(map[string]bool)
	for i, r := range c.Rules {
		p := field.NewPath("rules").Index(i)
		for _, msg := range validation.IsDNS1123Label(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
		if names[r.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
		}
		names[r.Name] = true
		if len(r.Overlays) == 0 {
			errs = append(errs, field.Required(p.Child("overlays"), "a rule applies at least one overlay"))
		}
		for j, o := range r.Overlays {
			if o == "" || filepath.IsAbs(o) || !filepath.IsLocal(o) {
				errs = append(errs, field.Invalid(p.Child("overlays").Index(j), o, "want a file inside the config file's directory"))
			}
		}
		switch r.OnError {
		case "", Fail, Ignore:
		default:
			errs = append(errs, field.NotSupported(p.Child("onError"), r.OnError, []string{string(Fail), string(Ignore)}))
		}
		for j, k := range r.Match.Kinds {
			if !slices.Contains(known, k) {
				msg := "want Pod or the GROUP/KIND of a workload (podTemplates names more)" + didYouMean(k, known)
				errs = append(errs, field.Invalid(p.Child("match", "kinds").Index(j), k, msg))
			}
		}
		if r.Match.LabelSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(r.Match.LabelSelector); err != nil {
				errs = append(errs, field.Invalid(p.Child("match", "labelSelector"), r.Match.LabelSelector, err.Error()))
			}
		}
	}
	return errs
}

// A compiled config is a Config with every overlay compiled. It is immutable: requests use
// it from many goroutines while a reload builds the next one.
type compiled struct {
	rules     []*rule
	workloads *workload.Options // the podTemplates rules
	files     map[string]string // every file read (config, overlays, modules) and its content hash
	pools     []*engine.WorkerPool
}

// A rule is a compiled Rule.
type rule struct {
	Rule
	namespaces map[string]bool // nil: every namespace
	kinds      []string
	selector   labels.Selector
	overlays   []*overlay
	queue      *queue // the admissions that run the rule's overlays, or wait to
}

// An overlay is one compiled overlay file of a rule.
type overlay struct {
	name string // as the config names it
	hash string // sha256 of its source, hex
	*engine.Overlay
}

// matches reports whether r selects an object of kind in namespace with labels lbls.
func (r *rule) matches(namespace, kind string, lbls map[string]string) bool {
	if r.namespaces != nil && !r.namespaces[namespace] {
		return false
	}
	if !slices.Contains(r.kinds, kind) {
		return false
	}
	return r.selector.Matches(labels.Set(lbls))
}

// onError returns what the rule does on an overlay's failure.
func (r *rule) onError() OnError {
	if r.OnError == "" {
		return Fail
	}
	return r.OnError
}

// compileConfig reads the config file and compiles every overlay of every rule, each rule's
// in its own worker pool (opts.newPool) when overlays run in workers, so that a rule whose
// overlay bombs fills only its own workers. The files read are recorded with their hashes,
// to notice a change.
func compileConfig(ctx context.Context, file string, opts *Options) (_ *compiled, err error) {
	data, err := bound.ReadFile(file, maxConfig, "config")
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(file, data)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)
	rec := &recorder{files: map[string]string{file: hash(data)}}
	c := &compiled{files: rec.files, workloads: &workload.Options{}}
	for _, s := range cfg.PodTemplates {
		r, _ := workload.ParseRule(s) // checked by validate
		c.workloads.Rules = append(c.workloads.Rules, r)
	}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	var errs []string
	for _, r := range cfg.Rules {
		cr := &rule{Rule: r, kinds: r.Match.Kinds, selector: labels.Everything(),
			queue: newQueue(opts.workers(), opts.queueWait(r.Name))}
		if len(cr.kinds) == 0 {
			cr.kinds = []string{"Pod"}
		}
		if r.Match.Namespaces != nil {
			cr.namespaces = make(map[string]bool)
			for _, ns := range r.Match.Namespaces {
				cr.namespaces[ns] = true
			}
		}
		if r.Match.LabelSelector != nil {
			cr.selector, _ = metav1.LabelSelectorAsSelector(r.Match.LabelSelector) // checked by validate
		}
		eo := opts.Engine
		eo.Loader = rec.loader(engine.DirLoader(dir))
		if eo.Isolation == engine.WorkerProcess {
			eo.Workers = opts.newPool()
			if opts.sharedPool == nil {
				c.pools = append(c.pools, eo.Workers)
			}
			eo.Workers.Prestart(&eo)
		}
		for _, name := range r.Overlays {
			path := filepath.Join(dir, name)
			src, err := bound.ReadFile(path, bound.MaxScript, "script")
			if err != nil {
				errs = append(errs, fmt.Sprintf("rule %s: %v", r.Name, err))
				continue
			}
			rec.add(path, src)
			o, err := engine.Compile(ctx, path, src, &eo)
			if err != nil {
				errs = append(errs, fmt.Sprintf("rule %s: %v", r.Name, err))
				continue
			}
			cr.overlays = append(cr.overlays, &overlay{name: name, hash: hash(src), Overlay: o})
		}
		c.rules = append(c.rules, cr)
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	return c, nil
}

// close stops the worker pools of c.
func (c *compiled) close() {
	for _, p := range c.pools {
		p.Close()
	}
}

// changed reports whether any file c was built from now has other contents, or is gone.
func (c *compiled) changed() bool {
	for name, h := range c.files {
		data, err := bound.ReadFile(name, bound.MaxScript+maxConfig, "file")
		if err != nil || hash(data) != h {
			return true
		}
	}
	return false
}

func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// A recorder records the files a compile reads: overlays, and the modules they load.
type recorder struct {
	mu    sync.Mutex
	files map[string]string
}

func (r *recorder) add(name string, src []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[name] = hash(src)
}

// loader returns l, recording what it loads.
func (r *recorder) loader(l engine.Loader) engine.Loader { return &recordingLoader{r, l} }

type recordingLoader struct {
	rec *recorder
	l   engine.Loader
}

func (rl *recordingLoader) Load(from, module string) (string, []byte, error) {
	name, src, err := rl.l.Load(from, module)
	if err == nil {
		rl.rec.add(name, bytes.Clone(src))
	}
	return name, src, err
}

// didYouMean returns ` (did you mean "x"?)` for the candidate nearest to name, or "": a
// kind without its group (Deployment) finds its GROUP/KIND (apps/Deployment).
func didYouMean(name string, candidates []string) string {
	for _, c := range candidates {
		if strings.HasSuffix(c, "/"+name) {
			return fmt.Sprintf(" (did you mean %q?)", c)
		}
	}
	if n := spell.Nearest(name, candidates); n != "" && n != name {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

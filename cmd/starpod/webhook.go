package main

// This file defines "starpod webhook", which serves overlays as a mutating admission
// webhook, and "starpod webhook certs", which makes the certificates it serves with.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.starlark.net/syntax"
	admissionv1 "k8s.io/api/admission/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/webhook"
)

// webhookFlags are the flags of "starpod webhook".
type webhookFlags struct {
	config, listen, certFile, keyFile string
	maxSteps                          uint64
	timeout, requestTimeout, reload   time.Duration
	memory, isolate, maxBody          string
	maxInFlight, workers              int
	logFormat                         string
}

func newWebhookCmd(a *app) *cobra.Command {
	var f webhookFlags
	cmd := &cobra.Command{
		Annotations: map[string]string{annotationServer: "true"},
		Use:         "webhook --config FILE --tls-cert-file FILE --tls-private-key-file FILE",
		Short:       "Serve overlays as a mutating admission webhook",
		Long: `Webhook serves admission.k8s.io/v1 AdmissionReviews over HTTPS at /mutate: every Pod created
in a namespace that a rule of the config matches is changed by the rule's overlays before
the API server stores it, and so are the pod templates of the workload kinds a rule names
(apps/Deployment, batch/CronJob, batch.volcano.sh/Job, ...; ctx.workload is set for them;
the config's podTemplates list names more, as GROUP/KIND=PATH). The config is a
WebhookConfig:

  apiVersion: starpod.dev/v1alpha1
  kind: WebhookConfig
  rules:
  - name: gpu-pool
    match: {namespaces: [ml], kinds: [Pod], labelSelector: {matchLabels: {team: ml}}}
    overlays: [gpu.star]          # relative to the config file; applied in order
    args: {pool: a100}            # ctx.args
    onError: Fail                 # or Ignore: admit without the rule's changes, with a warning

Rules apply in order. The response is a JSONPatch, warnings that name the rules and overlays
that changed the pod, and the annotation starpod.dev/overlays naming each overlay applied
with its content hash; a pod the overlays leave alone gets no patch.

The config, the overlays and the modules they load are compiled at start and again when any
of them changes (polled every --reload-interval); a version that does not compile is logged
and refused, and the last good one keeps serving. The certificate and key files are reloaded
the same way. Each rule's overlays run in worker processes of their own (--workers-per-rule,
each limited to --max-memory), so an overlay that bombs fails only the requests its rule
matches. Each admission has a deadline (--request-timeout, keep it below the webhook's
timeoutSeconds), which its body must arrive within; it then waits in order for one of its
rule's workers, and fails at once (its rule's onError decides) only if the rule's measured
pace says it cannot be served by then. Beyond --max-in-flight admissions at once, requests
are refused at once with 429, and the API server's failurePolicy decides.

/healthz, /readyz (ready once the overlays compiled) and /metrics (Prometheus) are served on
the same port. Logs are one JSON line per admission on standard error.`,
		Example: `  starpod webhook certs --dns-name starpod-webhook.starpod-system.svc --out-dir /tmp/certs
  starpod webhook --config /etc/starpod/config.yaml \
      --tls-cert-file /tmp/certs/tls.crt --tls-private-key-file /tmp/certs/tls.key`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.serve(cmd, a)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", ":8443", "`ADDRESS` to serve HTTPS on")
	fs.StringVar(&f.certFile, "tls-cert-file", "", "serving certificate `FILE` (PEM), reloaded when it changes")
	fs.StringVar(&f.keyFile, "tls-private-key-file", "", "serving key `FILE` (PEM), reloaded when it changes")
	f.engineFlags(fs)
	fs.IntVar(&f.maxInFlight, "max-in-flight", webhook.DefaultMaxInFlight, "admissions served at once, `N`, counted once their body is read; more are refused with 429")
	fs.StringVar(&f.maxBody, "max-body-size", "7Mi", "largest request body, `SIZE`")
	fs.DurationVar(&f.reload, "reload-interval", webhook.DefaultReloadInterval, "how often to look for changed config, overlay and certificate files, `TIME`")
	fs.StringVar(&f.logFormat, "log-format", "json", "log `FORMAT`: json or text")
	cmd.AddCommand(newWebhookCertsCmd(a), newWebhookReviewCmd(a))
	return cmd
}

// engineFlags adds the flags of the config and its overlays' limits to fs.
func (f *webhookFlags) engineFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "WebhookConfig `FILE`")
	stepsVar(fs, &f.maxSteps, "max-steps", engine.DefaultMaxSteps, "execution `STEPS` allowed per overlay apply")
	fs.DurationVar(&f.timeout, "timeout", engine.DefaultTimeout, "wall `TIME` allowed per overlay apply")
	fs.StringVar(&f.memory, "max-memory", "512Mi", "memory `SIZE` allowed to each worker process")
	fs.StringVar(&f.isolate, "isolation", "worker", "where overlays run, `MODE`: worker or none (in this process, with no memory limit: for trusted overlays only)")
	fs.IntVar(&f.workers, "workers-per-rule", 0, "worker processes of each rule, `N` (default the number of CPUs)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", webhook.DefaultRequestTimeout, "deadline `TIME` of one admission; keep it below the webhook's timeoutSeconds")
}

// options checks the flags and returns the webhook's options.
func (f *webhookFlags) options(a *app) (*webhook.Options, error) {
	if f.config == "" {
		return nil, usagef("webhook: --config is required")
	}
	for _, req := range []struct{ name, value string }{
		{"--tls-cert-file", f.certFile}, {"--tls-private-key-file", f.keyFile},
	} {
		if req.value == "" {
			return nil, usagef("webhook: %s is required", req.name)
		}
	}
	return f.engineOptions(a)
}

// engineOptions checks the flags of the config and its overlays and returns the webhook's
// options.
func (f *webhookFlags) engineOptions(a *app) (*webhook.Options, error) {
	if f.config == "" {
		return nil, usagef("webhook: --config is required")
	}
	if f.maxSteps == 0 {
		return nil, usagef("--max-steps: got 0, want a positive number")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--timeout", f.timeout}, {"--request-timeout", f.requestTimeout}, {"--reload-interval", f.reload}} {
		if d.v <= 0 {
			return nil, usagef("%s: got %v, want a positive duration", d.name, d.v)
		}
	}
	if f.maxInFlight <= 0 {
		return nil, usagef("--max-in-flight: got %d, want a positive number", f.maxInFlight)
	}
	if f.workers < 0 {
		return nil, usagef("--workers-per-rule: got %d, want a positive number", f.workers)
	}
	memory, err := memoryFlag(f.memory)
	if err != nil {
		return nil, err
	}
	maxBody, err := sizeFlag("--max-body-size", f.maxBody, "7Mi")
	if err != nil {
		return nil, err
	}
	var handler slog.Handler
	switch f.logFormat {
	case "json":
		handler = slog.NewJSONHandler(logWriter(a.stderr), nil)
	case "text":
		handler = slog.NewTextHandler(logWriter(a.stderr), nil)
	case "none":
		handler = slog.DiscardHandler
	default:
		return nil, usagef("--log-format: got %q, want json or text", f.logFormat)
	}
	log := slog.New(handler)
	opts := &webhook.Options{
		Engine: engine.Options{
			MaxSteps: f.maxSteps,
			Timeout:  f.timeout,
			Print: func(pos syntax.Position, msg string) {
				log.Info("print", "position", pos.String(), "message", msg)
			},
		},
		WorkersPerRule: f.workers,
		RequestTimeout: f.requestTimeout,
		MaxInFlight:    f.maxInFlight,
		MaxBodyBytes:   maxBody,
		ReloadInterval: f.reload,
		Logger:         log,
	}
	switch f.isolate {
	case "worker", "":
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		opts.Engine.Isolation = engine.WorkerProcess
		opts.Engine.MaxMemory = memory
		opts.WorkerPath, opts.WorkerArgs = exe, []string{"worker"}
	case "none":
		opts.Engine.Isolation = engine.InProcess
	default:
		return nil, usagef("--isolation: got %q, want worker or none", f.isolate)
	}
	return opts, nil
}

// serve compiles the config and serves until the command's context ends.
func (f *webhookFlags) serve(cmd *cobra.Command, a *app) error {
	opts, err := f.options(a)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := webhook.New(ctx, f.config, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.ListenAndServeTLS(ctx, f.listen, f.certFile, f.keyFile, nil)
}

// reviewFlags are the flags of "starpod webhook review".
type reviewFlags struct {
	webhookFlags
	file, namespace, output string
}

func newWebhookReviewCmd(a *app) *cobra.Command {
	f := reviewFlags{webhookFlags: webhookFlags{maxInFlight: 1, reload: webhook.DefaultReloadInterval,
		maxBody: "7Mi", logFormat: "none"}}
	cmd := &cobra.Command{
		Use:   "review --config FILE -f FILE [-n NAMESPACE]",
		Short: "Answer one admission with a config, without a server or TLS",
		Long: `Review answers one admission as "starpod webhook" would, in this process: the object to
create is a plain manifest (a Pod, a Deployment, ... as kubectl would send it) or an
AdmissionReview of admission.k8s.io/v1 with its request. It prints the object as the API
server would store it on standard output, and the JSONPatch and the warnings of the answer
on standard error. An admission the config denies exits 1 with the message.

A manifest is created in the namespace of -n, or its own, or "default". The overlays run as
the webhook runs them: in worker processes with the limits of the flags.`,
		Example: `  starpod webhook review --config config.yaml -f pod.yaml -n ml`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, a)
		},
	}
	fs := cmd.Flags()
	f.engineFlags(fs)
	fs.StringVarP(&f.file, "filename", "f", "", "`FILE` of the manifest or AdmissionReview to review, - for standard input")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "`NAMESPACE` to create a manifest in")
	fs.StringVarP(&f.output, "output", "o", "yaml", "`FORMAT` of the stored object: yaml or json")
	return cmd
}

func (f *reviewFlags) run(cmd *cobra.Command, a *app) error {
	if f.file == "" {
		return usagef("review: -f is required")
	}
	if f.output != "yaml" && f.output != "json" {
		return usagef("-o: got %q, want yaml or json", f.output)
	}
	opts, err := f.engineOptions(a)
	if err != nil {
		return err
	}
	opts.Engine.Print = a.printer()
	req, err := f.request(a)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := webhook.New(ctx, f.config, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	resp, obj, err := s.Review(ctx, req)
	if err != nil {
		return err
	}
	if !resp.Allowed {
		msg := "denied"
		if resp.Result != nil {
			msg += fmt.Sprintf(" (%d): %s", resp.Result.Code, resp.Result.Message)
		}
		return errors.New(msg)
	}
	if resp.Patch == nil {
		fmt.Fprintln(a.stderr, "patch: none")
	} else {
		fmt.Fprintf(a.stderr, "patch: %s\n", resp.Patch)
	}
	for _, w := range resp.Warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	if f.output == "json" {
		var buf bytes.Buffer
		if err := json.Indent(&buf, obj, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err = a.stdout.Write(buf.Bytes())
		return err
	}
	out, err := stream.JSONToYAML(obj, nil)
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(out)
	return err
}

// request reads the file of -f: one manifest, or an AdmissionReview, and returns the
// request to review.
func (f *reviewFlags) request(a *app) (*admissionv1.AdmissionRequest, error) {
	var in io.Reader
	name := f.file
	if f.file == "-" {
		in, name = a.stdin, "<stdin>"
	} else {
		file, err := os.Open(f.file)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		in = file
	}
	r := stream.NewReader(name, in)
	doc, err := r.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: got no document, want a manifest or an AdmissionReview", name)
	}
	if err != nil {
		return nil, err
	}
	if _, err := r.Next(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("%s: got several documents, want one manifest or AdmissionReview", name)
		}
		return nil, err
	}
	data, err := json.Marshal(doc.Object)
	if err != nil {
		return nil, err
	}
	apiVersion, kind := doc.Kind()
	at := fmt.Sprintf("%s:%d", name, doc.Line)
	if kind == "AdmissionReview" {
		var review admissionv1.AdmissionReview
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&review); err != nil {
			return nil, fmt.Errorf("%s: decoding the AdmissionReview: %v", at, err)
		}
		if review.Request == nil {
			return nil, fmt.Errorf("%s: the AdmissionReview has no request", at)
		}
		if f.namespace != "" && f.namespace != review.Request.Namespace {
			return nil, fmt.Errorf("%s: the request's namespace %q is not -n %q", at, review.Request.Namespace, f.namespace)
		}
		return review.Request, nil
	}
	if kind == "" || apiVersion == "" {
		return nil, fmt.Errorf("%s: got no apiVersion and kind, want a manifest or an AdmissionReview", at)
	}
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("%s: metadata: %v", at, err)
	}
	ns := meta.Metadata.Namespace
	switch {
	case f.namespace != "" && ns != "" && ns != f.namespace:
		return nil, fmt.Errorf("%s: the manifest's namespace %q is not -n %q", at, ns, f.namespace)
	case f.namespace != "":
		ns = f.namespace
	case ns == "":
		ns = "default"
	}
	// The API server puts the namespace of the request in the object before admission.
	if m, ok := doc.Object.(map[string]any); ok && meta.Metadata.Namespace == "" {
		md, _ := m["metadata"].(map[string]any)
		if md == nil {
			md = make(map[string]any)
			m["metadata"] = md
		}
		md["namespace"] = ns
		if data, err = json.Marshal(m); err != nil {
			return nil, err
		}
	}
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	gvr, _ := apimeta.UnsafeGuessKindToResource(gvk)
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("starpod-webhook-review"),
		Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
		Resource:  metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource},
		Namespace: ns,
		Name:      meta.Metadata.Name,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: data},
	}, nil
}

// certsFlags are the flags of "starpod webhook certs".
type certsFlags struct {
	dnsNames, ips []string
	outDir        string
	validity      time.Duration
	force         bool
}

func newWebhookCertsCmd(a *app) *cobra.Command {
	var f certsFlags
	cmd := &cobra.Command{
		Use:   "certs --dns-name NAME... [--ip IP]... --out-dir DIR",
		Short: "Make a CA and a serving certificate for the webhook, and print the caBundle",
		Long: `Certs makes a CA and a serving certificate signed by it for the DNS names and IP addresses
given, writes ca.crt, tls.crt and tls.key into --out-dir (all three or none), and prints the
CA certificate base64-encoded: the caBundle of the MutatingWebhookConfiguration.

The CA's key is not kept. To renew, run certs again, update the Secret with tls.crt and
tls.key (the webhook reloads them) and the caBundle with the printed value; put both CAs in
the caBundle while the Secret changes, so that neither certificate is refused. Certs
refuses to replace files --out-dir already holds unless --force is given. With
cert-manager, use its CA injector instead (see docs/webhook.md).`,
		Example: `  starpod webhook certs --dns-name starpod-webhook.starpod-system.svc --out-dir certs`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(a)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.dnsNames, "dns-name", nil, "DNS `NAME` of the serving certificate (repeatable)")
	fs.StringArrayVar(&f.ips, "ip", nil, "IP `ADDRESS` of the serving certificate (repeatable)")
	fs.StringVar(&f.outDir, "out-dir", "", "`DIR` to write ca.crt, tls.crt and tls.key into")
	fs.DurationVar(&f.validity, "validity", 365*24*time.Hour, "how long the certificates are valid, `TIME`")
	fs.BoolVar(&f.force, "force", false, "replace ca.crt, tls.crt and tls.key if --out-dir holds them (a new CA invalidates the caBundle deployed)")
	return cmd
}

func (f *certsFlags) run(a *app) error {
	if f.outDir == "" {
		return usagef("certs: --out-dir is required")
	}
	if len(f.dnsNames) == 0 && len(f.ips) == 0 {
		return usagef("certs: got no --dns-name or --ip, want at least one")
	}
	if f.validity <= 0 {
		return usagef("--validity: got %v, want a positive duration", f.validity)
	}
	var ips []net.IP
	for _, s := range f.ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return usagef("--ip: got %q, want an IP address", s)
		}
		ips = append(ips, ip)
	}
	certs, err := webhook.NewCerts(f.dnsNames, ips, f.validity)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{{"ca.crt", certs.CA, 0o644}, {"tls.crt", certs.Cert, 0o644}, {"tls.key", certs.Key, 0o600}}
	if !f.force {
		for _, file := range files {
			path := filepath.Join(f.outDir, file.name)
			if _, err := os.Lstat(path); err == nil {
				return fmt.Errorf("certs: %s exists: a new CA invalidates the caBundle made from the old one; give --force to replace the files", path)
			}
		}
	}
	if err := os.MkdirAll(f.outDir, 0o755); err != nil {
		return err
	}
	// Write each file beside its place and rename them all at the end: nothing partial.
	var tmps []string
	defer func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}()
	for _, file := range files {
		tmp, err := os.CreateTemp(f.outDir, "."+file.name+".*")
		if err != nil {
			return err
		}
		tmps = append(tmps, tmp.Name())
		if err := tmp.Chmod(file.mode); err != nil {
			tmp.Close()
			return err
		}
		if _, err := tmp.Write(file.data); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
	}
	for i, file := range files {
		if err := os.Rename(tmps[i], filepath.Join(f.outDir, file.name)); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(a.stdout, base64.StdEncoding.EncodeToString(certs.CA))
	return err
}

// Package webhook serves starpod overlays as a Kubernetes mutating admission webhook: every
// Pod created in a namespace a rule matches is changed by that rule's overlays before the
// API server stores it, whoever creates it, and so are the pod templates of the workloads
// (Deployments, CronJobs, Volcano Jobs, ...) a rule's kinds name.
//
// To serve, build a Server with New from a config file (a Config: ordered rules that match
// on namespaces, kinds and a label selector, each with overlays, args and an OnError
// policy) and Options, then call Server.ListenAndServeTLS; or use Server.Handler in a server
// of your own. The Server answers admission.k8s.io/v1 AdmissionReviews at /mutate with a
// JSONPatch (RFC 6902), warnings that name the rules and overlays that changed the object,
// and the AppliedAnnotation; an object the overlays leave alone gets no patch, so a
// reinvocation changes nothing. /healthz, /readyz and /metrics (Prometheus) serve operators.
//
// Overlays compile once, at start and whenever the config or a file it uses changes
// (Server.Reload; Server.Run polls for changes). A config that does not compile is refused
// and the last good one keeps serving. With engine.WorkerProcess isolation each rule runs
// in worker processes of its own, so a rule whose overlay exhausts its memory or time fails
// only the requests it matches. Requests are bounded: the body in size and time before it
// is decoded, and before the request takes one of the slots of admissions at once, beyond
// which requests are refused at once with 429 and the API server's failure policy decides;
// the work by a deadline below the API server's timeout. Within it, each rule's admissions
// wait in order for the rule's workers (queue.go), and one that the rule's measured pace says
// cannot be served in time fails at once.
//
// Which pods of an object overlays change is decided in one place, decodeObject (object.go):
// a Pod itself, or the pod templates of a workload as internal/workload finds them (the
// same code starpod apply uses), each with its ctx.workload.
package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/starpod/starpod/engine"
)

// Defaults for the zero values of Options.
const (
	DefaultRequestTimeout = 8 * time.Second // below the API server's default timeoutSeconds, 10
	DefaultMaxInFlight    = 64
	DefaultMaxBodyBytes   = 7 << 20 // an object of 3 MiB and its old version, as controller-runtime allows
	DefaultReloadInterval = 2 * time.Second
)

// Options configures a Server. The zero value serves with the defaults, overlays in process.
type Options struct {
	// Engine are the options every overlay compiles with: limits and isolation. Its Loader
	// and Workers are set by the Server: modules load from the config file's directory, and
	// with engine.WorkerProcess each rule gets a pool of its own.
	Engine engine.Options

	// WorkerPath and WorkerArgs are the worker program of the pools (see
	// engine.WorkerPoolOptions); WorkersPerRule is the size of each rule's pool, zero
	// meaning runtime.GOMAXPROCS(0).
	WorkerPath     string
	WorkerArgs     []string
	WorkersPerRule int

	// RequestTimeout bounds the work of one admission; zero means DefaultRequestTimeout.
	// Keep it below the webhook's timeoutSeconds.
	RequestTimeout time.Duration
	// MaxInFlight bounds the admissions served at once, counted once their body is read:
	// more are refused with 429. Zero means DefaultMaxInFlight. Within it, each rule's
	// admissions wait in order for one of the rule's workers up to their deadline (less
	// the margin to answer); one that the rule's measured pace says cannot be served by
	// then fails at once (its onError decides), so that a slow rule's admissions do not
	// hold slots for nothing.
	MaxInFlight int
	// MaxBodyBytes bounds a request body; zero means DefaultMaxBodyBytes. The body must
	// also arrive within the admission's deadline; a client still sending holds no slot.
	MaxBodyBytes int64
	// ReloadInterval is how often Run looks for changed files; zero means
	// DefaultReloadInterval.
	ReloadInterval time.Duration

	// Logger receives one line per admission and per reload. Nil discards them.
	Logger *slog.Logger
	// Registry receives the Server's metrics, and /metrics serves it. Nil means a registry
	// of the Server's own.
	Registry *prometheus.Registry

	// sharedPool, when set, is the pool of every rule instead of a pool per rule: only for
	// the benchmark that measures what pools per rule are for.
	sharedPool *engine.WorkerPool
	// waits, when set, observes the time each admission waited in its rule's queue.
	waits *prometheus.HistogramVec
}

// workers returns the size of each rule's pool of workers, which is also how many of the
// rule's admissions run its overlays at once.
func (o *Options) workers() int {
	if o.WorkersPerRule > 0 {
		return o.WorkersPerRule
	}
	return runtime.GOMAXPROCS(0)
}

// queueWait returns the observer of the waits of the rule's admissions, or nil.
func (o *Options) queueWait(rule string) func(time.Duration) {
	if o.waits == nil {
		return nil
	}
	h := o.waits.WithLabelValues(rule)
	return func(d time.Duration) { h.Observe(d.Seconds()) }
}

// restartBackoff bounds the wait between starts of a rule's workers when they die one after
// another: a rule whose overlay exhausts its worker's memory at every admission costs a
// worker start a second at most, and leaves the processors to the other rules.
const restartBackoff = time.Second

// answerMargin is the time an admission keeps, from its deadline, to answer: what is left
// when its overlays and its wait for them must end.
func answerMargin(timeout time.Duration) time.Duration {
	return min(max(timeout/10, 20*time.Millisecond), 500*time.Millisecond)
}

// A Server is a mutating admission webhook that applies the overlays of a config file.
type Server struct {
	file    string
	opts    Options
	log     *slog.Logger
	cur     atomic.Pointer[compiled]
	slots   chan struct{}
	reload  sync.Mutex // one reload at a time
	tried   string     // the fingerprint of the files the last failed reload read
	metrics *metrics
	ready   atomic.Bool
}

// New compiles the config file and returns a Server that serves it. It returns the
// config's errors, each naming its file, and for an overlay its position.
func New(ctx context.Context, configFile string, opts *Options) (*Server, error) {
	s := &Server{file: configFile}
	if opts != nil {
		s.opts = *opts
	}
	o := &s.opts
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = DefaultReloadInterval
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	s.log = o.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.slots = make(chan struct{}, o.MaxInFlight)
	s.metrics = newMetrics(o.Registry, s)
	o.waits = s.metrics.waits
	c, err := compileConfig(ctx, configFile, o)
	if err != nil {
		s.metrics.reloads.WithLabelValues("failure").Inc()
		return nil, err
	}
	s.cur.Store(c)
	s.metrics.reloads.WithLabelValues("success").Inc()
	s.ready.Store(true)
	return s, nil
}

// newPool returns a worker pool for one rule.
func (o *Options) newPool() *engine.WorkerPool {
	if o.sharedPool != nil {
		return o.sharedPool
	}
	return engine.NewWorkerPool(&engine.WorkerPoolOptions{Path: o.WorkerPath, Args: o.WorkerArgs, Size: o.workers(),
		RestartBackoff: restartBackoff})
}

// Close stops the worker processes of the config being served.
func (s *Server) Close() {
	if c := s.cur.Swap(nil); c != nil {
		c.close()
	}
}

// Reload compiles the config file again if it, or a file it uses, changed. A new config
// that does not compile is refused, logged and counted, and the one before keeps serving;
// Reload returns its error. The worker pools of the old config stop once requests that may
// still use it have had their time.
func (s *Server) Reload(ctx context.Context) error {
	s.reload.Lock()
	defer s.reload.Unlock()
	old := s.cur.Load()
	if old != nil && !old.changed() {
		return nil
	}
	c, err := s.compileSnapshot(ctx)
	if err != nil {
		fp := errorKey(err)
		if fp != s.tried {
			// Each broken version is logged and counted once, not at every poll.
			s.tried = fp
			s.metrics.reloads.WithLabelValues("failure").Inc()
			s.log.Error("config refused; the last good config keeps serving", "config", s.file, "error", err.Error())
		}
		return err
	}
	s.tried = ""
	s.cur.Store(c)
	s.metrics.reloads.WithLabelValues("success").Inc()
	s.log.Info("config reloaded", "config", s.file, "rules", len(c.rules))
	if old != nil {
		time.AfterFunc(s.opts.RequestTimeout+time.Second, old.close)
	}
	return nil
}

// compileSnapshot compiles the config and makes sure that no file it read changed while
// it compiled, so that a config and overlays updated one file after another are never
// compiled half old and half new; it tries again if one did.
func (s *Server) compileSnapshot(ctx context.Context) (*compiled, error) {
	for try := 0; ; try++ {
		c, err := compileConfig(ctx, s.file, &s.opts)
		if err != nil || !c.changed() || try == 3 {
			return c, err
		}
		c.close()
	}
}

// errorKey identifies a failed reload, so that the same failure is reported once.
func errorKey(err error) string { return err.Error() }

// Run polls the files of the config every ReloadInterval and reloads them when they change,
// until ctx ends.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Reload(ctx)
		}
	}
}

// Handler returns the Server's HTTP handler: /mutate, /healthz, /readyz and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mutate", s.serveMutate)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.opts.Registry, promhttp.HandlerOpts{}))
	return mux
}

// serveReady answers ready once a config has compiled: compiling runs the overlays' top
// levels, in workers when they run in workers, so a worker has answered.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if !s.ready.Load() || s.cur.Load() == nil {
		http.Error(w, "no config compiled", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ok")
}

// serveMutate serves one AdmissionReview. Its deadline runs from its arrival: the body must
// come by then, and only then does the admission take a slot, so that a client still sending
// holds none.
func (s *Server) serveMutate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	deadline := start.Add(s.opts.RequestTimeout)
	work := deadline.Add(-answerMargin(s.opts.RequestTimeout))
	// ErrNotSupported leaves the server's ReadTimeout to bound the body.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(work)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		// Whatever the client has yet to send is not read: the connection closes.
		w.Header().Set("Connection", "close")
		code := http.StatusBadRequest
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			code = http.StatusRequestEntityTooLarge
			err = fmt.Errorf("request body over %d bytes", s.opts.MaxBodyBytes)
		case errors.Is(err, os.ErrDeadlineExceeded):
			code = http.StatusRequestTimeout
			err = errors.New("the request body did not arrive within the admission's deadline")
		}
		s.badRequest(w, code, err, start)
		return
	}
	rc.SetReadDeadline(time.Time{}) // the body is in: the connection's reads are the server's again
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		// Refuse at once rather than queue: the API server's failure policy decides.
		s.metrics.requests.WithLabelValues("", outcomeRefused).Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "starpod webhook: too many requests at once", http.StatusTooManyRequests)
		s.log.Warn("admission refused", "outcome", outcomeRefused, "inflight", cap(s.slots))
		return
	}
	ctx, cancel := context.WithDeadline(r.Context(), work)
	defer cancel()

	var review admissionv1.AdmissionReview
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &review); err != nil {
		s.badRequest(w, http.StatusBadRequest, fmt.Errorf("decoding the AdmissionReview: %v", err), start)
		return
	}
	if review.Request == nil {
		s.badRequest(w, http.StatusBadRequest, errors.New("AdmissionReview: got no request"), start)
		return
	}
	if review.Request.UID == "" {
		s.badRequest(w, http.StatusBadRequest, errors.New("AdmissionReview: request.uid: Required value: the response must carry the request's uid"), start)
		return
	}
	req := review.Request
	c := s.cur.Load()
	if c == nil {
		s.badRequest(w, http.StatusServiceUnavailable, errors.New("no config compiled"), start)
		return
	}
	res := admit(ctx, c, req)
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Response: res.resp,
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		res.outcome = outcomeError
	}
	d := time.Since(start)
	s.metrics.observe(res, d)
	dry := req.DryRun != nil && *req.DryRun
	name := res.name
	if name == "" {
		name = objectName(req) // no rule matched: the object was not decoded
	}
	attrs := []any{
		"uid", string(req.UID), "namespace", req.Namespace, "kind", req.Kind.Kind, "name", name,
		"operation", string(req.Operation), "dryRun", dry, "rules", res.rules,
		"duration", d, "outcome", res.outcome,
	}
	if !res.resp.Allowed && res.resp.Result != nil {
		attrs = append(attrs, "message", res.resp.Result.Message)
	}
	if len(res.resp.Warnings) > 0 {
		attrs = append(attrs, "warnings", res.resp.Warnings)
	}
	s.log.Info("admission", attrs...)
}

// badRequest answers a request that is no AdmissionReview the webhook can answer.
func (s *Server) badRequest(w http.ResponseWriter, code int, err error, start time.Time) {
	s.metrics.requests.WithLabelValues("", outcomeError).Inc()
	http.Error(w, "starpod webhook: "+err.Error(), code)
	s.log.Warn("admission", "outcome", outcomeError, "error", err.Error(), "duration", time.Since(start))
}

// objectName is the name of the object, which a Pod generated by a controller gets only
// after admission: its generateName then.
func objectName(req *admissionv1.AdmissionRequest) string {
	if req.Name != "" {
		return req.Name
	}
	var m struct {
		Metadata struct {
			Name         string `json:"name"`
			GenerateName string `json:"generateName"`
		} `json:"metadata"`
	}
	if json.Unmarshal(req.Object.Raw, &m) == nil {
		if m.Metadata.Name != "" {
			return m.Metadata.Name
		}
		return m.Metadata.GenerateName
	}
	return ""
}

// ListenAndServeTLS serves the Server's Handler on addr over TLS with the certificate and key
// files, reloaded when they change, and polls the config for changes, until ctx ends; then
// it shuts down gracefully. ready, if not nil, receives the address it listens on.
func (s *Server) ListenAndServeTLS(ctx context.Context, addr, certFile, keyFile string, ready func(net.Addr)) error {
	certs, err := newCertWatcher(certFile, keyFile, s.log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.opts.RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get},
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	go s.Run(ctx)
	go certs.run(ctx, s.opts.ReloadInterval)
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	if ready != nil {
		ready(ln.Addr())
	}
	s.log.Info("serving", "address", ln.Addr().String(), "config", s.file)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout+time.Second)
	defer cancel()
	err = srv.Shutdown(shut)
	<-done
	return err
}

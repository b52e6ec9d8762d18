package webhook

// This file defines BenchmarkLoad, the webhook under load as scripts/webhook-bench.sh runs
// it: closed loops of 1 to 64 clients and open loops at fixed rates, over TLS with keep-alive
// connections, every answer checked.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/fast"
)

var loadDuration = flag.Duration("webhook-load-duration", 5*time.Second, "how long each case of BenchmarkLoad sends reviews")

// loadPod is a pod as a Deployment's controller creates it: its review is about 3.2 KB.
const loadPod = `
apiVersion: v1
kind: Pod
metadata:
  generateName: trainer-7d9f8b6c4-
  namespace: ml
  labels: {app: trainer, team: ml, pod-template-hash: 7d9f8b6c4, app.kubernetes.io/version: v1.4.2}
  annotations: {kubectl.kubernetes.io/default-container: trainer, prometheus.io/scrape: "true", prometheus.io/port: "9090"}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: trainer-7d9f8b6c4, uid: 6c1f3f4e-8f0a-4a57-9f57-1c0d4c2d9b11, controller: true, blockOwnerDeletion: true}
spec:
  serviceAccountName: trainer
  securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: 2000}
  initContainers:
  - name: fetch-data
    image: ghcr.io/example/fetch:v2.1.0
    args: [--source, s3://example-datasets/imagenet/shards, --dest, /data, --parallel, "8"]
    volumeMounts: [{name: data, mountPath: /data}]
    resources: {requests: {cpu: 500m, memory: 512Mi}, limits: {cpu: "1", memory: 1Gi}}
  containers:
  - name: trainer
    image: ghcr.io/example/trainer:v1.4.2
    command: [python, -m, trainer.main]
    args: [--epochs, "90", --batch-size, "256", --data, /data, --checkpoint-dir, /checkpoints, --log-every, "50"]
    ports: [{name: metrics, containerPort: 9090}, {name: dist, containerPort: 29500}]
    env:
    - {name: MASTER_ADDR, value: trainer-0.trainer.ml.svc.cluster.local}
    - {name: MASTER_PORT, value: "29500"}
    - {name: NCCL_DEBUG, value: WARN}
    - {name: OMP_NUM_THREADS, value: "8"}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    resources: {requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "2"}, limits: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "2"}}
    volumeMounts: [{name: data, mountPath: /data, readOnly: true}, {name: checkpoints, mountPath: /checkpoints}, {name: dshm, mountPath: /dev/shm}]
    readinessProbe: {httpGet: {path: /healthz, port: metrics}, periodSeconds: 10}
    livenessProbe: {httpGet: {path: /healthz, port: metrics}, initialDelaySeconds: 60, periodSeconds: 30, failureThreshold: 5}
  - name: log-shipper
    image: ghcr.io/example/shipper:v0.9.3
    args: [--path, /checkpoints/logs, --sink, "http://logs.observability.svc:8080"]
    volumeMounts: [{name: checkpoints, mountPath: /checkpoints, readOnly: true}]
    resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: 200m, memory: 256Mi}}
  volumes:
  - {name: data, emptyDir: {sizeLimit: 200Gi}}
  - {name: checkpoints, persistentVolumeClaim: {claimName: trainer-checkpoints}}
  - {name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: trainer}}}
  terminationGracePeriodSeconds: 120
`

// A loadSpec is what the client process of one case of BenchmarkLoad sends: to URL, whose
// certificate is CA, the review Body of UID from Clients clients each waiting for its answer
// (closed loop), or at Rate a second whatever the answers (open loop), for Duration; and
// meanwhile Slow clients that trickle their bodies, and, with Bomb set, two clients that send
// BadBody, another rule's memory bomb, of BadUID.
type loadSpec struct {
	URL           string
	CA            []byte
	Body, BadBody []byte
	UID, BadUID   string
	Clients, Slow int
	Rate          float64
	Duration      time.Duration
	Bomb          bool
}

// loadResult is what the client process of one case of BenchmarkLoad saw.
type loadResult struct {
	Sent, Served, Refused  int
	Full                   int           // refusals with 429
	Lost                   int           // requests that got no answer
	RefusedP99, RefusedMax time.Duration // of the refusals
	P50, P99, Max          time.Duration // of the answers served
	Elapsed                time.Duration
	Err                    string // the first answer that was wrong, not a refusal
}

// loadClientEnv names the environment variable that makes the test binary the client process
// of BenchmarkLoad: it holds the loadSpec, and the process writes its loadResult, both JSON.
const loadClientEnv = "STARPOD_WEBHOOK_LOAD_CLIENT"

// serveLoadClientIfRequested runs the client of BenchmarkLoad and exits, if the process was
// started as one. The clients run in a process of their own, as the API server is one: what
// the webhook's process does is then the webhook's alone.
func serveLoadClientIfRequested() {
	data := os.Getenv(loadClientEnv)
	if data == "" {
		return
	}
	var spec loadSpec
	if err := json.Unmarshal([]byte(data), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "load client:", err)
		os.Exit(2)
	}
	res := runLoadClient(&spec)
	json.NewEncoder(os.Stdout).Encode(res)
	os.Exit(0)
}

// runLoadClient sends what spec says over one HTTP/2 connection, as the API server's client
// does, and returns what it saw.
func runLoadClient(spec *loadSpec) *loadResult {
	cert, err := x509.ParseCertificate(spec.CA)
	if err != nil {
		return &loadResult{Err: err.Error()}
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	c := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		ForceAttemptHTTP2: true,
	}}
	for range 16 { // warm the connection
		if _, err := checkWhy(c, spec.URL, spec.Body, spec.UID); err != nil {
			return &loadResult{Err: err.Error()}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range spec.Slow {
		wg.Go(func() { trickle(spec.URL, stop) })
	}
	var bombErr atomic.Pointer[string]
	if spec.Bomb {
		for range 2 {
			wg.Go(func() {
				repeat(stop, func() bool {
					if why, err := checkWhy(c, spec.URL, spec.BadBody, spec.BadUID); err != nil || why == "" {
						msg := fmt.Sprintf("the bomb was not refused: %v", err)
						bombErr.CompareAndSwap(nil, &msg)
						return false
					}
					return true
				})
			})
		}
	}
	res := load(c, spec)
	close(stop)
	wg.Wait()
	if e := bombErr.Load(); e != nil && res.Err == "" {
		res.Err = *e
	}
	return res
}

// repeat calls f until stop is closed or f returns false.
func repeat(stop <-chan struct{}, f func() bool) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if !f() {
			return
		}
	}
}

// checkWhy posts body and checks its answer: an AdmissionReview of uid that allows the pod
// with the GPU overlay's patch. It returns why the webhook refused the review, if it did:
// "429", or the denial's message.
func checkWhy(c *http.Client, url string, body []byte, uid string) (why string, err error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusTooManyRequests {
		return "429", nil
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%d %s", resp.StatusCode, out)
	}
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &r); err != nil {
		return "", err
	}
	switch {
	case r.Response == nil || string(r.Response.UID) != uid:
		return "", fmt.Errorf("the answer %s is not of uid %s", out, uid)
	case !r.Response.Allowed:
		return r.Response.Result.Message, nil
	case r.Response.Patch == nil || !bytes.Contains(r.Response.Patch, []byte(`"nvidia.com/gpu"`)):
		return "", fmt.Errorf("the answer %s lacks the toleration", out)
	}
	return "", nil
}

// load sends spec's reviews for its duration: from clients each waiting for its answer
// (closed loop), or, with a rate above zero, at that rate whatever the answers (open loop).
func load(c *http.Client, spec *loadSpec) *loadResult {
	res := &loadResult{}
	var lat, refusals []time.Duration
	var mu sync.Mutex
	one := func() {
		t0 := time.Now()
		why, err := checkWhy(c, spec.URL, spec.Body, spec.UID)
		d := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		res.Sent++
		switch {
		case errors.As(err, new(*url.Error)):
			// No answer came (the connection broke): counted, not checked.
			res.Lost++
		case err != nil:
			if res.Err == "" {
				res.Err = err.Error()
			}
		case why != "":
			res.Refused++
			refusals = append(refusals, d)
			if why == "429" {
				res.Full++
			} else if os.Getenv("WEBHOOK_LOAD_DEBUG") != "" {
				fmt.Fprintln(os.Stderr, "denied:", why)
			}
		default:
			res.Served++
			lat = append(lat, d)
		}
	}
	start := time.Now()
	end := start.Add(spec.Duration)
	var wg sync.WaitGroup
	if spec.Rate > 0 {
		period := time.Duration(float64(time.Second) / spec.Rate)
		for i := 0; ; i++ {
			at := start.Add(time.Duration(i) * period)
			if !at.Before(end) {
				break
			}
			time.Sleep(time.Until(at))
			wg.Go(one)
		}
	} else {
		var stop atomic.Bool
		for range spec.Clients {
			wg.Go(func() {
				for !stop.Load() {
					one()
				}
			})
		}
		time.Sleep(spec.Duration)
		stop.Store(true)
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.P50, res.P99, res.Max = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
	res.RefusedP99, res.RefusedMax = quantile(refusals, 0.99), quantile(refusals, 1)
	return res
}

// quantile returns the q-quantile of ds, which it sorts; zero if there are none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(float64(len(ds)-1)*q)]
}

// runLoad runs spec's clients in a process of their own and returns what they saw.
func runLoad(b *testing.B, spec *loadSpec) *loadResult {
	b.Helper()
	data, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loadClientEnv+"="+string(data))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("the load client: %v", err)
	}
	var res loadResult
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("the load client's result %q: %v", out, err)
	}
	return &res
}

// A loadCase is one case of BenchmarkLoad.
type loadCase struct {
	name     string
	clients  int     // closed loop: clients each waiting for its answer
	rate     float64 // open loop: reviews a second
	overload bool    // open loop at twice what 16 clients got in a closed loop
	slow     int     // clients that trickle their bodies meanwhile
	bomb     bool    // two clients send another rule's memory bomb meanwhile
}

// BenchmarkLoad measures the webhook as served (overlays in worker processes of the rule's
// own, deploy/'s limits) with the GPU overlay and a 3.2 KB review of a Deployment's pod,
// encoded as the API server encodes it, sent by a client process of its own: closed loops of
// 1, 4, 16 and 64 clients, open loops at 500 and 1,000 reviews a second and at twice what 16
// clients got, 4 clients beside 64 slow clients that trickle their bodies, and 4 clients
// beside 2 that send another rule's memory bomb; each case for -webhook-load-duration.
// Each answer is checked: allowed with the overlay's patch, or refused (429, or denied);
// anything else fails the benchmark.
func BenchmarkLoad(b *testing.B) {
	// As starpod webhook does, STARPOD_FAST_PATHS=off measures the library paths alone.
	fast.Off = os.Getenv("STARPOD_FAST_PATHS") == "off"
	overlay, err := os.ReadFile("../examples/gpu-tolerations/overlay.star")
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]string{
		"config.yaml": `apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: gpu
  match: {namespaces: [ml]}
  overlays: [overlay.star]
- name: bomb
  match: {namespaces: [bad]}
  overlays: [bomb.star]
`,
		"overlay.star": string(overlay),
		"bomb.star":    "def overlay(pod):\n    s = 'a' * ((1 << 30) - 1)\n",
	}
	body := reviewBody(b, loadPod)
	bad := reviewBody(b, strings.Replace(loadPod, "namespace: ml", "namespace: bad", 1))
	b.Logf("review of %d bytes", len(body))
	var closed16 float64
	for _, tc := range []loadCase{
		{name: "closed-1", clients: 1}, {name: "closed-4", clients: 4}, {name: "closed-16", clients: 16}, {name: "closed-64", clients: 64},
		{name: "open-500/s", rate: 500}, {name: "open-1000/s", rate: 1000}, {name: "open-2x", overload: true},
		{name: "slow-clients", clients: 4, slow: 64}, {name: "beside-bomb", clients: 4, bomb: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url, ca, s := loadServer(b, files, &Options{Engine: engine.Options{Isolation: engine.WorkerProcess, MaxMemory: 256 << 20}, WorkersPerRule: 2})
			spec := &loadSpec{URL: url, CA: ca, Body: body, UID: uidOf(b, body), BadBody: bad, BadUID: uidOf(b, bad),
				Clients: tc.clients, Rate: tc.rate, Slow: tc.slow, Bomb: tc.bomb, Duration: *loadDuration}
			if tc.overload {
				spec.Rate = 2 * closed16
			}
			handlerMax.Store(0)
			refusalMax.Store(0)
			b.ResetTimer()
			cpu := cpuTime()
			r := runLoad(b, spec)
			cpu = cpuTime() - cpu
			b.StopTimer()
			if r.Err != "" {
				b.Fatal(r.Err)
			}
			served := float64(r.Served) / r.Elapsed.Seconds()
			if tc.name == "closed-16" {
				closed16 = served
			}
			b.ReportMetric(served, "reviews/s")
			b.ReportMetric(spec.Rate, "offered/s")
			b.ReportMetric(ms(r.P50), "p50-ms")
			b.ReportMetric(ms(r.P99), "p99-ms")
			b.ReportMetric(ms(r.Max), "max-ms")
			b.ReportMetric(ms(time.Duration(handlerMax.Load())), "server-max-ms")
			// The CPU time of the webhook's process (not its workers', nor the clients') per
			// review answered.
			b.ReportMetric(float64(cpu.Microseconds())/float64(max(r.Served+r.Refused, 1)), "cpu-us/review")
			b.ReportMetric(float64(r.Sent), "sent")
			b.ReportMetric(float64(r.Refused), "refused")
			b.ReportMetric(float64(r.Full), "refused-429")
			b.ReportMetric(float64(r.Lost), "lost")
			b.ReportMetric(ms(r.RefusedP99), "refused-p99-ms")
			b.ReportMetric(ms(r.RefusedMax), "refused-max-ms")
			b.ReportMetric(ms(time.Duration(refusalMax.Load())), "server-refused-max-ms")
			// Workers started beyond the pools' sizes replaced workers that died or were killed.
			b.ReportMetric(float64(s.workerStats().Started-2*s.opts.workers()), "restarts")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// uidOf returns the uid of the request of an AdmissionReview.
func uidOf(b *testing.B, body []byte) string {
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &r); err != nil || r.Request == nil {
		b.Fatalf("decoding the review: %v", err)
	}
	return string(r.Request.UID)
}

// trickle is a client that sends a review's headers and then its body a byte every 100ms,
// until stop, over connections of its own (HTTP/1.1), one after another.
func trickle(url string, stop chan struct{}) {
	host := strings.TrimSuffix(strings.TrimPrefix(url, "https://"), "/mutate")
	for {
		conn, err := tls.Dial("tcp", host, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		fmt.Fprintf(conn, "POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{")
		answered := make(chan struct{})
		go func() {
			io.Copy(io.Discard, conn)
			close(answered)
		}()
		tick := time.NewTicker(100 * time.Millisecond)
	send:
		for {
			select {
			case <-stop:
				tick.Stop()
				conn.Close()
				return
			case <-answered:
				break send
			case <-tick.C:
				conn.Write([]byte(" "))
			}
		}
		tick.Stop()
		conn.Close()
	}
}

// handlerMax and refusalMax are the longest the handler of loadServer's server took to answer
// and to refuse (429, or denied), in ns: from the request's headers to its answer, as the
// webhook's deadline counts.
var handlerMax, refusalMax atomic.Int64

func noteMax(m *atomic.Int64, d int64) {
	for {
		old := m.Load()
		if d <= old || m.CompareAndSwap(old, d) {
			return
		}
	}
}

// statusWriter is a ResponseWriter that notes whether its answer refused the review.
type statusWriter struct {
	http.ResponseWriter
	refused bool
	wrote   bool
}

func (w *statusWriter) WriteHeader(code int) {
	w.wrote = true
	w.refused = code == http.StatusTooManyRequests
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.wrote = true
		w.refused = bytes.Contains(p, []byte(`"allowed":false`))
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// loadServer serves config (with the overlays in files) over TLS with HTTP/2, as starpod
// webhook serves and the API server calls webhooks (client-go's transports speak HTTP/2), and
// returns the URL of /mutate and the server's certificate (DER).
func loadServer(b *testing.B, files map[string]string, opts *Options) (string, []byte, *Server) {
	b.Helper()
	s := newServer(b, files, opts)
	h := s.Handler()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		d := int64(time.Since(start))
		noteMax(&handlerMax, d)
		if sw.refused {
			noteMax(&refusalMax, d)
		}
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	b.Cleanup(ts.Close)
	return ts.URL + "/mutate", ts.Certificate().Raw, s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

package webhook

// This file defines BenchmarkLoad, the webhook under load as scripts/webhook-bench.sh runs
// it: closed loops of 1 to 64 clients and open loops at fixed rates, over TLS with keep-alive
// connections, every answer checked.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/starpod/starpod/engine"
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

// loadResult is what one case of BenchmarkLoad saw.
type loadResult struct {
	sent, served, refused int
	lat                   []time.Duration // of the answers served
	refusedMax            time.Duration   // the longest a refusal took
	full                  int             // refusals with 429
	lost                  int             // requests that got no answer
	elapsed               time.Duration
	err                   error // the first answer that was wrong, not a refusal
}

// check posts body and checks its answer: an AdmissionReview of uid that allows the pod with
// a patch. It reports whether the webhook refused it (429, or denied it).
func check(c *http.Client, url string, body []byte, uid string) (refused bool, err error) {
	_, refused, err = checkWhy(c, url, body, uid)
	return refused, err
}

// checkWhy is check, and says why the webhook refused: "429", or the denial's message.
func checkWhy(c *http.Client, url string, body []byte, uid string) (why string, refused bool, err error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusTooManyRequests {
		return "429", true, nil
	}
	if resp.StatusCode != http.StatusOK {
		return "", false, fmt.Errorf("%d %s", resp.StatusCode, out)
	}
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &r); err != nil {
		return "", false, err
	}
	switch {
	case r.Response == nil || string(r.Response.UID) != uid:
		return "", false, fmt.Errorf("the answer %s is not of uid %s", out, uid)
	case !r.Response.Allowed:
		return r.Response.Result.Message, true, nil
	case r.Response.Patch == nil || !bytes.Contains(r.Response.Patch, []byte(`"nvidia.com/gpu"`)):
		return "", false, fmt.Errorf("the answer %s lacks the toleration", out)
	}
	return "", false, nil
}

// load sends reviews for d: from clients each waiting for its answer (closed loop), or, with
// rate above zero, at rate a second whatever the answers (open loop).
func load(c *http.Client, target string, body []byte, uid string, clients int, rate float64, d time.Duration) *loadResult {
	res := &loadResult{}
	var mu sync.Mutex
	one := func() {
		t0 := time.Now()
		why, refused, err := checkWhy(c, target, body, uid)
		lat := time.Since(t0)
		mu.Lock()
		defer mu.Unlock()
		res.sent++
		switch {
		case errors.As(err, new(*url.Error)):
			// No answer came (the connection broke): counted, not checked.
			res.lost++
		case err != nil:
			if res.err == nil {
				res.err = err
			}
		case refused:
			res.refused++
			res.refusedMax = max(res.refusedMax, lat)
			if why == "429" {
				res.full++
			} else if os.Getenv("WEBHOOK_LOAD_DEBUG") != "" {
				fmt.Fprintln(os.Stderr, "denied:", why)
			}
		default:
			res.served++
			res.lat = append(res.lat, lat)
		}
	}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	if rate > 0 {
		period := time.Duration(float64(time.Second) / rate)
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
		for range clients {
			wg.Go(func() {
				for !stop.Load() {
					one()
				}
			})
		}
		time.Sleep(d)
		stop.Store(true)
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	slices.Sort(res.lat)
	return res
}

func (r *loadResult) quantile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[int(float64(len(r.lat)-1)*q)]
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
// own, deploy/'s limits) with the GPU overlay and a 3.2 KB review of a Deployment's pod:
// closed loops of 1, 4, 16 and 64 clients, open loops at 500 and 1,000 reviews a second and
// at twice what 16 clients got, 4 clients beside 64 slow clients that trickle their bodies,
// and 4 clients beside 2 that send another rule's memory bomb; each case for
// -webhook-load-duration. Each answer is checked: allowed with the overlay's patch, or
// refused (429, or denied); anything else fails the benchmark.
func BenchmarkLoad(b *testing.B) {
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
	req := podRequest(b, loadPod)
	req.UID = "3f6c8f52-2b8e-4f43-9a0c-6f1f0d6b7e21"
	body := reviewJSON(req)
	bad := podRequest(b, strings.Replace(loadPod, "namespace: ml", "namespace: bad", 1))
	badBody := reviewJSON(bad)
	b.Logf("review of %d bytes", len(body))
	var closed16 float64
	for _, tc := range []loadCase{
		{name: "closed-1", clients: 1}, {name: "closed-4", clients: 4}, {name: "closed-16", clients: 16}, {name: "closed-64", clients: 64},
		{name: "open-500/s", rate: 500}, {name: "open-1000/s", rate: 1000}, {name: "open-2x", overload: true},
		{name: "slow-clients", clients: 4, slow: 64}, {name: "beside-bomb", clients: 4, bomb: true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url, c, s := loadServer(b, files, &Options{Engine: engine.Options{Isolation: engine.WorkerProcess, MaxMemory: 256 << 20}, WorkersPerRule: 2})
			// Warm the connections and the workers.
			for range 16 {
				if _, err := check(c, url, body, string(req.UID)); err != nil {
					b.Fatal(err)
				}
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range tc.slow {
				wg.Go(func() { trickle(url, stop) })
			}
			if tc.bomb {
				for range 2 {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							if refused, err := check(c, url, badBody, string(bad.UID)); err != nil || !refused {
								b.Errorf("the bomb was not denied: %v", err)
								return
							}
						}
					})
				}
			}
			rate := tc.rate
			if tc.overload {
				rate = 2 * closed16
			}
			handlerMax.Store(0)
			b.ResetTimer()
			r := load(c, url, body, string(req.UID), tc.clients, rate, *loadDuration)
			b.StopTimer()
			close(stop)
			wg.Wait()
			if r.err != nil {
				b.Fatal(r.err)
			}
			served := float64(r.served) / r.elapsed.Seconds()
			if tc.name == "closed-16" {
				closed16 = served
			}
			b.ReportMetric(served, "reviews/s")
			b.ReportMetric(rate, "offered/s")
			b.ReportMetric(ms(r.quantile(0.5)), "p50-ms")
			b.ReportMetric(ms(r.quantile(0.99)), "p99-ms")
			b.ReportMetric(ms(r.quantile(1)), "max-ms")
			b.ReportMetric(ms(time.Duration(handlerMax.Load())), "server-max-ms")
			b.ReportMetric(float64(r.sent), "sent")
			b.ReportMetric(float64(r.refused), "refused")
			b.ReportMetric(float64(r.full), "refused-429")
			b.ReportMetric(float64(r.lost), "lost")
			b.ReportMetric(ms(r.refusedMax), "refused-max-ms")
			// Workers started beyond the pools' sizes replaced workers that died or were killed.
			b.ReportMetric(float64(s.workerStats().Started-2*s.opts.workers()), "restarts")
			b.ReportMetric(0, "ns/op")
		})
	}
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

// handlerMax is the longest the handler of loadServer's server took to answer, in ns: from
// the request's headers to its answer, as the webhook's deadline counts.
var handlerMax atomic.Int64

// loadServer serves config (with the overlays in files) over TLS with HTTP/2, as starpod
// webhook serves and the API server calls webhooks (client-go's transports speak HTTP/2), and
// returns the URL of /mutate and a client of its own.
func loadServer(b *testing.B, files map[string]string, opts *Options) (string, *http.Client, *Server) {
	b.Helper()
	dir := b.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s, err := New(context.Background(), filepath.Join(dir, "config.yaml"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	h := s.Handler()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, r)
		d := int64(time.Since(start))
		for {
			old := handlerMax.Load()
			if d <= old || handlerMax.CompareAndSwap(old, d) {
				break
			}
		}
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	b.Cleanup(ts.Close)
	return ts.URL + "/mutate", ts.Client(), s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

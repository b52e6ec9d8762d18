package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/fast"
)

// benchServer serves config (with the overlays in files) over TLS and returns the URL of
// /mutate and a client with keep-alive connections enough for clients at once, as the API
// server keeps them.
func benchServer(b *testing.B, files map[string]string, opts *Options, clients int) (string, *http.Client) {
	b.Helper()
	s := newServer(b, files, opts)
	ts := httptest.NewTLSServer(s.Handler())
	b.Cleanup(ts.Close)
	c := ts.Client()
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = clients
	return ts.URL + "/mutate", c
}

// newServer writes files (config.yaml and the overlays) into a directory of their own and
// returns a Server of the config, closed when b ends.
func newServer(b *testing.B, files map[string]string, opts *Options) *Server {
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
	return s
}

// reviewRaw is the pod, encoded as the API server encodes it: in the order of the API types.
func reviewRaw(b *testing.B, podYAML string) []byte {
	req := podRequest(b, podYAML)
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(&pod)
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// reviewBody is an AdmissionReview of the pod, encoded as the API server encodes it.
func reviewBody(b *testing.B, podYAML string) []byte {
	req := podRequest(b, podYAML)
	req.Object.Raw = reviewRaw(b, podYAML)
	body, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// send posts body and checks that the answer is allowed (or denied, with wantDenied).
func send(c *http.Client, url string, body []byte, wantDenied bool) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%d %s", resp.StatusCode, out)
	}
	var r admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &r); err != nil {
		return err
	}
	if r.Response.Allowed == wantDenied || !wantDenied && r.Response.Patch == nil {
		return fmt.Errorf("unexpected response %s", out)
	}
	return nil
}

// hammer sends n reviews from clients goroutines and reports reviews/s, p50 and p99, and
// the CPU time this process spent per review (the server's and the clients'; not the
// workers'). With rate above zero, the clients together send rate reviews a second, each at
// its own steady pace, instead of each as fast as it can.
func hammer(b *testing.B, n, clients int, rate float64, send func() error) {
	b.Helper()
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for k := range clients {
		wg.Go(func() {
			var tick *time.Ticker
			if rate > 0 {
				period := time.Duration(float64(clients) / rate * float64(time.Second))
				time.Sleep(period * time.Duration(k) / time.Duration(clients))
				tick = time.NewTicker(period)
				defer tick.Stop()
			}
			for {
				if tick != nil {
					<-tick.C
				}
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := send(); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "reviews/s")
	b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(n-1)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/review")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAdmission sends AdmissionReviews of the GPU example's pod straight to the webhook
// over TLS from 32 clients at once; the overlay is examples/gpu-tolerations/overlay.star,
// run in worker processes (as starpod webhook runs it) and in process.
func BenchmarkAdmission(b *testing.B) {
	overlay, err := os.ReadFile("../examples/gpu-tolerations/overlay.star")
	if err != nil {
		b.Fatal(err)
	}
	pod, err := os.ReadFile("../examples/gpu-tolerations/pod.yaml")
	if err != nil {
		b.Fatal(err)
	}
	podYAML := strings.Replace(string(pod), "metadata:\n", "metadata:\n  namespace: ml\n", 1)
	files := map[string]string{
		"config.yaml":  "apiVersion: starpod.dev/v1alpha1\nkind: WebhookConfig\nrules:\n- name: gpu\n  match: {namespaces: [ml]}\n  overlays: [overlay.star]\n",
		"overlay.star": string(overlay),
	}
	const clients = 32
	for _, iso := range []struct {
		name string
		opts engine.Options
	}{
		{"workers", engine.Options{Isolation: engine.WorkerProcess}},
		{"in-process", engine.Options{}},
	} {
		b.Run(iso.name, func(b *testing.B) {
			url, c := benchServer(b, files, &Options{Engine: iso.opts, MaxInFlight: 256}, clients)
			body := reviewBody(b, podYAML)
			for range clients { // warm the connections and the workers
				if err := send(c, url, body, false); err != nil {
					b.Fatal(err)
				}
			}
			hammer(b, max(b.N, 2000), clients, 0, func() error { return send(c, url, body, false) })
		})
	}
	// The same at an offered 1,000 reviews a second: the latency of the target load, not of
	// a saturated server.
	b.Run("workers-at-1000/s", func(b *testing.B) {
		url, c := benchServer(b, files, &Options{Engine: engine.Options{Isolation: engine.WorkerProcess}, MaxInFlight: 256}, clients)
		body := reviewBody(b, podYAML)
		for range clients {
			if err := send(c, url, body, false); err != nil {
				b.Fatal(err)
			}
		}
		hammer(b, max(b.N, 3000), clients, 1000, func() error { return send(c, url, body, false) })
	})
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBesideBomb measures the admissions of one rule while two clients keep sending
// another rule's memory bomb, with a worker pool per rule (as the webhook runs) and with one
// pool shared by the rules: what pools per rule are for.
func BenchmarkBesideBomb(b *testing.B) {
	files := besideBomb()
	const clients = 8
	for _, shared := range []bool{false, true} {
		name := "pool-per-rule"
		if shared {
			name = "shared-pool"
		}
		b.Run(name, func(b *testing.B) {
			opts := &Options{Engine: engine.Options{Isolation: engine.WorkerProcess, MaxMemory: 128 << 20}, WorkersPerRule: 2, MaxInFlight: 256}
			if shared {
				opts.sharedPool = engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 4})
				b.Cleanup(func() { opts.sharedPool.Close() })
			}
			url, c := benchServer(b, files, opts, clients+2)
			good := reviewBody(b, trainerPod)
			bad := reviewBody(b, strings.Replace(trainerPod, "namespace: ml", "namespace: bad", 1))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var bombs atomic.Int64
			for range 2 {
				wg.Go(func() {
					repeat(stop, func() bool {
						if err := send(c, url, bad, true); err != nil {
							b.Error(err)
							return false
						}
						bombs.Add(1)
						return true
					})
				})
			}
			hammer(b, max(b.N, 500), clients, 0, func() error { return send(c, url, good, false) })
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(bombs.Load()), "bombs")
		})
	}
}

// BenchmarkPatch measures the patch of an admission of loadPod that the GPU overlay changed
// (a toleration, a node selector and the record), with diffJSON skipping the members the
// documents share ("pruned") and with internal/fast's Off set, diffing the whole documents
// as gomodules.xyz/jsonpatch does ("whole").
func BenchmarkPatch(b *testing.B) {
	obj, err := decodeObject("Pod", "ml", reviewRaw(b, loadPod), nil)
	if err != nil {
		b.Fatal(err)
	}
	before, _ := obj.encode()
	p := obj.pods()[0].DeepCopy()
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	p.Spec.NodeSelector = map[string]string{"cloud.example.com/pool": "gpu-a100"}
	p.Annotations[AppliedAnnotation] = "gpu/overlay.star@sha256:0123456789ab"
	obj.setPods([]*corev1.Pod{p})
	after, _ := obj.encode()
	for _, off := range []bool{false, true} {
		name := "pruned"
		if off {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			defer func(old bool) { fast.Off = old }(fast.Off)
			fast.Off = off
			b.ReportAllocs()
			for b.Loop() {
				if _, err := makePatch(before, before, after); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

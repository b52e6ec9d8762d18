package webhook

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/starpod/starpod/engine"
)

// TestQueueOrder: admissions beyond the queue's n wait, and get their turn in the order they
// came.
func TestQueueOrder(t *testing.T) {
	q := newQueue(1, nil)
	first, err := q.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			tk, err := q.acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			tk.release(true)
		})
		for _, waiting := q.stats(); waiting != i+1; _, waiting = q.stats() {
			time.Sleep(time.Millisecond)
		}
	}
	first.release(true)
	wg.Wait()
	if fmt.Sprint(order) != "[0 1 2]" {
		t.Errorf("turns in order %v, want [0 1 2]", order)
	}
	if running, waiting := q.stats(); running != 0 || waiting != 0 {
		t.Errorf("after all: %d running, %d waiting", running, waiting)
	}
}

// TestQueueRefusesWhatCannotBeServed: with the measured pace, an admission whose wait and work
// would pass its deadline is refused at once, saying so; one that can be served waits.
func TestQueueRefusesWhatCannotBeServed(t *testing.T) {
	q := newQueue(2, nil)
	q.service = time.Hour // as if measured
	var held []*ticket
	for range 2 {
		tk, err := q.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := q.acquire(ctx)
	var slow *slowError
	if !errors.As(err, &slow) || !strings.Contains(err.Error(), "cannot be served within the admission's deadline: 0 admissions wait for the rule's 2 workers") {
		t.Fatalf("got %v, want a *slowError", err)
	}
	if _, waiting := q.stats(); waiting != 0 {
		t.Errorf("a refused admission waits")
	}
	// With time enough, it waits, and gets the turn of the first released.
	q.mu.Lock()
	q.service = time.Millisecond
	q.mu.Unlock()
	got := make(chan error, 1)
	go func() {
		tk, err := q.acquire(ctx)
		if err == nil {
			tk.release(true)
		}
		got <- err
	}()
	for _, waiting := q.stats(); waiting != 1; _, waiting = q.stats() {
		time.Sleep(time.Millisecond)
	}
	held[0].release(false)
	if err := <-got; err != nil {
		t.Errorf("admission with time enough: %v", err)
	}
	held[1].release(false)
}

// TestQueueEnds: an admission whose context ends while it waits leaves the queue with the
// context's error, and its place goes to no one.
func TestQueueEnds(t *testing.T) {
	q := newQueue(1, nil)
	tk, err := q.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := q.acquire(ctx)
		got <- err
	}()
	for _, waiting := q.stats(); waiting != 1; _, waiting = q.stats() {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the context's error", err)
	}
	if running, waiting := q.stats(); running != 1 || waiting != 0 {
		t.Errorf("%d running, %d waiting, want 1 and 0", running, waiting)
	}
	tk.release(true)
	if running, _ := q.stats(); running != 0 {
		t.Errorf("%d running after the release, want 0", running)
	}
}

// workerFixture serves gpuConfig with overlays in worker processes.
func workerFixture(t *testing.T, overlay string, opts *Options) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	opts.Engine.Isolation = engine.WorkerProcess
	return newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": overlay}, opts)
}

// TestBurst: 64 admissions of one rule sent at once over TLS, with the default workers and
// limits but the deadline, are all served, none refused. The deadline is a minute: the queue refuses what its
// measured pace cannot serve in time, and a machine busy with other tests may make an
// admission take a tenth of a second or more, which puts 8s out of the last ones' reach.
func TestBurst(t *testing.T) {
	f := workerFixture(t, gpuOverlay, &Options{RequestTimeout: time.Minute})
	var wg sync.WaitGroup
	var refused, served atomic.Int32
	for i := range 64 {
		wg.Go(func() {
			req := podRequest(t, strings.Replace(trainerPod, "trainer-0", fmt.Sprintf("trainer-%d", i), 1))
			code, body := f.post(req)
			if code != http.StatusOK {
				refused.Add(1)
				t.Errorf("admission %d: %d %s", i, code, body)
				return
			}
			resp := decodeResponse(t, body)
			if !resp.Allowed {
				refused.Add(1)
				t.Errorf("admission %d: denied: %v", i, resp.Result.Message)
				return
			}
			if pod, _ := patched(t, req, resp); len(pod.Spec.Tolerations) != 1 {
				t.Errorf("admission %d: pod not mutated", i)
				return
			}
			served.Add(1)
		})
	}
	wg.Wait()
	if served.Load() != 64 || refused.Load() != 0 {
		t.Errorf("%d served, %d refused, want 64 and 0", served.Load(), refused.Load())
	}
}

// TestSlowClients: clients that send their headers and then trickle their bodies hold no slot:
// with four slots and sixteen such clients, normal reviews are all served; a body that has not
// come by the admission's deadline is answered with 408.
func TestSlowClients(t *testing.T) {
	f := workerFixture(t, gpuOverlay, &Options{MaxInFlight: 4, RequestTimeout: 2 * time.Second})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	codes := make(chan string, 16)
	for range 16 {
		conn, err := tls.Dial("tcp", f.ts.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /mutate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
		wg.Go(func() {
			defer conn.Close()
			answered := make(chan string, 1)
			go func() {
				line, _ := bufio.NewReader(conn).ReadString('\n')
				answered <- line
			}()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case line := <-answered:
					codes <- line
					return
				case <-stop:
					return
				case <-tick.C:
					conn.Write([]byte(" "))
				}
			}
		})
	}
	for i := range 40 {
		req := podRequest(t, strings.Replace(trainerPod, "trainer-0", fmt.Sprintf("trainer-%d", i), 1))
		if pod, _ := patched(t, req, f.review(req)); len(pod.Spec.Tolerations) != 1 {
			t.Errorf("review %d: pod not mutated", i)
		}
	}
	// The slow bodies are cut off at their deadline.
	select {
	case line := <-codes:
		if !strings.Contains(line, " 408 ") {
			t.Errorf("a slow client got %q, want 408", line)
		}
	case <-time.After(time.Minute):
		t.Error("no slow client was answered within a minute")
	}
	close(stop)
	wg.Wait()
}

// TestDeadlineKeepsWorker: an admission whose overlay runs past the admission's deadline is
// answered at the deadline, as its rule's onError says; the worker ends the overlay at its own
// time limit and goes back to its pool, and no worker is started to replace it.
func TestDeadlineKeepsWorker(t *testing.T) {
	loop := "def overlay(pod):\n    for i in range(1 << 40):\n        pass\n"
	f := workerFixture(t, loop, &Options{WorkersPerRule: 1, RequestTimeout: time.Second,
		Engine: engine.Options{MaxSteps: 1 << 62, Timeout: 3 * time.Second}})
	pool := f.srv.cur.Load().pools[0]
	for pool.Stats().Idle != 1 {
		time.Sleep(time.Millisecond)
	}
	// The API server's timeoutSeconds is some seconds above the request timeout: an answer
	// after it would reach no one.
	client := f.ts.Client()
	client.Timeout = 6 * time.Second
	body := reviewJSON(podRequest(t, trainerPod))
	resp, err := client.Post(f.ts.URL+"/mutate", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("no answer before the API server's timeout: %v", err)
	}
	out := decodeResponseBody(t, resp)
	if out.Allowed || !strings.Contains(out.Result.Message, "deadline") {
		t.Errorf("got %+v, want denied by the admission's deadline", out.Result)
	}
	// The worker ends the loop at its time limit, and is put back.
	for pool.Stats().Idle != 1 {
		time.Sleep(10 * time.Millisecond)
	}
	if s := pool.Stats(); s.Started != 1 {
		t.Errorf("worker stats %+v, want the one worker started, none replaced", s)
	}
}

// reviewJSON encodes req in an AdmissionReview.
func reviewJSON(req *admissionv1.AdmissionRequest) []byte {
	body, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	return body
}

// decodeResponse decodes an AdmissionReview's response.
func decodeResponse(t testing.TB, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &out); err != nil || out.Response == nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return out.Response
}

func decodeResponseBody(t testing.TB, resp *http.Response) *admissionv1.AdmissionResponse {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
	}
	return decodeResponse(t, body)
}

// TestQueueFirstTurnsNotMeasured: each worker's first turn, which starts it and compiles the
// overlays in it, does not count in the measured pace; the turns after it do.
func TestQueueFirstTurnsNotMeasured(t *testing.T) {
	q := newQueue(2, nil)
	for i := range 3 {
		tk, err := q.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tk.start = tk.start.Add(-time.Second) // as if it took a second
		tk.release(true)
		q.mu.Lock()
		service := q.service
		q.mu.Unlock()
		if measured := service > 0; measured != (i == 2) {
			t.Errorf("after turn %d: measured pace %v", i, service)
		}
	}
}

package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jsonpatch5 "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
)

// TestMain lets the test binary serve as an overlay worker.
func TestMain(m *testing.M) {
	engine.ServeWorkerIfRequested()
	serveLoadClientIfRequested()
	os.Exit(m.Run())
}

const gpuOverlay = `
def overlay(pod, ctx):
    set_node_selector(pod, "cloud.example.com/pool", ctx.args.get("pool", "gpu-a100"))
    add_toleration(pod, "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule")
`

const trainerPod = `
apiVersion: v1
kind: Pod
metadata:
  name: trainer-0
  namespace: ml
  labels: {team: ml}
spec:
  containers:
  - name: trainer
    image: ghcr.io/example/trainer:v1
`

// fixture is a webhook served over TLS by httptest, from a config in a directory of its own.
type fixture struct {
	t      *testing.T
	dir    string
	srv    *Server
	ts     *httptest.Server
	logBuf *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newFixture writes files (name to contents; config.yaml among them) into a directory and
// serves it.
func newFixture(t *testing.T, files map[string]string, opts *Options) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: t.TempDir(), logBuf: &syncBuffer{}}
	for name, data := range files {
		f.write(name, data)
	}
	if opts == nil {
		opts = &Options{}
	}
	opts.Logger = slog.New(slog.NewJSONHandler(f.logBuf, nil))
	srv, err := New(context.Background(), filepath.Join(f.dir, "config.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	f.srv = srv
	f.ts = httptest.NewTLSServer(srv.Handler())
	t.Cleanup(f.ts.Close)
	return f
}

func (f *fixture) write(name, data string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(data), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// podRequest makes an AdmissionRequest to create the pod in podYAML, in its namespace.
func podRequest(t testing.TB, podYAML string) *admissionv1.AdmissionRequest {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(podYAML))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	json.Unmarshal(raw, &meta)
	return &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-" + meta.Metadata.Name),
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: meta.Metadata.Namespace,
		Name:      meta.Metadata.Name,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}
}

// review posts req and returns the response, failing on any HTTP error.
func (f *fixture) review(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	f.t.Helper()
	code, body := f.post(req)
	if code != http.StatusOK {
		f.t.Fatalf("POST /mutate: %d %s", code, body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &out); err != nil {
		f.t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != req.UID {
		f.t.Fatalf("response %+v does not answer uid %s", out.Response, req.UID)
	}
	return out.Response
}

func (f *fixture) post(req *admissionv1.AdmissionRequest) (int, []byte) {
	body, _ := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	return f.postBytes(body)
}

func (f *fixture) postBytes(body []byte) (int, []byte) {
	f.t.Helper()
	resp, err := f.ts.Client().Post(f.ts.URL+"/mutate", "application/json", bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// patched applies resp's patch to req's object and returns the pod.
func patched(t testing.TB, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) (*corev1.Pod, []byte) {
	t.Helper()
	raw := req.Object.Raw
	if resp.Patch != nil {
		if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
			t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
		}
		p, err := jsonpatch5.DecodePatch(resp.Patch)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = p.Apply(raw); err != nil {
			t.Fatalf("patch %s: %v", resp.Patch, err)
		}
	}
	pod := new(corev1.Pod)
	if err := json.Unmarshal(raw, pod); err != nil {
		t.Fatal(err)
	}
	return pod, raw
}

const gpuConfig = `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: gpu-pool
  match: {namespaces: [ml], kinds: [Pod], labelSelector: {matchLabels: {team: ml}}}
  overlays: [gpu.star]
  args: {pool: a100}
`

func TestMutatePod(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	req := podRequest(t, trainerPod)
	resp := f.review(req)
	if !resp.Allowed {
		t.Fatalf("not allowed: %v", resp.Result)
	}
	pod, _ := patched(t, req, resp)
	if got := pod.Spec.NodeSelector["cloud.example.com/pool"]; got != "a100" {
		t.Errorf("nodeSelector pool = %q, want a100 (from the rule's args)", got)
	}
	wantTol := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}
	if diff := cmp.Diff(wantTol, pod.Spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	wantAnn := "gpu-pool/gpu.star@sha256:" + hash([]byte(gpuOverlay))[:12]
	if got := pod.Annotations[AppliedAnnotation]; got != wantAnn {
		t.Errorf("annotation %s = %q, want %q", AppliedAnnotation, got, wantAnn)
	}
	if want := []string{"starpod rule gpu-pool: changed by gpu.star"}; !cmp.Equal(resp.Warnings, want) {
		t.Errorf("warnings = %q, want %q", resp.Warnings, want)
	}
	log := f.logBuf.String()
	for _, want := range []string{`"uid":"uid-trainer-0"`, `"namespace":"ml"`, `"kind":"Pod"`, `"name":"trainer-0"`, `"rules":["gpu-pool"]`, `"outcome":"mutated"`, `"duration":`} {
		if !strings.Contains(log, want) {
			t.Errorf("log line lacks %s:\n%s", want, log)
		}
	}
}

// TestReinvocation sends the object the first admission made: the overlays change nothing,
// and the response has no patch.
func TestReinvocation(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	req := podRequest(t, trainerPod)
	_, raw := patched(t, req, f.review(req))
	req2 := podRequest(t, trainerPod)
	req2.Object.Raw = raw
	resp := f.review(req2)
	if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) > 0 {
		t.Errorf("reinvocation: got allowed %v, patch %s, warnings %q; want allowed, no patch, no warnings", resp.Allowed, resp.Patch, resp.Warnings)
	}
}

// TestDryRun: a dry-run admission gets the response a real one would.
func TestDryRun(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	req := podRequest(t, trainerPod)
	want := f.review(req)
	dry := true
	req.DryRun = &dry
	got := f.review(req)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry-run response (-real +dry):\n%s", diff)
	}
	if !strings.Contains(f.logBuf.String(), `"dryRun":true`) {
		t.Errorf("log does not say dryRun")
	}
}

func TestNoMatch(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	for name, pod := range map[string]string{
		"other namespace": strings.Replace(trainerPod, "namespace: ml", "namespace: web", 1),
		"other labels":    strings.Replace(trainerPod, "team: ml", "team: web", 1),
	} {
		resp := f.review(podRequest(t, pod))
		if !resp.Allowed || resp.Patch != nil || len(resp.Warnings) > 0 {
			t.Errorf("%s: got allowed %v, patch %s, warnings %q; want allowed unchanged", name, resp.Allowed, resp.Patch, resp.Warnings)
		}
	}
	// Not a create: unchanged.
	req := podRequest(t, trainerPod)
	req.Operation = admissionv1.Update
	if resp := f.review(req); !resp.Allowed || resp.Patch != nil {
		t.Errorf("update: got allowed %v, patch %s; want allowed unchanged", resp.Allowed, resp.Patch)
	}
}

// TestRulesInOrder: each rule sees the pod the rules before it made, and the annotation
// names every overlay applied.
func TestRulesInOrder(t *testing.T) {
	f := newFixture(t, map[string]string{
		"config.yaml": `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: first
  match: {namespaces: [ml]}
  overlays: [a.star]
- name: second
  overlays: [b.star, noop.star]
`,
		"a.star":    "def overlay(pod):\n    pod['metadata'].setdefault('labels', {})['step'] = 'a'\n",
		"b.star":    "def overlay(pod):\n    pod['metadata']['labels']['step'] += 'b'\n",
		"noop.star": "def overlay(pod):\n    pass\n",
	}, nil)
	req := podRequest(t, trainerPod)
	resp := f.review(req)
	pod, _ := patched(t, req, resp)
	if got := pod.Labels["step"]; got != "ab" {
		t.Errorf("label step = %q, want ab", got)
	}
	want := []string{"starpod rule first: changed by a.star", "starpod rule second: changed by b.star"}
	if !cmp.Equal(resp.Warnings, want) {
		t.Errorf("warnings = %q, want %q", resp.Warnings, want)
	}
	if got := pod.Annotations[AppliedAnnotation]; strings.Count(got, ",") != 2 || !strings.Contains(got, "second/noop.star@sha256:") {
		t.Errorf("annotation = %q, want the three overlays", got)
	}
}

const failConfig = `
apiVersion: starpod.dev/v1alpha1
kind: WebhookConfig
rules:
- name: labels
  overlays: [label.star]
- name: quota
  overlays: [quota.star]
  onError: %s
`

const quotaOverlay = `def overlay(pod):
    fail("team ml is over its GPU quota")
`

func TestOnErrorFail(t *testing.T) {
	f := newFixture(t, map[string]string{
		"config.yaml": fmt.Sprintf(failConfig, "Fail"),
		"label.star":  "def overlay(pod):\n    pod['metadata']['labels']['x'] = 'y'\n",
		"quota.star":  quotaOverlay,
	}, nil)
	resp := f.review(podRequest(t, trainerPod))
	if resp.Allowed {
		t.Fatal("allowed, want denied")
	}
	msg := resp.Result.Message
	for _, want := range []string{"starpod rule quota:", "quota.star:2:9", "team ml is over its GPU quota"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if resp.Patch != nil {
		t.Errorf("a denial has a patch: %s", resp.Patch)
	}
}

func TestOnErrorIgnore(t *testing.T) {
	f := newFixture(t, map[string]string{
		"config.yaml": fmt.Sprintf(failConfig, "Ignore"),
		"label.star":  "def overlay(pod):\n    pod['metadata']['labels']['x'] = 'y'\n",
		"quota.star":  quotaOverlay,
	}, nil)
	req := podRequest(t, trainerPod)
	resp := f.review(req)
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	pod, _ := patched(t, req, resp)
	if pod.Labels["x"] != "y" {
		t.Errorf("the rule before the failing one was left out: labels %v", pod.Labels)
	}
	if len(resp.Warnings) != 2 || !strings.Contains(resp.Warnings[1], "team ml is over its GPU quota") || !strings.Contains(resp.Warnings[1], "onError: Ignore") {
		t.Errorf("warnings = %q, want the ignored failure named", resp.Warnings)
	}
	if got := pod.Annotations[AppliedAnnotation]; strings.Contains(got, "quota") {
		t.Errorf("annotation %q names the failed rule", got)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, &Options{MaxBodyBytes: 4096})
	req := podRequest(t, trainerPod)
	req.Object.Raw = bytes.Replace(req.Object.Raw, []byte(`"trainer-0"`), []byte(`"`+strings.Repeat("x", 5000)+`"`), 1)
	if code, body := f.post(req); code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "over 4096 bytes") {
		t.Errorf("big body: %d %s, want 413 naming the bound", code, body)
	}
	if code, _ := f.postBytes([]byte(`{"kind": "AdmissionReview"`)); code != http.StatusBadRequest {
		t.Errorf("truncated JSON: %d, want 400", code)
	}
	if code, _ := f.postBytes([]byte(`{"kind": "AdmissionReview"}`)); code != http.StatusBadRequest {
		t.Errorf("no request: %d, want 400", code)
	}
	noUID := podRequest(t, trainerPod)
	noUID.UID = ""
	if code, body := f.post(noUID); code != http.StatusBadRequest || !strings.Contains(string(body), "request.uid") {
		t.Errorf("no uid: %d %s, want 400 naming request.uid", code, body)
	}
	bad := podRequest(t, trainerPod)
	bad.Object.Raw = []byte(`{"spec": {"containers": 3}}`)
	if resp := f.review(bad); resp.Allowed || resp.Result.Code != http.StatusBadRequest {
		t.Errorf("undecodable pod: got %+v, want denied with 400", resp)
	}
}

// TestConcurrencyRefused: beyond MaxInFlight a request is refused at once, not queued.
func TestConcurrencyRefused(t *testing.T) {
	f := newFixture(t, map[string]string{
		"config.yaml": gpuConfig,
		"gpu.star":    "def overlay(pod):\n    for i in range(1 << 40):\n        pass\n",
	}, &Options{MaxInFlight: 1, Engine: engine.Options{MaxSteps: 1 << 62, Timeout: 3 * time.Second}})
	done := make(chan *admissionv1.AdmissionResponse)
	go func() { done <- f.review(podRequest(t, trainerPod)) }()
	for len(f.srv.slots) == 0 {
		time.Sleep(time.Millisecond)
	}
	code, body := f.post(podRequest(t, trainerPod))
	if code != http.StatusTooManyRequests {
		t.Errorf("second request at once: %d %s, want 429", code, body)
	}
	if resp := <-done; resp.Allowed || !strings.Contains(resp.Result.Message, "wall time") && !strings.Contains(resp.Result.Message, "time") {
		t.Errorf("slow overlay: %+v, want denied by the time limit", resp.Result)
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	f := newFixture(t, map[string]string{"config.yaml": gpuConfig, "gpu.star": gpuOverlay}, nil)
	f.review(podRequest(t, trainerPod))
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := f.ts.Client().Get(f.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d, want 200", path, resp.StatusCode)
		}
	}
	resp, err := f.ts.Client().Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`starpod_webhook_admissions_total{outcome="mutated",rule="gpu-pool"} 1`,
		`starpod_webhook_admissions_total{outcome="mutated",rule=""} 1`,
		`starpod_webhook_admission_duration_seconds_count{outcome="mutated"} 1`,
		`starpod_webhook_config_reloads_total{result="success"} 1`,
		`starpod_webhook_workers_started_total`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// TestExample serves examples/webhook/config.yaml: its pod is stored as expected.yaml says,
// with the annotation.
func TestExample(t *testing.T) {
	srv, err := New(context.Background(), "../examples/webhook/config.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewTLSServer(srv.Handler())
	defer ts.Close()
	f := &fixture{t: t, srv: srv, ts: ts}
	pod, err := os.ReadFile("../examples/webhook/pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	req := podRequest(t, string(pod))
	got, _ := patched(t, req, f.review(req))
	if !strings.HasPrefix(got.Annotations[AppliedAnnotation], "gpu-pool/overlay.star@sha256:") {
		t.Errorf("annotation %q", got.Annotations[AppliedAnnotation])
	}
	delete(got.Annotations, AppliedAnnotation)
	if len(got.Annotations) == 0 {
		got.Annotations = nil
	}
	wantYAML, err := os.ReadFile("../examples/webhook/expected.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := new(corev1.Pod)
	if err := yaml.UnmarshalStrict(wantYAML, want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored pod (-expected.yaml +got):\n%s", diff)
	}
}

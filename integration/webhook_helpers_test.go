package integration

// This file runs "starpod webhook" for the tests: the real binary on 127.0.0.1 over TLS,
// registered with the shared API server by a MutatingWebhookConfiguration that selects only
// the namespaces a test labels for it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// selectLabel is the namespace label, set to "true", that the namespaceSelector of the test
// webhook id matches: a namespace may be selected by several webhooks (share).
func selectLabel(id string) string { return "webhook-test.starpod.dev/" + id }

// A testWebhook is a running "starpod webhook" and its registration.
type testWebhook struct {
	t      *testing.T
	dir    string // its config and overlays
	id     string // names it, its registration and its namespaces (selectLabel)
	addr   string
	client *http.Client // trusts its CA
	log    *logBuffer   // its standard error: one JSON line per admission
	stop   func()       // stops it with SIGTERM and checks that it exits 0
	pid    int          // its process
}

// logBuffer collects a process's output for the test to read while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startWebhook writes files (config.yaml and the overlays) into a directory, starts the
// starpod binary as a webhook serving them with extra flags, waits until it is ready and
// registers it. The registration sends it the Pods created in namespaces labelled
// selectLabel(id) (namespaceFor makes them, share adds them). Cleanup stops both.
func startWebhook(t *testing.T, id string, files map[string]string, extra ...string) *testWebhook {
	t.Helper()
	w := &testWebhook{t: t, dir: t.TempDir(), id: id, log: &logBuffer{}}
	for name, data := range files {
		w.write(name, data)
	}
	certs := filepath.Join(w.dir, "certs")
	r := starpod(t, "webhook", "certs", "--ip", "127.0.0.1", "--out-dir", certs)
	if r.code != 0 {
		t.Fatalf("webhook certs: %s", r)
	}
	caBundle, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle)
	w.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}

	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	w.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"webhook", "--config", filepath.Join(w.dir, "config.yaml"),
		"--tls-cert-file", filepath.Join(certs, "tls.crt"), "--tls-private-key-file", filepath.Join(certs, "tls.key"),
		"--listen", w.addr, "--reload-interval", "200ms"}, extra...)
	cmd := exec.CommandContext(ctx, starpodBin, args...)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = w.log, w.log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.pid = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	w.stop = func() {
		once.Do(func() {
			cancel()
			// Wait reports the context's end even when the process exits 0 on SIGTERM.
			err := <-exited
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
				t.Errorf("starpod webhook: %v after SIGTERM, want exit 0", err)
			}
		})
	}
	t.Cleanup(func() {
		w.stop()
		if t.Failed() {
			t.Logf("starpod webhook log:\n%s", w.log.String())
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err // for the cleanup's stop, which waits for it
			t.Fatalf("starpod webhook exited: %v\n%s", err, w.log.String())
		default:
		}
		resp, err := w.client.Get("https://" + w.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("starpod webhook not ready after a minute: %v\n%s", err, w.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.register(caBundle)
	return w
}

func (w *testWebhook) write(name, data string) {
	w.t.Helper()
	// Write and rename, as a ConfigMap volume changes its files: never half a file.
	tmp := filepath.Join(w.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(w.dir, name)); err != nil {
		w.t.Fatal(err)
	}
}

// register creates the MutatingWebhookConfiguration that sends the webhook the Pods and
// workloads created in its namespaces: deploy/'s rules, with a URL for its Service.
func (w *testWebhook) register(caBundle []byte) {
	w.t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "deploy", "mutatingwebhookconfiguration.yaml"))
	if err != nil {
		w.t.Fatal(err)
	}
	var deployed admissionregistrationv1.MutatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(data, &deployed); err != nil {
		w.t.Fatalf("deploy/mutatingwebhookconfiguration.yaml: %v", err)
	}
	url := "https://" + w.addr + "/mutate"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	timeout := int32(10)
	name := "starpod-" + w.id
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "pods.starpod.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   deployed.Webhooks[0].Rules,
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{selectLabel(w.id): "true"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			ReinvocationPolicy:      &ifNeeded,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	ctx := context.Background()
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// namespaceFor creates a namespace whose pods the webhook admits.
func (w *testWebhook) namespaceFor(name string) string {
	w.t.Helper()
	name = w.id + "-" + name
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{selectLabel(w.id): "true"}}}
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// share has the API server send the webhook the pods of ns, another webhook's namespace, too.
func (w *testWebhook) share(ns string) {
	w.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, selectLabel(w.id))
	if _, err := kube.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// peakRSS returns the webhook process's peak resident memory (VmHWM), in bytes.
func (w *testWebhook) peakRSS() int64 {
	w.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.pid))
	if err != nil {
		w.t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				w.t.Fatal(err)
			}
			return kb << 10
		}
	}
	w.t.Fatalf("no VmHWM in /proc/%d/status", w.pid)
	return 0
}

// waitActive waits until the API server sends the webhook the pods of ns: the API server
// learns of a new MutatingWebhookConfiguration through a watch, a moment after it is made.
// It dry-runs creating pod in ns until the webhook logs an admission of it.
func (w *testWebhook) waitActive(ns string, pod *corev1.Pod) {
	w.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p := pod.DeepCopy()
		p.Name = fmt.Sprintf("probe-%d", time.Now().UnixNano())
		kube.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if strings.Contains(w.log.String(), `"name":"`+p.Name+`"`) {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the API server did not call the webhook within a minute\n%s", w.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// warningClient returns a client of the API server that collects the warnings it is sent.
func warningClient(t *testing.T) (kubernetes.Interface, *warnings) {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	ws := &warnings{}
	cfg.WarningHandler = ws
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, ws
}

// warnings is a rest.WarningHandler that keeps what it is given.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// admissionDurations returns the durations of the admissions the webhook logged, sorted.
func (w *testWebhook) admissionDurations() []time.Duration {
	var ds []time.Duration
	sc := bufio.NewScanner(strings.NewReader(w.log.String()))
	for sc.Scan() {
		var line struct {
			Msg      string `json:"msg"`
			Name     string `json:"name"`
			Duration int64  `json:"duration"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "admission" && !strings.HasPrefix(line.Name, "probe-") {
			ds = append(ds, time.Duration(line.Duration))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds
}

// isNotFound reports whether err says the object does not exist.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

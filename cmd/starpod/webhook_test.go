package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"
)

// lockedBuffer is a buffer that the server and the test use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestWebhookServes runs "starpod webhook" on the example config with certificates from
// "starpod webhook certs", sends it the example pod over TLS, replaces the certificate
// files and sees the new certificate served, and stops it by its context.
func TestWebhookServes(t *testing.T) {
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"webhook", "certs", "--ip", "127.0.0.1", "--out-dir", certs}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("certs: exit %d: %s", code, stderr.String())
	}
	pool := caPool(t, strings.TrimSpace(stdout.String()))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"webhook", "--config", repoPath("examples/webhook/config.yaml"),
			"--tls-cert-file", filepath.Join(certs, "tls.crt"), "--tls-private-key-file", filepath.Join(certs, "tls.key"),
			"--listen", addr, "--isolation", "none", "--reload-interval", "50ms"}, nil, &out, &out)
	}()
	client := func(pool *x509.CertPool) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 10 * time.Second}
	}
	c := client(pool)
	base := "https://" + addr
	waitReady(t, c, base+"/readyz", done, &out)

	pod, err := os.ReadFile(repoPath("examples/webhook/pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml","operation":"CREATE","object":%s}}`, yamlToJSON(t, pod))
	resp, err := c.Post(base+"/mutate", "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &got); err != nil || got.Response == nil {
		t.Fatalf("response %s: %v", body, err)
	}
	if !got.Response.Allowed || !strings.Contains(string(got.Response.Patch), "gpu-a100") {
		t.Errorf("response %s, want allowed with a patch to the gpu-a100 pool", body)
	}
	if !strings.Contains(out.String(), `"msg":"admission","uid":"u1","namespace":"ml","kind":"Pod","name":"trainer-0"`) {
		t.Errorf("no admission log line:\n%s", out.String())
	}

	// New certificate files are served without a restart.
	var stdout2 bytes.Buffer
	if code := run(context.Background(), []string{"webhook", "certs", "--ip", "127.0.0.1", "--out-dir", certs, "--force"}, nil, &stdout2, &stderr); code != 0 {
		t.Fatalf("certs: exit %d: %s", code, stderr.String())
	}
	c2 := client(caPool(t, strings.TrimSpace(stdout2.String())))
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c2.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new certificate is not served: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after its context ended, want 0:\n%s", code, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the webhook did not stop when its context ended")
	}
}

func caPool(t *testing.T, caBundle string) *x509.CertPool {
	t.Helper()
	ca, err := base64.StdEncoding.DecodeString(caBundle)
	if err != nil {
		t.Fatalf("caBundle %q: %v", caBundle, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("caBundle holds no certificate")
	}
	return pool
}

func waitReady(t *testing.T, c *http.Client, url string, done chan int, out *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case code := <-done:
			t.Fatalf("webhook exited %d:\n%s", code, out.String())
		default:
		}
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready: %v\n%s", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func yamlToJSON(t *testing.T, y []byte) string {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

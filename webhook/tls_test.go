package webhook

import (
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCertWatcher: new certificate files are loaded; files that do not load leave the last
// good pair serving.
func TestCertWatcher(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(c *Certs) {
		os.WriteFile(certFile, c.Cert, 0o644)
		os.WriteFile(keyFile, c.Key, 0o600)
	}
	one, err := NewCerts([]string{"one.example"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	write(one)
	w, err := newCertWatcher(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	name := func() string {
		c, _ := w.get(nil)
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.DNSNames[0]
	}
	two, _ := NewCerts([]string{"two.example"}, nil, time.Hour)
	write(two)
	if err := w.load(); err != nil || name() != "two.example" {
		t.Errorf("after new files: %v, serving %s; want two.example", err, name())
	}
	os.WriteFile(keyFile, one.Key, 0o600) // a key that is not the certificate's
	if err := w.load(); err == nil || name() != "two.example" {
		t.Errorf("after a mismatched pair: %v, serving %s; want an error and two.example", err, name())
	}
	// The CA signed the serving certificate.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(one.CA)
	write(one)
	w.load()
	c, _ := w.get(nil)
	leaf, _ := x509.ParseCertificate(c.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("the serving certificate does not verify against its CA: %v", err)
	}
}

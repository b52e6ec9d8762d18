package webhook

// This file defines the serving certificate, reloaded when its files change, as
// controller-runtime's certwatcher does.

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// A certWatcher holds the serving certificate and key pair and reloads it when its files
// change. A pair that does not load is logged, and the one before keeps serving.
type certWatcher struct {
	certFile, keyFile string
	log               *slog.Logger

	mu        sync.RWMutex
	cert      *tls.Certificate
	certBytes []byte
	keyBytes  []byte
}

func newCertWatcher(certFile, keyFile string, log *slog.Logger) (*certWatcher, error) {
	w := &certWatcher{certFile: certFile, keyFile: keyFile, log: log}
	if err := w.load(); err != nil {
		return nil, err
	}
	return w, nil
}

// load reads the files and, if they changed, loads the pair.
func (w *certWatcher) load() error {
	cb, err := os.ReadFile(w.certFile)
	if err != nil {
		return fmt.Errorf("reading the TLS certificate: %w", err)
	}
	kb, err := os.ReadFile(w.keyFile)
	if err != nil {
		return fmt.Errorf("reading the TLS private key: %w", err)
	}
	w.mu.RLock()
	same := bytes.Equal(cb, w.certBytes) && bytes.Equal(kb, w.keyBytes)
	w.mu.RUnlock()
	if same {
		return nil
	}
	cert, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		return fmt.Errorf("%s, %s: %w", w.certFile, w.keyFile, err)
	}
	w.mu.Lock()
	w.cert, w.certBytes, w.keyBytes = &cert, cb, kb
	w.mu.Unlock()
	return nil
}

// get is the tls.Config's GetCertificate.
func (w *certWatcher) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cert, nil
}

// run reloads the pair every interval until ctx ends.
func (w *certWatcher) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.RLock()
		old := w.cert
		w.mu.RUnlock()
		if err := w.load(); err != nil {
			if err.Error() != lastErr {
				lastErr = err.Error()
				w.log.Error("serving certificate not reloaded; the last good one keeps serving", "error", lastErr)
			}
			continue
		}
		lastErr = ""
		w.mu.RLock()
		changed := w.cert != old
		w.mu.RUnlock()
		if changed {
			w.log.Info("serving certificate reloaded", "cert", w.certFile)
		}
	}
}

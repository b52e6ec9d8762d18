package bound

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.star")
	os.WriteFile(small, []byte("x = 1\n"), 0o644)
	if data, err := ReadFile(small, 6, "script"); err != nil || string(data) != "x = 1\n" {
		t.Fatalf("ReadFile(small) = %q, %v", data, err)
	}
	_, err := ReadFile(small, 5, "script")
	var size *SizeError
	if !errors.As(err, &size) || size.Limit != 5 || size.What != "script" {
		t.Fatalf("ReadFile over the limit: got %v, want a *SizeError", err)
	}
	if got, want := err.Error(), small+": the script is larger than the limit of 5"; got != want {
		t.Errorf("error: got %q, want %q", got, want)
	}

	// A sparse file of 1 GiB is refused from its size, without reading it.
	sparse := filepath.Join(dir, "sparse.star")
	f, _ := os.Create(sparse)
	f.Truncate(1 << 30)
	f.Close()
	if _, err := ReadFile(sparse, 1<<20, "module"); !errors.As(err, &size) {
		t.Fatalf("sparse file: got %v, want a *SizeError", err)
	}

	// Devices, directories and named pipes are refused without blocking.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"/dev/zero": "is a character device, want a regular file",
		dir:         "is a directory, want a regular file",
		fifo:        "is a named pipe, want a regular file",
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(name, 1<<20, "module"); done <- err }()
		select {
		case err := <-done:
			var typ *TypeError
			if !errors.As(err, &typ) || !strings.HasSuffix(err.Error(), want) || !IsLimit(err) {
				t.Errorf("ReadFile(%s): got %v, want a *TypeError ending %q", name, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadFile(%s) blocked", name)
		}
	}
	if _, err := Open("/dev/zero"); err == nil {
		t.Errorf("Open(/dev/zero): got no error")
	}
}

func TestReadAllPipe(t *testing.T) {
	r, w, _ := os.Pipe()
	go func() {
		w.Write([]byte(strings.Repeat("a", 100)))
		w.Close()
	}()
	_, err := ReadAll(r, "<stdin>", 99, "stream")
	var size *SizeError
	if !errors.As(err, &size) {
		t.Fatalf("got %v, want a *SizeError", err)
	}
}

func TestQuantity(t *testing.T) {
	for _, s := range []string{"1", "500m", "1.5Gi", "1e3", "1E3", "2E", "1e-100", "1e100", "-1e+50", "0.000000001", "9223372036854775807"} {
		if err := Quantity(s); err != nil {
			t.Errorf("Quantity(%q): %v", s, err)
		}
		start := time.Now()
		resource.ParseQuantity(s)
		if d := time.Since(start); d > time.Second {
			t.Errorf("ParseQuantity(%q) took %v", s, d)
		}
	}
	for s, want := range map[string]string{
		"9e2147483647":           "exponent 2147483647 is out of range",
		"1e101":                  "exponent 101 is out of range",
		"1e-101":                 "exponent -101 is out of range",
		"1e99999999999999999999": "exponent 99999999999999999999 is out of range",
		strings.Repeat("9", 65):  "65 characters is longer than the limit of 64",
	} {
		if err := Quantity(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Quantity(%q): got %v, want %q", s, err, want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{512 << 20: "512Mi", 3 << 20: "3Mi", 1 << 30: "1Gi", 1000: "1000", 1536: "1536"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

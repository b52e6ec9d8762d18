package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestStartProfile checks that $STARPOD_CPUPROFILE makes a command write a CPU profile, named
// by its pid, and that without it nothing is written.
func TestStartProfile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(profileEnv, "")
	startProfile()()
	t.Setenv(profileEnv, filepath.Join(dir, "cpu"))
	stop := startProfile()
	for i := 0; i < 1e6; i++ {
		_ = bytes.Repeat([]byte{'x'}, i%64)
	}
	stop()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) != 1 || filepath.Base(files[0]) != "cpu."+strconv.Itoa(os.Getpid())+".pprof" {
		t.Fatalf("got files %v (%v), want cpu.PID.pprof", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		t.Errorf("the profile: %v, %d bytes, want a gzipped profile", err, len(data))
	}
}

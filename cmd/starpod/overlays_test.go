package main

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/starpod/starpod/cmd/starpod/internal/early"
)

// TestEarlyWorkerLimit checks that the worker package early starts has the memory limit the
// commands' workers have by default: a worker of another limit would serve no pool.
func TestEarlyWorkerLimit(t *testing.T) {
	var f overlayFlags
	fs := pflag.NewFlagSet("apply", pflag.ContinueOnError)
	f.register(fs, true)
	limit, err := memoryFlag(fs.Lookup("max-memory").DefValue)
	if err != nil {
		t.Fatal(err)
	}
	if limit != early.MaxMemory {
		t.Errorf("--max-memory defaults to %d bytes, and the early worker's limit is %d", limit, early.MaxMemory)
	}
}

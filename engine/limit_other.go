//go:build !unix

package engine

// This file stands in for the memory limit of a process where there is none.

import (
	"errors"
	"os"
	"runtime"
)

// LimitMemory limits the memory of the calling process on Unix systems; here it returns an
// error, since there is no setrlimit.
func LimitMemory(limit int64) error {
	return errors.New("limiting memory: memory limits of processes are not supported on " + runtime.GOOS)
}

// ExceededMemory reports whether a process that limited its memory with [LimitMemory] died of
// the limit. Here no process can limit its memory, so it reports whether the Go runtime said
// that the process ran out of memory.
func ExceededMemory(state *os.ProcessState, stderr string, limit int64) bool {
	return outOfMemory(stderr)
}

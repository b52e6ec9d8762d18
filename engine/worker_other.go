//go:build !unix

package engine

// This file stands in for the operating system limits of worker processes where there are none.

import (
	"errors"
	"os"
	"runtime"
)

func setRlimits(limit int64) error {
	return errors.New("memory limits of worker processes are not supported on " + runtime.GOOS)
}

func joinMemoryCgroup(limit int64) {}

func removeCgroup(pid int) {}

func peakRSS(pid int) int64 { return 0 }

func exitPeakRSS(state *os.ProcessState) int64 { return 0 }

func killedByOOM(state *os.ProcessState) bool { return false }

func pipe() (r, w *os.File, err error) { return os.Pipe() }

//go:build !unix

package engine_test

import "os"

// cpuTimes returns zeros where the CPU time of processes is not known.
func cpuTimes() (self, children int64) { return 0, 0 }

// processExists reports whether a process of the id exists.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

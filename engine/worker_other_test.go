//go:build !unix

package engine_test

// cpuTimes returns zeros where the CPU time of processes is not known.
func cpuTimes() (self, children int64) { return 0, 0 }

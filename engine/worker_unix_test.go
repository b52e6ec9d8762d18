//go:build unix

package engine_test

import (
	"syscall"
	"time"
)

// cpuTimes returns the CPU time (user and system) of the process and of its children that
// have exited, in nanoseconds.
func cpuTimes() (self, children int64) {
	get := func(who int) int64 {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) != nil {
			return 0
		}
		return (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Nanoseconds()
	}
	return get(syscall.RUSAGE_SELF), get(syscall.RUSAGE_CHILDREN)
}

// processExists reports whether a process of the id exists.
func processExists(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

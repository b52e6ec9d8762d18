//go:build unix

package engine

// This file defines how a process limits its own memory, as a worker does, to run scripts
// that the caller does not trust.

import (
	"fmt"
	"os"
	"runtime"
)

// LimitMemory limits the memory of the calling process to limit bytes, as a worker process
// limits its own before it reads any script: it caps GOMAXPROCS at 2 (every thread's stack
// counts against the limit) and limits the process's data segment (the Go heap and thread
// stacks, including what the process holds already) to limit plus 64 MiB for thread stacks,
// and its address space to what it has reserved now plus as much, with setrlimit. Unlike a
// worker, it joins no cgroup, since nothing would remove the cgroup after the process exits.
// Under the race detector, the limit is multiplied by 8 for its shadow memory.
//
// The limit holds for the rest of the process's life, and for the processes it starts. A Go
// program that allocates beyond it dies at once of a fatal "out of memory" error of the
// runtime, which no recover catches; so a program runs what it limits in a child process of
// its own, which calls LimitMemory before it reads any script, and asks [ExceededMemory]
// whether the child died of the limit.
//
// LimitMemory returns an error if limit is below 48Mi, about the least in which a Go
// process compiles a script, or if the system refuses the limit.
func LimitMemory(limit int64) error {
	if limit < workerStartMemory {
		return fmt.Errorf("limiting memory: the memory limit %s is below the %s a process needs to run scripts", FormatSize(limit), FormatSize(workerStartMemory))
	}
	runtime.GOMAXPROCS(min(runtime.GOMAXPROCS(0), 2))
	if err := setRlimits(limit * raceMemoryFactor); err != nil {
		return fmt.Errorf("limiting memory: %v", err)
	}
	return nil
}

// ExceededMemory reports whether a process that limited its memory to limit with
// [LimitMemory], and that has exited in state, died of the limit. stderr is what the process
// wrote to its standard error, or the start of it (the first kilobytes hold the runtime's
// reason). A process dies of the limit when the Go runtime says it ran out of memory (or
// could not allocate, map an arena or start a thread), when the kernel's out-of-memory killer
// killed it (SIGKILL), or when the runtime crashed of a signal with a peak memory of a quarter
// of the limit or more, as it may when one of its own allocations fails.
func ExceededMemory(state *os.ProcessState, stderr string, limit int64) bool {
	return outOfMemory(stderr) || killedByOOM(state) ||
		runtimeCrash(stderr) && exitPeakRSS(state) >= limit*raceMemoryFactor/4
}

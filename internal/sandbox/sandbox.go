// Package sandbox runs untrusted work in child processes that limit their own memory.
//
// A child is this program (or another) started with a memory limit in its environment; it
// calls [Enter] first thing, which limits its data segment and address space with setrlimit
// (and, where a cgroup v2 memory controller is writable, puts it in a cgroup of its own with
// memory.max) before it reads anything untrusted, and makes the Go runtime write its fatal
// errors to a pipe of the parent as well as to standard error. Why a child died then comes
// from that crash report, the signal that ended it (ProcessState), its cgroup's count of
// out-of-memory kills and the peak memory it published: see [Failure] and exit.memory.
//
// To run long-lived workers that answer requests, use a [Pool]: [Pool.Get] returns a ready
// [Worker] (one that has limited its memory and said hello), [Worker.Call] sends one request
// and reads its answers in frames (see [FrameReader]), with a time limit for the first
// answer and for each after it (and, for a request that told the worker its context's
// deadline, a grace period past that deadline: [CallOptions].Grace), and [Pool.Put] gives it
// back. A worker program serves with
// [Serve]; it may count its steps with [SetProgress] in memory its parent reads
// ([Worker.Progress]): a step counts as an answer against the time limit, and tells the
// parent how far a worker that died got, so that the worker need not write out each answer
// at once. To run one child to its end, as starpod test runs each test file, use [Command].
//
// What it does not do: on systems without setrlimit (non-Unix) [Enter] fails; CPU is bounded
// only through the callers' time limits. Under the race detector, memory limits are scaled
// by [RaceMemoryFactor] for its shadow memory.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/residency"
)

// The environment of a child.
const (
	envRole   = "STARPOD_SANDBOX"            // "worker" in a pooled worker, "process" in a Command's child
	envMemory = "STARPOD_SANDBOX_MAX_MEMORY" // the memory limit in bytes
	envProcs  = "STARPOD_SANDBOX_PROCS"      // a worker's share of the parent's GOMAXPROCS
	crashFD   = 3                            // the write end of the crash report's pipe
)

// MinMemory is the smallest memory limit of a child: where a cgroup counts a worker's resident
// memory against the limit, that memory is 20 to 28 MiB before the worker reads a script (the
// runtime, the touched pages of the executable and the worker's first heap), and the script
// needs room beyond it.
const MinMemory = 48 << 20

// A SmallMemoryError is a memory limit below [MinMemory].
type SmallMemoryError struct {
	Limit int64
}

func (e *SmallMemoryError) Error() string {
	return fmt.Sprintf("the memory limit %s is below the %s a process needs to run scripts", bound.FormatSize(e.Limit), bound.FormatSize(MinMemory))
}

// IsWorker reports whether the process was started by a [Pool] as a worker.
func IsWorker() bool { return os.Getenv(envRole) == "worker" }

// IsChild reports whether the process was started by [Command].
func IsChild() bool { return os.Getenv(envRole) == "process" }

// Enter limits the memory of the calling process, a child that a [Pool] or [Command] started,
// to the limit its environment holds, and sends the runtime's fatal errors to the parent's
// crash report. It caps GOMAXPROCS at 2 (every thread's stack counts against the limit), and
// in a worker at the worker's share of the parent's (its GOMAXPROCS over [PoolOptions].Size,
// at least 1). It lets the data segment (the Go heap and thread stacks) and the address space
// grow from what the process holds now by the limit plus 32 MiB for thread stacks, with
// setrlimit, and sets the collector's soft memory limit to the limit (unless GOMEMLIMIT
// does); a worker also joins a memory cgroup of its own where one is writable. A program that
// allocates beyond the limit dies at once of a fatal "out of memory" error of the runtime,
// which no recover catches: the parent's [Failure] says so.
//
// Enter returns an error if the process is no child, if the limit is below [MinMemory], or
// if the system refuses it.
func Enter() error {
	role := os.Getenv(envRole)
	if role == "" {
		return errors.New("limiting memory: this process was not started by the sandbox")
	}
	limit, err := strconv.ParseInt(os.Getenv(envMemory), 10, 64)
	if err != nil || limit <= 0 {
		return fmt.Errorf("%s: got %q, want a positive number of bytes", envMemory, os.Getenv(envMemory))
	}
	if limit < MinMemory {
		return fmt.Errorf("limiting memory: %w", &SmallMemoryError{limit})
	}
	if f := os.NewFile(crashFD, "crash report"); f != nil {
		debug.SetCrashOutput(f, debug.CrashOptions{}) // the runtime keeps a copy of the descriptor
		f.Close()
	}
	procs := 2
	if role == "worker" {
		// A worker does one thing at a time, and its collector the rest: where the pool has a
		// worker per processor, a second P would only have the collector contend with the
		// other workers; where it has fewer, the collector may take what they leave.
		if n, err := strconv.Atoi(os.Getenv(envProcs)); err == nil && n >= 1 {
			procs = min(procs, n)
		}
	}
	runtime.GOMAXPROCS(min(runtime.GOMAXPROCS(0), procs))
	if err := setRlimits(limit * RaceMemoryFactor); err != nil {
		return fmt.Errorf("limiting memory: %w", err)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The collector works harder as the heap nears the limit, so that garbage alone does not
		// reach the hard limit that kills the process.
		debug.SetMemoryLimit(limit * RaceMemoryFactor)
	}
	if role == "worker" {
		joinMemoryCgroup(limit)                            // best effort
		residency.HugeHeap(int(min(limit/8, maxHugeHeap))) // best effort
	}
	enterProgress()
	return nil
}

// maxHugeHeap bounds the part of a worker's heap that grows in huge pages (see
// [residency.HugeHeap]): what a worker that applies, parses and prints batches of pods
// uses. Its resident memory grows by about 2 MiB.
const maxHugeHeap = 16 << 20

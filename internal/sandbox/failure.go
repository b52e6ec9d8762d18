package sandbox

// This file defines why a child died: the Failure of a call or a process, classified from the
// child's crash report, the signal it died of and its cgroup's out-of-memory kills.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/starpod/starpod/internal/bound"
)

// A Reason says why a child gave no answer.
type Reason int

const (
	// Timeout: the parent killed the child for not answering in time.
	Timeout Reason = iota + 1
	// Canceled: the parent killed the child because the caller's context ended.
	Canceled
	// Memory: the child died of its memory limit.
	Memory
	// Crashed: the child died otherwise, or broke the protocol.
	Crashed
)

func (r Reason) String() string {
	switch r {
	case Timeout:
		return "timeout"
	case Canceled:
		return "canceled"
	case Memory:
		return "memory"
	case Crashed:
		return "crashed"
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// A Failure is a child that gave no answer, and why. The child is dead.
type Failure struct {
	Reason Reason
	Limit  int64 // the child's memory limit
	Err    error // for Crashed, what it died of; for Canceled, the context's error
}

func (f *Failure) Error() string {
	switch f.Reason {
	case Timeout:
		return "the process did not answer in time"
	case Canceled:
		return fmt.Sprintf("the process was stopped: %v", f.Err)
	case Memory:
		return fmt.Sprintf("exceeded the memory limit of %s", bound.FormatSize(f.Limit))
	}
	return f.Err.Error()
}

func (f *Failure) Unwrap() error { return f.Err }

// An exit is what the parent knows of a child that has exited.
type exit struct {
	state    *os.ProcessState
	crash    string // the runtime's crash report, or its start
	stderr   string // the start and end of what the child wrote to standard error
	oomKills int    // the out-of-memory kills of its cgroup
	limit    int64
	// inherited is the parent's peak resident set size when the child started, which the
	// system may report as the child's own (see peak).
	inherited int64
	published int64 // the last peak resident set size the child published in its page, or 0
}

// peak returns the child's peak resident set size in bytes, or 0 when it is unknown. The
// system's report counts only where it is above the peak the parent had when it started the
// child, which a child started by vfork takes as the first peak of its own; below, the peak
// is the last the child published of its own (see publishPeak), if it did.
func (x *exit) peak() int64 {
	if p := exitPeakRSS(x.state); p > x.inherited {
		return max(p, x.published)
	}
	return x.published
}

// memory reports whether the child died of its memory limit: its cgroup's out-of-memory
// killer killed it; or the Go runtime died (its crash report is not empty) of a fatal error
// about memory (it ran out, or could not allocate, map an arena, start a thread or grow a
// stack), or of a signal inside the runtime with a known peak memory (see peak) of a quarter
// of the limit or more (the collector does not check all of its own allocations). The runtime prints the
// line that names a fatal error ("fatal error: out of memory") before it starts its crash
// report, so that line is read from standard error, where nothing else of a worker goes, and
// only when the crash report says the runtime died. Under the race detector, whose allocator
// fails outside the Go runtime, a ThreadSanitizer allocation failure counts too.
func (x *exit) memory() bool {
	if x.oomKills > 0 {
		return true
	}
	if x.runtimeDied() && (fatalMemory(x.stderr) || runtimeCrash(x.stderr) && x.peak() >= x.limit*RaceMemoryFactor/4) {
		return true
	}
	return RaceMemoryFactor > 1 && raceOutOfMemory(x.stderr)
}

// why returns what a child that did not die of memory died of: the process state, and the
// line of standard error that names the fatal error, panic or signal, or its last line.
func (x *exit) why() string {
	msg := x.state.String()
	line := lastLine(x.stderr)
	if x.runtimeDied() {
		for _, l := range strings.Split(x.stderr, "\n") {
			if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || hasSignalPrefix(l) {
				line = l
				break
			}
		}
	}
	if line != "" {
		msg += ": " + line
	}
	return msg
}

// runtimeDied reports whether the Go runtime of the child died: it wrote a crash report, or
// exited with the code 2 of its fatal errors (a crash of a signal in the runtime may come
// before it can write one).
func (x *exit) runtimeDied() bool {
	return x.crash != "" || x.state.ExitCode() == 2
}

// fatalMemory reports whether the lines a dead Go runtime printed say it died of memory.
func fatalMemory(stderr string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(line, "fatal error:") && !strings.HasPrefix(line, "runtime:") && !strings.HasPrefix(line, "runtime/cgo:") {
			continue
		}
		for _, word := range []string{"memory", "arena", "allocate", "address space", "pthread_create", "stack overflow", "stack exceeds"} {
			if strings.Contains(line, word) {
				return true
			}
		}
	}
	return false
}

// runtimeCrash reports whether what a dead Go runtime printed says it crashed of a signal,
// not a panic of Go code.
func runtimeCrash(stderr string) bool {
	return slices.ContainsFunc(strings.Split(stderr, "\n"), hasSignalPrefix)
}

// hasSignalPrefix reports whether a line of a crash report begins with the words of the
// runtime that name a signal it crashed of.
func hasSignalPrefix(line string) bool {
	for _, prefix := range []string{"SIGSEGV: ", "SIGBUS: ", "unexpected fault address", "fatal error: unexpected signal"} {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// raceOutOfMemory reports whether the race detector's runtime said on standard error that it
// could not allocate.
func raceOutOfMemory(stderr string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "ThreadSanitizer") && (strings.Contains(line, "allocate") || strings.Contains(line, "memory") || strings.Contains(line, "mmap")) {
			return true
		}
	}
	return false
}

// firstLine returns the first line of s that is not empty.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// lastLine returns the last line of s that is not empty.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// A tail keeps the first and the last bytes written to it, up to max each.
type tail struct {
	mu         sync.Mutex
	max        int
	head, last []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.max - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	t.last = append(t.last, p...)
	if len(t.last) > t.max {
		t.last = append(t.last[:0], t.last[len(t.last)-t.max:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + string(t.last)
}

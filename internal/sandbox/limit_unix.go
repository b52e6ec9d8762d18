//go:build unix

package sandbox

// This file defines the operating system limits of a child process on Unix systems.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// threadAllowance is the room a child's data limit leaves, beyond its memory limit, for the
// stacks of the threads the Go runtime starts after [Enter] (with cgo, each reserves the 8 MiB
// of a pthread stack, which counts as data): a child has five or six threads at Enter, and its
// GOMAXPROCS of at most 2 keeps it to a few more.
const threadAllowance = 32 << 20

// startData is what a child is taken to hold as data at [Enter] where /proc does not say: its
// static data (crypto's 32 MiB DRBG buffer among it), the runtime's arena index (32 MiB), the
// stacks of its first threads and its first heap. Measured: 115 MiB on linux/amd64.
const startData = 128 << 20

// setRlimits limits the data segment (private writable memory: the Go heap and thread stacks)
// of the process to what it holds now plus limit plus threadAllowance, and its address space
// likewise. Both limits are relative to the process as it is: what it holds at start depends
// on the binary (a test binary maps more than starpod) and on how many threads the runtime
// started, not on the script, and an absolute limit left a child of the smallest memory
// limit as little as 9 MiB to grow.
func setRlimits(limit int64) error {
	grow := limit + threadAllowance
	start := procStatus("self", "VmData") << 10
	if start <= 0 {
		start = startData
	}
	if err := setRlimit(syscall.RLIMIT_DATA, start+grow); err != nil {
		return fmt.Errorf("setrlimit RLIMIT_DATA: %w", err)
	}
	// The Go runtime reserves about a gigabyte of address space at start that it never
	// touches; the address-space limit only stops growth beyond that.
	if vsize := virtualSize(); vsize > 0 && rlimitAS >= 0 {
		if err := setRlimit(rlimitAS, vsize+grow); err != nil {
			return fmt.Errorf("setrlimit RLIMIT_AS: %w", err)
		}
	}
	return nil
}

// setRlimit sets both limits of resource to n bytes.
func setRlimit(resource int, n int64) error {
	var r syscall.Rlimit
	r.Cur = rlimitValue(r.Cur, n)
	r.Max = r.Cur
	return syscall.Setrlimit(resource, &r)
}

// rlimitValue returns n as a limit of the type of a system's syscall.Rlimit, unsigned on
// most, signed on some BSDs.
func rlimitValue[T ~int64 | ~uint64](_ T, n int64) T { return T(n) }

// virtualSize returns the current address space size of the process in bytes, or 0.
func virtualSize() int64 {
	kb := procStatus("self", "VmSize")
	return kb << 10
}

// procStatus returns the value in kB of a field of /proc/<pid>/status, or 0.
func procStatus(pid, name string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			var n int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), "%d", &n)
			return n
		}
	}
	return 0
}

// cgroupOOMKills returns the number of out-of-memory kills in the cgroup of an exited worker,
// from its memory.events, or 0.
func cgroupOOMKills(pid int) int {
	dir := cgroupDir(pid)
	if dir == "" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// cgroupDir returns the directory of a worker's cgroup v2 group: a child, named after the
// worker's pid, of the cgroup the process (the parent) is in; "" when there is no cgroup v2.
func cgroupDir(pid int) string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok {
			for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil {
					return filepath.Join(mnt, rel, fmt.Sprintf("starpod-worker-%d", pid))
				}
			}
		}
	}
	return ""
}

// joinMemoryCgroup moves the process into a cgroup v2 group of its own with memory.max set to
// limit, where the memory controller is available and writable. It does nothing otherwise.
func joinMemoryCgroup(limit int64) {
	dir := cgroupDir(os.Getpid())
	if dir == "" {
		return
	}
	ctl, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"))
	if err != nil || !strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " memory ") {
		return
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return
	}
	if os.WriteFile(filepath.Join(dir, "memory.max"), []byte(fmt.Sprint(limit)), 0) != nil {
		os.Remove(dir)
		return
	}
	os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0) // absent without swap accounting
	if os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0) != nil {
		os.Remove(dir)
	}
}

// removeCgroup removes the cgroup of an exited worker, if it made one.
func removeCgroup(pid int) {
	if dir := cgroupDir(pid); dir != "" {
		os.Remove(dir)
	}
}

// peakRSS returns the peak resident set size of a running process in bytes, or 0.
func peakRSS(pid int) int64 {
	return procStatus(fmt.Sprint(pid), "VmHWM") << 10
}

// exitPeakRSS returns the peak resident set size of an exited process in bytes.
func exitPeakRSS(state *os.ProcessState) int64 {
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}

// pipe returns a pipe in blocking mode. A read of the parent waits in the kernel, which wakes
// it as soon as the worker writes, and the worker's standard input and output (the other
// ends) are blocking too: a pipe of os.Pipe goes through the runtime's network poller, whose
// wake-ups cost more than an answer of the worker takes to decode.
func pipe() (r, w *os.File, err error) {
	var p [2]int
	// As os.Pipe does where there is no pipe2: no process starts between the pipe and
	// close-on-exec.
	syscall.ForkLock.RLock()
	err = syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("pipe", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

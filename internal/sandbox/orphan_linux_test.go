package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestOrphanDies checks that a worker busy with a request dies with the process that started
// it, rather than running on, orphaned, until the request ends.
func TestOrphanDies(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_ORPHANER=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the orphaner: %v", err)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(out)))
	if err != nil {
		t.Fatalf("the orphaner printed %q, want a pid", out)
	}
	// The kernel kills it as its parent exits; a machine busy with other work may take a
	// while to get there.
	for deadline := time.Now().Add(time.Minute); alive(pid); {
		if time.Now().After(deadline) {
			syscallKill(pid)
			t.Fatalf("the worker %d outlived its parent by a minute", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether the process pid exists and is not a zombie waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z' && stat[i+2] != 'X'
}

func syscallKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

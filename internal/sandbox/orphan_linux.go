package sandbox

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the child cmd starts when the process that starts it
// dies: a worker busy with a script, which reads no request until the script ends, would
// otherwise run on, orphaned, to the script's time limit. The signal comes when the thread
// that started the child exits; the Go runtime ends a thread only when a goroutine locked to
// it exits, which this process's goroutines that start children never do.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

package sandbox

// This file defines child processes: how one starts with its limit and its crash report's
// pipe, and Command, which runs one to its end.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// A child is a started child process and what the parent learns of its end.
type child struct {
	cmd    *exec.Cmd
	limit  int64
	crash  *tail // the runtime's crash report
	stderr *tail
	exited chan struct{} // closed when the process has exited and exit is set
	exit   *exit
	onExit func(*exit) // called before exited is closed, if not nil
	// page is the child's page (see progress.go), or nil: the caller closes it once the
	// child has exited.
	page *os.File
}

// maxCrashReport bounds the start, and the end, of a crash report the parent keeps.
const maxCrashReport = 8 << 10

// startChild starts cmd as a child of the role ("worker" or "process") with the memory limit.
func startChild(cmd *exec.Cmd, role string, limit int64, onExit func(*exit)) (*child, error) {
	crashR, crashW, err := pipe()
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, envRole+"="+role, envMemory+"="+strconv.FormatInt(limit, 10))
	files := []*os.File{crashW} // descriptor 3, crashFD
	page := newProgress()
	if page != nil {
		files = append(files, page) // descriptor 4, progressFD
		cmd.Env = append(cmd.Env, envProgress+"="+strconv.Itoa(progressFD))
	}
	cmd.ExtraFiles = append(files, cmd.ExtraFiles...) // then the caller's
	c := &child{cmd: cmd, limit: limit, crash: &tail{max: maxCrashReport}, stderr: &tail{max: 8 << 10},
		exited: make(chan struct{}), onExit: onExit, page: page}
	if cmd.Stderr == nil {
		cmd.Stderr = c.stderr
	} else {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, c.stderr)
	}
	// A child started by vfork, as os/exec starts one on Linux, takes the peak memory of the
	// process that started it as the first peak of its own.
	inherited := peakRSS(os.Getpid())
	dieWithParent(cmd)
	err = cmd.Start()
	crashW.Close()
	if err != nil {
		crashR.Close()
		if page != nil {
			page.Close()
		}
		return nil, err
	}
	crashed := make(chan struct{})
	go func() {
		io.Copy(c.crash, crashR)
		crashR.Close()
		close(crashed)
	}()
	go func() {
		cmd.Wait()
		<-crashed
		pid := cmd.Process.Pid
		published, _ := readWord(page, peakIndex)
		c.exit = &exit{state: cmd.ProcessState, crash: c.crash.String(), stderr: c.stderr.String(),
			oomKills: cgroupOOMKills(pid), limit: limit, inherited: inherited, published: int64(published)}
		removeCgroup(pid)
		if c.onExit != nil {
			c.onExit(c.exit)
		}
		close(c.exited)
	}()
	return c, nil
}

// A Cmd runs a program in a child process that limits its memory when it calls [Enter], as a
// test process does. Its exec.Cmd is for the caller to set up (Stdout, Stderr, Dir, Env)
// before Run.
type Cmd struct {
	*exec.Cmd
	ctx   context.Context
	limit int64
	child *child
}

// Command returns a Cmd that runs the program name with args and the memory limit. The child
// is killed when ctx ends.
func Command(ctx context.Context, limit int64, name string, args ...string) *Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	return &Cmd{Cmd: cmd, ctx: ctx, limit: limit}
}

// Run starts the child and waits for it to exit. It returns an error only when the child
// could not start; how it ended is [Cmd.Failure]'s, and its exit code ProcessState's.
func (c *Cmd) Run() error {
	ch, err := startChild(c.Cmd, "process", c.limit, nil)
	if err != nil {
		return err
	}
	c.child = ch
	<-ch.exited
	if ch.page != nil {
		ch.page.Close()
	}
	return nil
}

// Failure returns why the child died, after Run: nil when it exited of itself without a crash
// report; a Failure whose Reason is Memory when it died of its memory limit, Canceled when
// the context ended, and Crashed otherwise.
func (c *Cmd) Failure() *Failure {
	if c.child == nil {
		return nil
	}
	x := c.child.exit
	if x.memory() {
		return &Failure{Reason: Memory, Limit: c.limit}
	}
	if err := c.ctx.Err(); err != nil {
		return &Failure{Reason: Canceled, Limit: c.limit, Err: err}
	}
	ws, _ := x.state.Sys().(syscall.WaitStatus)
	if x.crash == "" && !ws.Signaled() {
		return nil
	}
	return &Failure{Reason: Crashed, Limit: c.limit, Err: errors.New(x.why())}
}

// String describes the child for messages.
func (c *Cmd) String() string { return fmt.Sprint(c.Cmd.Args) }

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// interrupt runs a command that waits for its standard input, as one whose -f was forgotten
// does, and stops it with a signal once it reads: interrupt [-tty] SIGNAL CODE COMMAND
// [ARG...]. SIGNAL is INT or TERM, sent to the command, or with -tty to its process group as
// a terminal's Ctrl-C is, its standard input then a terminal (a pseudo-terminal) rather than
// a pipe. It checks that the command exits with CODE and that no process of its group (its
// overlay workers) is left once it has. The command's output is the script's stdout and
// stderr, as an exec's would be.
func interrupt(ts *testscript.TestScript, neg bool, args []string) {
	var tty, twice bool
	var ready string // the text on standard error that says the command is under way
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-tty":
			tty = true
		case "-twice":
			twice = true
		case "-stderr":
			if len(args) < 2 {
				ts.Fatalf("interrupt: -stderr takes a TEXT")
			}
			ready = args[1]
			args = args[1:]
		default:
			ts.Fatalf("interrupt: unknown option %s", args[0])
		}
		args = args[1:]
	}
	if neg || len(args) < 3 {
		ts.Fatalf("usage: interrupt [-tty] SIGNAL CODE COMMAND [ARG...]")
	}
	sig := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM}[args[0]]
	if sig == 0 {
		ts.Fatalf("interrupt: bad signal %q, want INT or TERM", args[0])
	}
	want, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("interrupt: bad code %q", args[1])
	}
	cmd := exec.Command(scriptPath(ts, args[2]), args[3:]...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = os.Environ()
	for _, kv := range []string{"HOME", "PATH", "WORK"} {
		cmd.Env = append(cmd.Env, kv+"="+ts.Getenv(kv))
	}
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Standard input stays open and empty until the end: the command waits on it.
	var keep []*os.File
	if tty {
		ptmx, pts, err := openPty()
		ts.Check(err)
		keep = append(keep, ptmx, pts)
		cmd.Stdin = pts
	} else {
		r, w, err := os.Pipe()
		ts.Check(err)
		keep = append(keep, r, w)
		cmd.Stdin = r
	}
	defer func() {
		for _, f := range keep {
			f.Close()
		}
	}()
	ts.Check(cmd.Start())
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		syscall.Kill(-pid, syscall.SIGKILL) // whatever the outcome, nothing is left
	}()
	// Wait until one of its threads reads standard input, or it wrote ready (or it exits
	// before).
	deadline := time.Now().Add(time.Minute)
	under := func() bool {
		if ready != "" {
			return strings.Contains(stderr.String(), ready)
		}
		return readsStdin(pid)
	}
	for !under() {
		select {
		case err := <-done:
			ts.Stdout().Write(stdout.Bytes())
			ts.Stderr().Write([]byte(stderr.String()))
			ts.Fatalf("interrupt: the command exited before it was under way: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			ts.Fatalf("interrupt: the command was not under way within a minute")
		}
	}
	send := func() {
		if tty {
			ts.Check(syscall.Kill(-pid, sig))
		} else {
			ts.Check(syscall.Kill(pid, sig))
		}
	}
	send()
	if twice {
		// The second signal once the first has been seen: the command must not wait for
		// its work to stop.
		for !strings.Contains(stderr.String(), "first signal") {
			if time.Now().After(deadline) {
				ts.Fatalf("interrupt: the command did not say it got the first signal")
			}
			time.Sleep(10 * time.Millisecond)
		}
		send()
	}
	var werr error
	select {
	case werr = <-done:
	case <-time.After(time.Minute):
		ts.Fatalf("interrupt: the command did not exit within a minute of SIG%s", args[0])
	}
	ts.Stdout().Write(stdout.Bytes())
	ts.Stderr().Write([]byte(stderr.String()))
	got := 0
	var exit *exec.ExitError
	if errors.As(werr, &exit) {
		got = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ts.Fatalf("interrupt: the command was killed by %v, want exit code %d", ws.Signal(), want)
		}
	} else if werr != nil {
		ts.Fatalf("interrupt: %v", werr)
	}
	if got != want {
		ts.Fatalf("exit code %d, want %d", got, want)
	}
	// A process of the group, alive or a zombie, outlived the command.
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		ts.Fatalf("interrupt: a process of the command's group outlived it: %s", groupProcesses(pid))
	}
}

// stuckMain is the program signals-stuck: it stops on signals as starpod does, but its work
// does not stop at the first, as a builtin busy in Go would not; the second must end it.
func stuckMain() {
	ctx, _ := withSignals(context.Background(), func() { fmt.Fprintln(os.Stderr, "second signal: exiting") })
	fmt.Fprintln(os.Stderr, "ready")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "first signal:", context.Cause(ctx))
	select {}
}

// scriptPath finds the program name on the script's PATH.
func scriptPath(ts *testscript.TestScript, name string) string {
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	return name
}

// readsStdin reports whether a thread of the process pid waits in a read of descriptor 0.
func readsStdin(pid int) bool {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/syscall")
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		f := strings.Fields(string(data))
		// read(2) is number 0 on amd64 and 63 on arm64; its first argument is the descriptor.
		if len(f) > 1 && (f[0] == strconv.Itoa(unix.SYS_READ)) && f[1] == "0x0" {
			return true
		}
	}
	return false
}

// groupProcesses describes the processes of the process group pgid.
func groupProcesses(pgid int) string {
	var out []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, s[:i+1]+" state "+f[0])
		}
	}
	return strings.Join(out, "; ")
}

// openPty opens a pseudo-terminal: its master and its slave.
func openPty() (ptmx, pts *os.File, err error) {
	ptmx, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptmx.Close()
		return nil, nil, err
	}
	return ptmx, pts, nil
}

// againReader gives its chunks one a Read, io.EOF between them: as a terminal gives a line,
// then Ctrl-D, then what is typed after.
type againReader struct{ chunks []string }

func (r *againReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	c := r.chunks[0]
	if c == "" {
		r.chunks = r.chunks[1:]
		return 0, io.EOF
	}
	n := copy(p, c)
	if r.chunks[0] = c[n:]; r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// TestStopReader checks that one end-of-file ends standard input, that a small buffer gets
// all that a read returned, and that a read waiting for input ends with the context, with the
// signal as its error.
func TestStopReader(t *testing.T) {
	r := newStopReader(context.Background(), &againReader{chunks: []string{"kind: Pod\n", "", "more\n"}})
	var got []byte
	buf := make([]byte, 4)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(got) != "kind: Pod\n" {
		t.Errorf("read %q before the end of the input, want %q", got, "kind: Pod\n")
	}
	if n, err := r.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("a read after the end of the input got %d, %v; want 0, EOF", n, err)
	}

	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	r = newStopReader(ctx, pr)
	go cancel(&signalError{syscall.SIGINT})
	_, err := r.Read(make([]byte, 10))
	var sig *signalError
	if !errors.As(err, &sig) || sig.code() != 130 {
		t.Errorf("a read waiting for input when SIGINT came got %v, want the signal, exit code 130", err)
	}
}

// TestStopWriter checks that nothing reaches the output once the context has ended.
func TestStopWriter(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	var out bytes.Buffer
	w := &stopWriter{ctx, &out}
	fmt.Fprint(w, "before")
	cancel(&signalError{syscall.SIGTERM})
	if _, err := fmt.Fprint(w, "after"); err == nil || out.String() != "before" {
		t.Errorf("after SIGTERM: wrote %q (error %v), want %q and an error", out.String(), err, "before")
	}
}

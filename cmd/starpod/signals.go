package main

// This file defines how a command stops on a signal: the first SIGINT or SIGTERM ends the
// command's context, whose cause names the signal, and the command exits 128+signal (130,
// 143) once its workers have exited; a second signal ends the process at once. Standard
// input is read so that a read waiting for input ends with the context, and nothing reaches
// standard output once the context has ended.

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// A signalError is the cause of a context that a signal ended.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "interrupted by " + signalName(e.sig) }

// code returns the exit code of a process that a signal stopped, as shells give it.
func (e *signalError) code() int { return 128 + int(e.sig) }

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// withSignals returns a context that the first SIGINT or SIGTERM ends, with a *signalError
// as its cause. At a second signal, last is called and the process exits at once with that
// signal's code. stop stops listening.
func withSignals(parent context.Context, last func()) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first os.Signal
		select {
		case first = <-sigs:
		case <-done:
			return
		}
		cancel(&signalError{first.(syscall.Signal)})
		select {
		case sig := <-sigs:
			last()
			os.Exit((&signalError{sig.(syscall.Signal)}).code())
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// signalCode returns the exit code of a command whose context a signal ended, and the
// signal's error.
func signalCode(ctx context.Context) (int, error, bool) {
	var sig *signalError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &sig) {
		return sig.code(), sig, true
	}
	return 0, nil, false
}

// A stopReader reads r until ctx ends: a Read waiting for input returns the context's
// cause at once, though the read it started goes on in the background (a read of a
// terminal or a pipe cannot be called off), and its input is lost, as the command stops.
// The first error of r, io.EOF included, is its last: one end-of-file ends the input, as a
// terminal's Ctrl-D should.
type stopReader struct {
	ctx     context.Context
	r       io.Reader
	file    *os.File // r, if a file, to tell a terminal
	err     error
	pending chan readResult // the read under way, if any
}

type readResult struct {
	data []byte
	err  error
}

func newStopReader(ctx context.Context, r io.Reader) *stopReader {
	f, _ := r.(*os.File)
	return &stopReader{ctx: ctx, r: r, file: f}
}

// maxStopRead bounds the bytes one Read asks of the underlying reader.
const maxStopRead = 256 << 10

func (s *stopReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if s.ctx.Err() != nil {
		return 0, context.Cause(s.ctx)
	}
	if s.pending == nil {
		ch := make(chan readResult, 1)
		buf := make([]byte, min(len(p), maxStopRead))
		go func() {
			n, err := s.r.Read(buf)
			ch <- readResult{buf[:n], err}
		}()
		s.pending = ch
	}
	select {
	case res := <-s.pending:
		s.pending = nil
		n := copy(p, res.data) // len(res.data) <= len(p) of the Read that started it
		if n < len(res.data) {
			// A Read with a smaller buffer than the one that started the read: keep the
			// rest for the next.
			rest := res.data[n:]
			s.pending = make(chan readResult, 1)
			s.pending <- readResult{rest, res.err}
			return n, nil
		}
		if res.err != nil {
			s.err = res.err
		}
		return n, res.err
	case <-s.ctx.Done():
		return 0, context.Cause(s.ctx)
	}
}

// isTerminal reports whether s reads a terminal.
func (s *stopReader) isTerminal() bool {
	return s.file != nil && term.IsTerminal(int(s.file.Fd()))
}

// A stopWriter writes to w until ctx ends, and then refuses: nothing a command writes once
// it is told to stop reaches its output.
type stopWriter struct {
	ctx context.Context
	w   io.Writer
}

func (s *stopWriter) Write(p []byte) (int, error) {
	if s.ctx.Err() != nil {
		return 0, context.Cause(s.ctx)
	}
	return s.w.Write(p)
}

// Unwrap returns the writer s writes to.
func (s *stopWriter) Unwrap() io.Writer { return s.w }

// logWriter returns the writer under w's stopWriter, if it has one: a server logs its
// shutdown after the signal that began it.
func logWriter(w io.Writer) io.Writer {
	if s, ok := w.(*stopWriter); ok {
		return s.w
	}
	return w
}

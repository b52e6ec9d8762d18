package sandbox

// This file defines the worker's side: Serve limits the process and hands its frames to a
// handler.

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// A Handler serves the requests of a worker's parent: it reads frames from in and answers on
// out, until in ends (io.EOF), and returns nil then.
type Handler func(in *FrameReader, out *bufio.Writer) error

// Serve serves as a worker that a [Pool] started: it limits its memory ([Enter]), says it is
// ready in the protocol, checks the parent's hello and hands standard input and output to h.
func Serve(protocol string, h Handler) error {
	if err := Enter(); err != nil {
		return err
	}
	return ServeOn(os.Stdin, os.Stdout, protocol, h)
}

// ServeOn is Serve on r and w, without limiting the process: for tests of handlers.
func ServeOn(r io.Reader, w io.Writer, protocol string, h Handler) error {
	in, out := NewFrameReader(r), bufio.NewWriterSize(w, 64<<10)
	if err := WriteFrame(out, FrameReady, []byte(protocol)); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	// The kind of the first frame comes before its body: a parent of another protocol gets
	// an error at once, not a worker that waits for the rest of a frame.
	kind, err := in.PeekKind()
	if err != nil {
		if err == io.EOF {
			return nil
		}
		return err
	}
	if kind != FrameHello {
		return fmt.Errorf("got a frame of kind %q, want the hello of protocol %q: the parent is another build", kind, protocol)
	}
	_, body, err := in.Next()
	if err != nil {
		return err
	}
	if string(body) != protocol {
		return fmt.Errorf("got protocol %q, want %q: the parent is another build", body, protocol)
	}
	return h(in, out)
}

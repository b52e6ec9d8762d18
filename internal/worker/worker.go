// Package worker is the runtime of starpod's worker processes: a protocol of requests, each a
// frame whose kind names the handler that answers it, served by a process that package
// sandbox started and limited, and the protobuf encoding of the messages in those frames.
//
// A [Protocol] is a value that the package defining the requests makes (package engine, for
// overlays): the same value goes to the pool that starts the workers ([NewPool]) and to the
// server in each worker ([Serve]). Nothing is registered in a global: a program serves the
// requests of the protocol value it is given, and no other.
//
// The messages are encoded as protocol buffers with package protowire: [AppendString] and the
// other Append functions write a field, and [Fields] reads the fields of a message.
package worker

import (
	"bufio"
	"fmt"
	"io"

	"github.com/starpod/starpod/internal/residency"
	"github.com/starpod/starpod/internal/sandbox"
)

// A Protocol is the requests a worker serves and how it answers them.
type Protocol struct {
	// Name names the protocol and its version: a worker refuses a parent that speaks
	// another, such as one of another build.
	Name string

	// Handlers returns the handlers of the requests of one worker process, by the kind of
	// their frame. A worker calls it once, before its first request, so that the handlers
	// may share the state of that worker.
	Handlers func(c *Conn) map[byte]Handler
}

// A Handler answers a request, whose frame's body is body, on the Conn its handlers were made
// with. It returns an error only when the worker cannot go on (the request is malformed, or
// the answer cannot be written): the worker then stops.
type Handler func(body []byte) error

// A Conn is a worker's side of its parent's requests.
type Conn struct {
	In  *sandbox.FrameReader // the frames that follow a request's own, for a request of several
	Out *bufio.Writer        // the answers; written out after each request
}

// NewPool returns a pool of worker processes that speak p: opts with its Protocol set to
// p's name.
func NewPool(p *Protocol, opts sandbox.PoolOptions) *sandbox.Pool {
	opts.Protocol = p.Name
	return sandbox.NewPool(&opts)
}

// Serve serves p as a worker that a pool started (see [sandbox.Serve]): it limits the
// process's memory, then answers the requests read from standard input on standard output,
// one at a time, until standard input closes.
func Serve(p *Protocol) error { return sandbox.Serve(p.Name, p.serve) }

// ServeOn is Serve on r and w, without limiting the process: for tests of handlers.
func ServeOn(r io.Reader, w io.Writer, p *Protocol) error {
	return sandbox.ServeOn(r, w, p.Name, p.serve)
}

// serve answers the requests read from in on out, one at a time, until in ends.
func (p *Protocol) serve(in *sandbox.FrameReader, out *bufio.Writer) error {
	handlers := p.Handlers(&Conn{In: in, Out: out})
	for served := 1; ; served++ {
		kind, body, err := in.Next()
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		h, ok := handlers[kind]
		if !ok {
			return fmt.Errorf("got a frame of kind %q, want a request", kind)
		}
		if err := h(body); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if served == 2 {
			// A worker that serves more than one request lives on: what its start touched
			// of the executable (the initialisation of every linked package) need not stay
			// resident. Best effort, while the parent reads the answer.
			residency.ReleaseExecutable()
		}
	}
}

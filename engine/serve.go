package engine

// This file defines the worker side of process isolation: a process that limits its own
// memory and then compiles and applies the overlays its parent sends.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/residency"
	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/wire"
)

// ServeWorkerIfRequested makes the process an overlay worker when the engine started it as one,
// and otherwise returns at once. A program that compiles overlays with [WorkerProcess] isolation
// and the default [WorkerPool] (which re-executes the program itself) calls it first thing in
// main:
//
//	func main() {
//	    engine.ServeWorkerIfRequested()
//	    ...
//	}
//
// In a worker it limits the process's memory, serves requests on standard input and output
// until standard input closes, and exits; it never returns.
func ServeWorkerIfRequested() {
	if !sandbox.IsWorker() {
		return
	}
	if err := ServeWorker(); err != nil {
		fmt.Fprintf(os.Stderr, "starpod worker: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ServeWorker serves as an overlay worker on standard input and output until standard input
// closes. It first limits the process's memory to the limit the engine passed in its
// environment: the data segment and address space (setrlimit) and, where a cgroup v2 memory
// controller is writable, a cgroup of its own; then it tells the engine it is ready. Commands
// that act as workers (the starpod binary's hidden worker subcommand) call it; other programs
// use [ServeWorkerIfRequested].
func ServeWorker() error {
	return sandbox.Serve(protocolVersion, serveRequests)
}

// serveRequests answers the requests read from in on out, one at a time, until in ends.
func serveRequests(in *sandbox.FrameReader, out *bufio.Writer) error {
	return newServer(in, out).serve()
}

// newServer returns a worker that reads requests from in and answers on out.
func newServer(in *sandbox.FrameReader, out *bufio.Writer) *server {
	return &server{in: in, out: out, scripts: sandbox.NewCache[*Overlay](maxWorkerScripts), counted: sandbox.HasProgress()}
}

// serve answers requests, one at a time, until s.in ends.
func (s *server) serve() error {
	for {
		kind, body, err := s.in.Next()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case kind == frameScan:
			err = s.scan(body)
		case kind == frameDefine:
			err = s.define(body)
		case kind == frameTask:
			err = s.task(body)
		case kind == frameApply, kind == frameFirst, kind == frameExplain:
			s.explain = kind == frameExplain
			err = s.apply(body, kind != frameApply)
		default:
			err = fmt.Errorf("got a frame of kind %q, want a request", kind)
		}
		if err == nil {
			err = s.out.Flush()
		}
		if err != nil {
			return err
		}
		if s.served++; s.served == 2 {
			// A worker that serves more than its overlays and one request lives on: what its
			// start touched of the executable (the initialisation of every linked package)
			// need not stay resident. Best effort, while the parent reads the answer.
			residency.ReleaseExecutable()
		}
	}
}

// A server is the state of a worker.
type server struct {
	in       *sandbox.FrameReader
	out      *bufio.Writer
	scripts  *sandbox.Cache[*Overlay] // by key
	printErr error                    // the first error writing print() output

	// The print() output of the current compile or pod's apply.
	printed      int  // bytes sent
	printDropped bool // whether the rest is dropped

	answerMax int    // the largest frame the parent reads, for the script at hand
	served    int    // the requests answered
	answered  uint64 // the pods answered, the progress count (see apply)
	noted     uint64 // the notes of tasks made, the mark (see note)
	counted   bool   // whether the parent reads the progress count and the mark

	// During a task, mu guards out and printErr, which its notes share with print(), and
	// the task's latest note.
	mu       sync.Mutex
	noteText []byte

	explain bool // whether the apply at hand explains each result

	// The ctx decoded last and its encoding, and the decoder of pods.
	lastEnvData []byte
	lastEnv     *Env
	pods        podDecoder

	enc podEncoder
}

// print sends print() output to the parent at once, so that it arrives even if a later step
// kills the worker. It cuts each message to maxPrintBytes, and drops what passes
// maxPrintTotal since the compile or the pod's apply began, with one line saying so.
func (s *server) print(pos syntax.Position, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.printErr != nil || s.printDropped {
		return
	}
	if s.printed >= maxPrintTotal {
		s.printDropped = true
		msg = fmt.Sprintf("[print output passed %d bytes; the rest is dropped]", maxPrintTotal)
	} else {
		msg = cutText(msg, min(maxPrintBytes, maxPrintTotal-s.printed))
		s.printed += len(msg)
	}
	s.printErr = sandbox.WriteJSONFrame(s.out, framePrint, &wirePrint{File: pos.Filename(), Line: pos.Line, Col: pos.Col, Msg: msg})
	if s.printErr == nil {
		s.printErr = s.out.Flush()
	}
}

// resetPrint starts the print() output of a compile or a pod's apply.
func (s *server) resetPrint() {
	s.printed, s.printDropped = 0, false
}

// writeError writes err as an error frame, or a done frame for a failed define, that fits in
// s.answerMax.
func (s *server) writeError(kind byte, err error) error {
	data, err := toWire(err).encode(s.answerMax)
	if err != nil {
		return err
	}
	return sandbox.WriteFrame(s.out, kind, data)
}

// scan parses a file and answers done with the modules its load statements name.
func (s *server) scan(body []byte) error {
	var src wireSource
	if err := json.Unmarshal(body, &src); err != nil {
		return fmt.Errorf("decoding a file to scan: %v", err)
	}
	return sandbox.WriteJSONFrame(s.out, frameDone, scanLoads(src.Name, src.Src))
}

// scanLoads parses a file of the overlay dialect and returns the modules its load statements
// name, in order. A file that does not parse has none: compiling it reports the error. It
// also resolves and compiles the file, as the define will, so that a file that takes the
// worker's memory to compile does so here, where the parent knows which file it is.
func scanLoads(name string, src []byte) *wireScan {
	f, err := fileOptions.Parse(name, src, 0)
	if err != nil {
		return &wireScan{Err: cutText(err.Error(), maxErrorText)}
	}
	var out wireScan
	for _, stmt := range f.Stmts {
		if load, ok := stmt.(*syntax.LoadStmt); ok {
			out.Loads = append(out.Loads, load.ModuleName())
		}
	}
	starlark.FileProgram(f, predeclared.Has) // its errors are the define's to report
	return &out
}

// define compiles a script, unless it has, and answers done.
func (s *server) define(body []byte) error {
	var d wireScript
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("decoding a script: %v", err)
	}
	if _, ok := s.scripts.Get(d.Key); ok {
		s.scripts.Use(d.Key)
	} else {
		s.answerMax = answerFrameLimit(d.MaxResultBytes)
		s.resetPrint()
		o, err := Compile(context.Background(), d.Name, d.Src, d.options(s.print))
		if s.printErr != nil {
			return s.printErr
		}
		if err != nil {
			return s.writeError(frameDone, err)
		}
		s.scripts.Add(d.Key, o)
	}
	return sandbox.WriteFrame(s.out, frameDone)
}

// apply applies the script of an apply request's body (its flags and the script's key) to
// each pod that follows, until the end frame, and answers each pod in order. With first set,
// the pods after one that failed are answered with an error and not applied.
//
// The worker counts the pods it has answered in its progress (sandbox.SetProgress), which
// its parent reads: while the worker works, each step counts as an answer against the time
// limit; if the worker dies, the parent knows which pod killed it, and that the answers of
// the pods before that one still in the worker's buffer died with it. So the worker writes
// its answers out in batches (flushBytes), not at each pod: a pipe write and the wake-up of
// the parent cost about a tenth of a pod's apply. It writes the first answer out at once, so
// that the parent starts decoding while it goes on. A worker without a progress count, or
// asked to (applyCareful, as the parent does when it tries pods again after a death), writes
// out each answer at once, and counts it once it is out.
func (s *server) apply(body []byte, first bool) error {
	if len(body) == 0 {
		return errors.New("an apply request without its flags")
	}
	each := body[0]&applyCareful != 0 || !s.counted
	key := string(body[1:])
	o, ok := s.scripts.Get(key)
	if !ok {
		return fmt.Errorf("apply of unknown script %s", key)
	}
	s.scripts.Use(key)
	s.answerMax = answerFrameLimit(o.opts.MaxResultBytes)
	failed := false
	answered := 0
	for {
		kind, body, err := s.in.Next()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		switch {
		case (kind == framePod || kind == frameSkip) && first && failed:
			err = s.writeError(frameError, &Error{Overlay: o.name, Err: errors.New("not applied: an earlier pod of the batch failed")})
		case kind == framePod:
			var ok bool
			ok, err = s.applyPod(o, body)
			failed = failed || !ok
		case kind == frameSkip:
			failed = true
			err = s.writeError(frameError, &Error{Overlay: o.name, Err: fmt.Errorf("converting the input pod: %s", body)})
		case kind == frameEnd:
			return sandbox.WriteFrame(s.out, frameDone)
		default:
			err = fmt.Errorf("got a frame of kind %q, want a pod", kind)
		}
		if err != nil {
			return err
		}
		answered++
		if each || answered == 1 || s.out.Buffered() >= flushBytes {
			if err := s.out.Flush(); err != nil {
				return err
			}
		}
		s.answered++
		sandbox.SetProgress(s.answered)
	}
}

// flushBytes is how many bytes of answers a worker holds before it writes them out (see
// server.apply).
const flushBytes = 16 << 10

// applyPod applies o to the pod of a pod frame and writes the answer. It reports whether the
// apply succeeded, and the error of decoding the frame or writing the answer.
func (s *server) applyPod(o *Overlay, body []byte) (bool, error) {
	d := &wire.Decoder{B: body}
	envData := d.Bytes()
	if d.Err != nil {
		return false, fmt.Errorf("decoding a pod: %v", d.Err)
	}
	podData := d.B
	if s.lastEnvData == nil || !bytes.Equal(envData, s.lastEnvData) {
		env, err := decodeEnv(envData)
		if err != nil {
			return false, fmt.Errorf("decoding a pod: %v", err)
		}
		s.lastEnv, s.lastEnvData = env, append(s.lastEnvData[:0], envData...)
	}
	pod, err := s.pods.decode(podData)
	if err != nil {
		return false, fmt.Errorf("decoding a pod: %v", err)
	}
	s.resetPrint()
	var res *corev1.Pod
	var changes []Change
	if s.explain {
		res, changes, err = o.Explain(context.Background(), pod, s.lastEnv)
	} else {
		res, err = o.Apply(context.Background(), pod, s.lastEnv)
	}
	if s.printErr != nil {
		return false, s.printErr
	}
	if err != nil {
		return false, s.writeError(frameError, err)
	}
	if s.explain {
		data, err := toWireChanges(changes)
		if err == nil && len(data) > s.answerMax {
			err = fmt.Errorf("the explanation of %d bytes exceeds the limit of %d bytes of a worker's answer", len(data), s.answerMax)
		}
		if err != nil {
			return false, s.writeError(frameError, &Error{Overlay: o.name, Err: fmt.Errorf("encoding the changes: %v", err)})
		}
		if err := sandbox.WriteFrame(s.out, frameChanges, data); err != nil {
			return false, err
		}
	}
	if err := s.enc.encode(res); err != nil {
		return false, s.writeError(frameError, &Error{Overlay: o.name, Err: fmt.Errorf("encoding the result: %v", err)})
	}
	s.enc.head = appendKind(s.enc.head[:0], res.Kind, res.APIVersion)
	if n := len(s.enc.head) + len(s.enc.proto); n > s.answerMax {
		// Only a pod of many items whose fields are all empty takes this many bytes more in
		// protobuf than in JSON.
		maxResult := o.opts.maxResultBytes()
		return false, s.writeError(frameError, &Error{Overlay: o.name, Err: &LimitError{Limit: LimitResultSize, Value: fmt.Sprintf("%d bytes", maxResult),
			Err: fmt.Errorf("the result's protobuf encoding of %d bytes exceeds the limit of %d bytes of a worker's answer", n, s.answerMax)}})
	}
	return true, sandbox.WriteFrame(s.out, frameResult, s.enc.head, s.enc.proto)
}

// options returns the in-process options of a script sent to a worker.
func (d *wireScript) options(print func(syntax.Position, string)) *Options {
	opts := &Options{MaxSteps: d.MaxSteps, Timeout: d.Timeout, MaxResultBytes: d.MaxResultBytes, Validation: d.Validation}
	if d.Print {
		opts.Print = print
	}
	if d.HasLoader {
		opts.Loader = replayLoader(d.Loads)
	}
	return opts
}

// replayLoader answers load statements with the answers the parent's Loader gave.
type replayLoader []wireLoad

func (l replayLoader) Load(from, module string) (string, []byte, error) {
	for _, ld := range l {
		if ld.From == from && ld.Module == module {
			if ld.Err != "" {
				return "", nil, errors.New(ld.Err)
			}
			return ld.Name, ld.Src, nil
		}
	}
	return "", nil, fmt.Errorf("%s was not resolved by the parent process", module)
}

package engine

// This file defines the worker side of process isolation: a process that limits its own
// memory and then compiles and applies the overlays its parent sends.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/worker"
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
// until standard input closes, and exits; it never returns. It is the one hook a program
// needs for worker isolation. Call it from main, never from an init function: nothing should
// start serving while the program is still being initialised.
func ServeWorkerIfRequested() {
	if !sandbox.IsWorker() {
		return
	}
	if err := serveWorker(); err != nil {
		fmt.Fprintf(os.Stderr, "starpod worker: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveWorker serves as an overlay worker on standard input and output until standard input
// closes. It first limits the process's memory to the limit the engine passed in its
// environment: the data segment and address space (setrlimit) and, where a cgroup v2 memory
// controller is writable, a cgroup of its own; then it tells the engine it is ready.
func serveWorker() error {
	return worker.Serve(workerProtocol())
}

// workerProtocol returns the protocol of overlay workers: the name both sides check, and the
// handlers of a worker's requests.
func workerProtocol() *worker.Protocol {
	return &worker.Protocol{Name: protocolVersion, Handlers: func(c *worker.Conn) map[byte]worker.Handler {
		return newServer(c).handlers()
	}}
}

// newServer returns a worker that reads requests from c and answers on it.
func newServer(c *worker.Conn) *server {
	return &server{in: c.In, out: c.Out, scripts: sandbox.NewCache[*Overlay](maxWorkerScripts), counted: sandbox.HasProgress()}
}

// handlers returns the handlers of the requests s serves, which share its state.
func (s *server) handlers() map[byte]worker.Handler {
	return map[byte]worker.Handler{
		frameScan:    s.scan,
		frameDefine:  s.define,
		frameApply:   func(body []byte) error { return s.apply(body, false, false) },
		frameFirst:   func(body []byte) error { return s.apply(body, true, false) },
		frameExplain: func(body []byte) error { return s.apply(body, true, true) },
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
	printBuf     []byte

	answerMax int    // the largest frame the parent reads, for the script at hand
	answered  uint64 // the pods answered, the progress count (see apply)
	counted   bool   // whether the parent reads the progress count

	explain bool // whether the apply at hand explains each result

	// The ctx decoded last and its encoding (nil for none), and the decoder of pods.
	lastEnvData []byte
	lastEnvBuf  []byte // the memory of lastEnvData
	lastEnv     *Env
	pods        podDecoder

	enc podEncoder
}

// print sends print() output to the parent at once, so that it arrives even if a later step
// kills the worker. It cuts each message to maxPrintBytes, and drops what passes
// maxPrintTotal since the compile or the pod's apply began, with one line saying so.
func (s *server) print(pos syntax.Position, msg string) {
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
	s.printBuf = appendPrint(s.printBuf[:0], pos, msg)
	s.printErr = sandbox.WriteFrame(s.out, framePrint, s.printBuf)
	if s.printErr == nil {
		s.printErr = s.out.Flush()
	}
}

// resetPrint starts the print() output of a compile or a pod's apply.
func (s *server) resetPrint() {
	s.printed, s.printDropped = 0, false
}

// writeError writes err as an error frame that fits in s.answerMax.
func (s *server) writeError(err error) error {
	return sandbox.WriteFrame(s.out, frameError, appendError(nil, err, s.answerMax))
}

// scan parses a file and answers done with the modules its load statements name.
func (s *server) scan(body []byte) error {
	name, src, err := decodeSource(body)
	if err != nil {
		return fmt.Errorf("decoding a file to scan: %w", err)
	}
	return sandbox.WriteFrame(s.out, frameDone, scanLoads(name, src))
}

// scanLoads parses a file of the overlay dialect and returns a scan message of the modules
// its load statements name, in order. A file that does not parse has none: compiling it
// reports the error. It also resolves and compiles the file, as the define will, so that a
// file that takes the worker's memory to compile does so here, where the parent knows which
// file it is.
func scanLoads(name string, src []byte) []byte {
	f, err := fileOptions.Parse(name, src, 0)
	if err != nil {
		return appendScan(nil, nil, cutText(err.Error(), maxErrorText))
	}
	var loads []string
	for _, stmt := range f.Stmts {
		if load, ok := stmt.(*syntax.LoadStmt); ok {
			loads = append(loads, load.ModuleName())
		}
	}
	starlark.FileProgram(f, predeclared.Has) // its errors are the define's to report
	return appendScan(nil, loads, "")
}

// define compiles a script, unless it has, and answers done.
func (s *server) define(body []byte) error {
	sum := sha256.Sum256(body)
	key := hex.EncodeToString(sum[:])
	if _, ok := s.scripts.Get(key); ok {
		s.scripts.Use(key)
		return sandbox.WriteFrame(s.out, frameDone)
	}
	d, err := decodeScript(body)
	if err != nil {
		return fmt.Errorf("decoding a script: %w", err)
	}
	s.answerMax = answerFrameLimit(d.MaxResultBytes)
	s.resetPrint()
	o, err := Compile(context.Background(), d.Name, d.Src, d.options(s.print))
	if s.printErr != nil {
		return s.printErr
	}
	if err != nil {
		return s.writeError(err)
	}
	s.scripts.Add(key, o)
	return sandbox.WriteFrame(s.out, frameDone)
}

// apply applies the script of an apply request to each pod that follows, until the end frame,
// and answers each pod in order. With first set, the pods after one that failed are answered
// with an error and not applied; with explain, each result comes with its changes. An apply
// request that carries the time left to its caller's deadline stops each pod there, as
// Overlay.Apply does in process: a pod stopped, and each pod after it, is answered with the
// context's error, and the parent, told as it would be of any error, keeps the worker.
//
// The worker counts the pods it has answered in its progress (sandbox.SetProgress), which
// its parent reads: while the worker works, each step counts as an answer against the time
// limit; if the worker dies, the parent knows which pod killed it, and that the answers of
// the pods before that one still in the worker's buffer died with it. So the worker writes
// its answers out in batches (flushBytes), not at each pod: a pipe write and the wake-up of
// the parent cost about a tenth of a pod's apply. It writes the first answer out at once, so
// that the parent starts decoding while it goes on. A worker without a progress count, or
// asked to (careful, as the parent does when it tries pods again after a death), writes
// out each answer at once, and counts it once it is out.
func (s *server) apply(body []byte, first, explain bool) error {
	key, careful, left, err := decodeApply(body)
	if err != nil {
		return fmt.Errorf("decoding an apply: %w", err)
	}
	// The caller's deadline, counted from now: the pods stop there as in process, with a
	// *DeadlineError, and the worker serves on.
	ctx := context.Background()
	if left > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, left)
		defer cancel()
	}
	each := careful || !s.counted
	s.explain = explain
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
			err = s.writeError(&Error{Overlay: o.name, Err: errors.New("not applied: an earlier pod of the batch failed")})
		case kind == framePod:
			var ok bool
			ok, err = s.applyPod(ctx, o, body)
			failed = failed || !ok
		case kind == frameSkip:
			failed = true
			err = s.writeError(&Error{Overlay: o.name, Err: fmt.Errorf("converting the input pod: %s", body)})
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

// applyPod applies o to the pod of a pod frame within ctx and writes the answer. It reports
// whether the apply succeeded, and the error of decoding the frame or writing the answer.
func (s *server) applyPod(ctx context.Context, o *Overlay, body []byte) (bool, error) {
	envData, podData, err := splitPodFrame(body)
	if err != nil {
		return false, fmt.Errorf("decoding a pod: %w", err)
	}
	if envData == nil {
		s.lastEnv, s.lastEnvData = nil, nil
	} else if s.lastEnvData == nil || !bytes.Equal(envData, s.lastEnvData) {
		env, err := decodeEnv(envData)
		if err != nil {
			return false, fmt.Errorf("decoding a pod: %w", err)
		}
		s.lastEnv, s.lastEnvData = env, append(s.lastEnvBuf[:0], envData...)
		s.lastEnvBuf = s.lastEnvData
	}
	pod, err := s.pods.decode(podData)
	if err != nil {
		return false, fmt.Errorf("decoding a pod: %w", err)
	}
	s.resetPrint()
	var res *corev1.Pod
	var changes []Change
	if s.explain {
		res, changes, err = o.Explain(ctx, pod, s.lastEnv)
	} else {
		res, err = o.Apply(ctx, pod, s.lastEnv)
	}
	if s.printErr != nil {
		return false, s.printErr
	}
	if err != nil {
		return false, s.writeError(err)
	}
	if s.explain {
		data, err := appendChanges(nil, changes)
		if err == nil && len(data) > s.answerMax {
			err = fmt.Errorf("the explanation of %d bytes exceeds the limit of %d bytes of a worker's answer", len(data), s.answerMax)
		}
		if err != nil {
			return false, s.writeError(&Error{Overlay: o.name, Err: fmt.Errorf("encoding the changes: %w", err)})
		}
		if err := sandbox.WriteFrame(s.out, frameChanges, data); err != nil {
			return false, err
		}
	}
	if err := s.enc.encode(res); err != nil {
		return false, s.writeError(&Error{Overlay: o.name, Err: fmt.Errorf("encoding the result: %w", err)})
	}
	s.enc.head = appendKind(s.enc.head[:0], res.Kind, res.APIVersion, len(s.enc.proto))
	if n := len(s.enc.head) + len(s.enc.proto); n > s.answerMax {
		// Only a pod of many items whose fields are all empty takes this many bytes more in
		// protobuf than in JSON.
		maxResult := o.opts.maxResultBytes()
		return false, s.writeError(&Error{Overlay: o.name, Err: &LimitError{Limit: LimitResultSize, Value: fmt.Sprintf("%d bytes", maxResult),
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

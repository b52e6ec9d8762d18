package engine

// This file defines the worker side of process isolation: a process that limits its own
// memory and then compiles and applies the overlays its parent sends.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"go.starlark.net/syntax"
)

// The environment of a worker process.
const (
	workerEnv       = "STARPOD_ENGINE_WORKER"            // "1" in a worker
	workerMemoryEnv = "STARPOD_ENGINE_WORKER_MAX_MEMORY" // the memory limit in bytes
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
	if os.Getenv(workerEnv) != "1" {
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
// environment: the data segment and address space (setrlimit), the Go runtime's soft memory
// limit and, where a cgroup v2 memory controller is writable, a cgroup of its own. Commands that
// act as workers (the starpod binary's hidden worker subcommand) call it; other programs use
// [ServeWorkerIfRequested].
func ServeWorker() error {
	limit, err := strconv.ParseInt(os.Getenv(workerMemoryEnv), 10, 64)
	if err != nil || limit <= 0 {
		return fmt.Errorf("%s: got %q, want a positive number of bytes", workerMemoryEnv, os.Getenv(workerMemoryEnv))
	}
	if err := limitMemory(limit); err != nil {
		return err
	}
	return serve(os.Stdin, os.Stdout)
}

// limitMemory bounds the memory of the current process before it reads any script.
func limitMemory(limit int64) error {
	// A worker serves one request at a time; few threads leave more of the limit to the heap.
	runtime.GOMAXPROCS(min(runtime.GOMAXPROCS(0), 2))
	// The rlimit is the hard stop, where an allocation fails and the runtime exits with
	// "out of memory". There is no soft limit (debug.SetMemoryLimit): near it the collector
	// runs without pause, and a bomb would take its whole time limit to die.
	if err := setRlimits(limit * raceMemoryFactor); err != nil {
		return fmt.Errorf("limiting memory: %v", err)
	}
	joinMemoryCgroup(limit) // best effort
	return nil
}

// serve answers requests read from r on w, one at a time.
func serve(r io.Reader, w io.Writer) error {
	in := bufio.NewReaderSize(r, 64<<10)
	out := bufio.NewWriterSize(w, 64<<10)
	scripts := make(map[string]*Overlay)
	for {
		var req wireRequest
		if err := readFrame(in, &req); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		resp, err := handle(scripts, &req, out)
		if err != nil {
			return err
		}
		if err := writeFrame(out, resp); err != nil {
			return err
		}
	}
}

// handle serves one request; print() output goes to out as it happens.
func handle(scripts map[string]*Overlay, req *wireRequest, out *bufio.Writer) (*wireResponse, error) {
	var printErr error
	if d := req.Define; d != nil {
		if _, ok := scripts[d.Key]; !ok {
			o, err := Compile(d.Name, d.Src, d.options(func(pos syntax.Position, msg string) {
				if printErr == nil {
					printErr = bufferFrame(out, &wireResponse{Print: &wirePrint{File: pos.Filename(), Line: pos.Line, Col: pos.Col, Msg: msg}})
				}
			}))
			if printErr != nil {
				return nil, printErr
			}
			if err != nil {
				return &wireResponse{Err: toWire(err), Done: true}, nil
			}
			scripts[d.Key] = o
		}
	}
	resp := &wireResponse{Done: true}
	if len(req.Pods) == 0 {
		return resp, nil
	}
	o, ok := scripts[req.Key]
	if !ok {
		return nil, fmt.Errorf("apply of unknown script %s", req.Key)
	}
	if req.Envs != nil && len(req.Envs) != len(req.Pods) {
		return nil, fmt.Errorf("got %d envs for %d pods", len(req.Envs), len(req.Pods))
	}
	for i, data := range req.Pods {
		pod, err := data.pod()
		if err != nil {
			return nil, fmt.Errorf("decoding a pod: %v", err)
		}
		env := req.Env
		if req.Envs != nil {
			env = req.Envs[i]
		}
		res, err := o.Apply(context.Background(), pod, env)
		if printErr != nil {
			return nil, printErr
		}
		var result wireResult
		if err != nil {
			result.Err = toWire(err)
		} else if data, err := podToWire(res); err != nil {
			result.Err = toWire(&Error{Overlay: o.name, Err: err})
		} else {
			result.Pod = &data
		}
		// Each answer goes out at once: if a later pod kills the worker, the parent
		// still has the answers before it and knows which pod did.
		if err := writeFrame(out, &wireResponse{Result: &result}); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// options returns the in-process options of a script sent to a worker.
func (d *wireScript) options(print func(syntax.Position, string)) *Options {
	opts := &Options{MaxSteps: d.MaxSteps, Timeout: d.Timeout, MaxResultBytes: d.MaxResultBytes}
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

package engine

// This file defines process isolation: overlays that compile and apply in worker processes
// with a memory limit, and the pool of workers they share.
//
// What the sandbox guarantees, with WorkerProcess isolation:
//   - The calling process never parses or runs the script: a worker scans each file (the
//     script, then each module the caller's Loader returns) for the modules its load
//     statements name, so no script can exhaust the caller's memory or stack. A file that
//     takes the worker's memory or time to parse and compile fails the compile with a
//     *LimitError, naming the file ("parsing lib/huge.star").
//   - Scripts and modules are bounded in size (internal/bound: 1 MiB each, 8 MiB for the
//     modules of one compile, 1,000 modules) and loaders read only regular files.
//   - A worker lets its data segment (heap and thread stacks) grow from its start by MaxMemory
//     plus 32 MiB for thread stacks, and its address space likewise, with setrlimit
//     before it reads a script, and sets the collector's soft limit to MaxMemory;
//     where a cgroup v2 memory controller is writable it also puts itself in a cgroup with
//     memory.max = MaxMemory. A script that passes the limit kills its worker; the caller gets
//     an *Error wrapping a *LimitError{Limit: LimitMemory} naming the overlay, and the pool starts
//     a new worker on demand (with WorkerPoolOptions.RestartBackoff, after a wait that grows
//     while its workers die one after another).
//   - A worker dies with the process that started it (on Linux), even while it runs a script.
//   - The memory limit is per worker process, and covers every script the worker holds: the
//     last 16 (maxWorkerScripts) it compiled or applied, with the globals of their modules. A
//     script whose modules hold much memory leaves less to the others in the same worker. A
//     script that kills a worker holding other scripts runs again in a worker of its own, and
//     gets the memory limit's error only if it passes the limit there too; overlays that each
//     take most of the limit, applied in turn, cost a new worker at each turn.
//   - A worker that dies before it says it is ready (one whose memory limit is too small to
//     start) gives an error saying the worker could not start, not a limit of the overlay; a
//     limit below 48Mi is refused at Compile. A worker's start has a time limit of its own
//     (15s): the script's clock starts when the worker is ready.
//   - Why a worker died comes from package sandbox: the Go runtime's crash report, which the
//     worker writes to a pipe of the parent, the signal it died of and its cgroup's count of
//     out-of-memory kills; never from what it wrote to its standard error.
//   - The parent holds little of what a script sends back: each print() message is cut to
//     64 KiB, the output of one compile or one pod's apply to 1 MiB (the rest is
//     dropped, with one line saying so), the texts of errors to 16 KiB each, and no frame from
//     a worker may pass answerFrameLimit, a few times the result size limit. print() output
//     reaches the caller as it happens, also when a later step kills the worker. What a pod
//     printed before its worker died is not passed on twice when the pod runs again in
//     another worker.
//   - Steps, time and result size are limited inside the worker as in process; the parent also
//     kills a worker that has not finished a pod within the time limit plus one second (one
//     step that runs long, such as a huge sort).
//   - An apply carries the time left to its caller's context's deadline, if it has one: the
//     worker stops the pods there, as in process, with a *DeadlineError (not a *LimitError),
//     and goes back to its pool; the parent kills it only if it has not answered one second
//     after the deadline. A context canceled otherwise (Ctrl-C) kills the worker at once, as
//     does any end of the context during a compile.
//   - A worker answers the pods of a batch in order and counts those it answered where its
//     parent reads the count (a memory file, on Linux; elsewhere it writes out each answer
//     at once), so a pod that kills its worker gets the limit's error, and the pods after it
//     go on in another worker, with the pods before it whose answers died with the worker.
//   - Errors cross the process boundary with the same text, position, backtrace, field paths
//     and *LimitError; their other causes become plain errors with the same message.
//
// What it does not guarantee: a bomb is stopped by whichever limit it reaches first, memory or
// time, so the same script may report either on a busy machine; peak resident memory is the
// limit plus the worker's start size, thread stacks and program text; CPU is bounded only
// through the time limit; memory is not bounded on systems without setrlimit (non-Unix), and
// in-process overlays (the library default) are not bounded in memory at all. Under the race
// detector, worker limits are scaled by 8 for its shadow memory.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.starlark.net/syntax"

	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/worker"
)

// Isolation says where an overlay runs.
type Isolation int

const (
	// InProcess runs overlays in the calling process, bounded in steps, wall time and result
	// size but not in memory: one Starlark step can allocate without bound, and a Go process
	// that runs out of memory dies. It is the default of library callers, which need not set
	// up a worker.
	InProcess Isolation = iota

	// WorkerProcess compiles and applies overlays in worker processes that limit their own
	// memory (Options.MaxMemory) before they read a script. A worker that runs out of memory
	// dies and is replaced, and the caller gets an *Error wrapping a *LimitError whose Limit
	// is LimitMemory. The starpod command uses it by default.
	WorkerProcess
)

// DefaultMaxMemory is the memory limit of a worker process when Options.MaxMemory is zero.
const DefaultMaxMemory = 512 << 20

// workerGrace is how long past its own time limit, or past its caller's deadline, the parent
// waits for a worker's answer before it kills the worker.
const workerGrace = time.Second

func (o *Options) maxMemory() int64 {
	if o.MaxMemory <= 0 {
		return DefaultMaxMemory
	}
	return o.MaxMemory
}

// WorkerPoolOptions configures [NewWorkerPool].
type WorkerPoolOptions struct {
	// Path is the program to run as a worker. Empty means the running program
	// (os.Executable), which must call [ServeWorkerIfRequested] at the top of main.
	Path string

	// Args are the arguments of the worker program, e.g. {"worker"} for the starpod
	// binary's hidden worker subcommand. The program must call [ServeWorkerIfRequested]
	// first thing in main, whatever its arguments.
	Args []string

	// Size bounds the number of worker processes alive at once. Zero means
	// runtime.GOMAXPROCS(0).
	Size int

	// OnDemand has the pool start one worker at Prestart, and another only once applies
	// have waited for busy workers, in all, four times as long as the last worker took to
	// start (the rule of internal/sandbox's demand.go): for a command whose work may be
	// done before a second worker would pay for its start. Without it the pool starts up
	// to Size workers at once, as a server that stays up wants.
	OnDemand bool

	// RestartBackoff bounds the wait between starts of workers that die one after another
	// (of a limit, or crashed): after the second death in a row, the next worker starts no
	// sooner than 50ms after the last, each death doubling the wait up to RestartBackoff,
	// until a worker answers. Applies wait for the start within their context. It keeps a
	// script that kills every worker it runs in from taking the processors with starts, as
	// a server wants. Zero means workers are replaced at once.
	RestartBackoff time.Duration
}

// A WorkerPool starts, reuses and replaces the worker processes of overlays compiled with
// [WorkerProcess] isolation. Workers stay alive across applies; a worker that dies (of a memory
// limit, or killed for not answering in time) is replaced by a new one on demand. A WorkerPool
// is safe for concurrent use.
type WorkerPool struct {
	p *sandbox.Pool
}

// NewWorkerPool returns a pool of worker processes. Nil options are the zero options.
func NewWorkerPool(opts *WorkerPoolOptions) *WorkerPool {
	if opts == nil {
		opts = &WorkerPoolOptions{}
	}
	return &WorkerPool{p: worker.NewPool(workerProtocol(), sandbox.PoolOptions{Path: opts.Path, Args: opts.Args, Size: opts.Size,
		OnDemand: opts.OnDemand, RestartBackoff: opts.RestartBackoff, Name: "overlay worker", Keys: maxWorkerScripts})}
}

// defaultPool returns the pool of overlays whose Options.Workers is nil, made when first
// asked for.
func defaultPool() *WorkerPool {
	theDefaultPool.Do(func() { theDefaultPool.p = NewWorkerPool(nil) })
	return theDefaultPool.p
}

var theDefaultPool struct {
	sync.Once
	p *WorkerPool
}

// Prestart starts, in the background, as many workers as p has room for (with OnDemand,
// one, if none of the limit is alive), with the memory limit of overlays compiled with opts
// (nil means the zero Options), so that the first applies find them ready instead of each
// waiting for a process to start. It does not wait for them. A worker that fails to start is
// not reported: an apply that finds no idle worker starts one itself, and reports why that
// fails.
func (p *WorkerPool) Prestart(opts *Options) {
	if opts == nil {
		opts = &Options{}
	}
	p.p.Prestart(opts.maxMemory())
}

// Fill starts, in the background, as many workers as p has room for, as Prestart does
// without OnDemand: for work known to keep them all busy for long.
func (p *WorkerPool) Fill(opts *Options) {
	if opts == nil {
		opts = &Options{}
	}
	p.p.Fill(opts.maxMemory())
}

// Close stops the idle workers of p and every busy one when its apply ends, and waits until
// every worker no apply holds has exited, killing those still starting: a command that
// closes its pool before it exits leaves no worker behind. Applies after Close fail.
func (p *WorkerPool) Close() error { return p.p.Close() }

// Kill kills every worker of p, busy or not, without waiting: for a process about to exit
// at once, as at a second Ctrl-C.
func (p *WorkerPool) Kill() { p.p.Kill() }

// WorkerStats describes the workers of a pool.
type WorkerStats struct {
	Started int   // workers started since the pool was made
	Alive   int   // workers alive now, busy or idle
	Idle    int   // workers alive and waiting for work
	PeakRSS int64 // the highest peak resident set size of any worker seen so far, in bytes
}

// Stats returns the pool's counts. Peak memory counts the workers alive now and those that
// have exited.
func (p *WorkerPool) Stats() WorkerStats { return WorkerStats(p.p.Stats()) }

// remote runs an overlay compiled for a worker.
type remote struct {
	o      *Overlay
	define []byte // the body of the script's define
	key    string // the script's key, the SHA-256 of define
	pool   *sandbox.Pool
	limit  int64
	print  func(pos syntax.Position, msg string)
}

// compileWorker compiles an overlay in a worker process. The parent resolves the script's
// load statements with opts.Loader, without parsing or running anything itself, and the worker
// compiles the script with the answers.
func compileWorker(ctx context.Context, name string, src []byte, opts *Options) (*Overlay, error) {
	if limit := opts.maxMemory(); limit < sandbox.MinMemory {
		return nil, &Error{Overlay: name, Err: fmt.Errorf("starting an overlay worker: %w", &sandbox.SmallMemoryError{Limit: limit})}
	}
	pool := opts.Workers
	if pool == nil {
		pool = defaultPool()
	}
	d := &wireScript{Name: name, Src: src, HasLoader: opts.Loader != nil,
		MaxSteps: opts.MaxSteps, Timeout: opts.Timeout, MaxResultBytes: opts.MaxResultBytes,
		Print: opts.Print != nil, Validation: opts.Validation}
	if opts.Loader != nil {
		loads, err := resolveLoads(ctx, name, src, opts, pool)
		if err != nil {
			return nil, err
		}
		d.Loads = loads
	}
	data := d.encode()
	sum := sha256.Sum256(data)
	o := &Overlay{name: name, opts: *opts}
	r := &remote{o: o, define: data, key: hex.EncodeToString(sum[:]), pool: pool.p, limit: opts.maxMemory(), print: opts.Print}
	o.run = r
	// Compile now, to report errors (and limits hit by the top level) at once.
	if a := r.call(ctx, nil); a.err != nil {
		return nil, a.err
	}
	return o, nil
}

// resolveLoads asks opts.Loader every question the linker will ask when a worker compiles the
// script name, and returns the answers. It parses nothing itself: a worker scans each file for
// its load statements, so that a file that takes the worker's memory or time to parse fails
// the compile, naming that file, and this process never holds its syntax tree. A module over
// its size limit, or past the limit of the modules of one compile, is answered with an error,
// which the worker reports at the load statement.
func resolveLoads(ctx context.Context, name string, src []byte, opts *Options, pool *WorkerPool) ([]wireLoad, error) {
	limit := opts.maxMemory()
	w, err := pool.p.Get(ctx, limit, "", false)
	if err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	defer pool.p.Put(w)
	w.SetMaxFrame(answerFrameLimit(0))

	var out []wireLoad
	asked := make(map[loadKey]bool)
	seen := map[string]bool{name: true}
	var total int64 // the size of the modules together
	modules := 0
	type file struct {
		name string
		src  []byte
	}
	queue := []file{{name, src}}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		loads, err := scan(ctx, w, f.name, f.src, opts.timeout())
		if err != nil {
			e := &Error{Overlay: name, Err: fmt.Errorf("parsing %s: %w", f.name, err)}
			if f.name == name {
				e.Err = fmt.Errorf("parsing: %w", err)
			}
			return nil, e
		}
		for _, module := range loads {
			key := loadKey{f.name, module}
			if asked[key] {
				continue
			}
			asked[key] = true
			resolved, msrc, err := opts.Loader.Load(f.name, module)
			switch {
			case err != nil:
			case int64(len(msrc)) > bound.MaxScript:
				err = &bound.SizeError{Name: resolved, What: "module", Limit: bound.MaxScript}
			case !seen[resolved] && total+int64(len(msrc)) > bound.MaxModules:
				err = fmt.Errorf("the modules that %s loads are larger than the limit of %s together", name, bound.FormatSize(bound.MaxModules))
			case !seen[resolved] && modules == maxModules:
				err = fmt.Errorf("%s loads more than the limit of %d modules", name, maxModules)
			}
			if err != nil {
				out = append(out, wireLoad{From: f.name, Module: module, Err: err.Error()})
				continue
			}
			out = append(out, wireLoad{From: f.name, Module: module, Name: resolved, Src: msrc})
			if seen[resolved] {
				continue
			}
			seen[resolved] = true
			total += int64(len(msrc))
			modules++
			queue = append(queue, file{resolved, msrc})
		}
	}
	return out, nil
}

// maxModules bounds the number of modules one compile loads.
const maxModules = 1000

// scan asks the worker w for the modules that the load statements of the file name name.
// It returns an error only when the worker fails: a *LimitError for its memory or time limit.
// A file that does not parse has no loads; the compile reports why.
func scan(ctx context.Context, w *sandbox.Worker, name string, src []byte, timeout time.Duration) ([]string, error) {
	x := &scanExchange{file: appendSource(nil, name, src)}
	err := w.Call(ctx, x, sandbox.CallOptions{First: workerGrace + timeout})
	var f *sandbox.Failure
	switch {
	case err == nil:
		return x.loads, nil
	case !errors.As(err, &f):
		return nil, err
	case f.Reason == sandbox.Timeout:
		return nil, &LimitError{Limit: LimitTime, Value: timeout.String()}
	case f.Reason == sandbox.Memory:
		return nil, &LimitError{Limit: LimitMemory, Value: bound.FormatSize(w.Limit())}
	default:
		return nil, err
	}
}

// A scanExchange is a scan request and its answer.
type scanExchange struct {
	file  []byte // a source message
	loads []string
}

func (x *scanExchange) Send(in *bufio.Writer) error {
	if err := sandbox.WriteFrame(in, frameScan, x.file); err != nil {
		return err
	}
	return in.Flush()
}

func (x *scanExchange) Answer(kind byte, body []byte) (bool, error) {
	if kind != frameDone {
		return false, fmt.Errorf("got a frame of kind %q, want done", kind)
	}
	var err error
	if x.loads, _, err = decodeScan(body); err != nil {
		return false, fmt.Errorf("malformed scan: %w", err)
	}
	return true, nil
}

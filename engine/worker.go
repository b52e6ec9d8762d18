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
//   - A worker limits its data segment (heap and thread stacks) to MaxMemory plus 64 MiB for
//     thread stacks (and the address space of its ballast, see worker_serve.go, which takes
//     no memory), and its address space likewise, with setrlimit before it reads a script;
//     where a cgroup v2 memory controller is writable it also puts itself in a cgroup with
//     memory.max = MaxMemory. A script that passes the limit kills its worker; the caller gets
//     an *Error wrapping a *LimitError{Limit: "memory"} naming the overlay, and the pool starts
//     a new worker on demand.
//   - The memory limit is per worker process, and covers every script the worker holds: the
//     last 16 (maxWorkerScripts) it compiled or applied, with the globals of their modules. A
//     script whose modules hold much memory leaves less to the others in the same worker. A
//     script that kills a worker holding other scripts runs again in a worker of its own, and
//     gets the memory limit's error only if it passes the limit there too; overlays that each
//     take most of the limit, applied in turn, cost a new worker at each turn.
//   - A worker that dies before it says it is ready (one whose memory limit is too small to
//     start) gives an error saying the worker could not start, not a limit of the overlay; a
//     limit below 48Mi is refused at Compile.
//   - The parent holds little of what a script sends back: each print() message is cut to
//     64 KiB, the output of one compile or one pod's apply to 1 MiB (the rest is dropped, with
//     one line saying so), the texts of errors to 16 KiB each, and no frame from a worker may
//     pass answerFrameLimit, a few times the result size limit. print() output reaches the
//     caller as it happens, also when a later step kills the worker.
//   - Steps, time and result size are limited inside the worker as in process; the parent also
//     kills a worker that has not answered a pod within the time limit plus one second (one
//     step that runs long, such as a huge sort), and a worker whose caller's context ends.
//   - A worker answers each pod of a batch as soon as it is done, so a pod that kills its
//     worker gets the limit's error, and the pods after it go on in another worker.
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
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/bound"
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
	// is "memory". The starpod command uses it by default.
	WorkerProcess
)

// DefaultMaxMemory is the memory limit of a worker process when Options.MaxMemory is zero.
const DefaultMaxMemory = 512 << 20

// workerStartMemory is the smallest memory limit of a worker process: about the smallest
// under which one starts and compiles a script on 64-bit Linux (measured: 44 to 48 MiB),
// where the Go runtime maps its heap in arenas of 64 MiB that the limits on the worker's data
// segment and address space must admit. Compile refuses a smaller Options.MaxMemory.
const workerStartMemory = 48 << 20

// errSmallMemory returns the error of a memory limit below workerStartMemory.
func errSmallMemory(limit int64) error {
	return fmt.Errorf("starting an overlay worker: the memory limit %s is below the %s a worker needs to start", FormatSize(limit), FormatSize(workerStartMemory))
}

// workerGrace is how long past its own time limit the parent waits for a worker's answer
// before it kills the worker.
const workerGrace = time.Second

func (o *Options) maxMemory() int64 {
	if o.MaxMemory <= 0 {
		return DefaultMaxMemory
	}
	return o.MaxMemory
}

// FormatSize formats a number of bytes as the Kubernetes quantity it is written as most
// simply: 512Mi, 2Gi, 1000.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Ei", 1 << 60}, {"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprint(n)
}

// WorkerPoolOptions configures [NewWorkerPool].
type WorkerPoolOptions struct {
	// Path is the program to run as a worker. Empty means the running program
	// (os.Executable), which must call [ServeWorkerIfRequested] at the top of main.
	Path string

	// Args are the arguments of the worker program, e.g. {"worker"} for the starpod
	// binary's hidden worker subcommand, which calls [ServeWorker].
	Args []string

	// Size bounds the number of worker processes alive at once. Zero means
	// runtime.GOMAXPROCS(0).
	Size int
}

// A WorkerPool starts, reuses and replaces the worker processes of overlays compiled with
// [WorkerProcess] isolation. Workers stay alive across applies; a worker that dies (of a memory
// limit, or killed for not answering in time) is replaced by a new one on demand. A WorkerPool
// is safe for concurrent use.
type WorkerPool struct {
	path string
	args []string
	size int

	mu     sync.Mutex
	cond   *sync.Cond
	idle   map[int64][]*worker // by memory limit
	alive  int
	closed bool
	procs  map[*worker]bool // the workers whose process has not exited

	started atomic.Int64
	peak    atomic.Int64 // the highest peak resident set size of any worker, in bytes
}

// NewWorkerPool returns a pool of worker processes. Nil options are the zero options.
func NewWorkerPool(opts *WorkerPoolOptions) *WorkerPool {
	if opts == nil {
		opts = &WorkerPoolOptions{}
	}
	p := &WorkerPool{path: opts.Path, args: append([]string(nil), opts.Args...), size: opts.Size,
		idle: make(map[int64][]*worker), procs: make(map[*worker]bool)}
	if p.size <= 0 {
		p.size = runtime.GOMAXPROCS(0)
	}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// defaultPool is the pool of overlays whose Options.Workers is nil.
var defaultPool = sync.OnceValue(func() *WorkerPool { return NewWorkerPool(nil) })

// Prestart starts, in the background, as many workers as p has room for, with the memory
// limit of overlays compiled with opts (nil means the zero Options), so that the first
// applies find them ready instead of each waiting for a process to start. It does not wait
// for them. A worker that fails to start is not reported: an apply that finds no idle worker
// starts one itself, and reports why that fails.
func (p *WorkerPool) Prestart(opts *Options) {
	if opts == nil {
		opts = &Options{}
	}
	limit := opts.maxMemory()
	if limit < workerStartMemory {
		return // Compile reports it
	}
	p.mu.Lock()
	n := p.size - p.alive
	if p.closed {
		n = 0
	}
	p.alive += n
	p.mu.Unlock()
	for range n {
		go func() {
			w, err := p.start(limit)
			if err != nil {
				p.unreserve()
				return
			}
			p.put(w)
		}()
	}
}

// Close stops the idle workers of p and every busy one when its apply ends. Applies after
// Close fail.
func (p *WorkerPool) Close() error {
	p.mu.Lock()
	p.closed = true
	var ws []*worker
	for _, idle := range p.idle {
		ws = append(ws, idle...)
	}
	p.idle = make(map[int64][]*worker)
	p.alive -= len(ws)
	p.cond.Broadcast()
	p.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
	return nil
}

// WorkerStats describes the workers of a pool.
type WorkerStats struct {
	Started int   // workers started since the pool was made
	Alive   int   // workers alive now, busy or idle
	Idle    int   // workers alive and waiting for work
	PeakRSS int64 // the highest peak resident set size of any worker seen so far, in bytes
}

// Stats returns the pool's counts. Peak memory counts the workers alive now and those that
// have exited.
func (p *WorkerPool) Stats() WorkerStats {
	p.mu.Lock()
	pids := make([]int, 0, len(p.procs))
	for w := range p.procs {
		pids = append(pids, w.cmd.Process.Pid)
	}
	s := WorkerStats{Started: int(p.started.Load()), Alive: p.alive}
	for _, ws := range p.idle {
		s.Idle += len(ws)
	}
	p.mu.Unlock()
	for _, pid := range pids {
		p.notePeak(peakRSS(pid))
	}
	s.PeakRSS = p.peak.Load()
	return s
}

func (p *WorkerPool) notePeak(n int64) {
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

var errPoolClosed = errors.New("the worker pool is closed")

// get returns an idle worker with the memory limit, preferably one that holds the script
// key, or a new one. With fresh set it returns only a worker that holds no script.
func (p *WorkerPool) get(limit int64, key string, fresh bool) (*worker, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, errPoolClosed
		}
		if i := pick(p.idle[limit], key, fresh); i >= 0 {
			ws := p.idle[limit]
			w := ws[i]
			p.idle[limit] = slices.Delete(ws, i, i+1)
			p.mu.Unlock()
			return w, nil
		}
		if p.alive < p.size {
			p.alive++
			p.mu.Unlock()
			w, err := p.start(limit)
			if err != nil {
				p.unreserve()
				return nil, err
			}
			return w, nil
		}
		// Make room by stopping an idle worker with another limit (or, for a fresh worker,
		// one that holds scripts).
		var evict *worker
		for l, ws := range p.idle {
			if len(ws) > 0 {
				evict = ws[len(ws)-1]
				p.idle[l] = ws[:len(ws)-1]
				p.alive--
				break
			}
		}
		if evict != nil {
			go evict.stop()
			continue
		}
		p.cond.Wait()
	}
}

// pick returns the index in ws of the worker get should take, or -1: the last that holds the
// script key, or else the last; with fresh set, the last that holds no script.
func pick(ws []*worker, key string, fresh bool) int {
	for i := len(ws) - 1; i >= 0; i-- {
		if fresh && ws[i].scripts.len() == 0 {
			return i
		}
		if _, ok := ws[i].scripts.get(key); ok && !fresh {
			return i
		}
	}
	if fresh {
		return -1
	}
	return len(ws) - 1
}

// unreserve gives back the place in the pool of a worker that failed to start.
func (p *WorkerPool) unreserve() {
	p.mu.Lock()
	p.alive--
	p.cond.Broadcast()
	p.mu.Unlock()
}

// put returns a worker to the pool after an apply, or retires it if it is dead.
func (p *WorkerPool) put(w *worker) {
	p.mu.Lock()
	if w.dead || p.closed {
		p.alive--
		p.cond.Broadcast()
		p.mu.Unlock()
		w.stop()
		return
	}
	p.idle[w.limit] = append(p.idle[w.limit], w)
	p.cond.Signal()
	p.mu.Unlock()
}

// A worker is one worker process.
type worker struct {
	pool    *WorkerPool
	limit   int64
	cmd     *exec.Cmd
	in      *bufio.Writer
	inFile  *os.File
	out     *frameReader
	outFile *os.File
	stderr  *tail
	scripts scriptCache[struct{}] // the scripts the worker holds compiled
	exited  chan struct{}         // closed when the process has exited
	dead    bool
	greeted bool // whether the hello frame is sent
	ready   bool // whether the worker's hello frame came: it has limited its memory

	enc     podEncoder // the pod sent last
	env     *Env       // the ctx sent last
	envData []byte     // its encoding
}

// start starts a worker process with the memory limit.
func (p *WorkerPool) start(limit int64) (*worker, error) {
	if os.Getenv(workerEnv) == "1" {
		// A worker that starts workers would start them without end.
		return nil, errors.New("starting an overlay worker: this process was started as one; call engine.ServeWorkerIfRequested first thing in main")
	}
	path := p.path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("starting an overlay worker: %v", err)
		}
		path = exe
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(path, p.args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1", fmt.Sprintf("%s=%d", workerMemoryEnv, limit))
	cmd.Stdin, cmd.Stdout = inR, outW
	w := &worker{pool: p, limit: limit, cmd: cmd, inFile: inW, outFile: outR,
		in: bufio.NewWriterSize(inW, 64<<10), out: newFrameReader(outR),
		stderr: &tail{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting an overlay worker: %v", err)
	}
	p.started.Add(1)
	p.mu.Lock()
	p.procs[w] = true
	p.mu.Unlock()
	go func() {
		cmd.Wait()
		removeCgroup(cmd.Process.Pid)
		p.notePeak(exitPeakRSS(cmd.ProcessState))
		p.mu.Lock()
		delete(p.procs, w)
		p.mu.Unlock()
		close(w.exited)
	}()
	return w, nil
}

// stop ends the worker: it closes its input, which makes a healthy worker exit, and kills it
// if it has not exited soon after.
func (w *worker) stop() {
	w.inFile.Close()
	select {
	case <-w.exited:
	case <-time.After(workerGrace):
		w.cmd.Process.Kill()
		<-w.exited
	}
	w.outFile.Close()
}

// A workerFailure says why a worker gave no answer.
type workerFailure int

const (
	failTime   workerFailure = iota + 1 // killed by the parent for not answering in time
	failCtx                             // killed because the caller's context ended
	failMemory                          // died of its memory limit
	failStart                           // died before it was ready: it could not start
	failOther                           // died otherwise
)

// call sends a request with send and passes each answer to answer until it says the request is
// done; print() output goes to print. With async set, send runs in a goroutine of its own, so
// that the worker applies the first pods of a request while the parent sends the others and
// the parent decodes the answers while the worker applies the pods after them. It waits at
// most first for the first answer, and at most each for each answer after it. On failure the
// worker is dead, and the failure says why.
func (w *worker) call(ctx context.Context, first, each time.Duration, async bool, send func(*bufio.Writer) error,
	print func(*wirePrint), answer func(kind byte, body []byte) (done bool, err error)) (workerFailure, error) {
	var reason atomic.Int32
	kill := func(r workerFailure) {
		reason.CompareAndSwap(0, int32(r))
		w.cmd.Process.Kill()
	}
	timer := time.AfterFunc(first, func() { kill(failTime) })
	stopCtx := context.AfterFunc(ctx, func() { kill(failCtx) })
	defer func() {
		timer.Stop()
		stopCtx()
	}()
	var err, broke error // broke is set when the worker broke the protocol
	if !w.greeted {
		w.greeted = true
		err = writeFrame(w.in, frameHello, []byte(protocolVersion))
	}
	var sent chan error
	if err == nil {
		if async {
			sent = make(chan error, 1)
			go func() { sent <- send(w.in) }()
		} else {
			err = send(w.in)
		}
	}
	for err == nil {
		var kind byte
		var body []byte
		if kind, body, err = w.out.next(); err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				broke = err
			}
			break
		}
		if !w.ready {
			if kind != frameReady || string(body) != protocolVersion {
				err = fmt.Errorf("got a frame of kind %q, want the worker's hello of protocol %q: the worker is another build of starpod", kind, protocolVersion)
				if kind == frameReady {
					err = fmt.Errorf("got protocol %q, want %q: the worker is another build of starpod", body, protocolVersion)
				}
				broke = err
				break
			}
			w.ready = true
			continue
		}
		if kind == framePrint {
			var p wirePrint
			if err = json.Unmarshal(body, &p); err != nil {
				broke = fmt.Errorf("malformed print frame: %v", err)
				break
			}
			if print != nil {
				print(&p)
			}
			continue
		}
		var done bool
		if done, err = answer(kind, body); err != nil {
			broke = err
			break
		}
		if done {
			if sent != nil {
				err = <-sent
				sent = nil
			}
			if err == nil {
				return 0, nil
			}
			break
		}
		timer.Reset(each)
	}
	// The worker died or broke the protocol: make sure it is gone and find out why.
	w.dead = true
	w.cmd.Process.Kill()
	<-w.exited
	if sent != nil {
		<-sent // the worker's input is closed now
	}
	if r := workerFailure(reason.Load()); r != 0 {
		return r, nil
	}
	stderr := w.stderr.String()
	if !w.ready {
		return failStart, w.startError(stderr, broke)
	}
	if outOfMemory(stderr) || killedByOOM(w.cmd.ProcessState) && broke == nil ||
		runtimeCrash(stderr) && exitPeakRSS(w.cmd.ProcessState) >= w.limit*raceMemoryFactor/4 {
		return failMemory, nil
	}
	if broke != nil {
		return failOther, fmt.Errorf("overlay worker failed: %v", broke)
	}
	msg := w.cmd.ProcessState.String()
	if line := lastLine(stderr); line != "" {
		msg += ": " + line
	}
	return failOther, fmt.Errorf("overlay worker failed: %s", msg)
}

// startError returns the error of a worker that died, or broke the protocol, before it said
// it was ready.
func (w *worker) startError(stderr string, broke error) error {
	msg := w.cmd.ProcessState.String()
	if broke != nil {
		msg = broke.Error()
	} else if line := firstLine(stderr); line != "" {
		msg += ": " + line
	}
	if broke == nil && (outOfMemory(stderr) || runtimeCrash(stderr) || killedByOOM(w.cmd.ProcessState)) {
		msg += fmt.Sprintf(": the worker ran out of memory as it started, under the memory limit of %s", FormatSize(w.limit))
	}
	return fmt.Errorf("starting an overlay worker: %s", msg)
}

// firstLine returns the first line of s that is not empty.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// outOfMemory reports whether the standard error of a dead worker says it ran out of memory:
// a fatal error of the Go runtime (or of the race detector's allocator) about memory, arenas,
// allocation, thread creation or the stack.
func outOfMemory(stderr string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(line, "fatal error:") && !strings.HasPrefix(line, "runtime:") &&
			!strings.Contains(line, "ThreadSanitizer") && !strings.HasPrefix(line, "runtime/cgo:") {
			continue
		}
		for _, word := range []string{"memory", "arena", "allocate", "address space", "pthread_create", "stack overflow", "stack exceeds"} {
			if strings.Contains(line, word) {
				return true
			}
		}
	}
	return false
}

// runtimeCrash reports whether the standard error of a dead worker says that the Go runtime
// crashed of a signal, as it may when the memory limit makes its own allocations fail (the
// collector does not check all of them). With a peak memory of a quarter of the limit or
// more, it is a death of the memory limit.
func runtimeCrash(stderr string) bool {
	for _, line := range strings.Split(stderr, "\n") {
		for _, prefix := range []string{"SIGSEGV: ", "SIGBUS: ", "unexpected fault address", "fatal error: unexpected signal"} {
			if strings.HasPrefix(line, prefix) {
				return true
			}
		}
	}
	return false
}

// lastLine returns the last line of s that is not empty.
func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}

// A tail keeps the first and the last bytes written to it, up to max each.
type tail struct {
	mu         sync.Mutex
	max        int
	head, last []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.max - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head = append(t.head, p[:k]...)
		p = p[k:]
	}
	t.last = append(t.last, p...)
	if len(t.last) > t.max {
		t.last = append(t.last[:0], t.last[len(t.last)-t.max:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + string(t.last)
}

// remote is the part of an Overlay compiled for a worker.
type remote struct {
	script *wireScript
	pool   *WorkerPool
	limit  int64
	print  func(pos syntax.Position, msg string)
}

// compileWorker compiles an overlay in a worker process. The parent resolves the script's
// load statements with opts.Loader, without parsing or running anything itself, and the worker
// compiles the script with the answers.
func compileWorker(name string, src []byte, opts *Options) (*Overlay, error) {
	if limit := opts.maxMemory(); limit < workerStartMemory {
		return nil, &Error{Overlay: name, Err: errSmallMemory(limit)}
	}
	pool := opts.Workers
	if pool == nil {
		pool = defaultPool()
	}
	d := &wireScript{Name: name, Src: src, HasLoader: opts.Loader != nil,
		MaxSteps: opts.MaxSteps, Timeout: opts.Timeout, MaxResultBytes: opts.MaxResultBytes,
		Print: opts.Print != nil}
	if opts.Loader != nil {
		loads, err := resolveLoads(context.Background(), name, src, opts, pool)
		if err != nil {
			return nil, err
		}
		d.Loads = loads
	}
	data, err := json.Marshal(d)
	if err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	sum := sha256.Sum256(data)
	d.Key = hex.EncodeToString(sum[:])
	o := &Overlay{name: name, opts: *opts,
		remote: &remote{script: d, pool: pool, limit: opts.maxMemory(), print: opts.Print}}
	// Compile now, to report errors (and limits hit by the top level) at once.
	if _, _, err := o.callWorker(context.Background(), nil); err != nil {
		return nil, err
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
	w, err := pool.get(limit, "", false)
	if err != nil {
		return nil, &Error{Overlay: name, Err: err}
	}
	defer pool.put(w)
	w.out.max = answerFrameLimit(0)

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
		loads, err := w.scan(ctx, f.name, f.src, workerGrace+opts.timeout())
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

// scan asks the worker for the modules that the load statements of the file name name. It
// returns an error only when the worker fails: a *LimitError for its memory or time limit.
// A file that does not parse has no loads; the compile reports why.
func (w *worker) scan(ctx context.Context, name string, src []byte, timeout time.Duration) ([]string, error) {
	var res wireScan
	fail, err := w.call(ctx, timeout, 0, false,
		func(in *bufio.Writer) error {
			if err := writeJSONFrame(in, frameScan, &wireSource{Name: name, Src: src}); err != nil {
				return err
			}
			return in.Flush()
		}, nil,
		func(kind byte, body []byte) (bool, error) {
			if kind != frameDone {
				return false, fmt.Errorf("got a frame of kind %q, want done", kind)
			}
			if err := json.Unmarshal(body, &res); err != nil {
				return false, fmt.Errorf("malformed scan: %v", err)
			}
			return true, nil
		})
	switch fail {
	case 0:
		return res.Loads, nil
	case failTime:
		return nil, &LimitError{Limit: "time", Value: (timeout - workerGrace).String()}
	case failMemory:
		return nil, &LimitError{Limit: "memory", Value: FormatSize(w.limit)}
	case failCtx:
		return nil, ctx.Err()
	default:
		return nil, err
	}
}

// A batch is the pods of an apply in worker processes and their answers.
type batch struct {
	pods  []*corev1.Pod
	env   *Env   // the ctx of every pod, when envs is nil
	envs  []*Env // the ctx of each pod
	first bool   // whether to stop at the first pod that fails
	todo  []int  // the indices in pods of the pods still to apply, in order

	out    []*corev1.Pod
	errs   []error
	failed bool // whether a pod has failed
}

// callWorker compiles the overlay in a worker if the worker has not, and applies it to the
// pods of b still to do, if any, setting their results and errors in b. It returns the number
// n of them the worker answered. If the worker died while it applied the overlay to the pod
// after them, err is that pod's *Error (a *LimitError for a memory or time limit) and died is
// true: the pods after it were not tried and may go to another worker. Otherwise err is an
// *Error for every pod not answered. A worker that dies of its memory limit while it holds
// other scripts gets a second chance: the pods from the one it died at go to a worker that
// holds no other script, within what is left of that pod's time (or the compile's), so that
// the second chance does not stretch the time limit.
func (o *Overlay) callWorker(ctx context.Context, b *batch) (n int, died bool, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var clock time.Time
	n, died, crowded, err := o.callWorkerIn(ctx, b, false, time.Time{}, &clock)
	if !crowded || b != nil && b.first && b.failed {
		return n, died, err
	}
	deadline := clock.Add(workerGrace + o.opts.timeout())
	if time.Until(deadline) <= 0 {
		return n, died, err
	}
	// The worker died of its memory limit while it held other scripts, whose memory counts
	// too: try again in a worker that holds none, so that the overlay is not blamed for
	// theirs.
	var rest *batch
	if b != nil {
		sub := *b
		sub.todo = b.todo[n:]
		rest = &sub
	}
	m, died, _, err := o.callWorkerIn(ctx, rest, true, deadline, &clock)
	if b != nil {
		b.failed = rest.failed
	}
	return n + m, died, err
}

// callWorkerIn is callWorker in one worker: a fresh one (holding no script) if fresh is set.
// It reports as crowded a worker that died of its memory limit while it held other scripts.
// It sets *clock to when the worker began what it is doing: the compile, or the pod after the
// last one it answered. A compile or a first pod must be done by deadline, if it is not zero.
func (o *Overlay) callWorkerIn(ctx context.Context, b *batch, fresh bool, deadline time.Time, clock *time.Time) (n int, died, crowded bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, false, &Error{Overlay: o.name, Err: err}
	}
	r := o.remote
	w, err := r.pool.get(r.limit, r.script.Key, fresh)
	if err != nil {
		return 0, false, false, &Error{Overlay: o.name, Err: err}
	}
	defer r.pool.put(w)
	// others reports whether the worker holds scripts besides this one.
	others := func() bool {
		_, ok := w.scripts.get(r.script.Key)
		return w.scripts.len() > 0 && !ok || w.scripts.len() > 1
	}
	var print func(*wirePrint)
	if r.print != nil {
		print = func(p *wirePrint) {
			file := p.File
			r.print(syntax.MakePosition(&file, p.Line, p.Col), p.Msg)
		}
	}
	// Compiling may take the time limit (the top levels of the script and of its modules
	// together), and each pod may take it; the parent allows a grace period more.
	timeout := o.opts.timeout()
	first := func() time.Duration {
		d := workerGrace + timeout
		if !deadline.IsZero() {
			d = max(min(d, time.Until(deadline)), time.Millisecond)
		}
		return d
	}
	failure := func(fail workerFailure, err error, answered int) (int, bool, error) {
		switch fail {
		case failTime:
			return answered, true, &Error{Overlay: o.name, Err: &LimitError{Limit: "time", Value: timeout.String()}}
		case failCtx:
			return answered, false, &Error{Overlay: o.name, Err: ctx.Err()}
		case failMemory:
			return answered, true, &Error{Overlay: o.name, Err: &LimitError{Limit: "memory", Value: FormatSize(r.limit)}}
		case failStart:
			// Another worker would fail to start as well.
			return answered, false, &Error{Overlay: o.name, Err: err}
		default:
			// A worker that failed before its first answer may be broken: trying the other
			// pods in another would fail as often.
			return answered, answered > 0, &Error{Overlay: o.name, Err: err}
		}
	}
	w.out.max = answerFrameLimit(r.script.MaxResultBytes)
	if _, ok := w.scripts.get(r.script.Key); !ok {
		var compileErr *wireError
		*clock = time.Now()
		fail, err := w.call(ctx, first(), 0, false,
			func(in *bufio.Writer) error {
				if err := writeJSONFrame(in, frameDefine, r.script); err != nil {
					return err
				}
				return in.Flush()
			}, print,
			func(kind byte, body []byte) (bool, error) {
				if kind != frameDone {
					return false, fmt.Errorf("got a frame of kind %q, want done", kind)
				}
				if len(body) > 0 {
					compileErr = new(wireError)
					if err := json.Unmarshal(body, compileErr); err != nil {
						return false, fmt.Errorf("malformed compile error: %v", err)
					}
				}
				return true, nil
			})
		if fail != 0 {
			// Compiling is the same for every pod.
			_, _, err := failure(fail, err, 0)
			return 0, false, fail == failMemory && others(), err
		}
		if compileErr != nil {
			return 0, false, false, compileErr.error()
		}
		w.scripts.add(r.script.Key, struct{}{})
	}
	if b == nil || len(b.todo) == 0 {
		return 0, false, false, nil
	}
	w.scripts.use(r.script.Key) // as the worker does when it reads the apply
	*clock = time.Now()
	fail, err := w.call(ctx, first(), workerGrace+timeout, len(b.todo) > 1,
		func(in *bufio.Writer) error { return w.sendPods(in, r.script.Key, b) }, print,
		func(kind byte, body []byte) (bool, error) {
			if kind == frameDone {
				if n != len(b.todo) {
					return false, fmt.Errorf("answered %d pods, want %d", n, len(b.todo))
				}
				return true, nil
			}
			if n == len(b.todo) {
				return false, fmt.Errorf("answered more than %d pods", len(b.todo))
			}
			i := b.todo[n]
			switch kind {
			case frameResult:
				if !b.failed || !b.first {
					pod, err := decodePod(body)
					if err != nil {
						b.errs[i] = &Error{Overlay: o.name, Err: fmt.Errorf("decoding the result: %v", err)}
						b.failed = true
					} else {
						b.out[i] = pod
					}
				}
			case frameError:
				var we wireError
				if err := json.Unmarshal(body, &we); err != nil {
					return false, fmt.Errorf("malformed error: %v", err)
				}
				if !b.failed || !b.first {
					b.errs[i] = we.error()
				}
				b.failed = true
			default:
				return false, fmt.Errorf("got a frame of kind %q, want an answer", kind)
			}
			n++
			*clock = time.Now()
			return false, nil
		})
	if fail != 0 {
		n, died, err := failure(fail, err, n)
		return n, died, fail == failMemory && others(), err
	}
	return n, false, false, nil
}

// sendPods sends an apply request of the script key to the pods of b still to do.
func (w *worker) sendPods(in *bufio.Writer, key string, b *batch) error {
	apply := byte(frameApply)
	if b.first {
		apply = frameFirst
	}
	if err := writeFrame(in, apply, []byte(key)); err != nil {
		return err
	}
	w.enc.pod, w.env, w.envData = nil, nil, w.envData[:0]
	for j, i := range b.todo {
		env := b.env
		if b.envs != nil {
			env = b.envs[i]
		}
		if env != w.env || j == 0 {
			w.envData = w.envData[:0]
			if env != nil {
				w.envData = appendEnv(w.envData, env)
			}
			w.env = env
		}
		pod := b.pods[i]
		var err error
		if err = w.enc.encode(pod); err == nil {
			w.enc.head = appendPodHeader(w.enc.head[:0], w.envData, pod.Kind, pod.APIVersion)
			err = writeFrame(in, framePod, w.enc.head, w.enc.proto)
		} else {
			err = writeFrame(in, frameSkip, []byte(err.Error()))
		}
		if err != nil {
			return err
		}
		// The worker starts with the first pod while the parent encodes the next ones.
		if j == 0 || in.Buffered() >= 8<<10 {
			if err := in.Flush(); err != nil {
				return err
			}
		}
	}
	if err := writeFrame(in, frameEnd); err != nil {
		return err
	}
	return in.Flush()
}

// applyWorker applies the overlay in workers to each pod, with the ctx envs[i] for pods[i]
// when envs is not nil and env for every pod otherwise. It sends the pods to one worker in one
// round trip. A pod that kills its worker (by a memory or time limit) gets that error, and
// the pods after it go to another worker. With first set it stops at the first pod that
// fails and gives the pods after it no result and no error.
func (o *Overlay) applyWorker(ctx context.Context, pods []*corev1.Pod, env *Env, envs []*Env, first bool) ([]*corev1.Pod, []error) {
	b := &batch{pods: pods, env: env, envs: envs, first: first, todo: make([]int, len(pods)),
		out: make([]*corev1.Pod, len(pods)), errs: make([]error, len(pods))}
	for i := range b.todo {
		b.todo[i] = i
	}
	for len(b.todo) > 0 {
		n, died, err := o.callWorker(ctx, b)
		if err == nil || first && b.failed {
			break
		}
		if !died || n == len(b.todo) { // n == len(b.todo): the worker broke the protocol after the last answer
			for _, i := range b.todo[n:] {
				b.errs[i] = err
			}
			break
		}
		b.errs[b.todo[n]] = err
		if first {
			break
		}
		b.todo = b.todo[n+1:]
	}
	return b.out, b.errs
}

// ApplyBatch applies the overlay to each of pods, as Apply does, with env as the ctx of every
// pod, and returns the results in order. It stops at the first pod that fails and returns the
// results of the pods before it and that pod's *Error: len(out) is the index of the pod that
// failed. With [WorkerProcess] isolation all pods go to one worker in one round trip.
func (o *Overlay) ApplyBatch(ctx context.Context, pods []*corev1.Pod, env *Env) ([]*corev1.Pod, error) {
	if o.remote != nil {
		out, errs := o.applyWorker(ctx, pods, env, nil, true)
		for i, err := range errs {
			if err != nil {
				return out[:i], err
			}
		}
		return out, nil
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		res, err := o.Apply(ctx, pod, env)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// ApplyEach applies the overlay to each of pods, as Apply does, with envs[i] as the ctx of
// pods[i]; nil envs gives every pod a nil env, and otherwise envs must be as long as pods. It
// returns a result and an error for each pod: the resulting pod and a nil error, or a nil pod
// and the *Error that Apply would have returned. With [WorkerProcess] isolation all pods go
// to one worker in one round trip; a pod that kills its worker (by a memory or time limit)
// gets that *Error, wrapping a *LimitError, and the pods after it go on in another worker.
func (o *Overlay) ApplyEach(ctx context.Context, pods []*corev1.Pod, envs []*Env) ([]*corev1.Pod, []error) {
	if envs != nil && len(envs) != len(pods) {
		panic(fmt.Sprintf("engine: ApplyEach of %d pods with %d envs", len(pods), len(envs)))
	}
	if o.remote != nil {
		return o.applyWorker(ctx, pods, nil, envs, false)
	}
	out := make([]*corev1.Pod, len(pods))
	errs := make([]error, len(pods))
	for i, pod := range pods {
		var env *Env
		if envs != nil {
			env = envs[i]
		}
		out[i], errs[i] = o.Apply(ctx, pod, env)
	}
	return out, errs
}

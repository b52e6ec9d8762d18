package engine

// This file defines the protocol between the engine and its worker processes: frames over the
// worker's standard input and output whose bodies are protocol buffers (package
// internal/worker's encoding), pods in the generated Kubernetes protobuf encoding.
//
// Frames and the handshake that opens the protocol are package sandbox's (see
// sandbox.FrameReader). After the handshake the parent sends requests, one at a time:
//
//	scan:    L(source)                        -> d(scan)
//	define:  D(script)                        -> p* (d | e(error))
//	apply:   A(apply) (P(pod) | S(message))* E  -> (p* (r(pod) | e(error)))* p* d
//	         F(apply) (P(pod) | S(message))* E  -> the same
//	explain: X(apply) (P(pod) | S(message))* E  -> (p* (c(changes) r(pod) | e(error)))* p* d
//
// A scan parses one file, and answers with the modules its load statements name: the parent
// resolves a script's loads file by file with its Loader, but parses nothing itself, so that a
// file that takes much memory to parse (a parse bomb) kills a worker, not the parent, and the
// parent knows which file it was. The worker compiles a defined script and answers done, or
// the compile's error. In an apply, the worker answers each pod frame (or skip frame, for a
// pod the parent failed to encode) in order, with the resulting pod or the error, and answers
// the end frame with done. It counts the pods it answered in its progress (see
// sandbox.SetProgress), so that the parent of a worker that died knows which pod it died at,
// and writes its answers out in batches, or each at once where the request says careful (see
// server.apply). In an apply that stops at the first pod that fails (F, X), the worker answers
// the pods after that one with an error without applying the script to them, so that a failed
// batch costs no more than the pods up to its failure. print() output (p) goes back as it
// happens, each message written out at once with the answers before it, so that the parent
// has it even if a later step kills the worker. The parent streams the pods while the worker
// applies the ones before, and decodes the answers while the worker applies the ones after.
//
// A script is known by its key, the SHA-256 of its define's body, which both sides compute. A
// worker keeps the last maxWorkerScripts scripts it was sent, by their last define or apply,
// and forgets older ones; the parent keeps the same account of each worker (a sandbox.Cache on
// either side) and sends a define again before it applies a script the worker has forgotten.
//
// The parent reads no frame from a worker larger than answerFrameLimit allows for the result
// size limit of the script at hand: a worker cuts print() output (maxPrintBytes,
// maxPrintTotal) and the texts of errors (maxErrorText) to fit, and answers a result that
// would not fit with a result size error.
//
// The messages, by field number (see the append and decode functions of each):
//
//	source:  1 name, 2 src
//	scan:    1 loads (repeated string), 2 err
//	script:  1 name, 2 src, 3 has_loader, 4 loads (repeated load), 5 max_steps, 6 timeout
//	         (ns), 7 max_result_bytes, 8 print, 9 validation
//	load:    1 from, 2 module, 3 name, 4 src, 5 err
//	apply:   1 key, 2 careful, 3 deadline (ns: the time left to the caller's deadline
//	         when the parent sent the apply; absent for none)
//	pod:     1 ctx (env; absent for None), 2 kind, 3 api_version, 4 the pod's protobuf
//	env:     1 app_id, 2 role, 3 replica_id, 4 num_replicas, 5 scheduler, 6 args (repeated
//	         {1 key, 2 value}, in the order of the keys), 7 workload
//	workload: 1 kind, 2 api_version, 3 name, 4 namespace, 5 path
//	print:   1 file, 2 line, 3 col, 4 msg
//	error:   1 overlay, 2 file, 3 line, 4 col, 5 backtrace, 6 fields (repeated field), 7 msg
//	         (the cause's), 8 limit, 9 deadline (ns the apply had run: a *DeadlineError)
//	field:   1 type, 2 field, 3 bad_value (JSON), 4 detail, 5 write
//	write:   1 file, 2 line, 3 col, 4 backtrace, 5 input
//	limit:   1 limit, 2 value, 3 path, 4 msg (the interpreter's)
//	changes: 1 change (repeated: 1 overlay, 2 path, 3 old (JSON), 4 new (JSON), 5 file,
//	         6 line, 7 col; see proto_changes.go)
//
// A result frame is a pod without its ctx. A pod's fields are written in order, so that the
// fields from kind on are a message of their own: the worker decodes a ctx whose bytes equal
// the previous ctx's only once, and takes the metadata, spec or status of a pod whose encoding
// equals the previous pod's from that pod (see podDecoder); Apply does not change them. The
// parent decodes results in the same way, with copies. The values of bad_value, old and new
// are any JSON value a Starlark script made, which JSON carries as it is.

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"go.starlark.net/syntax"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/worker"
)

// Bounds of what a worker sends back, so that no script can make the parent hold more than
// a few megabytes at once, whatever it prints or fails with.
const (
	// maxPrintBytes bounds one print() message; a longer one is cut there and ends with a
	// marker saying how many bytes were cut.
	maxPrintBytes = 64 << 10

	// maxPrintTotal bounds the print() output of one compile and of one pod's apply that
	// reaches the parent; beyond it the prints are dropped, with one line saying so.
	maxPrintTotal = 1 << 20

	// maxErrorText bounds each text of an error (its message, backtrace, each field error's
	// detail); a longer one is cut there, with a marker.
	maxErrorText = 16 << 10
)

// answerFrameLimit returns the largest frame the parent reads from a worker applying a script
// whose result size limit (of its JSON encoding) is maxResult bytes: room for the protobuf
// encoding of the result, which for pods of many empty list items can take several times
// the bytes of their JSON, and 1 MiB more for a print() message or an error.
func answerFrameLimit(maxResult int64) int {
	if maxResult <= 0 {
		maxResult = DefaultMaxResultBytes
	}
	return int(min(8*maxResult+1<<20, sandbox.MaxFrame))
}

// protocolVersion names the protocol. A worker refuses a parent that speaks another, such as
// one of another build of starpod.
const protocolVersion = "starpod-worker/9"

// maxWorkerScripts is how many compiled scripts a worker keeps, with their modules' globals.
// A worker's memory limit covers them all.
const maxWorkerScripts = 16

// The kinds of frames.
const (
	// from the parent
	frameScan    = 'L' // body: a source
	frameDefine  = 'D' // body: a script
	frameApply   = 'A' // body: an apply
	frameFirst   = 'F' // body: an apply; one that stops at the first pod that fails
	frameExplain = 'X' // body: an apply; one that stops at the first pod that fails and explains each result
	framePod     = 'P' // body: a pod
	frameSkip    = 'S' // body: why the parent could not encode the pod, as text
	frameEnd     = 'E' // empty
	// from the worker
	framePrint   = 'p' // body: a print
	frameResult  = 'r' // body: a pod without its ctx
	frameChanges = 'c' // body: changes, of the result that follows
	frameError   = 'e' // body: an error
	frameDone    = 'd' // empty, or for a scan a scan
)

// A wireScript is everything a worker needs to compile an overlay: its source, the results of
// every load its Loader served in the parent, and the options that matter inside the worker.
type wireScript struct {
	Name           string        // the overlay's name
	Src            []byte        // its source
	HasLoader      bool          // whether the parent has a Loader (else load is not enabled)
	Loads          []wireLoad    // what the parent's Loader answered
	MaxSteps       uint64        // Options.MaxSteps
	Timeout        time.Duration // Options.Timeout
	MaxResultBytes int64         // Options.MaxResultBytes
	Print          bool          // whether print() output goes back to the parent
	Validation     Validation    // Options.Validation
}

// A wireLoad is one answer of the parent's Loader.
type wireLoad struct {
	From, Module string // the question
	Name         string // the resolved name
	Src          []byte // the module's source
	Err          string // the loader's error, if any
}

// encode returns the encoding of d, a script message.
func (d *wireScript) encode() []byte {
	b := worker.AppendString(nil, 1, d.Name)
	b = worker.AppendBytes(b, 2, d.Src)
	b = worker.AppendBool(b, 3, d.HasLoader)
	var l []byte
	for _, ld := range d.Loads {
		l = worker.AppendString(l[:0], 1, ld.From)
		l = worker.AppendString(l, 2, ld.Module)
		l = worker.AppendString(l, 3, ld.Name)
		l = worker.AppendBytes(l, 4, ld.Src)
		l = worker.AppendString(l, 5, ld.Err)
		b = worker.AppendBytes(b, 4, l)
	}
	b = worker.AppendUint(b, 5, d.MaxSteps)
	b = worker.AppendInt(b, 6, int64(d.Timeout))
	b = worker.AppendInt(b, 7, d.MaxResultBytes)
	b = worker.AppendBool(b, 8, d.Print)
	return worker.AppendInt(b, 9, int64(d.Validation))
}

// decodeScript decodes a script message.
func decodeScript(data []byte) (*wireScript, error) {
	d := new(wireScript)
	err := worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 1:
			d.Name = f.String()
		case 2:
			d.Src = f.B
		case 3:
			d.HasLoader = f.Bool()
		case 4:
			d.Loads = append(d.Loads, wireLoad{})
			return worker.Fields(f.B, func(f worker.Field) error {
				ld := &d.Loads[len(d.Loads)-1]
				switch f.Num {
				case 1:
					ld.From = f.String()
				case 2:
					ld.Module = f.String()
				case 3:
					ld.Name = f.String()
				case 4:
					ld.Src = f.B
				case 5:
					ld.Err = f.String()
				}
				return nil
			})
		case 5:
			d.MaxSteps = f.V
		case 6:
			d.Timeout = time.Duration(f.Int())
		case 7:
			d.MaxResultBytes = f.Int()
		case 8:
			d.Print = f.Bool()
		case 9:
			d.Validation = Validation(f.Int())
		}
		return nil
	})
	return d, err
}

// appendSource appends a source message: a file to scan.
func appendSource(b []byte, name string, src []byte) []byte {
	return worker.AppendBytes(worker.AppendString(b, 1, name), 2, src)
}

// decodeSource decodes a source message.
func decodeSource(data []byte) (name string, src []byte, err error) {
	err = worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 1:
			name = f.String()
		case 2:
			src = f.B
		}
		return nil
	})
	return name, src, err
}

// appendScan appends a scan message: the modules that a file's load statements name, in
// order, or why it could not be parsed.
func appendScan(b []byte, loads []string, msg string) []byte {
	for _, l := range loads {
		b = worker.AppendString(b, 1, l)
	}
	if msg != "" {
		b = worker.AppendString(b, 2, msg)
	}
	return b
}

// decodeScan decodes a scan message.
func decodeScan(data []byte) (loads []string, msg string, err error) {
	err = worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 1:
			loads = append(loads, f.String())
		case 2:
			msg = f.String()
		}
		return nil
	})
	return loads, msg, err
}

// appendApply appends an apply message. left is the time left to the caller's deadline, or
// zero for none: a duration, since the processes share no clock to name an instant by.
func appendApply(b []byte, key string, careful bool, left time.Duration) []byte {
	b = worker.AppendBool(worker.AppendString(b, 1, key), 2, careful)
	if left > 0 {
		b = worker.AppendInt(b, 3, int64(left))
	}
	return b
}

// decodeApply decodes an apply message. A deadline already passed gives a left of 1ns, so
// that zero means none.
func decodeApply(data []byte) (key string, careful bool, left time.Duration, err error) {
	err = worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 1:
			key = f.String()
		case 2:
			careful = f.Bool()
		case 3:
			left = max(time.Duration(f.Int()), 1)
		}
		return nil
	})
	return key, careful, left, err
}

// appendPrint appends a print message.
func appendPrint(b []byte, pos syntax.Position, msg string) []byte {
	b = worker.AppendString(b, 1, pos.Filename())
	b = worker.AppendInt(b, 2, int64(pos.Line))
	b = worker.AppendInt(b, 3, int64(pos.Col))
	return worker.AppendString(b, 4, msg)
}

// decodePrint decodes a print message.
func decodePrint(data []byte) (pos syntax.Position, msg string, err error) {
	var p position
	err = worker.Fields(data, func(f worker.Field) error {
		if f.Num == 4 {
			msg = f.String()
		} else {
			p.field(f, 1)
		}
		return nil
	})
	return p.pos(), msg, err
}

// A position is a syntax.Position being decoded: fields file, line and col, numbered from
// first.
type position struct {
	file      string
	line, col int32
}

// field decodes f if it is a field of the position.
func (p *position) field(f worker.Field, first protowire.Number) {
	switch f.Num - first {
	case 0:
		p.file = f.String()
	case 1:
		p.line = int32(f.Int())
	case 2:
		p.col = int32(f.Int())
	}
}

// pos returns the position decoded, which is invalid without a file.
func (p *position) pos() syntax.Position {
	if p.file == "" {
		return syntax.Position{}
	}
	file := p.file
	return syntax.MakePosition(&file, p.line, p.col)
}

// appendPos appends pos as the fields file, line and col, numbered from first, if it is valid.
func appendPos(b []byte, first protowire.Number, pos syntax.Position) []byte {
	if !pos.IsValid() {
		return b
	}
	b = worker.AppendString(b, first, pos.Filename())
	b = worker.AppendInt(b, first+1, int64(pos.Line))
	return worker.AppendInt(b, first+2, int64(pos.Col))
}

// appendEnv appends the encoding of a ctx that is not nil, an env message.
func appendEnv(b []byte, env *Env) []byte {
	b = worker.AppendString(b, 1, env.AppID)
	b = worker.AppendString(b, 2, env.Role)
	b = worker.AppendInt(b, 3, int64(env.ReplicaID))
	b = worker.AppendInt(b, 4, int64(env.NumReplicas))
	b = worker.AppendString(b, 5, env.Scheduler)
	var kv []byte
	for _, k := range slices.Sorted(maps.Keys(env.Args)) {
		kv = worker.AppendString(worker.AppendString(kv[:0], 1, k), 2, env.Args[k])
		b = worker.AppendBytes(b, 6, kv)
	}
	if w := env.Workload; w != nil {
		var m []byte
		for i, s := range [...]string{w.Kind, w.APIVersion, w.Name, w.Namespace, w.Path} {
			m = worker.AppendString(m, protowire.Number(i+1), s)
		}
		b = worker.AppendBytes(b, 7, m)
	}
	return b
}

// decodeEnv decodes an env message.
func decodeEnv(data []byte) (*Env, error) {
	env := new(Env)
	err := worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 1:
			env.AppID = f.String()
		case 2:
			env.Role = f.String()
		case 3:
			env.ReplicaID = int(f.Int())
		case 4:
			env.NumReplicas = int(f.Int())
		case 5:
			env.Scheduler = f.String()
		case 6:
			var k, v string
			err := worker.Fields(f.B, func(f worker.Field) error {
				switch f.Num {
				case 1:
					k = f.String()
				case 2:
					v = f.String()
				}
				return nil
			})
			if env.Args == nil {
				env.Args = make(map[string]string)
			}
			env.Args[k] = v
			return err
		case 7:
			w := new(Workload)
			env.Workload = w
			return worker.Fields(f.B, func(f worker.Field) error {
				switch f.Num {
				case 1:
					w.Kind = f.String()
				case 2:
					w.APIVersion = f.String()
				case 3:
					w.Name = f.String()
				case 4:
					w.Namespace = f.String()
				case 5:
					w.Path = f.String()
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ctx: %w", err)
	}
	return env, nil
}

// appendPodHeader appends the beginning of a pod message, before the pod's protobuf encoding
// of n bytes: the ctx, if env (an env message) is not nil, and the pod's kind and apiVersion.
func appendPodHeader(b []byte, env []byte, kind, apiVersion string, n int) []byte {
	if env != nil {
		b = worker.AppendBytes(b, 1, env)
	}
	return appendKind(b, kind, apiVersion, n)
}

// appendKind appends the beginning of a pod message without its ctx, before the pod's
// protobuf encoding of n bytes: its kind and apiVersion, and the tag and length of the
// encoding.
func appendKind(b []byte, kind, apiVersion string, n int) []byte {
	b = worker.AppendString(worker.AppendString(b, 2, kind), 3, apiVersion)
	return protowire.AppendVarint(protowire.AppendTag(b, 4, protowire.BytesType), uint64(n))
}

// splitPodFrame splits the body of a pod frame into the ctx, an env message or nil, and the
// pod message without it.
func splitPodFrame(body []byte) (env, pod []byte, err error) {
	num, typ, n := protowire.ConsumeTag(body)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return nil, body, nil
	}
	env, m := protowire.ConsumeBytes(body[n:])
	if m < 0 {
		return nil, nil, worker.ErrMalformed
	}
	if env == nil {
		env = []byte{}
	}
	return env, body[n+m:], nil
}

// decodePod decodes a pod message without its ctx.
func decodePod(data []byte) (*corev1.Pod, error) {
	kind, apiVersion, proto, err := podFields(data)
	if err != nil {
		return nil, err
	}
	pod := new(corev1.Pod)
	if err := pod.Unmarshal(proto); err != nil {
		return nil, err
	}
	pod.Kind, pod.APIVersion = string(kind), string(apiVersion)
	return pod, nil
}

// podFields returns the fields of a pod message without its ctx.
func podFields(data []byte) (kind, apiVersion, proto []byte, err error) {
	err = worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 2:
			kind = f.B
		case 3:
			apiVersion = f.B
		case 4:
			proto = f.B
		default:
			return worker.ErrMalformed
		}
		return nil
	})
	return kind, apiVersion, proto, err
}

// A podEncoder encodes pods for frames, reusing its buffers.
type podEncoder struct {
	head  []byte // the beginning of the pod message (see appendPodHeader)
	proto []byte // the protobuf encoding
	pod   *corev1.Pod
}

// encode encodes pod into e.proto, unless it is the pod encoded last.
func (e *podEncoder) encode(pod *corev1.Pod) error {
	if pod == e.pod && pod != nil {
		return nil
	}
	e.pod = nil
	n := pod.Size()
	if cap(e.proto) < n {
		e.proto = make([]byte, n, n+n/4)
	}
	e.proto = e.proto[:n]
	if _, err := pod.MarshalToSizedBuffer(e.proto); err != nil {
		return err
	}
	e.pod = pod
	return nil
}

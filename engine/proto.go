package engine

// This file defines the protocol between the engine and its worker processes: binary frames
// over the worker's standard input and output, pods in the generated Kubernetes protobuf
// encoding, and the serialisable forms of scripts and errors.
//
// Frames and the handshake that opens the protocol are package sandbox's (see
// sandbox.FrameReader). After the handshake the parent sends requests, one at a time:
//
//	scan:    L(JSON wireSource)                       -> d(JSON wireScan)
//	define:  D(JSON wireScript)                       -> p* d(empty, or JSON wireError)
//	apply:   A(flags key) (P(pod) | S(message))* E    -> (p* (r(pod) | e(JSON wireError)))* p* d
//	         F(flags key) (P(pod) | S(message))* E    -> the same
//
// A scan parses one file, and answers with the modules its load statements name: the parent
// resolves a script's loads file by file with its Loader, but parses nothing itself, so that a
// file that takes much memory to parse (a parse bomb) kills a worker, not the parent, and the
// parent knows which file it was. The worker compiles a defined script and answers done, with
// the compile error if any. In an apply, the worker answers each pod frame (or skip frame, for
// a pod the parent failed to encode) in order, with the resulting pod or the error, and
// answers the end frame with done. It counts the pods it answered in its progress (see
// sandbox.SetProgress), so that the parent of a worker that died knows which pod it died at,
// and writes its answers out in batches, or each at once where the flags say applyCareful
// (see server.apply). In an apply that stops at the first pod that fails (F), the worker
// answers the pods after that one with an error without applying the script to them, so that
// a failed batch costs no more than the pods up to its failure. print() output (p, JSON
// wirePrint) goes back as it happens, each message written out at once with the answers
// before it, so that the parent has it even if a later step kills the worker. The parent
// streams the pods while the worker applies the ones before, and decodes the answers while
// the worker applies the ones after.
//
// A worker keeps the last maxWorkerScripts scripts it was sent, by their last define or
// apply, and forgets older ones; the parent keeps the same account of each worker (a
// sandbox.Cache on either side) and sends a define again before it applies a script the
// worker has forgotten.
//
// The parent reads no frame from a worker larger than answerFrameLimit allows for the result
// size limit of the script at hand: a worker cuts print() output (maxPrintBytes,
// maxPrintTotal) and the texts of errors (maxErrorText) to fit, and answers a result that
// would not fit with a result size error.
//
// A pod frame's body is the ctx (a uvarint length and the encoding of appendEnv; length 0 for
// a nil ctx), the kind and apiVersion (each a uvarint length and the bytes) and the pod's
// protobuf encoding, to the end of the frame. A result frame's body is the same without the
// ctx. The worker decodes a ctx whose bytes equal the previous ctx's only once, and takes the
// metadata, spec or status of a pod whose encoding equals the previous pod's from that pod
// (see podDecoder); Apply does not change them. The parent decodes results in the same way,
// with copies.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/wire"
)

// Bounds of what a worker sends back, so that no script can make the parent hold more than
// a few megabytes at once, whatever it prints or fails with.
const (
	// maxPrintBytes bounds one print() message; a longer one is cut there and ends with a
	// marker saying how many bytes were cut.
	maxPrintBytes = 64 << 10

	// maxPrintTotal bounds the print() output of one compile, of one pod's apply and of one
	// task (which the parent holds until the task ends) that reaches the parent; beyond it
	// the prints are dropped, with one line saying so.
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
const protocolVersion = "starpod-worker/7"

// maxWorkerScripts is how many compiled scripts a worker keeps, with their modules' globals.
// A worker's memory limit covers them all.
const maxWorkerScripts = 16

// applyCareful is the flag of an apply request whose every answer the worker writes out at
// once (see server.apply).
const applyCareful = 1

// The kinds of frames.
const (
	// from the parent
	frameScan    = 'L' // body: JSON wireSource
	frameDefine  = 'D' // body: JSON wireScript
	frameApply   = 'A' // body: the apply flags and the key of a defined script
	frameFirst   = 'F' // body: the apply flags and the key of a defined script; an apply that stops at the first pod that fails
	frameExplain = 'X' // body: the apply flags and the key of a defined script; an apply that stops at the first pod that fails and explains each result
	framePod     = 'P' // body: a ctx and a pod
	frameSkip    = 'S' // body: why the parent could not encode the pod
	frameEnd     = 'E' // empty
	frameTask    = 'T' // body: a wireTask (see wireTask.appendHead), then its request
	// from the worker
	framePrint   = 'p' // body: JSON wirePrint
	frameResult  = 'r' // body: a pod
	frameChanges = 'c' // body: JSON []wireChange, the changes of the result that follows
	frameError   = 'e' // body: JSON wireError
	frameDone    = 'd' // empty, or JSON wireError of a failed compile
	frameAnswer  = 'a' // body: the answer of a task
	frameNote    = 'n' // body: the worker's count of notes at a note of a task (uvarint), then the note
)

// A wireScript is everything a worker needs to compile an overlay: its source, the results of
// every load its Loader served in the parent, and the options that matter inside the worker.
type wireScript struct {
	Key            string        // identifies the script and its options
	Name           string        // the overlay's name
	Src            []byte        // its source
	HasLoader      bool          // whether the parent has a Loader (else load is not enabled)
	Loads          []wireLoad    // what the parent's Loader answered
	MaxSteps       uint64        // Options.MaxSteps
	Timeout        time.Duration // Options.Timeout
	MaxResultBytes int64         // Options.MaxResultBytes
	Print          bool          // whether print() output goes back to the parent
	Validation     Validation    `json:",omitempty"` // Options.Validation
}

// A wireSource is one file for a worker to scan.
type wireSource struct {
	Name string
	Src  []byte
}

// A wireScan is the answer to a scan: the modules that the file's load statements name, in
// order, or why it could not be parsed.
type wireScan struct {
	Loads []string `json:",omitempty"`
	Err   string   `json:",omitempty"`
}

// A wireLoad is one answer of the parent's Loader.
type wireLoad struct {
	From, Module string // the question
	Name         string // the resolved name
	Src          []byte // the module's source
	Err          string // the loader's error, if any
}

type wirePrint struct {
	File      string
	Line, Col int32
	Msg       string
}

// A wireError is an *Error in a form that crosses the process boundary.
type wireError struct {
	Overlay   string
	File      string `json:",omitempty"`
	Line, Col int32  `json:",omitempty"`
	Backtrace string `json:",omitempty"`
	Fields    []wireField
	Msg       string     `json:",omitempty"` // the cause's message
	Limit     *wireLimit `json:",omitempty"`
}

type wireField struct {
	Type     field.ErrorType
	Field    string
	BadValue json.RawMessage `json:",omitempty"`
	Detail   string
	Write    *wireWrite `json:",omitempty"` // Error.Writes of the field
}

// A wireWrite is a Write.
type wireWrite struct {
	File      string `json:",omitempty"`
	Line, Col int32  `json:",omitempty"`
	Backtrace string `json:",omitempty"`
	Input     bool   `json:",omitempty"`
}

type wireLimit struct {
	Limit       Limit
	Value, Path string
	Msg         string `json:",omitempty"` // the interpreter's message, if any
}

// toWire converts an error of Compile or Apply for the parent.
func toWire(err error) *wireError {
	var e *Error
	if !errors.As(err, &e) {
		return &wireError{Msg: err.Error()}
	}
	w := &wireError{Overlay: e.Overlay, Backtrace: e.Backtrace}
	if e.Pos.IsValid() {
		w.File, w.Line, w.Col = e.Pos.Filename(), e.Pos.Line, e.Pos.Col
	}
	for i, fe := range e.Fields {
		wf := wireField{Type: fe.Type, Field: fe.Field, Detail: fe.Detail}
		if i < len(e.Writes) {
			w := e.Writes[i]
			wf.Write = &wireWrite{Backtrace: w.Backtrace, Input: w.Input}
			if w.Pos.IsValid() {
				wf.Write.File, wf.Write.Line, wf.Write.Col = w.Pos.Filename(), w.Pos.Line, w.Pos.Col
			}
		}
		if fe.BadValue != nil {
			if data, err := json.Marshal(fe.BadValue); err == nil {
				wf.BadValue = data
			}
		}
		w.Fields = append(w.Fields, wf)
	}
	var lim *LimitError
	if errors.As(e.Err, &lim) {
		w.Limit = &wireLimit{Limit: lim.Limit, Value: lim.Value, Path: lim.Path}
		if lim.Err != nil {
			w.Limit.Msg = lim.Err.Error()
		}
	} else if e.Err != nil {
		w.Msg = e.Err.Error()
	}
	return w
}

// error turns w back into the *Error it was made from: same fields, same message.
func (w *wireError) error() error {
	e := &Error{Overlay: w.Overlay, Backtrace: w.Backtrace}
	if w.File != "" {
		file := w.File
		e.Pos = syntax.MakePosition(&file, w.Line, w.Col)
	}
	for _, wf := range w.Fields {
		fe := &field.Error{Type: wf.Type, Field: wf.Field, Detail: wf.Detail}
		if len(wf.BadValue) > 0 {
			var v any
			if json.Unmarshal(wf.BadValue, &v) == nil {
				fe.BadValue = v
			}
		}
		e.Fields = append(e.Fields, fe)
		if wf.Write != nil {
			if e.Writes == nil {
				e.Writes = make([]Write, len(w.Fields))
			}
			ww := Write{Backtrace: wf.Write.Backtrace, Input: wf.Write.Input}
			if wf.Write.File != "" {
				file := wf.Write.File
				ww.Pos = syntax.MakePosition(&file, wf.Write.Line, wf.Write.Col)
			}
			e.Writes[len(e.Fields)-1] = ww
		}
	}
	switch {
	case w.Limit != nil:
		lim := &LimitError{Limit: w.Limit.Limit, Value: w.Limit.Value, Path: w.Limit.Path}
		if w.Limit.Msg != "" {
			lim.Err = errors.New(w.Limit.Msg)
		}
		e.Err = lim
	case w.Msg != "":
		e.Err = errors.New(w.Msg)
	}
	return e
}

// EncodeError returns err, an *Error of an apply, as bytes from which [DecodeError] makes the
// *Error that an apply in a worker process reports to its parent: with its position,
// backtrace, field errors and limit, its texts cut as a worker cuts them. A task in a worker
// (see [RegisterTask]) may answer with them, so that its parent need not apply again to learn
// the error.
func EncodeError(err error) ([]byte, error) {
	return toWire(err).encode(1 << 20)
}

// DecodeError returns the *Error that [EncodeError] encoded as data.
func DecodeError(data []byte) (error, error) {
	var we wireError
	if err := json.Unmarshal(data, &we); err != nil {
		return nil, fmt.Errorf("malformed error: %v", err)
	}
	return we.error(), nil
}

// cutText returns s if it is at most max bytes long, and otherwise its first max bytes or
// fewer (up to the start of a UTF-8 sequence) followed by a marker saying how many bytes were
// cut.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... [%d bytes cut]", s[:n], len(s)-n)
}

// encode returns the JSON encoding of w in at most max bytes (max is at least 1 MiB): it cuts
// each text of w to maxErrorText, drops bad values longer than that, and drops the field
// errors that do not fit, with a last one saying how many.
func (w *wireError) encode(max int) ([]byte, error) {
	w.Msg = cutText(w.Msg, maxErrorText)
	w.Backtrace = cutText(w.Backtrace, maxErrorText)
	if w.Limit != nil {
		w.Limit.Msg = cutText(w.Limit.Msg, maxErrorText)
	}
	for i := range w.Fields {
		f := &w.Fields[i]
		f.Field = cutText(f.Field, maxErrorText)
		f.Detail = cutText(f.Detail, maxErrorText)
		if len(f.BadValue) > maxErrorText {
			f.BadValue = nil
		}
		if f.Write != nil {
			f.Write.File = cutText(f.Write.File, maxErrorText)
			f.Write.Backtrace = cutText(f.Write.Backtrace, maxErrorText)
		}
	}
	// Keep the field errors that fit, and room for a last one: its path takes at most 6
	// bytes of JSON a byte (\u00XX).
	fields := w.Fields
	w.Fields = nil
	base, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	size := len(base)
	for i, f := range fields {
		fd, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		if size+len(fd)+1 > max-6*maxErrorText-1<<10 {
			last := wireField{Type: field.ErrorTypeTooMany, Field: f.Field,
				Detail: fmt.Sprintf("and %d more errors, not shown", len(fields)-i)}
			w.Fields = append(fields[:i:i], last)
			return json.Marshal(w)
		}
		size += len(fd) + 1
	}
	w.Fields = fields
	return json.Marshal(w)
}

// appendEnv appends the encoding of a ctx that is not nil: a format byte (1), then the app
// id, role, replica id, number of replicas, scheduler, the args in the order of their keys,
// and the workload (see appendWorkload).
func appendEnv(b []byte, env *Env) []byte {
	return appendWorkload(appendEnvFields(b, env), env.Workload)
}

// appendWorkload appends the encoding of ctx.workload: 0 for None, or 1 and its kind,
// apiVersion, name, namespace and path.
func appendWorkload(b []byte, w *Workload) []byte {
	if w == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	for _, s := range [...]string{w.Kind, w.APIVersion, w.Name, w.Namespace, w.Path} {
		b = wire.AppendString(b, s)
	}
	return b
}

// appendEnvFields appends the encoding of env up to its workload.
func appendEnvFields(b []byte, env *Env) []byte {
	b = append(b, 1)
	b = wire.AppendString(b, env.AppID)
	b = wire.AppendString(b, env.Role)
	b = binary.AppendVarint(b, int64(env.ReplicaID))
	b = binary.AppendVarint(b, int64(env.NumReplicas))
	b = wire.AppendString(b, env.Scheduler)
	b = binary.AppendUvarint(b, uint64(len(env.Args)))
	if len(env.Args) == 1 {
		for k, v := range env.Args {
			b = wire.AppendString(wire.AppendString(b, k), v)
		}
		return b
	}
	for _, k := range slices.Sorted(maps.Keys(env.Args)) {
		b = wire.AppendString(wire.AppendString(b, k), env.Args[k])
	}
	return b
}

// appendPodHeader appends the beginning of the body of a pod frame, before the pod's protobuf
// encoding: the encoding of env (see appendEnv) with its length, and the pod's kind and
// apiVersion.
func appendPodHeader(b []byte, env []byte, kind, apiVersion string) []byte {
	b = binary.AppendUvarint(b, uint64(len(env)))
	b = append(b, env...)
	return appendKind(b, kind, apiVersion)
}

// appendKind appends the beginning of the body of a result frame, before the pod's protobuf
// encoding: its kind and apiVersion.
func appendKind(b []byte, kind, apiVersion string) []byte {
	return wire.AppendString(wire.AppendString(b, kind), apiVersion)
}

// decodeEnv decodes a ctx encoded by appendEnv; empty data is a nil ctx.
func decodeEnv(data []byte) (*Env, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[0] != 1 {
		return nil, fmt.Errorf("ctx of format %d, want 1", data[0])
	}
	d := &wire.Decoder{B: data[1:]}
	env := &Env{AppID: d.String(), Role: d.String(), ReplicaID: int(d.Varint()), NumReplicas: int(d.Varint()), Scheduler: d.String()}
	if n := d.Count(); n > 0 {
		env.Args = make(map[string]string, n)
		for range n {
			k := d.String()
			env.Args[k] = d.String()
		}
	}
	switch w := d.Byte(); {
	case d.Err != nil:
	case w == 1:
		env.Workload = &Workload{Kind: d.String(), APIVersion: d.String(), Name: d.String(), Namespace: d.String(), Path: d.String()}
	case w != 0:
		d.Fail()
	}
	if err := d.End(); err != nil {
		return nil, fmt.Errorf("ctx: %v", err)
	}
	return env, nil
}

// decodePod decodes a pod: the kind and apiVersion, and the protobuf encoding in the rest of data.
func decodePod(data []byte) (*corev1.Pod, error) {
	d := &wire.Decoder{B: data}
	kind, apiVersion := d.Bytes(), d.Bytes()
	if d.Err != nil {
		return nil, d.Err
	}
	pod := new(corev1.Pod)
	if err := pod.Unmarshal(d.B); err != nil {
		return nil, err
	}
	pod.Kind, pod.APIVersion = string(kind), string(apiVersion)
	return pod, nil
}

// A podEncoder encodes pods for frames, reusing its buffers.
type podEncoder struct {
	head  []byte // the kind and apiVersion, and a pod frame's ctx
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

// A wireChange is a Change.
type wireChange struct {
	Overlay, Path string
	Old, New      json.RawMessage `json:",omitempty"`
	File          string          `json:",omitempty"`
	Line, Col     int32           `json:",omitempty"`
}

// toWireChanges converts changes for the parent.
func toWireChanges(changes []Change) ([]byte, error) {
	wc := make([]wireChange, len(changes))
	for i, c := range changes {
		w := wireChange{Overlay: c.Overlay, Path: c.Path}
		var err error
		if c.Old != nil {
			if w.Old, err = json.Marshal(c.Old); err != nil {
				return nil, err
			}
		}
		if c.New != nil {
			if w.New, err = json.Marshal(c.New); err != nil {
				return nil, err
			}
		}
		if c.Pos.IsValid() {
			w.File, w.Line, w.Col = c.Pos.Filename(), c.Pos.Line, c.Pos.Col
		}
		wc[i] = w
	}
	return json.Marshal(wc)
}

// fromWireChanges turns wc back into the changes it was made from, with numbers as int64 or
// float64 as the engine gives them.
func fromWireChanges(wc []wireChange) []Change {
	changes := make([]Change, len(wc))
	for i, w := range wc {
		c := Change{Overlay: w.Overlay, Path: w.Path, Old: jsonValue(w.Old), New: jsonValue(w.New)}
		if w.File != "" {
			file := w.File
			c.Pos = syntax.MakePosition(&file, w.Line, w.Col)
		}
		changes[i] = c
	}
	return changes
}

// jsonValue decodes a value of a wireChange, nil for none.
func jsonValue(data json.RawMessage) any {
	if len(data) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return numbers(v)
}

// numbers replaces the json.Numbers of v by int64 or float64.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, x := range v {
			v[k] = numbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = numbers(x)
		}
	}
	return v
}

package engine

// This file defines the protocol between the engine and its worker processes: binary frames
// over the worker's standard input and output, pods in the generated Kubernetes protobuf
// encoding, and the serialisable forms of scripts and errors.
//
// A frame is a 4-byte big-endian length n, a kind byte and a body of n bytes. The parent opens
// with a hello frame naming the protocol version, and a worker that speaks another version
// exits with an error saying so. Then it sends requests, one at a time:
//
//	define:  D(JSON wireScript)                       -> p* d(empty, or JSON wireError)
//	apply:   A(script key) (P(pod) | S(message))* E   -> (p* (r(pod) | e(JSON wireError)))* p* d
//
// The worker compiles a defined script and answers done, with the compile error if any. In an
// apply, the worker answers each pod frame (or skip frame, for a pod the parent failed to
// encode) in order as soon as it is done, with the resulting pod or the error, and answers the
// end frame with done; print() output (p, JSON wirePrint) goes back as it happens. The parent
// streams the pods while the worker applies the ones before, and decodes the answers while the
// worker applies the ones after.
//
// A pod frame's body is the ctx (a uvarint length and the encoding of appendEnv; length 0 for
// a nil ctx), the kind and apiVersion (each a uvarint length and the bytes) and the pod's
// protobuf encoding, to the end of the frame. A result frame's body is the same without the
// ctx. The worker decodes a pod or a ctx whose bytes equal the previous pod's or ctx's only
// once; Apply does not change them.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxFrame bounds the body of one frame of the protocol, in either direction.
const maxFrame = 1 << 30

// protocolVersion names the protocol. A worker refuses a parent that speaks another, such as
// one of another build of starpod.
const protocolVersion = "starpod-worker/2"

// The kinds of frames.
const (
	// from the parent
	frameHello  = 'H' // body: protocolVersion
	frameDefine = 'D' // body: JSON wireScript
	frameApply  = 'A' // body: the key of a defined script
	framePod    = 'P' // body: a ctx and a pod
	frameSkip   = 'S' // body: why the parent could not encode the pod
	frameEnd    = 'E' // empty
	// from the worker
	framePrint  = 'p' // body: JSON wirePrint
	frameResult = 'r' // body: a pod
	frameError  = 'e' // body: JSON wireError
	frameDone   = 'd' // empty, or JSON wireError of a failed compile
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
}

type wireLimit struct {
	Limit, Value, Path string
	Msg                string `json:",omitempty"` // the interpreter's message, if any
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
	for _, fe := range e.Fields {
		wf := wireField{Type: fe.Type, Field: fe.Field, Detail: fe.Detail}
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

// writeFrame writes one frame whose body is body to w, without flushing it.
func writeFrame(w *bufio.Writer, kind byte, body ...[]byte) error {
	n := 0
	for _, b := range body {
		n += len(b)
	}
	if n > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the limit of %d", n, maxFrame)
	}
	var h [5]byte
	binary.BigEndian.PutUint32(h[:], uint32(n))
	h[4] = kind
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	for _, b := range body {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// writeJSONFrame writes one frame whose body is the JSON encoding of v to w, without flushing it.
func writeJSONFrame(w *bufio.Writer, kind byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(w, kind, data)
}

// A frameReader reads frames.
type frameReader struct {
	r   *bufio.Reader
	buf []byte // the body of a frame larger than r's buffer
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next reads the next frame. Its body is valid until the next call. At the end of the input
// between frames it returns io.EOF, and within a frame io.ErrUnexpectedEOF.
func (fr *frameReader) next() (kind byte, body []byte, err error) {
	h, err := fr.r.Peek(5)
	if err != nil {
		if err == io.EOF && len(h) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h)
	kind = h[4]
	fr.r.Discard(5)
	if n > maxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the limit of %d", n, maxFrame)
	}
	if int(n) <= fr.r.Size() {
		// The body stays in the reader's buffer, without a copy.
		body, err = fr.r.Peek(int(n))
		if err == nil {
			fr.r.Discard(int(n))
		}
	} else {
		// The buffer grows as the body comes, not at once to the length a broken peer
		// announces.
		b := bytes.NewBuffer(fr.buf[:0])
		_, err = io.CopyN(b, fr.r, int64(n))
		fr.buf = b.Bytes()
		body = fr.buf
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return kind, body, nil
}

// appendString appends s with its length as a uvarint.
func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendEnv appends the encoding of a ctx that is not nil: a format byte (1), then the app
// id, role, replica id, number of replicas, scheduler and the args in the order of their keys.
func appendEnv(b []byte, env *Env) []byte {
	b = append(b, 1)
	b = appendString(b, env.AppID)
	b = appendString(b, env.Role)
	b = binary.AppendVarint(b, int64(env.ReplicaID))
	b = binary.AppendVarint(b, int64(env.NumReplicas))
	b = appendString(b, env.Scheduler)
	b = binary.AppendUvarint(b, uint64(len(env.Args)))
	if len(env.Args) == 1 {
		for k, v := range env.Args {
			b = appendString(appendString(b, k), v)
		}
		return b
	}
	for _, k := range slices.Sorted(maps.Keys(env.Args)) {
		b = appendString(appendString(b, k), env.Args[k])
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
	return appendString(appendString(b, kind), apiVersion)
}

// errMalformed is the error of a frame whose body does not parse.
var errMalformed = errors.New("malformed frame")

// A decoder reads the fields of a frame's body. After the first error it reads nothing.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	d.err, d.b = errMalformed, nil
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes returns the next field, a uvarint length and bytes, which alias the body.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	return string(d.bytes())
}

// decodeEnv decodes a ctx encoded by appendEnv; empty data is a nil ctx.
func decodeEnv(data []byte) (*Env, error) {
	if len(data) == 0 {
		return nil, nil
	}
	if data[0] != 1 {
		return nil, fmt.Errorf("ctx of format %d, want 1", data[0])
	}
	d := &decoder{b: data[1:]}
	env := &Env{AppID: d.string(), Role: d.string(), ReplicaID: int(d.varint()), NumReplicas: int(d.varint()), Scheduler: d.string()}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
	}
	if d.err == nil && n > 0 {
		env.Args = make(map[string]string, n)
		for range n {
			k := d.string()
			env.Args[k] = d.string()
		}
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail()
	}
	if d.err != nil {
		return nil, fmt.Errorf("ctx: %v", d.err)
	}
	return env, nil
}

// decodePod decodes a pod: the kind and apiVersion, and the protobuf encoding in the rest of data.
func decodePod(data []byte) (*corev1.Pod, error) {
	d := &decoder{b: data}
	kind, apiVersion := d.bytes(), d.bytes()
	if d.err != nil {
		return nil, d.err
	}
	pod := new(corev1.Pod)
	if err := pod.Unmarshal(d.b); err != nil {
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

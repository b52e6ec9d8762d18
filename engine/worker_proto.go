package engine

// This file defines the protocol between the engine and its worker processes: length-prefixed
// JSON frames over the worker's standard input and output, and the serialisable forms of
// scripts and errors.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxFrame bounds one frame of the protocol, in either direction.
const maxFrame = 1 << 30

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

// A wireRequest asks a worker to compile a script (Define) and, when Pods is not empty, to
// apply the script named Key to each pod, with the ctx Envs[i] for Pods[i] when Envs is set
// and Env for every pod otherwise.
type wireRequest struct {
	Define *wireScript `json:",omitempty"`
	Key    string      `json:",omitempty"`
	Pods   []wirePod   `json:",omitempty"`
	Env    *Env        `json:",omitempty"`
	Envs   []*Env      `json:",omitempty"`
}

// A wireResponse is one line of print() output (Print set), the answer for one pod (Result
// set; the worker sends one for each pod of the request, in order, as soon as it has it), or
// the final answer (Done set), with the compile error if there is one.
type wireResponse struct {
	Print  *wirePrint  `json:",omitempty"`
	Result *wireResult `json:",omitempty"`
	Err    *wireError  `json:",omitempty"` // a compile error
	Done   bool        `json:",omitempty"`
}

type wirePrint struct {
	File      string
	Line, Col int32
	Msg       string
}

type wireResult struct {
	Pod *wirePod   `json:",omitempty"`
	Err *wireError `json:",omitempty"`
}

// A wirePod is a pod in the generated Kubernetes protobuf encoding, several times faster
// than JSON both ways, with the kind and apiVersion that the encoding leaves to its envelope.
type wirePod struct {
	Kind, APIVersion string
	Proto            []byte
}

// podToWire encodes pod for the other process.
func podToWire(pod *corev1.Pod) (wirePod, error) {
	data, err := pod.Marshal()
	return wirePod{Kind: pod.Kind, APIVersion: pod.APIVersion, Proto: data}, err
}

// pod decodes a pod the other process sent.
func (w *wirePod) pod() (*corev1.Pod, error) {
	pod := new(corev1.Pod)
	if err := pod.Unmarshal(w.Proto); err != nil {
		return nil, err
	}
	pod.Kind, pod.APIVersion = w.Kind, w.APIVersion
	return pod, nil
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

// writeFrame writes v as one frame, a 4-byte big-endian length and JSON, and flushes w.
func writeFrame(w *bufio.Writer, v any) error {
	if err := bufferFrame(w, v); err != nil {
		return err
	}
	return w.Flush()
}

// bufferFrame writes v as one frame to w without flushing it.
func bufferFrame(w *bufio.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the limit of %d", len(data), maxFrame)
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// readFrame reads one frame into v.
func readFrame(r *bufio.Reader, v any) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the limit of %d", size, maxFrame)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return json.Unmarshal(data, v)
}

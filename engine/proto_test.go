package engine

// This file tests the protocol of worker processes in process: frames, the encodings of ctx
// and pods, and a worker's answers to requests it cannot serve. It also defines the broken
// workers of TestWorkerBroken (worker_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/sandbox"
	"github.com/starpod/starpod/internal/worker"
)

func TestEnvEncoding(t *testing.T) {
	for _, env := range []*Env{
		nil,
		{},
		{AppID: "app", Role: "trainer", ReplicaID: 3, NumReplicas: -1, Scheduler: "kubernetes"},
		{ReplicaID: 1 << 40, Args: map[string]string{"k": "v"}},
		{Args: map[string]string{"b": "2", "a": "1", "": "", "c": strings.Repeat("é", 300)}},
		{Workload: &Workload{}},
		{Args: map[string]string{"k": "v"}, Workload: &Workload{Kind: "CronJob", APIVersion: "batch/v1", Name: "n",
			Namespace: "ns", Path: "spec.jobTemplate.spec.template"}},
	} {
		if env == nil {
			continue // a pod frame without a ctx
		}
		data := appendEnv(nil, env)
		if again := appendEnv(nil, env); !bytes.Equal(data, again) {
			t.Errorf("%+v: two encodings differ", env)
		}
		got, err := decodeEnv(data)
		if err != nil {
			t.Errorf("%+v: %v", env, err)
			continue
		}
		want := *env
		if len(want.Args) == 0 {
			want.Args = nil
		}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		// A cut is an error or a ctx with fewer fields, never a panic.
		for n := 1; n < len(data); n++ {
			decodeEnv(data[:n])
		}
	}
	if _, err := decodeEnv([]byte{0xff}); err == nil {
		t.Errorf("a malformed ctx: got no error")
	}
}

func TestPodEncoding(t *testing.T) {
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	var e podEncoder
	if err := e.encode(pod); err != nil {
		t.Fatal(err)
	}
	data := append(appendKind(nil, pod.Kind, pod.APIVersion, len(e.proto)), e.proto...)
	got, err := decodePod(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pod, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// The encoder keeps the encoding of the pod it encoded last.
	proto := e.proto
	if err := e.encode(pod); err != nil || &e.proto[0] != &proto[0] {
		t.Errorf("encoding the same pod again: got %v and a new encoding, want the same one", err)
	}
	// A cut in the pod's encoding is an error; a cut before may leave a pod of fewer
	// fields; none is a panic.
	head := len(data) - len(e.proto)
	for n := 1; n < len(data); n++ {
		if _, err := decodePod(data[:n]); err == nil && n >= head {
			t.Errorf("cut at %d of %d bytes: got no error", n, len(data))
		}
	}
	if _, err := decodePod(append(appendKind(nil, pod.Kind, pod.APIVersion, 2), 0xff, 0xff)); err == nil {
		t.Errorf("a malformed protobuf encoding: got no error")
	}
}

// serveFrames serves the frames of in and returns what serve returned and wrote.
func serveFrames(t *testing.T, in []byte) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	_, err := serveTest(in, &out, false)
	return out.Bytes(), err
}

// serveTest serves in, which begins with the parent's hello, on out with a server whose
// progress count its parent reads if counted, and returns the server and its error.
func serveTest(in []byte, out io.Writer, counted bool) (*server, error) {
	var s *server
	p := &worker.Protocol{Name: protocolVersion, Handlers: func(c *worker.Conn) map[byte]worker.Handler {
		s = newServer(c)
		s.counted = counted
		return s.handlers()
	}}
	err := worker.ServeOn(bytes.NewReader(in), out, p)
	return s, err
}

// scriptFrame returns the body of the define of d, and the script's key.
func scriptFrame(d *wireScript) (body, key string) {
	data := d.encode()
	sum := sha256.Sum256(data)
	return string(data), hex.EncodeToString(sum[:])
}

// podFrame returns the body of a pod frame of pod, with env if it is not nil.
func podFrame(t *testing.T, pod *corev1.Pod, env *Env) string {
	t.Helper()
	var e podEncoder
	if err := e.encode(pod); err != nil {
		t.Fatal(err)
	}
	var envData []byte
	if env != nil {
		envData = appendEnv(nil, env)
	}
	return string(append(appendPodHeader(nil, envData, "Pod", "v1", len(e.proto)), e.proto...))
}

// applyFrame returns the body of an apply of the script key.
func applyFrame(key string, careful bool) string { return string(appendApply(nil, key, careful, 0)) }

// frames returns the encoding of frames of the given kinds and bodies.
func frames(kindsAndBodies ...any) []byte {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	for i := 0; i < len(kindsAndBodies); i += 2 {
		sandbox.WriteFrame(w, kindsAndBodies[i].(byte), []byte(kindsAndBodies[i+1].(string)))
	}
	w.Flush()
	return buf.Bytes()
}

// A frameRead is a frame of a worker's answers.
type frameRead struct {
	kind byte
	body []byte
}

// readFrames returns the frames of out, a worker's answers, each up to max bytes (0: the
// parent's limit for the default result size).
func readFrames(t *testing.T, out []byte, max int) []frameRead {
	t.Helper()
	r := sandbox.NewFrameReader(bytes.NewReader(out))
	r.Max = answerFrameLimit(0)
	if max > 0 {
		r.Max = max
	}
	var fs []frameRead
	for {
		kind, body, err := r.Next()
		if err == io.EOF {
			return fs
		} else if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, frameRead{kind, bytes.Clone(body)}) // the reader reuses its buffer
	}
}

// TestServeRefuses checks that a worker stops with a clear error on input it cannot serve.
func TestServeRefuses(t *testing.T) {
	hello := frames(byte(sandbox.FrameHello), protocolVersion)
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"other version", frames(byte(sandbox.FrameHello), "starpod-worker/1"), `got protocol "starpod-worker/1", want "` + protocolVersion + `"`},
		{"no hello", frames(byte(frameDefine), "{}"), `got a frame of kind 'D', want the hello of protocol "` + protocolVersion + `"`},
		{"JSON frame", append(binary.BigEndian.AppendUint32(nil, 100), `{"Key":`...), `got a frame of kind '{', want the hello`},
		{"cut hello", []byte{0, 0}, `unexpected EOF`},
		{"unknown request", slices.Concat(hello, frames(byte('Z'), "")), `got a frame of kind 'Z', want a request`},
		{"bad script", slices.Concat(hello, frames(byte(frameDefine), "\xff")), `decoding a script: malformed message`},
		{"unknown script", slices.Concat(hello, frames(byte(frameApply), applyFrame("k", false))), `apply of unknown script k`},
		{"bad apply", slices.Concat(hello, frames(byte(frameApply), "\xff")), `decoding an apply: malformed message`},
		{"cut request", slices.Concat(hello, []byte{0, 0}), `unexpected EOF`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := serveFrames(t, c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	ready := frames(byte(sandbox.FrameReady), protocolVersion)
	if out, err := serveFrames(t, hello); err != nil || !bytes.Equal(out, ready) {
		t.Errorf("hello alone: got %q and %v, want the worker's hello %q alone", out, err, ready)
	}
}

// TestServeApply drives a worker in process: a define, and an apply whose pod frames are
// malformed, cut or unexpected.
func TestServeApply(t *testing.T) {
	script, key := scriptFrame(&wireScript{Name: "o.star", Src: []byte("def overlay(pod): pass\n")})
	good := podFrame(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, &Env{Role: "r"})
	start := frames(byte(sandbox.FrameHello), protocolVersion, byte(frameDefine), script, byte(frameApply), applyFrame(key, false))
	out, err := serveFrames(t, slices.Concat(start, frames(byte(framePod), good, byte(framePod), good, byte(frameSkip), "no", byte(frameEnd), "")))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []byte
	for _, f := range readFrames(t, out, 0) {
		kinds = append(kinds, f.kind)
		switch body := f.body; f.kind {
		case frameResult:
			got, err := decodePod(body)
			if err != nil || got.Name != "p" || got.Kind != "Pod" {
				t.Errorf("got %v, %v, want pod p", got, err)
			}
		case frameError:
			if e, err := decodeError(body); err != nil || !strings.Contains(e.Error(), "converting the input pod: no") {
				t.Errorf("got error %v (%v), want the parent's", e, err)
			}
		}
	}
	if got, want := string(kinds), "hdrred"; got != want {
		t.Errorf("got answers %q, want %q", got, want)
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"a field not a pod's", "\x08\x01", "decoding a pod: malformed message"},
		{"bad ctx", "\x0a\x01\xff", "decoding a pod: ctx: malformed message"},
		{"cut kind", "\x12\x05Po", "decoding a pod: malformed message"},
		{"bad protobuf", string(appendKind(nil, "Pod", "v1", 2)) + "\xff\xff", "decoding a pod: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := serveFrames(t, slices.Concat(start, frames(byte(framePod), c.body)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := serveFrames(t, slices.Concat(start, frames(byte(frameDefine), script))); err == nil || !strings.Contains(err.Error(), "want a pod") {
		t.Errorf("a define within an apply: got %v, want an error", err)
	}
	if _, err := serveFrames(t, slices.Concat(start, frames(byte(framePod), good))); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("an apply without its end: got %v, want io.ErrUnexpectedEOF", err)
	}
}

// ServeBrokenWorker serves as a worker that breaks the protocol in the way mode says, for
// TestWorkerBroken and TestWorkerHangs, and returns the exit code. Mode "nostart" exits
// before the worker's hello, as a worker whose memory limit is too small to start does;
// "hang" and "hangapply" never answer a define or a pod. With pidFile set, it first writes
// its process id there.
func ServeBrokenWorker(mode, pidFile string) int {
	if pidFile != "" {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o666); err != nil {
			return 4
		}
	}
	if mode == "nostart" {
		// The runtime's crash report, as a worker out of memory as it starts writes it.
		os.NewFile(3, "crash report").WriteString("fatal error: runtime: out of memory\n\nruntime stack:\n")
		os.Stderr.WriteString("fatal error: runtime: out of memory\n\nruntime stack:\n")
		return 2
	}
	in := sandbox.NewFrameReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	sandbox.WriteFrame(out, sandbox.FrameReady, []byte(protocolVersion))
	out.Flush()
	for {
		kind, _, err := in.Next()
		if err != nil {
			return 0
		}
		switch {
		case mode == "hang" && kind == frameDefine, mode == "hangapply" && kind == framePod:
			for { // until the parent kills the process
				time.Sleep(time.Hour)
			}
		case mode == "garbage":
			out.WriteString("this is not a frame")
		case mode == "cut":
			out.Write([]byte{0, 0, 0, 100, frameDone, 1, 2, 3})
			out.Flush()
			return 3
		case mode == "kind" && kind != sandbox.FrameHello:
			sandbox.WriteFrame(out, 'z')
		case mode == "extra" && kind == frameEnd:
			sandbox.WriteFrame(out, frameError, appendError(nil, errors.New("x"), 1<<20))
			sandbox.WriteFrame(out, frameDone)
		case kind == frameDefine || kind == frameEnd:
			sandbox.WriteFrame(out, frameDone)
		case mode == "pods" && kind == framePod:
			sandbox.WriteFrame(out, frameResult, appendKind(nil, "Pod", "v1", 2), []byte{0xff, 0xff})
		case mode == "extra" && kind == framePod:
			sandbox.WriteFrame(out, frameError, appendError(nil, &Error{Overlay: "broken.star", Err: errors.New("x")}, 1<<20))
		}
		out.Flush()
	}
}

// TestServeForgetsScripts checks that a worker given many scripts keeps only the
// maxWorkerScripts it was sent last, and no longer applies the others.
func TestServeForgetsScripts(t *testing.T) {
	in := frames(byte(sandbox.FrameHello), protocolVersion)
	const n = 3 * maxWorkerScripts
	keys := make([]string, n)
	for i := range n {
		var script string
		script, keys[i] = scriptFrame(&wireScript{Name: "o.star", HasLoader: true,
			Src:   []byte("load(\"big.star\", \"big\")\ndef overlay(pod):\n    pass\n# " + strconv.Itoa(i) + "\n"),
			Loads: []wireLoad{{From: "o.star", Module: "big.star", Name: "big.star", Src: []byte("big = \"x\" * (1 << 20)\n")}}})
		in = append(in, frames(byte(frameDefine), script)...)
	}
	s, err := serveTest(slices.Concat(in, frames(byte(frameApply), applyFrame(keys[n-1], false), byte(frameEnd), "")), io.Discard, false)
	if err != nil {
		t.Fatal(err)
	}
	if s.scripts.Len() != maxWorkerScripts {
		t.Errorf("the worker holds %d scripts, want %d", s.scripts.Len(), maxWorkerScripts)
	}
	forgotten := keys[n-maxWorkerScripts-1]
	_, err = serveFrames(t, slices.Concat(in, frames(byte(frameApply), applyFrame(forgotten, false))))
	if want := "apply of unknown script " + forgotten; err == nil || err.Error() != want {
		t.Errorf("apply of a forgotten script: got %v, want %q", err, want)
	}
}

// TestServeBoundsAnswers checks that what a worker sends back stays within the frame limit of
// the parent however much a script prints or fails with: each print() message is cut to
// maxPrintBytes, the output of a pod's apply stops after maxPrintTotal with one notice, and
// the texts of an error are cut to maxErrorText.
func TestServeBoundsAnswers(t *testing.T) {
	src := "def overlay(pod):\n    s = \"é\" * (1 << 19)\n    for i in range(100):\n        print(s)\n    fail(s)\n"
	script, key := scriptFrame(&wireScript{Name: "o.star", Src: []byte(src), Print: true, Timeout: time.Minute})
	pod := podFrame(t, &corev1.Pod{}, nil)
	out, err := serveFrames(t, slices.Concat(frames(byte(sandbox.FrameHello), protocolVersion, byte(frameDefine), script, byte(frameApply), applyFrame(key, false)),
		frames(byte(framePod), pod, byte(framePod), pod, byte(frameEnd), "")))
	if err != nil {
		t.Fatal(err)
	}
	printed, notices, errs := 0, 0, 0
	for _, f := range readFrames(t, out, 0) {
		switch body := f.body; f.kind {
		case framePrint:
			_, msg, err := decodePrint(body)
			if err != nil {
				t.Fatal(err)
			}
			if msg == "[print output passed 1048576 bytes; the rest is dropped]" {
				notices++
				continue
			}
			if len(msg) > maxPrintBytes+30 || !strings.HasSuffix(msg, " bytes cut]") || !utf8.ValidString(msg) {
				t.Errorf("got a message of %d bytes ending %q, want at most %d and a marker", len(msg), msg[max(0, len(msg)-30):], maxPrintBytes)
			}
			printed += len(msg)
		case frameError:
			errs++
			e, err := decodeError(body)
			if err != nil {
				t.Fatal(err)
			}
			if msg := e.Err.Error(); len(msg) > maxErrorText+100 || !strings.HasSuffix(msg, " bytes cut]") {
				t.Errorf("got an error of %d bytes ending %q, want at most %d and a marker", len(msg), msg[max(0, len(msg)-30):], maxErrorText)
			}
		}
	}
	if bound := 2 * (maxPrintTotal + 30*(maxPrintTotal/maxPrintBytes+1)); printed > bound || notices != 2 || errs != 2 {
		t.Errorf("got %d bytes of print() output, %d notices and %d errors, want at most %d bytes, 2 notices and 2 errors", printed, notices, errs, bound)
	}
}

// TestErrorEncode checks that an error of many fields and long texts encodes within the
// limit, with the texts cut and the fields that do not fit replaced by one saying how many,
// and that a small one crosses whole.
func TestErrorEncode(t *testing.T) {
	long := strings.Repeat("<", 1<<20)
	e := &Error{Overlay: "o.star", Backtrace: long, Err: &LimitError{Limit: LimitSteps, Err: errors.New(long)}}
	for i := range 1000 {
		e.Fields = append(e.Fields, &field.Error{Type: field.ErrorTypeInvalid, Field: "spec.f" + strconv.Itoa(i), Detail: long, BadValue: long})
		e.Writes = append(e.Writes, Write{Backtrace: long, Input: true})
	}
	const max = 1 << 20
	data := appendError(nil, e, max)
	if len(data) > max {
		t.Errorf("encoded in %d bytes, want at most %d", len(data), max)
	}
	got, err := decodeError(data)
	if err != nil {
		t.Fatal(err)
	}
	last := got.Fields[len(got.Fields)-1]
	if n := len(got.Fields); n < 2 || last.Detail != fmt.Sprintf("and %d more errors, not shown", 1000-(n-1)) || last.Field != "spec.f"+strconv.Itoa(n-1) {
		t.Errorf("got %d fields, the last %+v, want the fields that fit and one saying how many more", n, last)
	}
	for i, f := range got.Fields[:len(got.Fields)-1] {
		if f.BadValue != nil || len(f.Detail) > maxErrorText+30 || len(got.Writes[i].Backtrace) > maxErrorText+30 {
			t.Errorf("field %s: a bad value %v and %d bytes of detail, want none and at most %d", f.Field, f.BadValue != nil, len(f.Detail), maxErrorText)
		}
	}
	var lim *LimitError
	if !errors.As(got.Err, &lim) || len(got.Backtrace) > maxErrorText+30 || len(lim.Err.Error()) > maxErrorText+30 {
		t.Errorf("got %T, a backtrace of %d bytes, want a *LimitError and at most %d", got.Err, len(got.Backtrace), maxErrorText)
	}

	file := "o.star"
	small := &Error{Overlay: "o.star", Pos: syntax.MakePosition(&file, 3, 5), Backtrace: "Traceback",
		Fields: field.ErrorList{field.Invalid(field.NewPath("spec", "x"), int64(1), "bad"), field.Required(field.NewPath("spec", "y"), "")},
		Writes: []Write{{Pos: syntax.MakePosition(&file, 4, 1)}, {Input: true}},
		Err:    &LimitError{Limit: LimitTime, Value: "2s", Path: "spec", Err: errors.New("cancelled")}}
	if got, err := decodeError(appendError(nil, small, max)); err != nil || got.Error() != small.Error() {
		t.Errorf("round trip: got %v (%v), want %v", got, err, small)
	}
}

// TestDeadlineEncode checks that an apply carries the time left to its caller's deadline, a
// deadline already passed as the least time left, and that a *DeadlineError crosses with its
// type and text.
func TestDeadlineEncode(t *testing.T) {
	for _, left := range []time.Duration{0, 1, 250 * time.Millisecond} {
		key, careful, got, err := decodeApply(appendApply(nil, "k", true, left))
		if err != nil || key != "k" || !careful || got != left {
			t.Errorf("apply with %v left: got %q, %v, %v (%v)", left, key, careful, got, err)
		}
	}
	file := "o.star"
	for _, after := range []time.Duration{0, 250 * time.Millisecond} {
		e := &Error{Overlay: "o.star", Pos: syntax.MakePosition(&file, 3, 9), Backtrace: "Traceback", Err: &DeadlineError{After: after}}
		got, err := decodeError(appendError(nil, e, 1<<20))
		var dl *DeadlineError
		if err != nil || got.Error() != e.Error() || !errors.As(got, &dl) || dl.After != after || !errors.Is(got, context.DeadlineExceeded) {
			t.Errorf("round trip: got %v (%v), want %v, a *DeadlineError", got, err, e)
		}
	}
}

// TestServeApplyFirst checks that an apply that stops at the first pod that fails answers
// the pods after it without applying the script, and that a plain apply applies them all.
func TestServeApplyFirst(t *testing.T) {
	src := "def overlay(pod):\n    print(pod[\"metadata\"][\"name\"])\n    if pod[\"metadata\"][\"name\"] == \"bad\":\n        fail(\"bad pod\")\n"
	script, key := scriptFrame(&wireScript{Name: "o.star", Src: []byte(src), Print: true})
	encode := func(name string) string {
		return podFrame(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil)
	}
	for _, test := range []struct {
		apply byte
		want  string // the kinds of the answers
		notes []string
	}{
		{frameFirst, "hdprpeed", []string{"bad pod", "not applied: an earlier pod of the batch failed"}},
		{frameApply, "hdprpeprd", []string{"bad pod"}},
	} {
		in := slices.Concat(frames(byte(sandbox.FrameHello), protocolVersion, byte(frameDefine), script, test.apply, applyFrame(key, false)),
			frames(byte(framePod), encode("good"), byte(framePod), encode("bad"), byte(framePod), encode("late"), byte(frameEnd), ""))
		out, err := serveFrames(t, in)
		if err != nil {
			t.Fatal(err)
		}
		var kinds []byte
		var notes []string
		for _, f := range readFrames(t, out, 0) {
			kinds = append(kinds, f.kind)
			if f.kind == frameError {
				e, err := decodeError(f.body)
				if err != nil {
					t.Fatal(err)
				}
				notes = append(notes, e.Error())
			}
		}
		if string(kinds) != test.want {
			t.Errorf("apply %c: got answers %q, want %q", test.apply, kinds, test.want)
		}
		if len(notes) != len(test.notes) {
			t.Fatalf("apply %c: got errors %q, want %q", test.apply, notes, test.notes)
		}
		for i, note := range test.notes {
			if !strings.Contains(notes[i], note) {
				t.Errorf("apply %c: error %d is %q, want it to contain %q", test.apply, i, notes[i], note)
			}
		}
	}
}

// countingWriter counts the writes to it.
type countingWriter struct{ writes int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return len(p), nil
}

// TestServeApplyWrites checks when a worker writes its answers out: the first at once and the
// others together, where its parent reads its progress count; each at once where it does not,
// or where the request asks it to (careful, as a request that tries pods again after a death
// does).
func TestServeApplyWrites(t *testing.T) {
	script, key := scriptFrame(&wireScript{Name: "o.star", Src: []byte("def overlay(pod): pass\n")})
	pod := podFrame(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, nil)
	for _, test := range []struct {
		counted bool
		careful bool
		want    int // writes: the ready frame, the define's done, the answers, the apply's done
	}{
		{true, false, 1 + 1 + 1 + 1},
		{true, true, 1 + 1 + 5 + 1},
		{false, false, 1 + 1 + 5 + 1},
	} {
		in := frames(byte(sandbox.FrameHello), protocolVersion, byte(frameDefine), script, byte(frameApply), applyFrame(key, test.careful))
		for range 5 {
			in = append(in, frames(byte(framePod), pod)...)
		}
		in = append(in, frames(byte(frameEnd), "")...)
		var w countingWriter
		s, err := serveTest(in, &w, test.counted)
		if err != nil {
			t.Fatal(err)
		}
		if w.writes != test.want || s.answered != 5 {
			t.Errorf("counted %v, careful %v: %d writes and %d pods counted, want %d writes and 5 pods", test.counted, test.careful, w.writes, s.answered, test.want)
		}
	}
}

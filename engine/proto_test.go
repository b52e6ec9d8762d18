package engine

// This file tests the protocol of worker processes in process: frames, the encodings of ctx
// and pods, and a worker's answers to requests it cannot serve. It also defines the broken
// workers of TestWorkerBroken (worker_test.go).

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/sandbox"
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
		var data []byte
		if env != nil {
			data = appendEnv(nil, env)
			if again := appendEnv(nil, env); !bytes.Equal(data, again) {
				t.Errorf("%+v: two encodings differ", env)
			}
		}
		got, err := decodeEnv(data)
		if err != nil {
			t.Errorf("%+v: %v", env, err)
			continue
		}
		if diff := cmp.Diff(env, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
		// Every cut and every extra byte is an error, never a panic.
		for n := 1; n < len(data); n++ {
			if _, err := decodeEnv(data[:n]); err == nil {
				t.Errorf("%+v cut at %d of %d bytes: got no error", env, n, len(data))
			}
		}
		if env != nil {
			if _, err := decodeEnv(append(data, 0)); err == nil {
				t.Errorf("%+v with a byte more: got no error", env)
			}
		}
	}
	if _, err := decodeEnv([]byte{2}); err == nil || !strings.Contains(err.Error(), "format 2") {
		t.Errorf("format 2: got %v, want an error naming it", err)
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
	data := append(appendKind(nil, pod.Kind, pod.APIVersion), e.proto...)
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
	// A cut in the kind or apiVersion is an error; a cut in the protobuf is an error or a
	// pod with fewer fields, never a panic.
	head := len(appendKind(nil, pod.Kind, pod.APIVersion))
	for n := 0; n < len(data); n++ {
		_, err := decodePod(data[:n])
		if n < head && err == nil {
			t.Errorf("cut at %d bytes, in the kind: got no error", n)
		}
	}
	if _, err := decodePod(append(data[:head:head], 0xff, 0xff)); err == nil {
		t.Errorf("a malformed protobuf encoding: got no error")
	}
}

// serveFrames serves the frames of in and returns what serve returned and wrote.
func serveFrames(t *testing.T, in []byte) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	err := sandbox.ServeOn(bytes.NewReader(in), &out, protocolVersion, serveRequests)
	return out.Bytes(), err
}

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
		{"bad script", slices.Concat(hello, frames(byte(frameDefine), "{")), `decoding a script: `},
		{"unknown script", slices.Concat(hello, frames(byte(frameApply), "\x00k")), `apply of unknown script k`},
		{"apply without flags", slices.Concat(hello, frames(byte(frameApply), "")), `an apply request without its flags`},
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
	script := `{"Key":"k","Name":"o.star","Src":"ZGVmIG92ZXJsYXkocG9kKTogcGFzcwo="}` // def overlay(pod): pass
	var e podEncoder
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if err := e.encode(pod); err != nil {
		t.Fatal(err)
	}
	good := string(append(appendPodHeader(nil, appendEnv(nil, &Env{Role: "r"}), "Pod", "v1"), e.proto...))
	start := frames(byte(sandbox.FrameHello), protocolVersion, byte(frameDefine), script, byte(frameApply), "\x00k")
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
			if !strings.Contains(string(body), "converting the input pod: no") {
				t.Errorf("got error %s, want the parent's", body)
			}
		}
	}
	if got, want := string(kinds), "hdrred"; got != want {
		t.Errorf("got answers %q, want %q", got, want)
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"no ctx length", "", "decoding a pod: malformed frame"},
		{"bad ctx", "\x01\x07", "decoding a pod: ctx of format 7, want 1"},
		{"cut kind", "\x00\x05Po", "decoding a pod: malformed frame"},
		{"bad protobuf", "\x00\x03Pod\x02v1\xff\xff", "decoding a pod: "},
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
			sandbox.WriteFrame(out, frameError, []byte(`{"Msg":"x"}`))
			sandbox.WriteFrame(out, frameDone)
		case kind == frameDefine || kind == frameEnd:
			sandbox.WriteFrame(out, frameDone)
		case mode == "pods" && kind == framePod:
			sandbox.WriteFrame(out, frameResult, appendKind(nil, "Pod", "v1"), []byte{0xff, 0xff})
		case mode == "extra" && kind == framePod:
			sandbox.WriteFrame(out, frameError, []byte(`{"Overlay":"broken.star","Msg":"x"}`))
		}
		out.Flush()
	}
}

// TestServeForgetsScripts checks that a worker given many scripts keeps only the
// maxWorkerScripts it was sent last, and no longer applies the others.
func TestServeForgetsScripts(t *testing.T) {
	in := frames(byte(sandbox.FrameHello), protocolVersion)
	const n = 3 * maxWorkerScripts
	for i := range n {
		d := wireScript{Key: strconv.Itoa(i), Name: "o.star", HasLoader: true,
			Src:   []byte("load(\"big.star\", \"big\")\ndef overlay(pod):\n    pass\n# " + strconv.Itoa(i) + "\n"),
			Loads: []wireLoad{{From: "o.star", Module: "big.star", Name: "big.star", Src: []byte("big = \"x\" * (1 << 20)\n")}}}
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, frames(byte(frameDefine), string(data))...)
	}
	var out bytes.Buffer
	hello := len(frames(byte(sandbox.FrameHello), protocolVersion))
	s := newServer(sandbox.NewFrameReader(bytes.NewReader(slices.Concat(in[hello:], frames(byte(frameApply), "\x00"+strconv.Itoa(n-1), byte(frameEnd), "")))), bufio.NewWriter(&out))
	if err := s.serve(); err != nil {
		t.Fatal(err)
	}
	if s.scripts.Len() != maxWorkerScripts {
		t.Errorf("the worker holds %d scripts, want %d", s.scripts.Len(), maxWorkerScripts)
	}
	_, err := serveFrames(t, slices.Concat(in, frames(byte(frameApply), "\x00"+strconv.Itoa(n-maxWorkerScripts-1))))
	if want := "apply of unknown script " + strconv.Itoa(n-maxWorkerScripts-1); err == nil || err.Error() != want {
		t.Errorf("apply of a forgotten script: got %v, want %q", err, want)
	}
}

// TestServeBoundsAnswers checks that what a worker sends back stays within the frame limit of
// the parent however much a script prints or fails with: each print() message is cut to
// maxPrintBytes, the output of a pod's apply stops after maxPrintTotal with one notice, and
// the texts of an error are cut to maxErrorText.
func TestServeBoundsAnswers(t *testing.T) {
	src := "def overlay(pod):\n    s = \"é\" * (1 << 19)\n    for i in range(100):\n        print(s)\n    fail(s)\n"
	data, err := json.Marshal(wireScript{Key: "k", Name: "o.star", Src: []byte(src), Print: true, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var e podEncoder
	if err := e.encode(&corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	pod := string(append(appendPodHeader(nil, nil, "Pod", "v1"), e.proto...))
	out, err := serveFrames(t, slices.Concat(frames(byte(sandbox.FrameHello), protocolVersion, byte(frameDefine), string(data), byte(frameApply), "\x00k"),
		frames(byte(framePod), pod, byte(framePod), pod, byte(frameEnd), "")))
	if err != nil {
		t.Fatal(err)
	}
	printed, notices, errs := 0, 0, 0
	for _, f := range readFrames(t, out, 0) {
		switch body := f.body; f.kind {
		case framePrint:
			var p wirePrint
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			if p.Msg == "[print output passed 1048576 bytes; the rest is dropped]" {
				notices++
				continue
			}
			if len(p.Msg) > maxPrintBytes+30 || !strings.HasSuffix(p.Msg, " bytes cut]") || !utf8.ValidString(p.Msg) {
				t.Errorf("got a message of %d bytes ending %q, want at most %d and a marker", len(p.Msg), p.Msg[max(0, len(p.Msg)-30):], maxPrintBytes)
			}
			printed += len(p.Msg)
		case frameError:
			errs++
			var we wireError
			if err := json.Unmarshal(body, &we); err != nil {
				t.Fatal(err)
			}
			if len(we.Msg) > maxErrorText+100 || !strings.HasSuffix(we.Msg, " bytes cut]") {
				t.Errorf("got an error of %d bytes ending %q, want at most %d and a marker", len(we.Msg), we.Msg[max(0, len(we.Msg)-30):], maxErrorText)
			}
		}
	}
	if bound := 2 * (maxPrintTotal + 30*(maxPrintTotal/maxPrintBytes+1)); printed > bound || notices != 2 || errs != 2 {
		t.Errorf("got %d bytes of print() output, %d notices and %d errors, want at most %d bytes, 2 notices and 2 errors", printed, notices, errs, bound)
	}
}

// TestWireErrorEncode checks that an error of many fields and long texts encodes within the
// limit, with the texts cut and the fields that do not fit replaced by one saying how many.
func TestWireErrorEncode(t *testing.T) {
	long := strings.Repeat("<", 1<<20) // 6 bytes of JSON each
	w := &wireError{Overlay: "o.star", Msg: long, Backtrace: long, Limit: &wireLimit{Limit: LimitSteps, Msg: long}}
	bad := json.RawMessage(`"` + strings.Repeat("x", 1<<20) + `"`)
	for i := range 1000 {
		w.Fields = append(w.Fields, wireField{Type: field.ErrorTypeInvalid, Field: "spec.f" + strconv.Itoa(i), Detail: long, BadValue: bad})
	}
	const max = 1 << 20
	data, err := w.encode(max)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > max {
		t.Errorf("encoded in %d bytes, want at most %d", len(data), max)
	}
	var got wireError
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	last := got.Fields[len(got.Fields)-1]
	if n := len(got.Fields); n < 2 || last.Detail != fmt.Sprintf("and %d more errors, not shown", 1000-(n-1)) || last.Field != "spec.f"+strconv.Itoa(n-1) {
		t.Errorf("got %d fields, the last %+v, want the fields that fit and one saying how many more", n, last)
	}
	for _, f := range got.Fields[:len(got.Fields)-1] {
		if f.BadValue != nil || len(f.Detail) > maxErrorText+30 {
			t.Errorf("field %s: %d bytes of bad value and %d of detail, want none and at most %d", f.Field, len(f.BadValue), len(f.Detail), maxErrorText)
		}
	}
	if len(got.Msg) > maxErrorText+30 || len(got.Backtrace) > maxErrorText+30 || len(got.Limit.Msg) > maxErrorText+30 {
		t.Errorf("texts of %d, %d and %d bytes, want at most %d", len(got.Msg), len(got.Backtrace), len(got.Limit.Msg), maxErrorText)
	}
}

// TestServeApplyFirst checks that an apply that stops at the first pod that fails answers
// the pods after it without applying the script, and that a plain apply applies them all.
func TestServeApplyFirst(t *testing.T) {
	src := "def overlay(pod):\n    print(pod[\"metadata\"][\"name\"])\n    if pod[\"metadata\"][\"name\"] == \"bad\":\n        fail(\"bad pod\")\n"
	script, err := json.Marshal(&wireScript{Key: "k", Name: "o.star", Src: []byte(src), Print: true})
	if err != nil {
		t.Fatal(err)
	}
	encode := func(name string) string {
		var e podEncoder
		if err := e.encode(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		return string(append(appendPodHeader(nil, nil, "Pod", "v1"), e.proto...))
	}
	for _, test := range []struct {
		apply byte
		want  string // the kinds of the answers
		notes []string
	}{
		{frameFirst, "hdprpeed", []string{"bad pod", "not applied: an earlier pod of the batch failed"}},
		{frameApply, "hdprpeprd", []string{"bad pod"}},
	} {
		in := slices.Concat(frames(byte(sandbox.FrameHello), protocolVersion, byte(frameDefine), string(script), test.apply, "\x00k"),
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
				var we wireError
				if err := json.Unmarshal(f.body, &we); err != nil {
					t.Fatal(err)
				}
				notes = append(notes, we.error().Error())
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
// or where the request asks it to (applyCareful, as a request that tries pods again after a
// death does).
func TestServeApplyWrites(t *testing.T) {
	script := `{"Key":"k","Name":"o.star","Src":"ZGVmIG92ZXJsYXkocG9kKTogcGFzcwo="}` // def overlay(pod): pass
	var e podEncoder
	if err := e.encode(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}); err != nil {
		t.Fatal(err)
	}
	pod := string(append(appendPodHeader(nil, nil, "Pod", "v1"), e.proto...))
	for _, test := range []struct {
		counted bool
		flags   string
		want    int // writes: the define's done, the answers, the apply's done
	}{
		{true, "\x00", 1 + 1 + 1},
		{true, "\x01", 1 + 5 + 1},
		{false, "\x00", 1 + 5 + 1},
	} {
		in := frames(byte(frameDefine), script, byte(frameApply), test.flags+"k")
		for range 5 {
			in = append(in, frames(byte(framePod), pod)...)
		}
		in = append(in, frames(byte(frameEnd), "")...)
		var w countingWriter
		s := newServer(sandbox.NewFrameReader(bytes.NewReader(in)), bufio.NewWriterSize(&w, 64<<10))
		s.counted = test.counted
		if err := s.serve(); err != nil {
			t.Fatal(err)
		}
		if w.writes != test.want || s.answered != 5 {
			t.Errorf("counted %v, flags %q: %d writes and %d pods counted, want %d writes and 5 pods", test.counted, test.flags, w.writes, s.answered, test.want)
		}
	}
}

package engine

// This file defines provenance: which statement of an overlay last wrote a value of the pod
// it returned, to report an invalid result where it was written.
//
// An apply is deterministic, so nothing is tracked on the happy path: when the result is
// invalid, the overlay runs again on the same pod and ctx with a hook on every execution step
// (Thread.OnMaxSteps, re-armed one step ahead), and the hook looks at each offending field
// path in every dict that may become the result: the input pod, and the dicts held by the
// local variables of every Starlark frame. A change of what the path holds since the step
// before is a write by the instruction just done: the hook runs before the next instruction,
// when the frame's position is still that of the last one. A write by a builtin (merge,
// set_env, dict.update, list.append, ...) is seen after its call returns, in the caller's
// frame, at the call; a write by a function of a loaded module is seen in that function's
// frame, at its line. The write that counts is the last one to the dict the overlay
// returned. A dict that no local variable held (return merge(pod, ...)) was written by the
// statement that returned it: the last position of the overlay function. When the result is
// the input pod and no step changed the path, the value came from the input pod.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/convert"
)

// A Write says where an overlay wrote a value of the pod it returned.
type Write struct {
	Pos syntax.Position // the statement or helper call that wrote it; invalid when unknown
	// Backtrace is the Starlark call stack to Pos, as in Error.Backtrace.
	Backtrace string
	// Input reports that no statement wrote the value: it came from the input pod.
	Input bool

	step uint64 // the execution step of the write
}

// A pathStep is one step of a pod field path: a field name, or what is between brackets (an
// index of a list, or a key of a map).
type pathStep struct {
	name    string
	bracket bool
}

// parseFieldPath splits a field path as field.Path prints it: spec.containers[0].image,
// metadata.labels[app.kubernetes.io/name].
func parseFieldPath(s string) []pathStep {
	var out []pathStep
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
		case '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return append(out, pathStep{name: s[i+1:], bracket: true})
			}
			out = append(out, pathStep{name: s[i+1 : i+j], bracket: true})
			i += j + 1
		default:
			j := strings.IndexAny(s[i:], ".[")
			if j < 0 {
				j = len(s) - i
			}
			out = append(out, pathStep{name: s[i : i+j]})
			i += j
		}
	}
	return out
}

// lookupPath follows path from v as far as it goes and returns how many steps it took and the
// value there.
func lookupPath(v starlark.Value, path []pathStep) (int, starlark.Value) {
	for n, st := range path {
		var next starlark.Value
		switch c := v.(type) {
		case *starlark.Dict:
			x, found, _ := c.Get(starlark.String(st.name))
			if found {
				next = x
			}
		case *starlark.List:
			if i, err := strconv.Atoi(st.name); err == nil && st.bracket && i >= 0 && i < c.Len() {
				next = c.Index(i)
			}
		}
		if next == nil {
			return n, v
		}
		v = next
	}
	return len(path), v
}

// observe returns what path holds in root, for comparison with what it held a step before:
// how far the path goes and the value there. A root that lacks the path's first step is no
// candidate for the result, and is "".
func observe(root starlark.Value, path []pathStep) string {
	n, v := lookupPath(root, path)
	if n == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(n))
	b.WriteByte(':')
	budget := maxFingerprint
	if n < len(path) {
		// The path goes no further than v: what matters is when it does, or when v is
		// replaced by another dict or list (a container made without the field).
		budget = 0
	}
	fingerprint(&b, v, &budget)
	return b.String()
}

// Bounds of a fingerprint, so that watching a path costs little at each step whatever it
// holds: a deeply nested dict or a long string is never printed whole.
const (
	maxFingerprint       = 64 // values of a dict or list printed, its entries included
	maxFingerprintString = 64 // bytes of a string printed whole
)

// fingerprint writes what tells v apart from another value: the value printed, up to budget
// values; a dict or list beyond it by its identity and length, and a long string by its
// length and ends. An equal fingerprint of a value changed in place far inside it, or of a
// long string changed in its middle, misses that change; the write that put the value
// there is still seen.
func fingerprint(b *strings.Builder, v starlark.Value, budget *int) {
	*budget--
	switch v := v.(type) {
	case *starlark.Dict:
		if *budget < 0 {
			fmt.Fprintf(b, "dict@%p/%d", v, v.Len())
			return
		}
		b.WriteByte('{')
		for _, item := range v.Items() {
			fingerprint(b, item[0], budget)
			b.WriteByte(':')
			fingerprint(b, item[1], budget)
			b.WriteByte(',')
		}
		b.WriteByte('}')
	case *starlark.List:
		if *budget < 0 {
			fmt.Fprintf(b, "list@%p/%d", v, v.Len())
			return
		}
		b.WriteByte('[')
		for i := range v.Len() {
			fingerprint(b, v.Index(i), budget)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case starlark.String:
		if len(v) <= maxFingerprintString {
			b.WriteString(strconv.Quote(string(v)))
			return
		}
		fmt.Fprintf(b, "str/%d:%q...%q", len(v), string(v[:maxFingerprintString/2]), string(v[len(v)-maxFingerprintString/2:]))
	default:
		b.WriteString(v.Type())
		b.WriteByte(' ')
		b.WriteString(v.String())
	}
}

// A tracker watches field paths in the dicts an overlay may return, at every step.
type tracker struct {
	paths [][]pathStep
	in    starlark.Value              // the input pod
	roots map[*starlark.Dict]*watched // every dict seen, by identity
	// lastAt[d] is the last step at call depth d: the steps before the end that return the
	// result from a function to its caller are found from them.
	lastAt []uint64
}

// watched is what each path held in one dict at the last step, and its last write.
type watched struct {
	obs    []string
	writes []*Write
}

func newTracker(in *starlark.Dict, paths []string) *tracker {
	t := &tracker{in: in, roots: make(map[*starlark.Dict]*watched)}
	for _, p := range paths {
		t.paths = append(t.paths, parseFieldPath(p))
	}
	w := &watched{obs: make([]string, len(t.paths)), writes: make([]*Write, len(t.paths))}
	for i, p := range t.paths {
		w.obs[i] = observe(in, p)
	}
	t.roots[in] = w
	return t
}

// step looks at every candidate dict after an execution step of thread.
func (t *tracker) step(thread *starlark.Thread) {
	var here *Write // made once per step, when needed
	at := func() *Write {
		if here == nil {
			here = writeAt(thread.CallStack())
			here.step = thread.ExecutionSteps()
		}
		return here
	}
	t.visit(t.in.(*starlark.Dict), at)
	depth := thread.CallStackDepth()
	for d := 0; d < depth; d++ {
		fr := thread.DebugFrame(d)
		for i := 0; i < fr.NumLocals(); i++ {
			if _, v := fr.Local(i); v != nil {
				if dict, ok := v.(*starlark.Dict); ok {
					t.visit(dict, at)
				}
			}
		}
	}
	for len(t.lastAt) <= depth {
		t.lastAt = append(t.lastAt, 0)
	}
	t.lastAt[depth] = thread.ExecutionSteps()
}

// returned returns the step at which the function that made the result, a dict no variable
// held, was at the call or statement that made it: the last step of the overlay function,
// unless the step before it was the last of a function the overlay called (return f(pod)),
// and so on inward.
func (t *tracker) returned() uint64 {
	if len(t.lastAt) < 2 {
		return 0
	}
	step := t.lastAt[1]
	for d := 2; d < len(t.lastAt) && t.lastAt[d] == step-1; d++ {
		step = t.lastAt[d]
	}
	return step
}

// visit compares what each path holds in dict with what it held at the step before. A dict
// seen for the first time was written where it is first seen, by the paths it holds.
func (t *tracker) visit(dict *starlark.Dict, at func() *Write) {
	w, seen := t.roots[dict]
	if !seen {
		w = &watched{obs: make([]string, len(t.paths)), writes: make([]*Write, len(t.paths))}
		t.roots[dict] = w
	}
	for i, p := range t.paths {
		o := observe(dict, p)
		switch {
		case !seen && o != "":
			// A dict that holds what another holds is a copy (by merge, patch, dict(),
			// ...): what it holds was written where the other's was.
			w.obs[i] = o
			if cw, found := t.copied(dict, i, o); found {
				w.writes[i] = cw
			} else {
				w.writes[i] = at()
			}
		case o != w.obs[i]:
			w.obs[i], w.writes[i] = o, at()
		}
	}
}

// copied returns the write of path i in the dicts other than self that hold o there, the
// latest, and whether any holds it; a nil write of one that does means the value is the
// input pod's.
func (t *tracker) copied(self *starlark.Dict, i int, o string) (w *Write, found bool) {
	for d, r := range t.roots {
		if d == self || r.obs[i] != o {
			continue
		}
		found = true
		if cw := r.writes[i]; cw != nil && (w == nil || cw.step > w.step) {
			w = cw
		}
	}
	return w, found
}

// result returns the write of each path in the result root; made is the write of the
// statement that made the result, for paths no step wrote in it.
func (t *tracker) result(root starlark.Value, made func() Write) []Write {
	out := make([]Write, len(t.paths))
	dict, _ := root.(*starlark.Dict)
	w := t.roots[dict]
	for i := range out {
		var wr *Write
		var input bool // whether the value is the input pod's
		if w != nil {
			wr, input = w.writes[i], root == t.in || w.obs[i] != ""
		} else if o := observe(root, t.paths[i]); o != "" {
			wr, input = t.copied(nil, i, o)
		}
		switch {
		case wr != nil:
			out[i] = *wr
		case input:
			out[i] = Write{Input: true}
		default:
			out[i] = made()
		}
	}
	return out
}

// writeAt returns the write at the innermost Starlark frame of stack.
func writeAt(stack starlark.CallStack) *Write {
	if n := len(stack); n > 0 && stack[n-1].Pos.Filename() == "<builtin>" {
		stack = stack[:n-1]
	}
	return &Write{Pos: innermost(stack), Backtrace: strings.TrimRight(stack.String(), "\n")}
}

// provenance runs the overlay again on pod and env, which gave an invalid result, with
// tracking on, and returns the write of each of paths in the result. It returns nil if the
// run fails, which a deterministic overlay does not.
func (o *Overlay) provenance(ctx context.Context, pod *corev1.Pod, env *Env, paths []string) []Write {
	in, err := convert.ToStarlark(pod)
	if err != nil {
		return nil
	}
	return o.provenanceFrom(ctx, in, pod, env, paths)
}

// provenanceFrom is provenance with in, the Starlark value of pod, converted already.
func (o *Overlay) provenanceFrom(ctx context.Context, in starlark.Value, pod *corev1.Pod, env *Env, paths []string) []Write {
	dict, ok := in.(*starlark.Dict)
	if !ok {
		return nil
	}
	t := newTracker(dict, paths)
	limit := o.opts.maxSteps()
	res, err := o.rerun(ctx, in, env, func(thread *starlark.Thread) {
		if thread.ExecutionSteps() >= limit {
			thread.Cancel("too many steps")
			return
		}
		thread.SetMaxExecutionSteps(thread.ExecutionSteps() + 1)
		t.step(thread)
	})
	if err != nil {
		return nil
	}
	if res == starlark.None {
		res = in
	}
	var made *Write
	return t.result(res, func() Write {
		if made == nil {
			made = &Write{}
			if step := t.returned(); step > 0 {
				if w := o.stackAt(ctx, pod, env, step); w != nil {
					made = w
				}
			}
		}
		return *made
	})
}

// rerun applies the overlay to the pod in, with hook as the thread's OnMaxSteps from the
// first step of the overlay function on.
func (o *Overlay) rerun(ctx context.Context, in starlark.Value, env *Env, hook func(*starlark.Thread)) (starlark.Value, error) {
	thread, stop := o.newThread(ctx)
	defer stop()
	thread.Print = func(*starlark.Thread, string) {} // printed once, by the apply that failed
	globals, err := o.prog.Init(thread, predeclared)
	if err != nil {
		return nil, err
	}
	fn := globals["overlay"].(*starlark.Function)
	args := starlark.Tuple{in}
	if o.takes == 2 {
		args = append(args, env.value())
	}
	thread.OnMaxSteps = hook
	thread.SetMaxExecutionSteps(thread.ExecutionSteps() + 1)
	return starlark.Call(thread, fn, args, nil)
}

// stackAt applies the overlay to pod again up to the given step, and returns the write at
// the position there.
func (o *Overlay) stackAt(ctx context.Context, pod *corev1.Pod, env *Env, step uint64) *Write {
	in, err := convert.ToStarlark(pod)
	if err != nil {
		return nil
	}
	var w *Write
	o.rerun(ctx, in, env, func(thread *starlark.Thread) {
		if thread.ExecutionSteps() < step {
			thread.SetMaxExecutionSteps(step)
			return
		}
		w = writeAt(thread.CallStack())
		thread.Cancel("stopped")
	})
	return w
}

// attribute sets the writes of the fields of e, an invalid result of applying o to pod.
func (o *Overlay) attribute(ctx context.Context, pod *corev1.Pod, env *Env, e *Error) {
	// Only the problems Error prints are traced: each path tracked costs every step of the
	// run again.
	fields := e.Fields[:min(len(e.Fields), maxFieldErrors)]
	paths := make([]string, len(fields))
	for i, fe := range fields {
		paths[i] = fe.Field
	}
	writes := o.provenance(ctx, pod, env, paths)
	if writes == nil {
		return
	}
	e.Writes = writes
	if w := writes[0]; w.Pos.IsValid() {
		e.Pos, e.Backtrace = w.Pos, w.Backtrace
	}
}

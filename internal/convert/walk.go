// This file defines the walker, which tracks the path, the containers being visited and the
// running JSON size during a walk over Starlark values, and the conversions of Starlark values
// to untyped Go data.

package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDepth bounds the nesting of lists and dicts in a value.
const maxDepth = 1000

// noValue makes a field.Error omit the bad value from its message.
var noValue = field.OmitValueType{}

// A pathElem is one step of a path: a field name, a list index or a map key.
type pathElem struct {
	kind  pathKind
	name  string // child name or map key
	index int
}

type pathKind uint8

const (
	childElem pathKind = iota
	indexElem
	keyElem
)

// A walker holds the state of one walk over Starlark values. The path is kept as a stack of
// steps and turned into a *field.Path only when an error needs it, so that a walk without
// errors allocates no paths.
type walker struct {
	root  *field.Path
	elems []pathElem
	seen  []starlark.Value // the dicts, lists and tuples on the current path
	size  int64            // running length of the JSON encoding
	limit int64            // zero means no limit
	errs  field.ErrorList
	buf   []byte // scratch space for JSON text

	// visits are the dicts whose entries are being visited, innermost last, and yield the
	// function that passes each entry to the innermost one; see entries.
	visits []dictVisit
	yield  func(k, x starlark.Value) bool

	elemsBuf  [16]pathElem
	seenBuf   [16]starlark.Value
	visitsBuf [8]dictVisit
}

// A dictVisit says what to do with each entry of a dict: call entry with the dictVisit
// itself, whose other fields hold what entry needs. Entry must not change the dictVisit.
type dictVisit struct {
	entry     func(w *walker, dv *dictVisit, k, x starlark.Value)
	data      any           // the decoder, or the Go map being filled
	v         reflect.Value // the Go value being decoded into
	key, elem reflect.Value // variables for a map entry
}

var walkerPool = sync.Pool{New: func() any {
	w := new(walker)
	w.yield = func(k, x starlark.Value) bool {
		dv := &w.visits[len(w.visits)-1]
		dv.entry(w, dv, k, x)
		return true
	}
	return w
}}

// entries calls dv.entry for each entry of d, in order. A range over d.Entries() would
// allocate a closure for every dict; entries passes the one yield function of the walker.
func (w *walker) entries(d *starlark.Dict, dv dictVisit) {
	w.visits = append(w.visits, dv)
	d.Entries()(w.yield)
	w.visits = w.visits[:len(w.visits)-1]
}

// newWalker returns a walker from the pool, ready for a walk rooted at path.
func newWalker(root *field.Path) *walker {
	w := walkerPool.Get().(*walker)
	w.root = root
	w.elems = w.elemsBuf[:0]
	w.seen = w.seenBuf[:0]
	w.visits = w.visitsBuf[:0]
	return w
}

// release returns w to the pool. The walker's errors remain valid.
func (w *walker) release() {
	clear(w.seenBuf[:])
	buf := w.buf[:0]
	if cap(buf) > 1<<16 {
		buf = nil
	}
	*w = walker{buf: buf, yield: w.yield}
	walkerPool.Put(w)
}

// sizeAbort is the panic value that stops a walk that passed the size limit.
type sizeAbort struct{ err *SizeError }

func (w *walker) path() *field.Path {
	p := w.root
	for _, e := range w.elems {
		switch e.kind {
		case childElem:
			p = p.Child(e.name)
		case indexElem:
			p = p.Index(e.index)
		case keyElem:
			p = p.Key(e.name)
		}
	}
	return p
}

func (w *walker) pushChild(name string) {
	w.elems = append(w.elems, pathElem{kind: childElem, name: name})
}
func (w *walker) pushIndex(i int)  { w.elems = append(w.elems, pathElem{kind: indexElem, index: i}) }
func (w *walker) pushKey(k string) { w.elems = append(w.elems, pathElem{kind: keyElem, name: k}) }
func (w *walker) pop()             { w.elems = w.elems[:len(w.elems)-1] }

// add adds n bytes to the running size and stops the walk once it passes the limit.
func (w *walker) add(n int64) {
	w.size += n
	if w.limit > 0 && w.size > w.limit {
		panic(sizeAbort{&SizeError{Limit: w.limit, Path: w.path()}})
	}
}

// invalid records a field.Invalid error at the current path.
func (w *walker) invalid(format string, args ...any) {
	w.errs = append(w.errs, field.Invalid(w.path(), noValue, fmt.Sprintf(format, args...)))
}

// typeInvalid records an error "got T, want want" at the current path: a
// field.TypeInvalid error when x is JSON data of the wrong type, and a field.Invalid error
// when x is not JSON data at all (a function, a set, ...).
func (w *walker) typeInvalid(x starlark.Value, want string) {
	detail := "got " + x.Type() + ", want " + want
	if isData(x) {
		w.errs = append(w.errs, field.TypeInvalid(w.path(), noValue, detail))
	} else {
		w.errs = append(w.errs, field.Invalid(w.path(), noValue, detail))
	}
}

// isData reports whether x is of a type that JSON data converts to.
func isData(x starlark.Value) bool {
	switch x.(type) {
	case starlark.NoneType, starlark.Bool, starlark.String, starlark.Int, starlark.Float,
		*starlark.Dict, *starlark.List, starlark.Tuple:
		return true
	}
	return false
}

// enter notes that the walk descends into the dict, list or tuple x and reports whether it
// may: not when x is already being visited (a cycle) or the value is nested too deeply.
func (w *walker) enter(x starlark.Value) bool {
	if len(w.seen) >= maxDepth {
		w.invalid("nested too deeply")
		return false
	}
	if _, ok := x.(starlark.Tuple); !ok { // a tuple cannot contain itself, nor be compared
		for _, s := range w.seen {
			if s == x {
				w.invalid("value contains itself")
				return false
			}
		}
	}
	w.seen = append(w.seen, x)
	return true
}

func (w *walker) leave() { w.seen = w.seen[:len(w.seen)-1] }

// decode runs dec, turning a size abort into a *SizeError.
func (w *walker) decode(dec decoderFunc, x starlark.Value, v reflect.Value) (err *SizeError) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(sizeAbort)
			if !ok {
				panic(r)
			}
			err = a.err
		}
	}()
	dec(w, x, v)
	return nil
}

// addDict counts the braces and commas of a dict of n entries.
func (w *walker) addDict(n int) {
	w.add(int64(2 + max(n-1, 0)))
}

// addList counts the brackets and commas of a list of n elements. It stops the walk at once
// if the list cannot fit even with one byte per element, before anything is allocated for it.
func (w *walker) addList(n int) {
	if w.limit == 0 {
		return
	}
	punct := int64(2 + max(n-1, 0))
	if w.size+punct+int64(n) > w.limit {
		w.add(punct + int64(n))
	}
	w.add(punct)
}

// toGo converts x to untyped JSON data, recording errors and returning nil for bad values.
func (w *walker) toGo(x starlark.Value) any {
	switch x := x.(type) {
	case starlark.NoneType:
		w.add(4)
		return nil
	case starlark.Bool:
		if x {
			w.add(4)
		} else {
			w.add(5)
		}
		return bool(x)
	case starlark.String:
		w.addString(string(x))
		return string(x)
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			w.addInt(i)
			return i
		}
		b := x.BigInt()
		w.add(int64(len(b.String())))
		return b
	case starlark.Float:
		f := float64(x)
		if !w.finite(x) {
			return nil
		}
		w.addFloat(f)
		return f
	case *starlark.Dict:
		return w.dictToGo(x)
	case *starlark.List:
		w.addList(x.Len())
		if !w.enter(x) {
			return nil
		}
		defer w.leave()
		return w.elemsToGo(x)
	case starlark.Tuple:
		w.addList(len(x))
		if !w.enter(x) {
			return nil
		}
		defer w.leave()
		return w.elemsToGo(x)
	}
	w.typeInvalid(x, "dict, list, string, int, float, bool or None")
	return nil
}

func (w *walker) elemsToGo(x starlark.Indexable) []any {
	n := x.Len()
	out := make([]any, n)
	for i := range n {
		w.pushIndex(i)
		out[i] = w.toGo(x.Index(i))
		w.pop()
	}
	return out
}

func (w *walker) dictToGo(d *starlark.Dict) map[string]any {
	w.addDict(d.Len())
	if !w.enter(d) {
		return nil
	}
	defer w.leave()
	out := make(map[string]any, d.Len())
	w.entries(d, dictVisit{entry: toGoEntry, data: out})
	return out
}

// toGoEntry converts the entry k: x of a dict into an entry of the map[string]any dv.data.
func toGoEntry(w *walker, dv *dictVisit, k, x starlark.Value) {
	ks, ok := k.(starlark.String)
	if !ok {
		w.invalid("got %s key, want string", k.Type())
		return
	}
	w.addString(string(ks))
	w.add(1)
	w.pushKey(string(ks))
	dv.data.(map[string]any)[string(ks)] = w.toGo(x)
	w.pop()
}

// finite reports whether f is finite, recording an error if not.
func (w *walker) finite(f starlark.Float) bool {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		w.invalid("got %s, want finite float", f)
		return false
	}
	return true
}

// addString counts the JSON size of the string s.
func (w *walker) addString(s string) {
	if w.limit == 0 {
		return
	}
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		n += int(escapeExtra[s[i]])
	}
	w.add(int64(n))
}

// escapeExtra holds, for each byte, how many bytes its JSON escape adds: one for a quote, a
// backslash, \n, \r and \t, five for another control character (\u00XX).
var escapeExtra = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 5
	}
	for _, c := range []byte{'"', '\\', '\n', '\r', '\t'} {
		t[c] = 1
	}
	return t
}()

func (w *walker) addInt(i int64) {
	if w.limit == 0 {
		return
	}
	var buf [24]byte
	w.add(int64(len(strconv.AppendInt(buf[:0], i, 10))))
}

func (w *walker) addFloat(f float64) {
	if w.limit == 0 {
		return
	}
	var buf [32]byte
	w.add(int64(len(strconv.AppendFloat(buf[:0], f, 'g', -1, 64))))
}

// fromGo converts untyped JSON data to Starlark values.
func fromGo(v any) (starlark.Value, error) {
	switch v := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(v), nil
	case string:
		return starlark.String(v), nil
	case map[string]any:
		keys := sortedKeys(v)
		d := starlark.NewDict(len(v))
		for _, k := range keys {
			x, err := fromGo(v[k])
			if err != nil {
				return nil, fmt.Errorf("in key %q: %w", k, err)
			}
			d.SetKey(starlark.String(k), x)
		}
		return d, nil
	case []any:
		elems := make([]starlark.Value, len(v))
		for i, e := range v {
			x, err := fromGo(e)
			if err != nil {
				return nil, fmt.Errorf("at index %d: %w", i, err)
			}
			elems[i] = x
		}
		return starlark.NewList(elems), nil
	case int:
		return starlark.MakeInt(v), nil
	case int8:
		return starlark.MakeInt64(int64(v)), nil
	case int16:
		return starlark.MakeInt64(int64(v)), nil
	case int32:
		return starlark.MakeInt64(int64(v)), nil
	case int64:
		return starlark.MakeInt64(v), nil
	case uint:
		return starlark.MakeUint64(uint64(v)), nil
	case uint8:
		return starlark.MakeUint64(uint64(v)), nil
	case uint16:
		return starlark.MakeUint64(uint64(v)), nil
	case uint32:
		return starlark.MakeUint64(uint64(v)), nil
	case uint64:
		return starlark.MakeUint64(v), nil
	case uintptr:
		return starlark.MakeUint64(uint64(v)), nil
	case float32:
		return fromFloat(float64(v), 32)
	case float64:
		return fromFloat(v, 64)
	case json.Number:
		return numberToStarlark(string(v))
	case *big.Int:
		if v == nil {
			return starlark.None, nil
		}
		return starlark.MakeBigInt(v), nil
	}
	return nil, fmt.Errorf("got %T, want JSON data", v)
}

// fromFloat converts f as ToStarlark does: as JSON text carries it, so that a float JSON
// writes without fraction or exponent (2.0 is written 2) becomes an int.
func fromFloat(f float64, bits int) (starlark.Value, error) {
	x, err := encodeFloat(f, bits)
	if err != nil {
		return nil, errors.New(err.(*encodeError).detail)
	}
	return x, nil
}

// numberToStarlark converts the text of a JSON number as Starlark's json.decode does: an int
// when it has no fraction or exponent, otherwise a float.
func numberToStarlark(s string) (starlark.Value, error) {
	isFloat := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', 'e', 'E':
			isFloat = true
		}
	}
	if isFloat {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("got %s, want finite float", s)
		}
		return starlark.Float(f), nil
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return starlark.MakeInt64(i), nil
	}
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("got %q, want number", s)
	}
	return starlark.MakeBigInt(b), nil
}

// validUTF8 returns s with each byte of an invalid UTF-8 sequence replaced by U+FFFD, as
// encoding/json does when it encodes a string.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

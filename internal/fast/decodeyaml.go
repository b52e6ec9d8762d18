// This file defines DecodePodYAML, the decoding of a pod document's YAML text straight into
// a typed pod, with no untyped data in between, by the fast decoders of decode.go.

package fast

import (
	"bytes"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// A yamlDecoder decodes the YAML node n, which ReadBlockYAML reads, into v, a settable
// zero value of the type it was made for, as the type's fastDecoder decodes the untyped data
// of n: it reports true only if that would, and then sets v alike. It reads n unless it
// reports false.
type yamlDecoder func(s *fastState, n BlockNode, v reflect.Value) bool

// corePodType is the type DecodePodYAML decodes into.
var corePodType = reflect.TypeFor[corev1.Pod]()

// DecodePodYAML decodes doc, the YAML text of a pod document, into the pod and defaults that
// convert.DecodePod and convert.PodDefaultsOf give for the data stream.Document.Parse reads from it, whose
// content it bounds to limit bytes as Parse does (see ReadBlockYAML). It reports false,
// without an error, for a document that is not apiVersion: v1, kind: Pod, for anything Parse
// would refuse or convert.DecodePod report, and for anything it leaves to them: text outside the plain
// subset of YAML that Parse reads without the YAML library, and the rarer values convert.DecodePod
// decodes through Starlark values. The caller then takes that way, for the pod or the error.
func DecodePodYAML(doc []byte, limit int64) (*corev1.Pod, *PodDefaults, bool) {
	if Off {
		return nil, nil, false
	}
	if !bytes.Contains(doc, []byte("kind: Pod")) {
		return nil, nil, false // not a pod, or not one written plainly
	}
	pod := new(corev1.Pod)
	s := &fastState{notes: new(defaultNotes)}
	s.buf = s.space[:0]
	v := reflect.ValueOf(pod).Elem()
	ft := fastTypeOf(corePodType)
	read := func(root BlockNode) bool { return ft.yaml(s, root, v) }
	if !ReadBlockYAML(doc, limit, read) || pod.APIVersion != "v1" || pod.Kind != "Pod" {
		return nil, nil, false
	}
	d := s.notes.d
	return pod, &d, true
}

// viaUntyped decodes n through its untyped data and ft's fastDecoder: the yamlDecoder of the
// types that take scalars.
func (ft *fastType) viaUntyped(s *fastState, n BlockNode, v reflect.Value) bool {
	x, ok := n.Untyped()
	return ok && ft.dec(s, x, v)
}

// yamlDecline is fastDecline's yamlDecoder: it declines every node.
func yamlDecline(*fastState, BlockNode, reflect.Value) bool { return false }

// yamlString is fastString's yamlDecoder, which saves putting each string in an interface.
func yamlString(_ *fastState, n BlockNode, v reflect.Value) bool {
	if str, ok := n.Str(); ok {
		v.SetString(str)
		return true
	}
	return n.Null()
}

// maxYAMLFields bounds the fields of a struct that decodeYAML decodes, which notes those it
// has seen in an array.
const maxYAMLFields = 256

// decodeYAML is fs.decode's yamlDecoder. Unlike the keys of untyped data, those of a mapping
// may come twice, which decodeYAML declines.
func (fs *fastStruct) decodeYAML(s *fastState, n BlockNode, v reflect.Value) bool {
	if n.Kind() != BlockMapping {
		return n.Null()
	}
	if len(fs.fields.list) > maxYAMLFields || !s.enter() {
		return false
	}
	var notes *defaultNotes
	if fs.noted != notNoted {
		notes = s.notes
	}
	var seen [maxYAMLFields / 64]uint64
	ok := n.Entries(func(key string, e BlockNode) bool {
		i, fv, ok := fs.field(v, key)
		if !ok || seen[i/64]&(1<<(i%64)) != 0 {
			return false
		}
		seen[i/64] |= 1 << (i % 64)
		if notes != nil {
			notes.key(fs.noted, key)
		}
		return fs.types[i].yaml(s, e, fv)
	})
	if !ok {
		return false
	}
	if notes != nil && fs.noted == notedContainer {
		notes.end(v)
	}
	s.leave()
	return true
}

// yamlMap returns the yamlDecoder of the map type t, whose keys are strings and whose
// elements et decodes, as newFastMap's fastDecoder decodes it.
func yamlMap(t reflect.Type, et *fastType) yamlDecoder {
	return func(s *fastState, n BlockNode, v reflect.Value) bool {
		if n.Kind() != BlockMapping {
			return n.Null()
		}
		if !s.enter() {
			return false
		}
		mv := reflect.MakeMap(t)
		key := reflect.New(t.Key()).Elem()
		elem := reflect.New(t.Elem()).Elem()
		ok := n.Entries(func(k string, e BlockNode) bool {
			key.SetString(k)
			if mv.MapIndex(key).IsValid() {
				return false
			}
			elem.SetZero()
			if !et.yaml(s, e, elem) {
				return false
			}
			mv.SetMapIndex(key, elem)
			return true
		})
		if !ok {
			return false
		}
		v.Set(mv)
		s.leave()
		return true
	}
}

// yamlStringMap is fastStringMap's yamlDecoder.
func yamlStringMap(_ *fastState, n BlockNode, v reflect.Value) bool {
	if n.Kind() != BlockMapping {
		return n.Null()
	}
	out := make(map[string]string)
	ok := n.Entries(func(k string, e BlockNode) bool {
		if _, dup := out[k]; dup {
			return false
		}
		str, ok := e.Str()
		out[k] = str
		return ok || e.Null()
	})
	if !ok {
		return false
	}
	v.Set(reflect.ValueOf(out))
	return true
}

// yamlSlice returns the yamlDecoder of the slice type t, whose elements et decodes, as dec,
// newFastSlice's fastDecoder, decodes it. Not knowing a sequence's length before its items,
// it decodes them into a scratch slice of its pool, and copies them into a slice of their
// number.
func yamlSlice(t reflect.Type, et *fastType, dec fastDecoder) yamlDecoder {
	pool := &sync.Pool{New: func() any { return reflect.New(t).Interface() }} // of *[]T, empty
	return func(s *fastState, n BlockNode, v reflect.Value) bool {
		if n.Kind() != BlockSequence {
			x, ok := n.Untyped() // null, or base64 text for []byte
			return ok && dec(s, x, v)
		}
		if !s.enter() {
			return false
		}
		p := pool.Get()
		scratch := reflect.ValueOf(p).Elem()
		ok := n.Items(func(e BlockNode) bool {
			i := scratch.Len()
			if i == scratch.Cap() {
				scratch.Grow(1)
			}
			scratch.SetLen(i + 1)
			return et.yaml(s, e, scratch.Index(i))
		})
		if ok {
			// v is a zero slice: grown, it takes the items without a new slice header.
			if n := scratch.Len(); n > 0 {
				v.Grow(n)
				v.SetLen(n)
				reflect.Copy(v, scratch)
			} else {
				v.Set(reflect.MakeSlice(t, 0, 0))
			}
			s.leave()
		}
		scratch.Clear()
		scratch.SetLen(0)
		pool.Put(p)
		return ok
	}
}

// yamlPtr returns the yamlDecoder of the pointer type t, to values that et decodes, as
// newFastPtr's fastDecoder decodes it.
func yamlPtr(t reflect.Type, et *fastType) yamlDecoder {
	return func(s *fastState, n BlockNode, v reflect.Value) bool {
		if n.Null() {
			return true
		}
		p := reflect.New(t.Elem())
		if !et.yaml(s, n, p.Elem()) {
			return false
		}
		v.Set(p)
		return true
	}
}

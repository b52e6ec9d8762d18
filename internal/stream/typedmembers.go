package stream

// This file defines how MarshalTypedYAML gathers the members of maps, and of structs whose
// keys it sorts: the slots that hold copies of the entries of maps, the members, and their
// order; and which fields of a struct it prints.

import (
	"reflect"
	"unsafe"
)

// slots is a slice that printer.take gives out parts of.
type slots struct {
	s    reflect.Value
	used int
	// The slots given out, a slice of the type of s seen through view, for release to
	// clear them alone: reflect.Value.Slice would allocate.
	given sliceHeader
	view  reflect.Value
}

// take returns n elements of sc, a slice of type t, from the element at i on, that no
// other call returns until release.
func (p *printer) take(sc *slots, t reflect.Type, n int) (s reflect.Value, i int) {
	if sc.used == 0 && n > 0 {
		p.used = append(p.used, sc)
	}
	if !sc.s.IsValid() || sc.s.Len()-sc.used < n {
		size := max(2*n, 32)
		if sc.s.IsValid() {
			// The values of the full slice that members point to stay valid: the slice
			// goes, not cleared, to the collector.
			size = max(size, 2*sc.s.Len())
		}
		sc.s, sc.used = reflect.MakeSlice(t, size, size), 0
	}
	i = sc.used
	sc.used += n
	return sc.s, i
}

// slotsOf returns the slots of ID id.
func (p *printer) slotsOf(id int) *slots {
	if id >= len(p.slots) {
		p.slots = append(p.slots, make([]*slots, id+1-len(p.slots))...)
	}
	if p.slots[id] == nil {
		p.slots[id] = &slots{} // apart, so that p.used stays valid as p.slots grows
	}
	return p.slots[id]
}

// copyOut returns the ref of a copy of v in a slot, not addressable.
func (p *printer) copyOut(v reflect.Value) ref {
	t := reflect.SliceOf(v.Type())
	sc := p.others[t]
	if sc == nil {
		if p.others == nil {
			p.others = make(map[reflect.Type]*slots)
		}
		sc = &slots{}
		p.others[t] = sc
	}
	s, i := p.take(sc, t, 1)
	e := s.Index(i)
	e.Set(v)
	return ref{e.Addr().UnsafePointer(), false}
}

// mapOf returns the map of r, of the map type of ti.
func (p *printer) mapOf(r ref, ti *typeInfo) reflect.Value {
	return reflect.NewAt(ti.typ, r.p).Elem()
}

// collect appends to p.members the members of the struct or map of r that print, in key
// order, for an object whose keys are at column indent, and returns where they start.
func (p *printer) collect(r ref, ti *typeInfo, indent int) (int, bool) {
	base := len(p.members)
	if ti.kind == kindMap && ti.strings {
		// The most common map, copied as below but without reflect: its slots are a
		// []string.
		m := *(*map[string]string)(r.p)
		s, i := p.take(p.slotsOf(ti.slots+1), ti.vals, len(m))
		vals := unsafe.Slice((*string)(s.UnsafePointer()), s.Len())[i : i+len(m)]
		i = 0
		for k, v := range m {
			kt, ok := scalarText(k, indent)
			if !ok || len(kt) > maxKeyText {
				return base, false
			}
			vals[i] = v
			p.addMember(k, kt, ref{unsafe.Pointer(&vals[i]), false}, ti.elem)
			i++
		}
		p.sort(base)
		return base, true
	}
	if ti.kind == kindMap {
		// Copy the keys and values into slices: a map's own values cannot be pointed to,
		// and each costs an allocation to copy out alone. The copies are not addressable,
		// as the values of a map are not.
		m := p.mapOf(r, ti)
		n := m.Len()
		keys, k0 := p.take(p.slotsOf(ti.slots), ti.keys, n)
		vals, v0 := p.take(p.slotsOf(ti.slots+1), ti.vals, n)
		it := &p.iter
		it.Reset(m)
		defer it.Reset(reflect.Value{})
		for i := 0; it.Next(); i++ {
			kv := keys.Index(k0 + i)
			kv.SetIterKey(it)
			k := kv.String()
			kt, ok := scalarText(k, indent)
			if !ok || len(kt) > maxKeyText {
				return base, false // printMap declines it
			}
			ev := vals.Index(v0 + i)
			ev.SetIterValue(it)
			p.addMember(k, kt, ref{ev.Addr().UnsafePointer(), false}, ti.elem)
		}
		p.sort(base)
		return base, true
	}
	for i := range ti.fields {
		f := &ti.fields[i]
		fr, present, ok := p.field(r, f)
		if !ok {
			return base, false
		}
		if present {
			p.addMember(f.name, f.text, fr, f.info)
		}
	}
	if ti.sortFields {
		p.sort(base)
	} else {
		p.index = appendIndexes(p.index, base, len(p.members))
	}
	return base, true
}

// addMember appends a member to p.members. It sets the fields of the new member one by one:
// copying a whole struct that holds pointers costs a bulk write barrier while the collector
// runs, each pointer set alone a cheaper one.
func (p *printer) addMember(key, text string, r ref, info *typeInfo) {
	if len(p.members) == cap(p.members) {
		p.members = append(p.members, typedMember{})
	} else {
		p.members = p.members[:len(p.members)+1]
	}
	m := &p.members[len(p.members)-1]
	m.key, m.text, m.r, m.info = key, text, r, info
}

// push appends a step to p.path, as addMember appends a member.
func (p *printer) push(key, text string, item bool) {
	if len(p.path) == cap(p.path) {
		p.path = append(p.path, step{})
	} else {
		p.path = p.path[:len(p.path)+1]
	}
	s := &p.path[len(p.path)-1]
	s.key, s.text, s.item = key, text, item
}

// sort sets p.index from base on to the indexes of the members from base on, in key order.
// Sorting indexes rather than members moves no pointers, which cost write barriers.
func (p *printer) sort(base int) {
	p.index = appendIndexes(p.index, base, len(p.members))
	p.order.sort(p.index[base:])
}

// appendIndexes appends to index the indexes from i to j.
func appendIndexes(index []int32, i, j int) []int32 {
	for ; i < j; i++ {
		index = append(index, int32(i))
	}
	return index
}

// field returns the field f of the struct of r, and whether it prints: it does not if it is
// in a nil embedded struct, if its omitempty or omitzero option leaves it out, or if it is an
// empty struct of p.omit.
func (p *printer) field(r ref, f *typedField) (fr ref, present, ok bool) {
	if len(f.embeds) > 0 {
		for _, off := range f.embeds {
			if r.p = *(*unsafe.Pointer)(unsafe.Add(r.p, off)); r.p == nil {
				return r, false, true
			}
		}
		r.addr = true // reached through a pointer
	}
	fr = r.at(f.offset)
	if p.splits(fr, f.info) {
		return fr, true, true
	}
	if f.omitsEmpty(fr.p) {
		return fr, false, true
	}
	if f.isZero != nil && f.isZero(reflect.NewAt(f.info.typ, fr.p).Elem()) {
		return fr, false, true
	}
	if f.info.kind == kindStruct && len(p.omit) > 0 && p.omitted(fr, f.info) {
		empty, ok := p.empty(fr, f.info)
		return fr, !empty, ok
	}
	return fr, true, true
}

// empty reports whether the struct of r prints as {}.
func (p *printer) empty(r ref, ti *typeInfo) (empty, ok bool) {
	if !ti.structInfo() {
		return false, false
	}
	for i := range ti.fields {
		_, present, ok := p.field(r, &ti.fields[i])
		if !ok || present {
			return !present, ok
		}
	}
	return true, true
}

// omitted reports whether the struct of r, of type ti, is one of p.omit.
func (p *printer) omitted(r ref, ti *typeInfo) bool {
	if !r.addr {
		return false
	}
	for _, o := range p.omit {
		if o.p == r.p && o.t == ti.typ {
			return true
		}
	}
	return false
}

// structField is field, the fast way for a field in the struct itself.
func (p *printer) structField(r ref, f *typedField) (fr ref, present, ok bool) {
	if f.direct {
		fr = r.at(f.offset)
		return fr, !f.omitsEmpty(fr.p) || p.splits(fr, f.info), true
	}
	return p.field(r, f)
}

// splits reports whether the value of r, of type ti, is the member to split the text at.
func (p *printer) splits(r ref, ti *typeInfo) bool {
	return p.split != nil && r.p == p.split && ti.typ == p.splitTo
}

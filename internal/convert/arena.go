// This file defines the arena in which ToStarlark allocates the dicts and lists it makes: in
// chunks, rather than one Go allocation for each value; and, for ToStarlarkRecycled, the
// same chunks again for the next pod. It is a fast path: with fast.Off, ToStarlarkRecycled
// does not recycle.

package convert

import (
	"slices"

	"go.starlark.net/starlark"
)

// Chunk sizes of an arena, in values. A chunk lives as long as any value in it.
const (
	dictChunk = 4  // the least chunk of dicts; see arena.dictHint
	maxDicts  = 64 // the most dicts in one chunk: 32 KiB
	listChunk = 16
	elemChunk = 64
)

// An arena hands out Starlark values carved from chunks. Each slot of a chunk is handed out
// once and never written again by the arena, so values from one arena may outlive it, be
// shared between goroutines and be mutated by scripts as any other values are.
//
// A chunk lives as long as any value in it, and the collector scans all of it: a dead dict in
// a live chunk keeps its entries alive. Chunks shared by the values of two ToStarlark calls
// would chain one pod's values to the next one's, so each call ends with [arena.reset] and
// the values of one call never share a chunk with another's.
//
// A dict or list from an arena is an ordinary *starlark.Dict or *starlark.List. An element
// slice of a list has no spare capacity, so a list that grows moves its elements out of the
// chunk.
//
// A dict is large (512 bytes, with the table of its first entries), so the unused tail of the
// last chunk of dicts would cost more than the dicts of a small pod. The arena remembers how
// many dicts the previous call made (dictHint, kept by reset) and sizes the chunks of the next
// call to that, between dictChunk and maxDicts: pods of one shape, as a batch is, then take
// their dicts from one chunk of the right size.
//
// A recycling arena (one with a recycler, see [ToStarlarkRecycled]) keeps its chunks instead:
// recycle clears what it handed out and hands the same slots out again. Its caller promises
// that nothing uses the values it handed out after that. Its chunks are of the largest size,
// since they are made once.
type arena struct {
	dicts []starlark.Dict
	lists []starlark.List
	elems []starlark.Value

	ndicts   int // small dicts handed out since the last reset
	dictHint int // ndicts at the last reset

	recycler *recycler // the chunks of a recycling arena, or nil
}

// A recycler holds the chunks of a recycling arena.
type recycler struct {
	dicts chunkPool[starlark.Dict]
	lists chunkPool[starlark.List]
	elems chunkPool[starlark.Value]
}

// A chunkPool holds the chunks of one kind of a recycling arena.
type chunkPool[T any] struct {
	used [][]T // the chunks handed out since the last recycle, in order
	free [][]T // the chunks recycled, empty, to hand out again
}

// next returns an empty chunk of capacity n: a free one, or a new one.
func (p *chunkPool[T]) next(n int) []T {
	var c []T
	if k := len(p.free); k > 0 {
		c, p.free = p.free[k-1], p.free[:k-1]
	} else {
		c = make([]T, 0, n)
	}
	p.used = append(p.used, c)
	return c
}

// maxKeptChunks bounds the chunks of each kind that a recycler keeps: about 300 KiB in all,
// more than a pod of a few hundred lines takes. A larger pod's other chunks are left to the
// collector, so that one large pod does not make a worker hold its memory for good.
const maxKeptChunks = 8

// recycle frees the chunks handed out, the first of them to be handed out again in the same
// order, at most maxKeptChunks in all, each cleared: all of its slots, or up to last for the
// last chunk, the one being filled.
func (p *chunkPool[T]) recycle(last int) {
	keep := max(0, min(len(p.used), maxKeptChunks-len(p.free)))
	for i, c := range slices.Backward(p.used[:keep]) {
		if i == len(p.used)-1 {
			clear(c[:last])
		} else {
			clear(c[:cap(c)])
		}
		p.free = append(p.free, c[:0])
	}
	clear(p.used)
	p.used = p.used[:0]
}

// dict returns a new empty dict for n entries.
func (a *arena) dict(n int) *starlark.Dict {
	// An empty dict holds up to 7 entries without allocating its table.
	if n > 7 {
		return starlark.NewDict(n)
	}
	if len(a.dicts) == cap(a.dicts) {
		if a.recycler != nil {
			a.dicts = a.recycler.dicts.next(maxDicts)
		} else {
			a.dicts = make([]starlark.Dict, 0, min(max(a.dictHint-a.ndicts, dictChunk), maxDicts))
		}
	}
	a.ndicts++
	a.dicts = a.dicts[:len(a.dicts)+1]
	return &a.dicts[len(a.dicts)-1]
}

// list returns a new list of n elements and the slice of its elements, all nil, for the
// caller to set.
func (a *arena) list(n int) (*starlark.List, []starlark.Value) {
	var elems []starlark.Value
	switch {
	case n > elemChunk/4:
		elems = make([]starlark.Value, n)
	case n > 0:
		if len(a.elems)+n > cap(a.elems) {
			if a.recycler != nil {
				a.elems = a.recycler.elems.next(elemChunk)
			} else {
				a.elems = make([]starlark.Value, 0, elemChunk)
			}
		}
		i := len(a.elems)
		a.elems = a.elems[:i+n]
		elems = a.elems[i : i+n : i+n]
	}
	if len(a.lists) == cap(a.lists) {
		if a.recycler != nil {
			a.lists = a.recycler.lists.next(listChunk)
		} else {
			a.lists = make([]starlark.List, 0, listChunk)
		}
	}
	a.lists = a.lists[:len(a.lists)+1]
	l := &a.lists[len(a.lists)-1]
	*l = *starlark.NewList(elems)
	return l, elems
}

// reset drops the arena's chunks, partly used or not, so that the next values come from new
// chunks, and keeps the number of dicts this call made as the hint for the next.
func (a *arena) reset() { *a = arena{dictHint: a.ndicts} }

// recycle makes every slot a recycling arena handed out free again, cleared: a dict as a new
// one, a list's elements nil, so that nothing is kept alive by them.
func (a *arena) recycle() {
	r := a.recycler
	r.dicts.recycle(len(a.dicts))
	r.lists.recycle(len(a.lists))
	r.elems.recycle(len(a.elems))
	*a = arena{recycler: r}
}

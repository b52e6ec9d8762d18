package convert

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"weak"

	"go.starlark.net/starlark"
)

// TestArena checks that values from an arena are ordinary values that stay valid and
// independent of each other after the arena moves on.
func TestArena(t *testing.T) {
	var a arena
	// Lists share an element chunk; appending to one must not touch the next.
	l1, e1 := a.list(2)
	e1[0], e1[1] = starlark.MakeInt(1), starlark.MakeInt(2)
	l2, e2 := a.list(1)
	e2[0] = starlark.MakeInt(3)
	if err := l1.Append(starlark.MakeInt(4)); err != nil {
		t.Fatal(err)
	}
	if got, want := l1.String(), "[1, 2, 4]"; got != want {
		t.Errorf("first list: got %s, want %s", got, want)
	}
	if got, want := l2.String(), "[3]"; got != want {
		t.Errorf("second list: got %s, want %s", got, want)
	}
	if l, elems := a.list(0); l.Len() != 0 || len(elems) != 0 {
		t.Errorf("empty list: got %s", l)
	}

	// Dicts of any size work as dicts made by starlark.NewDict.
	for _, n := range []int{0, 1, 7, 8, 100} {
		d := a.dict(n)
		for i := range n {
			if err := d.SetKey(starlark.MakeInt(i), starlark.MakeInt(i*i)); err != nil {
				t.Fatal(err)
			}
		}
		if d.Len() != n {
			t.Errorf("dict of %d: got length %d", n, d.Len())
		}
		for i := range n {
			if v, found, _ := d.Get(starlark.MakeInt(i)); !found || v.String() != starlark.MakeInt(i*i).String() {
				t.Errorf("dict of %d: got %v for %d, want %d", n, v, i, i*i)
			}
		}
	}
}

// TestArenaNoChains checks that the values of one ToStarlark call share no chunk with the
// next call's: otherwise the dead dicts of a pod would stay in a chunk kept alive by the next
// pod, their entries with them, and each pod would hold on to the one before it.
func TestArenaNoChains(t *testing.T) {
	pod := trainingPod(t)
	first, err := ToStarlark(pod)
	if err != nil {
		t.Fatal(err)
	}
	var dead []weak.Pointer[starlark.Dict]
	var collect func(x starlark.Value)
	collect = func(x starlark.Value) {
		switch x := x.(type) {
		case *starlark.Dict:
			dead = append(dead, weak.Make(x))
			for _, item := range x.Items() {
				collect(item[1])
			}
		case *starlark.List:
			for i := range x.Len() {
				collect(x.Index(i))
			}
		}
	}
	collect(first)
	first = nil
	if len(dead) < 10 {
		t.Fatalf("the training pod has %d dicts, want at least 10", len(dead))
	}

	next, err := ToStarlark(pod)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	for i, p := range dead {
		if p.Value() != nil {
			t.Errorf("dict %d of %d of the first pod is alive while the next pod is", i, len(dead))
		}
	}
	runtime.KeepAlive(next)
}

// TestArenaDictHint checks that the chunks of dicts are sized to what the previous call made,
// between dictChunk and maxDicts, and that the dicts of one call after a reset are distinct
// from the last call's.
func TestArenaDictHint(t *testing.T) {
	var a arena
	if a.dict(1); cap(a.dicts) != dictChunk {
		t.Fatalf("first chunk: got %d dicts, want %d", cap(a.dicts), dictChunk)
	}
	for range 9 {
		a.dict(0)
	}
	last := a.dict(0) // the 11th dict
	a.reset()
	first := a.dict(0)
	if first == last {
		t.Fatal("a dict after reset is the dict before it")
	}
	if cap(a.dicts) != 11 {
		t.Errorf("chunk after a call of 11 dicts: got %d dicts, want 11", cap(a.dicts))
	}
	for range 10 {
		a.dict(0)
	}
	if a.dict(0); cap(a.dicts) != dictChunk {
		t.Errorf("chunk past the hint: got %d dicts, want %d", cap(a.dicts), dictChunk)
	}
	for range 100 {
		a.dict(0)
	}
	a.reset()
	if a.dict(0); cap(a.dicts) != maxDicts {
		t.Errorf("chunk after a call of 112 dicts: got %d dicts, want %d", cap(a.dicts), maxDicts)
	}
	if d := a.dict(8); cap(a.dicts) != maxDicts || len(a.dicts) != 1 || d.Len() != 0 {
		t.Errorf("a dict of 8 entries: got it from the chunk, or a used dict")
	}
}

// TestArenaRecycle checks that a recycling arena hands out the same slots again after
// recycle, each as good as new: a dict empty and usable, even one that grew its own table; a
// list with its own elements; a string with its new text.
func TestArenaRecycle(t *testing.T) {
	a := arena{recycler: new(recycler)}
	var dicts []*starlark.Dict
	for i := range maxDicts + 3 { // into a second chunk
		d := a.dict(1)
		if err := d.SetKey(starlark.String("k"), starlark.MakeInt(i)); err != nil {
			t.Fatal(err)
		}
		dicts = append(dicts, d)
	}
	for i := range 20 { // the first dict grows a table of its own
		if err := dicts[0].SetKey(starlark.MakeInt(i), starlark.None); err != nil {
			t.Fatal(err)
		}
	}
	l, elems := a.list(2)
	elems[0], elems[1] = starlark.MakeInt(1), starlark.MakeInt(2)
	a.recycle()

	if n := len(a.recycler.dicts.free); n != 2 {
		t.Fatalf("got %d free chunks of dicts after recycle, want 2", n)
	}
	reused := map[*starlark.Dict]bool{}
	for range maxDicts + 3 {
		d := a.dict(1)
		reused[d] = true
		if d.Len() != 0 {
			t.Fatalf("a recycled dict has %d entries: %s", d.Len(), d)
		}
		if err := d.SetKey(starlark.String("new"), starlark.True); err != nil {
			t.Fatal(err)
		}
		if v, found, _ := d.Get(starlark.String("new")); !found || v != starlark.True || d.Len() != 1 {
			t.Fatalf("a recycled dict: got %s", d)
		}
	}
	for i, d := range dicts {
		if !reused[d] {
			t.Errorf("dict %d was not handed out again", i)
		}
	}
	l2, elems2 := a.list(1)
	if l2 != l {
		t.Errorf("the list was not handed out again")
	}
	elems2[0] = starlark.MakeInt(3)
	if got := l2.String(); got != "[3]" {
		t.Errorf("recycled list: got %s, want [3]", got)
	}
}

// TestArenaRecycleKeeps checks that a recycling arena keeps at most maxKeptChunks chunks of a
// kind, the first ones, after a conversion that took more.
func TestArenaRecycleKeeps(t *testing.T) {
	a := arena{recycler: new(recycler)}
	var first []*starlark.Dict
	for i := range (maxKeptChunks + 2) * maxDicts {
		d := a.dict(0)
		if i < maxKeptChunks*maxDicts {
			first = append(first, d)
		}
	}
	a.recycle()
	if n := len(a.recycler.dicts.free); n != maxKeptChunks {
		t.Fatalf("got %d free chunks of dicts, want %d", n, maxKeptChunks)
	}
	for i, want := range first {
		if d := a.dict(0); d != want {
			t.Fatalf("dict %d: got another dict than the one before recycle", i)
		}
	}
	if d := a.dict(0); slices.Contains(first, d) {
		t.Fatal("a dict past the kept chunks was handed out twice")
	}
}

// TestToStarlarkRecycled checks that a recycled conversion gives the values ToStarlark
// gives, again and again, with its memory recycled in between; and that conversions under
// way at once, from several goroutines, do not share it (the race detector watches).
func TestToStarlarkRecycled(t *testing.T) {
	pod := trainingPod(t)
	want, err := ToStarlark(pod)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 50 {
				x, release, err := ToStarlarkRecycled(pod)
				if err != nil {
					t.Error(err)
					return
				}
				if eq, err := starlark.Equal(x, want); err != nil || !eq {
					t.Errorf("conversion %d: got %s, want %s", i, x, want)
				}
				// Scripts change what they get: that must not reach the next conversion.
				spec, _, _ := x.(*starlark.Dict).Get(starlark.String("spec"))
				for j := range 20 {
					if err := spec.(*starlark.Dict).SetKey(starlark.MakeInt(j), starlark.None); err != nil {
						t.Error(err)
					}
				}
				release()
				release() // a second call does nothing
			}
		})
	}
	wg.Wait()

	if _, _, err := ToStarlarkRecycled(struct{ F func() }{}); err == nil {
		t.Error("a value ToStarlark refuses: got no error")
	}
	if x, release, err := ToStarlarkRecycled(nil); x != starlark.None || err != nil {
		t.Errorf("nil: got %v, %v", x, err)
	} else {
		release()
	}
}

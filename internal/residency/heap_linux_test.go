package residency

import (
	"bytes"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"
)

// TestHugeHeap advises the heap's mapping: the mapping that holds the heap then carries
// the flag of huge pages, and an allocation as large as what HugeHeap mapped, which the
// runtime would otherwise map anew, lands in it whole.
func TestHugeHeap(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(mode, []byte("[never]")) {
		t.Skipf("the kernel gives no transparent huge pages (%q, %v)", mode, err)
	}
	const n = 32 << 20
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	advised, err := HugeHeap(n)
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("after HugeHeap the collector's percent is %d, want 150 as before", got)
	}
	if advised < n {
		t.Errorf("advised %d bytes, want at least %d", advised, n)
	}
	next := make([]byte, n)
	for _, b := range []*byte{&next[0], &next[n-1]} {
		flags, size := vmFlags(t, uintptr(unsafe.Pointer(b)))
		if !strings.Contains(" "+flags+" ", " hg ") {
			t.Errorf("the mapping of a fresh allocation (%d kB) has flags %q, want hg", size, flags)
		}
		if size*1024 != advised {
			t.Errorf("a fresh allocation is in a mapping of %d kB, want the advised one of %d kB", size, advised/1024)
		}
	}
	next[0] = 1
}

func TestHugeHeapNothing(t *testing.T) {
	if got, err := HugeHeap(0); got != 0 || err != nil {
		t.Errorf("HugeHeap(0) = %d, %v, want 0, nil", got, err)
	}
}

// vmFlags returns the VmFlags and the size in kB of the mapping that holds the address at.
func vmFlags(t *testing.T, at uintptr) (string, int64) {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	var size int64
	for line := range bytes.Lines(data) {
		if m, _, _, _, ok := parseHead(line); ok {
			in = m.start <= at && at < m.end
			size = int64(m.end-m.start) / 1024
		} else if rest, found := bytes.CutPrefix(line, []byte("VmFlags:")); found && in {
			return strings.TrimSpace(string(rest)), size
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", at)
	return "", 0
}

func TestAnonymousMapping(t *testing.T) {
	const maps = `00400000-00f44000 r-xp 00000000 fd:01 1234                               /bin/prog
01a90000-01b3c000 rw-p 01690000 fd:01 1234                               /bin/prog
1c2a000000-1c2a400000 rw-p 00000000 00:00 0 
1c2a400000-1c2e000000 ---p 00000000 00:00 0 
1c2e000000-1c2e400000 rw-p 00000000 00:00 0                              [anon: Go: heap]
7ffd1000-7ffd2000 rw-p 00000000 00:00 0                                  [stack]
`
	for _, tc := range []struct {
		at   uintptr
		want mapping
		ok   bool
	}{
		{0x1c2a000000, mapping{0x1c2a000000, 0x1c2a400000}, true},
		{0x1c2a3fffff, mapping{0x1c2a000000, 0x1c2a400000}, true},
		{0x1c2a400000, mapping{0x1c2a400000, 0x1c2e000000}, false}, // reserved, not mapped
		{0x1c2e000001, mapping{0x1c2e000000, 0x1c2e400000}, true},
		{0x01a90000, mapping{0x01a90000, 0x01b3c000}, false}, // the executable's data
		{0x7ffd1000, mapping{0x7ffd1000, 0x7ffd2000}, true},  // named, as Go 1.25 names the heap's
		{0x2000, mapping{}, false},
	} {
		got, ok := anonymousMapping([]byte(maps), tc.at)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("anonymousMapping(%#x) = %v, %v, want %v, %v", tc.at, got, ok, tc.want, tc.ok)
		}
	}
}

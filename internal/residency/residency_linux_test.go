package residency

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReleaseExecutable releases the pages of this test binary: its file-backed resident
// memory falls, and the program runs on.
func TestReleaseExecutable(t *testing.T) {
	before := rssFile(t)
	released, err := ReleaseExecutable()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	if released <= 0 {
		t.Fatalf("released %d bytes of mappings, want some", released)
	}
	if after >= before {
		t.Errorf("RssFile is %d kB after, %d kB before, want less", after, before)
	}
	// Code and read-only data come back on use.
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(strconv.Itoa(i))
	}
	if got := len(b.String()); got != 2890 {
		t.Errorf("got %d digits, want 2890", got)
	}
}

// rssFile returns the process's RssFile in kB.
func rssFile(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func TestReadOnlyMappings(t *testing.T) {
	const smaps = `00400000-00f44000 r-xp 00000000 fd:01 1234                               /bin/prog
Size:              11536 kB
Rss:                8396 kB
Anonymous:             0 kB
00f44000-01a90000 r--p 00b44000 fd:01 1234                               /bin/prog
Anonymous:             0 kB
01a90000-01b3c000 rw-p 01690000 fd:01 1234                               /bin/prog
Anonymous:           368 kB
01b3c000-01b40000 r--p 01700000 fd:01 1234                               /bin/prog
Anonymous:             4 kB
02000000-02001000 r--s 00000000 fd:01 1234                               /bin/prog
Anonymous:             0 kB
03000000-03001000 r-xp 00000000 fd:01 999                                /lib/other.so
Anonymous:             0 kB
04000000-04001000 r-xp 00000000 fd:02 1234                               /mnt/prog
Anonymous:             0 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0 
Anonymous:          1024 kB
`
	got := readOnlyMappings([]byte(smaps), mkdev(0xfd, 1), 1234)
	want := []mapping{{0x400000, 0xf44000}, {0xf44000, 0x1a90000}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(mapping{})); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestOff checks that $STARPOD_RESIDENCY=off turns the package off.
func TestOff(t *testing.T) {
	t.Setenv("STARPOD_RESIDENCY", "off")
	if n, err := ReleaseExecutable(); n != 0 || err != nil {
		t.Errorf("ReleaseExecutable() = %d, %v, want 0, nil", n, err)
	}
	if n, err := HugeHeap(16 << 20); n != 0 || err != nil {
		t.Errorf("HugeHeap(16 MiB) = %d, %v, want 0, nil", n, err)
	}
}

package sandbox

import "testing"

func TestRuntimeCrash(t *testing.T) {
	for _, c := range []struct {
		stderr string
		want   bool
	}{
		// The collector, out of address space for its span queue.
		{"SIGSEGV: segmentation violation\nPC=0x4394dd m=0 sigcode=1 addr=0x0\n\ngoroutine 0 gp=0x199d760 m=0 mp=0x199e940 [idle]:\nruntime.(*spanQueue).tryDrain(0x7ffe00000400?, 0x44132f?, 0x663588c8?)\n", true},
		{"fatal error: unexpected signal during runtime execution\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4394dd]\n", true},
		// A panic of Go code is not a crash of the runtime.
		{"panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4394dd]\n", false},
		{"starpod worker: got protocol \"x\", want \"starpod-worker/2\"\n", false},
	} {
		if got := runtimeCrash(c.stderr); got != c.want {
			t.Errorf("runtimeCrash(%q) = %v, want %v", c.stderr, got, c.want)
		}
	}
}

func TestFatalMemory(t *testing.T) {
	for crash, want := range map[string]bool{
		"fatal error: runtime: out of memory\n\nruntime stack:\n":                          true,
		"runtime: out of memory: cannot allocate 1073741824-byte block (3997696 in use)\n": true,
		"fatal error: stack overflow\n":                                                    true,
		"runtime: goroutine stack exceeds 1000000000-byte limit\n":                         true,
		"fatal error: concurrent map writes\n":                                             false,
		"panic: not a memory problem\n":                                                    false,
		"":                                                                                 false,
	} {
		if got := fatalMemory(crash); got != want {
			t.Errorf("fatalMemory(%q) = %v, want %v", crash, got, want)
		}
	}
}

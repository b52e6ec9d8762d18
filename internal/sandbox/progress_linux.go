package sandbox

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newProgress returns a child's page: a memory file of one page, which the child maps and the
// parent reads. It returns nil if the system refuses one.
func newProgress() *os.File {
	fd, err := unix.MemfdCreate("starpod-progress", unix.MFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "progress")
	if err := f.Truncate(int64(os.Getpagesize())); err != nil {
		f.Close()
		return nil
	}
	return f
}

// mapProgress maps the page f shared with the parent, and returns its words, or nil. The
// mapping lives as long as the process.
func mapProgress(f *os.File) *[pageWords]uint64 {
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	// A page is aligned for a uint64.
	return (*[pageWords]uint64)(unsafe.Pointer(&mem[0]))
}

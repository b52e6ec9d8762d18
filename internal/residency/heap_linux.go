package residency

// This file defines HugeHeap on Linux, with madvise(2) on the mapping /proc/self/maps lists.

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"
)

// HugeHeap has the Go heap map its next n bytes at once, and asks the kernel to back the
// heap's mapping, those bytes with it, with transparent huge pages (MADV_HUGEPAGE): the heap
// then grows into memory that takes one page fault per 2 MiB instead of one per 4 KiB. It
// reports the size of the mapping it advised.
//
// A process's first page faults cost far more than its work on some machines (11 µs each
// on paravirtualised ones, where the hypervisor maps every page), and a short-lived process
// takes one for every page of heap it touches. Where the system's transparent huge pages are
// "madvise" (a common default), the kernel gives them only to mappings that ask, which the
// Go runtime does not; where they are "always", the heap has them anyway, and where "never",
// madvise fails and HugeHeap reports it.
//
// Only the mapping that holds the heap so far and the n bytes changes: the runtime maps the
// heap's later growth anew, in small pages. Resident memory grows by at most what rounding
// that mapping's touched parts up to huge pages adds. The n bytes stay mapped (the heap
// keeps what it maps), and are used before the heap maps more.
func HugeHeap(n int) (int64, error) {
	if n <= 0 || Off() {
		return 0, nil
	}
	// The collector stays off while the n bytes are allocated: so far above the heap's goal, a
	// collection would begin at once, and the allocation would help mark the heap first. That
	// took a twelfth of a worker's CPU time to its ready frame.
	gcPercent := debug.SetGCPercent(-1)
	premap := make([]byte, n) // fresh from the system: the runtime does not touch it
	size, err := adviseHuge(uintptr(unsafe.Pointer(unsafe.SliceData(premap))))
	runtime.KeepAlive(premap)
	premap = nil
	debug.SetGCPercent(gcPercent)
	if err != nil {
		return 0, err
	}
	// The collection frees the n bytes, so that the allocations that follow take them.
	runtime.GC()
	return size, nil
}

// adviseHuge advises MADV_HUGEPAGE for the private anonymous mapping that holds the address
// at, and returns its size.
func adviseHuge(at uintptr) (int64, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	m, ok := anonymousMapping(maps, at)
	if !ok {
		return 0, errors.New("the heap is in no private anonymous read-write mapping of /proc/self/maps")
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_HUGEPAGE); errno != 0 {
		return 0, errno
	}
	return int64(m.end - m.start), nil
}

// anonymousMapping returns the private anonymous read-write mapping that maps, the text of
// /proc/self/maps, lists as holding the address at.
func anonymousMapping(maps []byte, at uintptr) (mapping, bool) {
	for line := range bytes.Lines(maps) {
		m, perms, dev, ino, ok := parseHead(line)
		if ok && m.start <= at && at < m.end {
			return m, string(perms) == "rw-p" && dev == 0 && ino == 0
		}
	}
	return mapping{}, false
}

package sandbox

// This file defines a child's page, memory the child writes and its parent reads, even after
// the child died: a worker's progress, a count it publishes so that after it dies the parent
// knows how far it got, without the worker writing to its pipe at each step; its mark, a
// second count, which says the same of what the worker does but does not count against its
// time; and the child's own peak memory, for the parent to tell a death of memory.

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
)

// progressFD is the descriptor of a child's page, if its parent made one.
const progressFD = crashFD + 1

// envProgress says that the child has a page at progressFD.
const envProgress = "STARPOD_SANDBOX_PROGRESS"

// The words of a child's page.
const (
	progressIndex = iota // the worker's progress (see SetProgress)
	markIndex            // the worker's mark (see SetMark)
	peakIndex            // the child's own peak resident memory in bytes (see publishPeak)
	pageWords
)

// progressWord, markWord and peakWord are the words of the child's page mapped into its
// memory; nil in a parent, or where the system has no memory files.
var progressWord, markWord, peakWord *uint64

// HasProgress reports whether this worker publishes its progress (see [SetProgress]): where it
// does not, its parent learns how far it got only from what it answered.
func HasProgress() bool { return progressWord != nil }

// SetProgress publishes n, the worker's count of what it has done, to its parent, which reads
// it with [Worker.Progress]. It costs a store to memory; it does nothing where HasProgress is
// false.
func SetProgress(n uint64) {
	if progressWord != nil {
		atomic.StoreUint64(progressWord, n)
	}
}

// SetMark publishes n, a count of the worker's own, to its parent, which reads it with
// [Worker.Mark]. Unlike a step of its progress, a mark does not count as an answer: a worker
// marks what it starts, and its parent learns, if it dies, what it died in. It costs a store
// to memory; it does nothing where HasProgress is false.
func SetMark(n uint64) {
	if markWord != nil {
		atomic.StoreUint64(markWord, n)
	}
}

// Progress returns the last count the worker published with [SetProgress], and whether it
// publishes one. While the worker works, the count moves: [Worker.Call] counts a change as an
// answer. Once the worker is idle or dead, it says how far the worker got.
func (w *Worker) Progress() (uint64, bool) { return readWord(w.progress, progressIndex) }

// Mark returns the last mark the worker published with [SetMark], and whether it publishes
// one.
func (w *Worker) Mark() (uint64, bool) { return readWord(w.progress, markIndex) }

// readWord reads the ith word of a child's page, which may be nil.
func readWord(page *os.File, i int64) (uint64, bool) {
	if page == nil {
		return 0, false
	}
	var b [8]byte
	if _, err := page.ReadAt(b[:], 8*i); err != nil {
		return 0, false
	}
	return binary.NativeEndian.Uint64(b[:]), true
}

// enterProgress maps the page of a child whose parent made one, and begins to publish the
// child's peak memory in it.
func enterProgress() {
	if os.Getenv(envProgress) != strconv.Itoa(progressFD) {
		return
	}
	if page := mapProgress(os.NewFile(progressFD, "progress")); page != nil {
		progressWord, markWord, peakWord = &page[progressIndex], &page[markIndex], &page[peakIndex]
		publishPeak()
	}
}

// publishPeak publishes the child's peak resident memory in its page, now and after each
// collection of its heap. A child that dies of its memory limit may die of a signal, with no
// word of memory in its crash report: the parent then calls it a death of memory if its peak
// was high. The peak the system reports of a dead child is no help where the parent is
// larger: a child started by vfork, as os/exec starts one on Linux, takes the parent's peak
// as the first of its own. The child's own peak (VmHWM) does not, and a heap near its limit
// has been collected at least once on its way there.
func publishPeak() {
	atomic.StoreUint64(peakWord, uint64(peakRSS(os.Getpid())))
	// An object of its own, too large for the tiny allocator, unreachable at once: its
	// cleanup runs after the next collection, and arms the next one.
	runtime.AddCleanup(new([32]byte), func(struct{}) { publishPeak() }, struct{}{})
}

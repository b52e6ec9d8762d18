package sandbox

// This file defines a worker's progress: a count the worker publishes in memory its parent
// can read, so that after the worker dies the parent knows how far it got, without the
// worker writing to its pipe at each step; and its mark, a second count in the same memory,
// which says the same of what the worker does but does not count against its time.

import (
	"encoding/binary"
	"os"
	"strconv"
	"sync/atomic"
)

// progressFD is the descriptor of a worker's progress file, if its parent made one.
const progressFD = crashFD + 1

// envProgress says that the worker has a progress file at progressFD.
const envProgress = "STARPOD_SANDBOX_PROGRESS"

// progressWord and markWord are the worker's counts, the first two words of its progress file
// mapped into its memory; nil in a parent, or where the system has no memory files.
var progressWord, markWord *uint64

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
func (w *Worker) Progress() (uint64, bool) { return w.readWord(0) }

// Mark returns the last mark the worker published with [SetMark], and whether it publishes
// one.
func (w *Worker) Mark() (uint64, bool) { return w.readWord(1) }

// readWord reads the ith word of the worker's progress file.
func (w *Worker) readWord(i int64) (uint64, bool) {
	if w.progress == nil {
		return 0, false
	}
	var b [8]byte
	if _, err := w.progress.ReadAt(b[:], 8*i); err != nil {
		return 0, false
	}
	return binary.NativeEndian.Uint64(b[:]), true
}

// enterProgress maps the progress file of a worker whose parent made one.
func enterProgress() {
	if os.Getenv(envProgress) != strconv.Itoa(progressFD) {
		return
	}
	progressWord, markWord = mapProgress(os.NewFile(progressFD, "progress"))
}

//go:build !linux

package residency

// ReleaseExecutable does nothing on this system, and reports 0.
func ReleaseExecutable() (int64, error) { return 0, nil }

// HugeHeap does nothing on this system, and reports 0.
func HugeHeap(n int) (int64, error) { return 0, nil }

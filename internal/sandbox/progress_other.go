//go:build !linux

package sandbox

import "os"

// newProgress returns nil: memory files are Linux's, and a worker elsewhere answers at each
// step instead.
func newProgress() *os.File { return nil }

func mapProgress(f *os.File) *[pageWords]uint64 {
	f.Close()
	return nil
}

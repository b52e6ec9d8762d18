package main

// This file defines the spool that holds the output of apply until it can be written.

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// Sizes of apply's output.
const spoolMemory = 256 << 10 // output kept in memory before it goes to a temporary file (which costs less than the memory)

// A spool holds output until it can be written: in memory up to limit bytes, then in a
// temporary file. Close removes the file.
type spool struct {
	limit int
	mem   bytes.Buffer
	file  *os.File
	bw    *bufio.Writer
}

func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && s.mem.Len()+len(p) > s.limit {
		f, err := os.CreateTemp("", "starpod-apply-*")
		if err != nil {
			return 0, err
		}
		// Unlinked at once: the file lives as long as it is open, and nothing is left
		// behind however the process ends (Ctrl-C, a kill, a crash).
		os.Remove(f.Name())
		s.file, s.bw = f, bufio.NewWriterSize(f, 64<<10)
		if _, err := s.bw.Write(s.mem.Bytes()); err != nil {
			return 0, err
		}
		s.mem = bytes.Buffer{}
	}
	if s.file != nil {
		return s.bw.Write(p)
	}
	return s.mem.Write(p)
}

// copyTo copies everything written so far to w.
func (s *spool) copyTo(w io.Writer) error {
	if s.file == nil {
		_, err := s.mem.WriteTo(w)
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(w, s.file)
	return err
}

// Close closes the temporary file, if there is one, which frees its space: it was unlinked
// when it was made.
func (s *spool) Close() {
	if s.file != nil {
		s.file.Close()
	}
}

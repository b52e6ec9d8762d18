package sandbox

// This file defines frames, the unit of the protocol between a parent and its workers.
//
// A frame is a 4-byte big-endian length n, a kind byte and a body of n bytes. A worker opens
// with a ready frame (FrameReady) naming the protocol once it has limited its memory, so that
// the parent tells a worker that could not start from one that work killed; the parent opens
// with a hello frame (FrameHello) naming its own, and a worker that speaks another protocol
// exits with an error saying so. What follows is the protocol of the program that serves:
// [Worker.Call] sends one request and reads its answers; [Serve] hands the worker's side to a
// handler.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// MaxFrame bounds the body of one frame, in either direction.
const MaxFrame = 1 << 30

// The kinds of the frames of the handshake.
const (
	FrameHello = 'H' // from the parent; body: the protocol
	FrameReady = 'h' // from a worker once it has limited its memory; body: the protocol
)

// WriteFrame writes one frame whose body is the concatenation of body to w, without
// flushing it.
func WriteFrame(w *bufio.Writer, kind byte, body ...[]byte) error {
	n := 0
	for _, b := range body {
		n += len(b)
	}
	if n > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the limit of %d", n, MaxFrame)
	}
	var h [5]byte
	binary.BigEndian.PutUint32(h[:], uint32(n))
	h[4] = kind
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	for _, b := range body {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// A FrameReader reads frames.
type FrameReader struct {
	r   *bufio.Reader
	buf []byte // the body of a frame larger than r's buffer
	// Max is the largest body it reads; a larger frame is an error. NewFrameReader sets it
	// to MaxFrame.
	Max int
}

// NewFrameReader returns a FrameReader of r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), Max: MaxFrame}
}

// PeekKind returns the kind of the next frame without reading it, so that a reader can refuse
// a frame it does not expect before its body comes.
func (fr *FrameReader) PeekKind() (byte, error) {
	h, err := fr.r.Peek(5)
	if err != nil {
		if err == io.EOF && len(h) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	return h[4], nil
}

// Next reads the next frame. Its body is valid until the next call. At the end of the input
// between frames it returns io.EOF, and within a frame io.ErrUnexpectedEOF.
func (fr *FrameReader) Next() (kind byte, body []byte, err error) {
	h, err := fr.r.Peek(5)
	if err != nil {
		if err == io.EOF && len(h) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h)
	kind = h[4]
	fr.r.Discard(5)
	if int64(n) > int64(fr.Max) {
		return 0, nil, fmt.Errorf("frame of %d bytes exceeds the limit of %d", n, fr.Max)
	}
	if int(n) <= fr.r.Size() {
		// The body stays in the reader's buffer, without a copy.
		body, err = fr.r.Peek(int(n))
		if err == nil {
			fr.r.Discard(int(n))
		}
	} else {
		// The buffer grows as the body comes, not at once to the length a broken peer
		// announces.
		b := bytes.NewBuffer(fr.buf[:0])
		_, err = io.CopyN(b, fr.r, int64(n))
		fr.buf = b.Bytes()
		body = fr.buf
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return kind, body, nil
}

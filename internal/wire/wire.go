// Package wire reads and writes the binary fields of the messages between starpod and its
// worker processes: uvarints, varints, bytes and strings with a uvarint length before them.
package wire

import (
	"encoding/binary"
	"errors"
)

// ErrMalformed is the error of a message whose fields do not parse.
var ErrMalformed = errors.New("malformed frame")

// AppendString appends s with its length before it.
func AppendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendBytes appends p with its length before it.
func AppendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// A Decoder reads the fields of a message in B. After the first error (Err) it reads
// nothing, and every read gives the zero value.
type Decoder struct {
	B   []byte
	Err error
}

// Fail ends the reading with ErrMalformed.
func (d *Decoder) Fail() {
	d.Err, d.B = ErrMalformed, nil
}

// Uvarint reads a uvarint.
func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Varint reads a varint.
func (d *Decoder) Varint() int64 {
	v, n := binary.Varint(d.B)
	if n <= 0 {
		d.Fail()
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Count reads the number of the items that follow, each at least one byte long: a number
// larger than the bytes left is an error.
func (d *Decoder) Count() int {
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.Fail()
		return 0
	}
	return int(n)
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if len(d.B) == 0 {
		d.Fail()
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

// Bytes reads bytes with their length before them. The result aliases B, with no room to
// append.
func (d *Decoder) Bytes() []byte {
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.Fail()
		return nil
	}
	v := d.B[:n:n]
	d.B = d.B[n:]
	return v
}

// String reads a string with its length before it.
func (d *Decoder) String() string {
	return string(d.Bytes())
}

// End reports the error of the message: Err, or ErrMalformed when bytes are left.
func (d *Decoder) End() error {
	if d.Err == nil && len(d.B) > 0 {
		d.Fail()
	}
	return d.Err
}

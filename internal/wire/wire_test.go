package wire

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestRoundTrip checks that what the Append functions write reads back.
func TestRoundTrip(t *testing.T) {
	b := AppendString(nil, "hello")
	b = AppendBytes(b, []byte{1, 2, 3})
	b = binary.AppendUvarint(b, 2)
	b = AppendString(b, "")
	b = AppendString(b, "x")
	b = binary.AppendVarint(b, -7)
	b = append(b, 9)
	d := &Decoder{B: b}
	if s := d.String(); s != "hello" {
		t.Errorf("String = %q", s)
	}
	if p := d.Bytes(); string(p) != "\x01\x02\x03" || cap(p) != 3 {
		t.Errorf("Bytes = %v (cap %d), want [1 2 3] with no room to append", p, cap(p))
	}
	n := d.Count()
	var got []string
	for range n {
		got = append(got, d.String())
	}
	if len(got) != 2 || got[0] != "" || got[1] != "x" {
		t.Errorf("items = %q", got)
	}
	if v := d.Varint(); v != -7 {
		t.Errorf("Varint = %d", v)
	}
	if c := d.Byte(); c != 9 {
		t.Errorf("Byte = %d", c)
	}
	if err := d.End(); err != nil {
		t.Errorf("End = %v", err)
	}
}

// TestMalformed checks that every read past the end, and a count or length larger than what
// is left, fails the decoder, which then reads only zero values.
func TestMalformed(t *testing.T) {
	for name, read := range map[string]func(d *Decoder){
		"empty uvarint":  func(d *Decoder) { d.Uvarint() },
		"empty varint":   func(d *Decoder) { d.Varint() },
		"empty byte":     func(d *Decoder) { d.Byte() },
		"long bytes":     func(d *Decoder) { d.Bytes() },
		"large count":    func(d *Decoder) { d.Count() },
		"truncated utf8": func(d *Decoder) { _ = d.String() },
	} {
		d := &Decoder{}
		switch name {
		case "long bytes", "truncated utf8":
			d.B = AppendString(nil, "hello")[:3]
		case "large count":
			d.B = binary.AppendUvarint(nil, 1000)
		}
		read(d)
		if !errors.Is(d.Err, ErrMalformed) {
			t.Errorf("%s: Err = %v, want ErrMalformed", name, d.Err)
		}
		if s := d.String(); s != "" || d.Uvarint() != 0 {
			t.Errorf("%s: reads after the error give values", name)
		}
	}
	d := &Decoder{B: []byte{1, 2}}
	d.Byte()
	if err := d.End(); !errors.Is(err, ErrMalformed) {
		t.Errorf("End with a byte left = %v, want ErrMalformed", err)
	}
}

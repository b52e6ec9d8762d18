package worker

// This file defines the encoding of messages: protocol buffers, written and read field by
// field with package protowire.

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrMalformed is the error of a message that does not parse.
var ErrMalformed = errors.New("malformed message")

// AppendString appends the field num of type string.
func AppendString(b []byte, num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

// AppendBytes appends the field num of type bytes, or of an embedded message encoded as p.
func AppendBytes(b []byte, num protowire.Number, p []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), p)
}

// AppendUint appends the field num of type uint64.
func AppendUint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// AppendInt appends the field num of type sint64.
func AppendInt(b []byte, num protowire.Number, v int64) []byte {
	return AppendUint(b, num, protowire.EncodeZigZag(v))
}

// AppendBool appends the field num of type bool.
func AppendBool(b []byte, num protowire.Number, v bool) []byte {
	return AppendUint(b, num, protowire.EncodeBool(v))
}

// A Field is a field of a message: a varint (V) or a length-delimited value (B: a string,
// bytes or an embedded message), which aliases the message.
type Field struct {
	Num protowire.Number
	V   uint64
	B   []byte
}

func (f Field) String() string { return string(f.B) }

// Int returns the value of a field of type sint64.
func (f Field) Int() int64 { return protowire.DecodeZigZag(f.V) }

// Bool returns the value of a field of type bool.
func (f Field) Bool() bool { return f.V != 0 }

// Fields calls fn with each field of the message b, in order, and returns its first error, or
// ErrMalformed if b does not parse. Fields of other wire types than varint and
// length-delimited are skipped.
func Fields(b []byte, fn func(Field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ErrMalformed
		}
		b = b[n:]
		f := Field{Num: num}
		switch typ {
		case protowire.VarintType:
			f.V, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			f.B, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return ErrMalformed
			}
			b = b[n:]
			continue
		}
		if n < 0 {
			return ErrMalformed
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

package engine

// This file defines the encoding of errors in the worker protocol (see proto.go): an error of
// Compile or Apply crosses as an error message, cut to bounds the parent can hold.

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/starpod/starpod/internal/worker"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// appendError appends the encoding of err, an error of Compile or Apply, as an error message
// of about max bytes at most (max is at least 1 MiB): it cuts each text to maxErrorText, drops
// bad values longer than that, and drops the field errors that do not fit, with a last one
// saying how many.
func appendError(b []byte, err error, max int) []byte {
	var e *Error
	if !errors.As(err, &e) {
		return worker.AppendString(b, 7, cutText(err.Error(), maxErrorText))
	}
	start := len(b)
	b = worker.AppendString(b, 1, e.Overlay)
	b = appendPos(b, 2, e.Pos)
	b = worker.AppendString(b, 5, cutText(e.Backtrace, maxErrorText))
	var lim *LimitError
	var deadline *DeadlineError
	if errors.As(e.Err, &deadline) {
		b = worker.AppendInt(b, 9, int64(deadline.After))
	} else if errors.As(e.Err, &lim) {
		l := worker.AppendInt(nil, 1, int64(lim.Limit))
		l = worker.AppendString(l, 2, lim.Value)
		l = worker.AppendString(l, 3, lim.Path)
		if lim.Err != nil {
			l = worker.AppendString(l, 4, cutText(lim.Err.Error(), maxErrorText))
		}
		b = worker.AppendBytes(b, 8, l)
	} else if e.Err != nil {
		b = worker.AppendString(b, 7, cutText(e.Err.Error(), maxErrorText))
	}
	// Keep the field errors that fit, and room for a last one.
	var fb []byte
	for i, fe := range e.Fields {
		fb = worker.AppendString(fb[:0], 1, string(fe.Type))
		fb = worker.AppendString(fb, 2, cutText(fe.Field, maxErrorText))
		if fe.BadValue != nil {
			if data, err := json.Marshal(fe.BadValue); err == nil && len(data) <= maxErrorText {
				fb = worker.AppendBytes(fb, 3, data)
			}
		}
		fb = worker.AppendString(fb, 4, cutText(fe.Detail, maxErrorText))
		if i < len(e.Writes) {
			w := e.Writes[i]
			wb := appendPos(nil, 1, w.Pos)
			wb = worker.AppendString(wb, 4, cutText(w.Backtrace, maxErrorText))
			wb = worker.AppendBool(wb, 5, w.Input)
			fb = worker.AppendBytes(fb, 5, wb)
		}
		if len(b)-start+len(fb)+8 > max-2*maxErrorText-1<<10 {
			fb = worker.AppendString(fb[:0], 1, string(field.ErrorTypeTooMany))
			fb = worker.AppendString(fb, 2, cutText(fe.Field, maxErrorText))
			fb = worker.AppendString(fb, 4, fmt.Sprintf("and %d more errors, not shown", len(e.Fields)-i))
			return worker.AppendBytes(b, 6, fb)
		}
		b = worker.AppendBytes(b, 6, fb)
	}
	return b
}

// decodeError turns an error message back into the *Error it was made from: same fields,
// same message; its causes are plain errors with their messages, but for a *LimitError and a
// *DeadlineError, which keep their types.
func decodeError(data []byte) (*Error, error) {
	e := new(Error)
	var p position
	var writes []Write
	err := worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 1:
			e.Overlay = f.String()
		case 5:
			e.Backtrace = f.String()
		case 6:
			fe, w, err := decodeFieldError(f.B)
			if err != nil {
				return err
			}
			e.Fields = append(e.Fields, fe)
			if w != nil {
				writes = append(writes, make([]Write, len(e.Fields)-len(writes))...)
				writes[len(e.Fields)-1] = *w
			}
		case 7:
			e.Err = errors.New(f.String())
		case 9:
			e.Err = &DeadlineError{After: time.Duration(f.Int())}
		case 8:
			lim := new(LimitError)
			e.Err = lim
			return worker.Fields(f.B, func(f worker.Field) error {
				switch f.Num {
				case 1:
					lim.Limit = Limit(f.Int())
				case 2:
					lim.Value = f.String()
				case 3:
					lim.Path = f.String()
				case 4:
					lim.Err = errors.New(f.String())
				}
				return nil
			})
		default:
			p.field(f, 2)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("malformed error: %w", err)
	}
	e.Pos = p.pos()
	if writes != nil {
		e.Writes = append(writes, make([]Write, len(e.Fields)-len(writes))...)
	}
	return e, nil
}

// decodeFieldError decodes a field message, and its write if it has one.
func decodeFieldError(data []byte) (*field.Error, *Write, error) {
	fe := new(field.Error)
	var w *Write
	err := worker.Fields(data, func(f worker.Field) error {
		switch f.Num {
		case 1:
			fe.Type = field.ErrorType(f.String())
		case 2:
			fe.Field = f.String()
		case 3:
			var v any
			if json.Unmarshal(f.B, &v) == nil {
				fe.BadValue = v
			}
		case 4:
			fe.Detail = f.String()
		case 5:
			w = new(Write)
			var p position
			err := worker.Fields(f.B, func(f worker.Field) error {
				switch f.Num {
				case 4:
					w.Backtrace = f.String()
				case 5:
					w.Input = f.Bool()
				default:
					p.field(f, 1)
				}
				return nil
			})
			w.Pos = p.pos()
			return err
		}
		return nil
	})
	return fe, w, err
}

// cutText returns s if it is at most max bytes long, and otherwise its first max bytes or
// fewer (up to the start of a UTF-8 sequence) followed by a marker saying how many bytes were
// cut.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... [%d bytes cut]", s[:n], len(s)-n)
}

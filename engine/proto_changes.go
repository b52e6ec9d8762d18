package engine

// This file defines the encoding of an explain's changes in the worker protocol (see
// proto.go): the changes message that comes before each result of an explain.

import (
	"bytes"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/starpod/starpod/internal/worker"
)

// appendChanges appends a changes message.
func appendChanges(b []byte, changes []Change) ([]byte, error) {
	var m []byte
	for _, c := range changes {
		m = worker.AppendString(m[:0], 1, c.Overlay)
		m = worker.AppendString(m, 2, c.Path)
		for i, v := range [...]any{c.Old, c.New} {
			if v != nil {
				data, err := json.Marshal(v)
				if err != nil {
					return nil, err
				}
				m = worker.AppendBytes(m, protowire.Number(3+i), data)
			}
		}
		m = appendPos(m, 5, c.Pos)
		b = worker.AppendBytes(b, 1, m)
	}
	return b, nil
}

// decodeChanges turns a changes message back into the changes it was made from, with numbers
// as int64 or float64 as the engine gives them.
func decodeChanges(data []byte) ([]Change, error) {
	var changes []Change
	err := worker.Fields(data, func(f worker.Field) error {
		var c Change
		var p position
		err := worker.Fields(f.B, func(f worker.Field) error {
			switch f.Num {
			case 1:
				c.Overlay = f.String()
			case 2:
				c.Path = f.String()
			case 3:
				c.Old = jsonValue(f.B)
			case 4:
				c.New = jsonValue(f.B)
			default:
				p.field(f, 5)
			}
			return nil
		})
		c.Pos = p.pos()
		changes = append(changes, c)
		return err
	})
	return changes, err
}

// jsonValue decodes a JSON value of a change, nil for none.
func jsonValue(data []byte) any {
	if len(data) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return numbers(v)
}

// numbers replaces the json.Numbers of v by int64 or float64.
func numbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, x := range v {
			v[k] = numbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = numbers(x)
		}
	}
	return v
}

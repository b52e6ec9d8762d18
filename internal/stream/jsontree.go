package stream

// This file defines parseJSON, a fast decoder of the JSON text that encoding/json writes.

import (
	"bytes"
	"encoding/json"
)

// parseJSON returns the untyped data of the JSON text data, as a json.Decoder with UseNumber
// gives it. It is meant for the compact text json.Marshal writes and reports false for
// anything it does not expect, such as spaces between tokens.
func parseJSON(data []byte) (any, bool) {
	p := jsonParser{data: data}
	v, ok := p.value()
	return v, ok && p.i == len(data)
}

type jsonParser struct {
	data []byte
	i    int
}

func (p *jsonParser) value() (any, bool) {
	if p.i >= len(p.data) {
		return nil, false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		p.i++
		m := make(map[string]any)
		if p.i < len(p.data) && p.data[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			k, ok := p.string()
			if !ok || p.i >= len(p.data) || p.data[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value()
			if !ok {
				return nil, false
			}
			m[k] = v
			if p.i >= len(p.data) {
				return nil, false
			}
			switch p.data[p.i] {
			case ',':
				p.i++
			case '}':
				p.i++
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		p.i++
		s := []any{}
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return s, true
		}
		for {
			v, ok := p.value()
			if !ok {
				return nil, false
			}
			s = append(s, v)
			if p.i >= len(p.data) {
				return nil, false
			}
			switch p.data[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return s, true
			default:
				return nil, false
			}
		}
	case c == '"':
		return p.string()
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.data) {
			switch c := p.data[p.i]; {
			case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
				p.i++
				continue
			}
			break
		}
		return json.Number(p.data[start:p.i]), true
	case bytes.HasPrefix(p.data[p.i:], []byte("true")):
		p.i += 4
		return true, true
	case bytes.HasPrefix(p.data[p.i:], []byte("false")):
		p.i += 5
		return false, true
	case bytes.HasPrefix(p.data[p.i:], []byte("null")):
		p.i += 4
		return nil, true
	}
	return nil, false
}

// string reads a string; strings with escapes are decoded by encoding/json.
func (p *jsonParser) string() (string, bool) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return "", false
	}
	start := p.i
	escaped := false
	for p.i++; p.i < len(p.data); p.i++ {
		switch c := p.data[p.i]; {
		case c == '\\':
			escaped = true
			p.i++
		case c == '"':
			p.i++
			raw := p.data[start:p.i]
			if !escaped {
				return string(raw[1 : len(raw)-1]), true
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", false
			}
			return s, true
		case c < ' ':
			return "", false
		}
	}
	return "", false
}

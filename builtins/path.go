package builtins

// This file defines the parser of the paths that get, put and remove take.
//
// A path is a sequence of steps, with an optional leading ".":
//
//	.name          the field name of a dict; names are letters, digits, "_", "-" and "$"
//	["any key"]    the field of a dict, for keys with other characters ('...' also works)
//	[2], [-1]      the item of a list at an index; negative indexes count from the end
//	[*]            every item of a list
//	[k=v]          every item of a list that is a dict whose field k is v
//
// In a selector [k=v], k is a name or a quoted key, and v is quoted ("v" or 'v', matching
// only a string) or bare (matching a string equal to it, or a number or bool that prints as
// it). A backslash in a quoted string escapes the character after it. The empty path, or
// ".", names the value itself.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A stepKind is the kind of one step of a path.
type stepKind uint8

const (
	fieldStep  stepKind = iota // .name or ["key"]
	indexStep                  // [2]
	allStep                    // [*]
	selectStep                 // [k=v]
)

// A step is one step of a path.
type step struct {
	kind   stepKind
	name   string // fieldStep: the key; selectStep: the item field
	index  int    // indexStep
	value  string // selectStep: the value, unquoted
	quoted bool   // selectStep: the value was quoted, so it matches only strings
}

// String returns the step as it is written in a canonical path.
func (s step) String() string {
	switch s.kind {
	case fieldStep:
		if isName(s.name) {
			return "." + s.name
		}
		return "[" + quote(s.name) + "]"
	case indexStep:
		return "[" + strconv.Itoa(s.index) + "]"
	case allStep:
		return "[*]"
	}
	k := s.name
	if !isName(k) || k[0] == '-' || isDigit(rune(k[0])) { // would scan as an index
		k = quote(k)
	}
	v := s.value
	if s.quoted || !isBare(v) {
		v = quote(v)
	}
	return "[" + k + "=" + v + "]"
}

// A pathError reports a malformed path and the column (in bytes, from 1) of the problem.
type pathError struct {
	path string
	col  int
	msg  string
}

func (e *pathError) Error() string {
	return fmt.Sprintf("invalid path %q: at column %d: %s", e.path, e.col, e.msg)
}

// formatPath returns the canonical text of steps: parsePath(formatPath(steps)) gives steps.
func formatPath(steps []step) string {
	var b strings.Builder
	for i, s := range steps {
		t := s.String()
		if i == 0 {
			t = strings.TrimPrefix(t, ".")
		}
		b.WriteString(t)
	}
	return b.String()
}

// parsePath parses a path. Its errors are *pathError.
func parsePath(text string) ([]step, error) {
	p := pathParser{text: text}
	return p.parse()
}

type pathParser struct {
	text string
	pos  int // byte offset of the next character
}

func (p *pathParser) errorf(pos int, format string, args ...any) error {
	return &pathError{path: p.text, col: pos + 1, msg: fmt.Sprintf(format, args...)}
}

// peek returns the next rune, or -1 at the end.
func (p *pathParser) peek() rune {
	if p.pos >= len(p.text) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(p.text[p.pos:])
	return r
}

// describe names the next character for an error message.
func (p *pathParser) describe() string {
	if r := p.peek(); r >= 0 {
		return strconv.QuoteRune(r)
	}
	return "end of path"
}

func (p *pathParser) parse() ([]step, error) {
	var steps []step
	if strings.HasPrefix(p.text, ".") {
		p.pos++
	}
	// The first step may be a bare name.
	if isNameRune(p.peek()) {
		steps = append(steps, step{kind: fieldStep, name: p.name()})
	} else if p.pos < len(p.text) && p.peek() != '[' {
		return nil, p.errorf(p.pos, "got %s, want field name or \"[\"", p.describe())
	}
	for p.pos < len(p.text) {
		switch p.peek() {
		case '.':
			p.pos++
			if !isNameRune(p.peek()) {
				return nil, p.errorf(p.pos, "got %s after \".\", want field name (quote other keys: [\"a/b\"])", p.describe())
			}
			steps = append(steps, step{kind: fieldStep, name: p.name()})
		case '[':
			s, err := p.bracket()
			if err != nil {
				return nil, err
			}
			steps = append(steps, s)
		default:
			return nil, p.errorf(p.pos, "got %s, want \".\" or \"[\"", p.describe())
		}
	}
	return steps, nil
}

// name scans a name.
func (p *pathParser) name() string {
	start := p.pos
	for isNameRune(p.peek()) {
		_, n := utf8.DecodeRuneInString(p.text[p.pos:])
		p.pos += n
	}
	return p.text[start:p.pos]
}

// bracket scans a step in brackets, p.pos being at "[".
func (p *pathParser) bracket() (step, error) {
	open := p.pos
	p.pos++
	if p.pos >= len(p.text) {
		return step{}, p.errorf(open, "unclosed \"[\"")
	}
	var s step
	switch r := p.peek(); {
	case r == '*':
		p.pos++
		s = step{kind: allStep}
	case r == '-' || isDigit(r):
		start := p.pos
		p.pos++
		for isDigit(p.peek()) {
			p.pos++
		}
		digits := p.text[start:p.pos]
		i, err := strconv.Atoi(digits)
		if err != nil {
			if digits == "-" {
				return step{}, p.errorf(start, "got \"-\", want index")
			}
			return step{}, p.errorf(start, "index %s out of range", digits)
		}
		s = step{kind: indexStep, index: i}
	case r == '"' || r == '\'':
		key, err := p.quoted()
		if err != nil {
			return step{}, err
		}
		s = step{kind: fieldStep, name: key}
		if p.peek() == '=' {
			if s, err = p.selector(key); err != nil {
				return step{}, err
			}
		}
	case isNameRune(r):
		start := p.pos
		key := p.name()
		if p.peek() != '=' {
			if p.peek() == ']' {
				return step{}, p.errorf(start, "got [%s], want [%s=value], or [%q] for a key", key, key, key)
			}
			return step{}, p.closeError(open)
		}
		var err error
		if s, err = p.selector(key); err != nil {
			return step{}, err
		}
	default:
		return step{}, p.errorf(p.pos, "got %s after \"[\", want index, \"*\", key=value or quoted key", p.describe())
	}
	if p.peek() != ']' {
		return step{}, p.closeError(open)
	}
	p.pos++
	return s, nil
}

// closeError reports a missing "]" for the "[" at open.
func (p *pathParser) closeError(open int) error {
	if p.pos >= len(p.text) {
		return p.errorf(open, "unclosed \"[\"")
	}
	return p.errorf(p.pos, "got %s, want \"]\"", p.describe())
}

// selector scans "=value" after the field name key of a selector.
func (p *pathParser) selector(key string) (step, error) {
	p.pos++ // "="
	s := step{kind: selectStep, name: key}
	switch r := p.peek(); {
	case r == '"' || r == '\'':
		v, err := p.quoted()
		if err != nil {
			return step{}, err
		}
		s.value, s.quoted = v, true
	case isBareRune(r):
		start := p.pos
		for isBareRune(p.peek()) {
			_, n := utf8.DecodeRuneInString(p.text[p.pos:])
			p.pos += n
		}
		s.value = p.text[start:p.pos]
	default:
		return step{}, p.errorf(p.pos, "got %s after \"=\", want value", p.describe())
	}
	return s, nil
}

// quoted scans a quoted string, p.pos being at its opening quote.
func (p *pathParser) quoted() (string, error) {
	start := p.pos
	q := p.text[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.text) {
		c := p.text[p.pos]
		switch c {
		case q:
			p.pos++
			return b.String(), nil
		case '\\':
			p.pos++
			if p.pos >= len(p.text) {
				return "", p.errorf(start, "unclosed string")
			}
			c = p.text[p.pos]
		}
		b.WriteByte(c)
		p.pos++
	}
	return "", p.errorf(start, "unclosed string")
}

// quote returns s in double quotes, with a backslash before each double quote and backslash.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' }

// isNameRune reports whether r may appear in a name.
func isNameRune(r rune) bool {
	return r == '_' || r == '-' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// isName reports whether s can be written as a name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !isNameRune(r) {
			return false
		}
	}
	return true
}

// isBareRune reports whether r may appear in a bare selector value.
func isBareRune(r rune) bool {
	return r >= 0 && r != ']' && r != '[' && r != '"' && r != '\'' && r != utf8.RuneError
}

// isBare reports whether s can be written as a bare selector value.
func isBare(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !isBareRune(r) {
			return false
		}
	}
	return true
}

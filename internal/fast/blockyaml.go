package fast

// This file defines parseBlockYAML, a parser of the plain subset of YAML most manifests are
// written in, which yamlToUntyped tries before the YAML library.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// parseBlockYAML parses doc, a YAML document whose root is a block mapping at column 0, into
// the untyped JSON data yamlToUntyped returns, if doc keeps to a plain subset of YAML; it
// reports false for any other text, which the caller parses with the YAML library, so that
// the library alone decides every error and every rare form. What it takes, it reads as
// sigs.k8s.io/yaml does (YAML 1.1 as go.yaml.in/yaml/v2 resolves it):
//
//   - printable ASCII text, lines ended by \n, no tabs;
//   - block mappings and block sequences, with a sequence's "- " at its key's column or
//     further in, and a mapping started on the line of its "- ";
//   - keys of letters, digits and "_-./" that resolve to strings, each once in its mapping,
//     of at most 1000 bytes;
//   - values on their key's line: plain scalars of one line that resolve to strings (never
//     yes, no, on, off, y, n, true, false, null and their capitalised forms, which it reads as
//     bools and null; nor anything that might be a number, timestamp or float but a decimal
//     integer without a leading zero of at most 18 digits, which it reads as an int), quoted
//     scalars of one line without escapes, and flow sequences and flow mappings of such
//     scalars on one line;
//   - comments on lines of their own and after values.
//
// No anchors, aliases, tags, block scalars, multi-line scalars, nested flow collections,
// complex keys or directives: those go to the library. Its output is the same data as the library's,
// which FuzzBlockYAML checks against sigs.k8s.io/yaml on the fuzz corpora. It counts the size
// of what it makes as the sizer does and declines past limit, where the library's path
// reports the error.
//
// It builds the data with [BlockNode.Untyped] from the nodes that [ReadBlockYAML] reads,
// which readers of the text into other forms share.
func parseBlockYAML(doc []byte, limit int64) (any, bool) {
	var v any
	ok := ReadBlockYAML(doc, limit, func(root BlockNode) (ok bool) {
		v, ok = root.Untyped()
		return ok
	})
	return v, ok
}

// A blockParser reads a document line by line; the current line is the first of the rest
// that is not blank or a comment.
type blockParser struct {
	doc     []byte // the document
	all     string // the document as a string, made on first use, which keys and values share
	text    []byte // the lines after the current one
	indent  int    // the current line's indentation, or the column of its content after a "- "
	content []byte // the current line from its indentation, without its end
	eof     bool   // whether there is no current line
	left    int64  // the size left, as the sizer counts it

	// The node the parser has come to (see BlockNode): its kind, and what it knows of it.
	kind  nodeKind
	val   scalar // a scalar's value
	flow  []byte // a flow collection's text
	col   int    // the column of a block collection's keys or dashes
	seq   int    // the number of nodes so far, the current one's
	taken bool   // whether the current node has been read
}

// next moves to the next line that is not blank or a comment. It reports false for a line
// the parser does not take: one with a byte that is not printable ASCII, or one that starts
// with "%" or "...", which a document of one mapping cannot hold.
func (p *blockParser) next() bool {
	for len(p.text) > 0 {
		var line []byte
		var ok bool
		if line, p.text, ok = cutLine(p.text); !ok || len(line) > 0 && (line[0] == '%' || bytes.HasPrefix(line, []byte("..."))) {
			return false // not ASCII, \r, a directive or an end of the document: see oneDocument
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n == len(line) || line[n] == '#' {
			continue
		}
		p.indent, p.content = n, line[n:]
		return true
	}
	p.eof, p.content = true, nil
	return true
}

// cutLine returns the first line of text, without its \n, and the text after it; ok is
// false if the line has a byte that is not printable ASCII, " " to "~". It tests eight bytes
// at a time: a word has a byte outside that range, \n among them, if one has its high bit
// set, or gets it by adding 1 (0x7f) or by subtracting 0x20 (below " "); no byte gets it by
// a carry or a borrow but from a lower byte that is outside the range itself, so that the
// lowest byte that gets it is the first outside the range.
func cutLine(text []byte) (line, rest []byte, ok bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(text); i += 8 {
		w := binary.LittleEndian.Uint64(text[i:])
		if m := (w | (w + ones) | (w-' '*ones)&^w) & highs; m != 0 {
			i += bits.TrailingZeros64(m) / 8
			return text[:i], text[i+1:], text[i] == '\n'
		}
	}
	for ; i < len(text); i++ {
		if c := text[i]; c < ' ' || c > '~' {
			return text[:i], text[i+1:], c == '\n'
		}
	}
	return text, nil, true
}

// str returns b as a string: a part of p.all if b is a part of p.doc, so that the strings
// of a document take one allocation.
func (p *blockParser) str(b []byte) string {
	i := cap(p.doc) - cap(b)
	if len(b) == 0 || i < 0 || i+len(b) > len(p.doc) || &p.doc[i] != &b[0] {
		return string(b)
	}
	if p.all == "" {
		p.all = string(p.doc)
	}
	return p.all[i : i+len(b)]
}

// count counts n bytes of size.
func (p *blockParser) count(n int) { p.left -= int64(n) }

// isSeqEntry reports whether a line's content starts a block sequence entry.
func isSeqEntry(content []byte) bool {
	return len(content) > 0 && content[0] == '-' && (len(content) == 1 || content[1] == ' ')
}

// splitKey splits a line's content into a plain key that resolves to a string and the value
// after it, without a comment; ok is false if content is not such a key and value.
func (p *blockParser) splitKey(content []byte) (key string, rest []byte, ok bool) {
	i := 0
	for i < len(content) && keyByte[content[i]] {
		i++
	}
	if i == 0 || i > maxKey || i == len(content) || content[i] != ':' || i+1 < len(content) && content[i+1] != ' ' {
		return "", nil, false
	}
	k := content[:i]
	if s, isString := plainString(k); !isString || !s {
		return "", nil, false // a bool, null, number or anything else a string might not be
	}
	rest = trimComment(content[i+1:])
	return p.str(k), rest, true
}

// maxKey bounds the length of a key splitKey takes. The YAML library refuses an implicit key
// longer than 1024 characters; the longest key Kubernetes allows, a label's or an
// annotation's, has 317.
const maxKey = 1000

// keyByte holds the bytes of a plain key: letters, digits and "_-./".
var keyByte = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./") {
		t[c] = true
	}
	return t
}()

// trimComment returns text without its leading and trailing spaces and a comment (" #"
// and what follows) at its end. Only for text without quotes: it does not know of strings.
func trimComment(text []byte) []byte {
	if i := indexPair(text, ' ', '#'); i >= 0 {
		text = text[:i]
	}
	return trimSpaces(text)
}

// indexPair returns the index of the first a followed by b in text, or -1: bytes.Index for
// a text of two bytes, without its setup, which costs more than the search on a short line.
func indexPair(text []byte, a, b byte) int {
	for i := 0; i+1 < len(text); i++ {
		j := bytes.IndexByte(text[i+1:], b)
		if j < 0 {
			return -1
		}
		if i += j; text[i] == a {
			return i
		}
	}
	return -1
}

// trimSpaces returns text without its leading and trailing spaces.
func trimSpaces(text []byte) []byte {
	for len(text) > 0 && text[0] == ' ' {
		text = text[1:]
	}
	for len(text) > 0 && text[len(text)-1] == ' ' {
		text = text[:len(text)-1]
	}
	return text
}

// inline reads a value on its key's or dash's line, rest, without its leading spaces: it
// makes the current node a scalar, which it resolves and counts, or a flow collection, which
// the node's reader reads. If trimmed, rest is trimComment's already, as splitKey returns it.
func (p *blockParser) inline(rest []byte, trimmed bool) bool {
	if !trimmed && rest[0] != '"' && rest[0] != '\'' {
		rest = trimComment(rest)
		if len(rest) == 0 {
			return false
		}
	}
	switch rest[0] {
	case '"', '\'':
		s, after, ok := p.quotedScalar(rest)
		if !ok || len(trimComment(after)) > 0 || len(after) > 0 && after[0] != ' ' {
			return false
		}
		p.count(1 + len(s))
		p.kind, p.val = scalarNode, scalar{kind: stringScalar, text: s}
		return true
	case '[':
		p.kind, p.flow = flowSequence, rest
		return true
	case '{':
		p.kind, p.flow = flowMapping, rest
		return true
	}
	plain := rest
	if len(plain) == 0 || isSeqEntry(plain) || indexPair(plain, ':', ' ') >= 0 || plain[len(plain)-1] == ':' {
		return false
	}
	p.kind, p.val = scalarNode, p.resolve(plain)
	return p.val.kind != unresolved
}

// resolve returns the value of a plain scalar, counting its size; its kind is unresolved if
// the parser leaves its resolution to the library.
func (p *blockParser) resolve(plain []byte) scalar {
	if s, isString := plainString(plain); isString {
		if !s {
			return scalar{}
		}
		p.count(1 + len(plain))
		return scalar{kind: stringScalar, text: p.str(plain)}
	}
	switch string(plain) {
	case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y":
		p.count(1)
		return scalar{kind: trueScalar}
	case "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N":
		p.count(1)
		return scalar{kind: falseScalar}
	case "null", "Null", "NULL", "~":
		p.count(1)
		return scalar{kind: nullScalar}
	}
	if isDecimal(plain) {
		p.count(1 + len(plain))
		return scalar{kind: numberScalar, text: p.str(plain)}
	}
	return scalar{}
}

// plainString reports whether the plain scalar text, of printable ASCII, resolves to a
// string in YAML 1.1 as go.yaml.in/yaml/v2 resolves it, and then whether that is certain.
// It reports false for bools, nulls and numbers.
func plainString(text []byte) (certain, isString bool) {
	c := text[0]
	switch {
	case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		switch string(text) {
		case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y",
			"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N",
			"null", "Null", "NULL":
			return false, false
		}
	case c == '/' || c == '_':
	case c == '+' || c == '-' || c == '.' || '0' <= c && c <= '9':
		// The library tries a timestamp (four digits and "-"), an integer of any base, a
		// float and binary: a text with a character none of those take is a string.
		if isDecimal(text) {
			return false, false
		}
		if len(text) > 4 && text[4] == '-' && isDigits(text[:4]) {
			return false, true
		}
		if (c == '+' || c == '-') && len(text) > 1 && !numberAfterSign[text[1]] {
			// An integer, a float the library parses and a special float (".inf") have a
			// digit or "." after their sign, or "_", which the library drops: "-c" is a
			// string.
			return true, true
		}
		for _, c := range text {
			if !numeric[c] {
				return true, true
			}
		}
		return false, true
	default:
		return false, true // an indicator, or a character the parser leaves to the library
	}
	return true, true
}

// numeric holds the characters of the texts go.yaml.in/yaml/v2 might read as a number:
// those strconv.ParseInt (base 0), ParseUint and ParseFloat take, and "_".
var numeric = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEFxXoObBpP_.+-iInNtTyY") {
		t[c] = true
	}
	return t
}()

// numberAfterSign holds the characters that may follow the sign of a number: digits, "."
// and "_".
var numberAfterSign = func() (t [256]bool) {
	for _, c := range []byte("0123456789._") {
		t[c] = true
	}
	return t
}()

// isDecimal reports whether text is "0" or a decimal integer without a leading zero of at
// most 18 digits: an int whose JSON text is text.
func isDecimal(text []byte) bool {
	return len(text) > 0 && len(text) <= 18 && isDigits(text) && (text[0] != '0' || len(text) == 1)
}

// isDigits reports whether text is all decimal digits.
func isDigits[T string | []byte](text T) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// quotedScalar parses a quoted scalar of one line at the start of text, without escapes: a
// double-quoted one with no backslash, or a single-quoted one, in which two single quotes stand for one.
func (p *blockParser) quotedScalar(text []byte) (s string, after []byte, ok bool) {
	q := text[0]
	if q == '"' {
		i := bytes.IndexByte(text[1:], '"')
		if i < 0 || bytes.IndexByte(text[1:1+i], '\\') >= 0 {
			return "", nil, false
		}
		return p.str(text[1 : 1+i]), text[2+i:], true
	}
	var b []byte // the text before the last "''", when there is one
	from := 1
	for i := 1; i < len(text); i++ {
		if text[i] != '\'' {
			continue
		}
		if i+1 < len(text) && text[i+1] == '\'' {
			b = append(b, text[from:i+1]...)
			i++
			from = i + 1
			continue
		}
		if b == nil {
			return p.str(text[1:i]), text[i+1:], true
		}
		return string(append(b, text[from:i]...)), text[i+1:], true
	}
	return "", nil, false
}

// flowNext returns the rest of a flow collection's body after an entry, rest, past the
// comma that must follow the entry unless the body ends; it refuses a trailing comma.
func flowNext(rest []byte) ([]byte, bool) {
	rest = bytes.TrimLeft(rest, " ")
	if len(rest) == 0 {
		return nil, true
	}
	if rest[0] != ',' {
		return nil, false
	}
	rest = bytes.TrimLeft(rest[1:], " ")
	return rest, len(rest) > 0
}

// flowScalar reads the scalar at the start of body, the rest of a flow collection's body
// without its brackets, into the current node: a quoted scalar of one line without escapes,
// or a plain scalar up to the next comma without flow indicators, quotes, ":" or "#". It
// returns the rest of body.
func (p *blockParser) flowScalar(body []byte) ([]byte, bool) {
	if len(body) == 0 {
		return nil, false
	}
	p.kind = scalarNode
	if body[0] == '"' || body[0] == '\'' {
		str, after, ok := p.quotedScalar(body)
		if !ok {
			return nil, false
		}
		p.count(1 + len(str))
		p.val = scalar{kind: stringScalar, text: str}
		return after, true
	}
	i := bytes.IndexByte(body, ',')
	if i < 0 {
		i = len(body)
	}
	item := bytes.TrimRight(body[:i], " ")
	if len(item) == 0 || isSeqEntry(item) || bytes.ContainsAny(item, "[]{}:#\"'") {
		return nil, false
	}
	p.val = p.resolve(item)
	return body[len(item):], p.val.kind != unresolved
}

package fast

// This file defines transcode, which prints the JSON text that encoding/json writes as YAML
// text straight from that text, without building untyped values: it reads the text once
// into a tape of nodes, then prints each object's members in the YAML library's key order.
// It prints what emitYAML prints of the same data, and has the YAML library print each
// scalar that emitYAML declines (floats; long, multi-line and non-ASCII strings) where it
// sits, rather than the whole document.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"

	goyaml "go.yaml.in/yaml/v2"
)

// maxDepth is the deepest nesting transcode reads; it declines deeper text.
const maxDepth = 1000

// A node is one JSON value on the tape of a document: an object is followed on the tape by
// its members, each a key node and the nodes of its value, and an array by its items.
type node struct {
	start, end int32 // the value's text in the data; for a string, the text within the quotes
	next       int32 // the index of the node after this value and all of its members or items
	n          int32 // how many members or items an object or array has
	kind       byte  // '{', '[', '"', '0' (a number), 't', 'f' or 'n'
	esc        bool  // a string with escapes
	ascii      bool  // a string whose text is all ASCII
	gone       bool  // an object that pruning removes: it has members and they all go
}

// A member is an object member being printed.
type member struct {
	key    string
	val    int  // the value's node
	pruned bool // whether pruning leaves it out
}

// A step is one level of the path to a value: a member of an object or an item of an array.
type step struct {
	key, text string // the member's key and its text as printed
	item      bool   // an item of an array
}

// A transcoder holds the scratch space of one transcode call.
type transcoder struct {
	data    []byte
	i       int // the next byte of data to read
	tape    []node
	members []member // the members of the objects being printed, innermost last
	text    []byte   // the text of a string with escapes
	path    []step   // where the value being printed is: the keys and items above it
	prefix  []byte   // the text of path, for slowScalar
	order   keyOrder[member]
	prune   bool
}

var transcoders = sync.Pool{New: func() any {
	// printMap declines keys that are not ASCII.
	return &transcoder{order: keyOrder[member]{key: func(m member) string { return m.key }, ascii: true}}
}}

// transcode appends the YAML text of the JSON text data to buf. If prune is set, it leaves
// out null members of objects, and members whose value is an object that holds nothing
// else once that is done (but not objects that were empty to begin with). It reports false
// if data is not the compact JSON text of an object or array, or has keys that emitYAML
// declines or that repeat.
func transcode(buf, data []byte, prune bool) ([]byte, bool) {
	t := transcoders.Get().(*transcoder)
	defer func() {
		// Keep nothing of data: the keys in members and path are strings of its bytes.
		t.data = nil
		clear(t.members[:cap(t.members)])
		clear(t.path[:cap(t.path)])
		if cap(t.tape) <= 1<<16 && cap(t.members) <= 1<<12 && cap(t.text) <= 1<<16 { // keep no huge buffers
			transcoders.Put(t)
		}
	}()
	t.data, t.i, t.tape, t.members, t.path, t.prune = data, 0, t.tape[:0], t.members[:0], t.path[:0], prune
	if len(data) > math.MaxInt32 || !t.parse(0) || t.i != len(data) {
		return buf, false
	}
	switch t.tape[0].kind {
	case '{':
		if t.empty(0) {
			return append(buf, "{}\n"...), true
		}
		return t.printMap(buf, 0, 0, false)
	case '[':
		if t.tape[0].n == 0 {
			return append(buf, "[]\n"...), true
		}
		return t.printSeq(buf, 0, 0, false)
	}
	return buf, false
}

// parse reads one value onto the tape.
func (t *transcoder) parse(depth int) bool {
	data := t.data
	if t.i >= len(data) || depth > maxDepth {
		return false
	}
	at := len(t.tape)
	t.tape = append(t.tape, node{start: int32(t.i)})
	switch c := data[t.i]; c {
	case '{':
		t.i++
		n, gone := 0, true
		if t.i < len(data) && data[t.i] == '}' {
			t.i++
			gone = false
		} else {
			for {
				if t.i >= len(data) || data[t.i] != '"' || !t.parseString() {
					return false
				}
				if t.i >= len(data) || data[t.i] != ':' {
					return false
				}
				t.i++
				v := len(t.tape)
				if !t.parse(depth + 1) {
					return false
				}
				n++
				if x := &t.tape[v]; x.kind != 'n' && !x.gone {
					gone = false
				}
				if end, ok := t.separator('}'); !ok {
					return false
				} else if end {
					break
				}
			}
		}
		x := &t.tape[at]
		x.kind, x.n, x.gone = '{', int32(n), gone
	case '[':
		t.i++
		n := 0
		if t.i < len(data) && data[t.i] == ']' {
			t.i++
		} else {
			for {
				if !t.parse(depth + 1) {
					return false
				}
				n++
				if end, ok := t.separator(']'); !ok {
					return false
				} else if end {
					break
				}
			}
		}
		x := &t.tape[at]
		x.kind, x.n = '[', int32(n)
	case '"':
		t.tape = t.tape[:at] // parseString appends the node itself
		return t.parseString()
	case 't', 'f', 'n':
		word := "null"
		if c == 't' {
			word = "true"
		} else if c == 'f' {
			word = "false"
		}
		if len(data)-t.i < len(word) || string(data[t.i:t.i+len(word)]) != word {
			return false
		}
		t.i += len(word)
		t.tape[at].kind = c
	default:
		if !t.parseNumber() {
			return false
		}
		t.tape[at].kind = '0'
	}
	x := &t.tape[at]
	x.end, x.next = int32(t.i), int32(len(t.tape))
	return true
}

// separator reads what follows a member or an item: a comma, or close, which ends the object
// or array (end). It reports false for anything else.
func (t *transcoder) separator(close byte) (end, ok bool) {
	if t.i >= len(t.data) {
		return false, false
	}
	switch t.data[t.i] {
	case close:
		t.i++
		return true, true
	case ',':
		t.i++
		return false, true
	}
	return false, false
}

// stringStop marks the bytes that end the plain run of a JSON string's text: the quote,
// the backslash and the control characters, which JSON does not allow in strings.
var stringStop = func() (stop [256]bool) {
	for c := range ' ' {
		stop[c] = true
	}
	stop['"'], stop['\\'] = true, true
	return stop
}()

// parseString reads the string at t.i onto the tape.
func (t *transcoder) parseString() bool {
	data := t.data
	start := t.i + 1
	esc := false
	var bits byte // the bits of the string's bytes, or'ed together
	i := start
	// Skip 8 bytes at a time while none is a quote, a backslash, a control character or
	// not ASCII. A word may stop the skip for nothing, never go on past such a byte.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(data); i += 8 {
		x := binary.LittleEndian.Uint64(data[i:])
		if (x|(x-ones*' ')|((x^ones*'"')-ones)|((x^ones*'\\')-ones))&highs != 0 {
			break
		}
	}
	for ; i < len(data); i++ {
		c := data[i]
		if !stringStop[c] {
			bits |= c
			continue
		}
		switch c {
		case '"':
			t.i = i + 1
			t.tape = append(t.tape, node{start: int32(start), end: int32(i), next: int32(len(t.tape) + 1),
				kind: '"', esc: esc, ascii: bits < utf8.RuneSelf})
			return true
		case '\\':
			esc = true
			i++
		default:
			return false
		}
	}
	return false
}

// parseNumber reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (t *transcoder) parseNumber() bool {
	data, i := t.data, t.i
	digits := func() bool {
		j := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	if i < len(data) && data[i] == '0' {
		i++
	} else if !digits() {
		return false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	t.i = i
	return true
}

// empty reports whether the object at node v prints as {}.
func (t *transcoder) empty(v int) bool {
	x := &t.tape[v]
	return x.n == 0 || t.prune && x.gone
}

// str returns the string at node v. The text of a string without escapes is the data itself,
// and that of one with escapes is t.text until the next call: the caller must copy it to
// keep it. It reports false for strings with escapes that emitYAML would decline.
func (t *transcoder) str(v int) (string, bool) {
	x := &t.tape[v]
	raw := t.data[x.start:x.end]
	if !x.esc {
		return unsafe.String(unsafe.SliceData(raw), len(raw)), true
	}
	// An escape writes a character that is not printable ASCII, which emitYAML declines,
	// unless it is one of \" \\ \/ or \u0020 to \u007e.
	t.text = t.text[:0]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			t.text = append(t.text, c)
			continue
		}
		if i++; i >= len(raw) {
			return "", false
		}
		switch raw[i] {
		case '"', '\\', '/':
			t.text = append(t.text, raw[i])
		case 'u':
			if i+4 >= len(raw) {
				return "", false
			}
			r := 0
			for _, h := range raw[i+1 : i+5] {
				switch {
				case '0' <= h && h <= '9':
					r = r<<4 | int(h-'0')
				case 'a' <= h && h <= 'f':
					r = r<<4 | int(h-'a'+10)
				case 'A' <= h && h <= 'F':
					r = r<<4 | int(h-'A'+10)
				default:
					return "", false
				}
			}
			if r < ' ' || r > '~' {
				return "", false
			}
			t.text = append(t.text, byte(r))
			i += 4
		default:
			return "", false
		}
	}
	return unsafe.String(unsafe.SliceData(t.text), len(t.text)), true
}

// printMap appends the block mapping of the object at node v, as emitMap does.
func (t *transcoder) printMap(buf []byte, v, indent int, inline bool) ([]byte, bool) {
	base := len(t.members) // the members of the objects above this one come first
	c := v + 1
	for range t.tape[v].n {
		k, val := c, c+1
		c = int(t.tape[val].next)
		key, ok := t.str(k)
		if !ok || !t.tape[k].ascii {
			return buf, false // emitYAML declines keys that are not ASCII
		}
		if t.tape[k].esc {
			key = string(t.text) // t.text is reused by the next string
		}
		// Members pruning leaves out still count as duplicates, as they do in parseJSON's maps.
		pruned := t.prune && (t.tape[val].kind == 'n' || t.tape[val].gone)
		t.members = append(t.members, member{key, val, pruned})
	}
	ms := t.members[base:]
	t.order.sort(ms)
	for i := 1; i < len(ms); i++ {
		if ms[i].key == ms[i-1].key {
			return buf, false // a duplicate key: the YAML library keeps only one
		}
	}
	first := true
	for i := range len(ms) {
		m := t.members[base+i] // printing the values below may move t.members
		if m.pruned {
			continue
		}
		if !first || !inline {
			buf = appendSpaces(buf, indent)
		}
		first = false
		kt, ok := scalarText(m.key, indent)
		if !ok || len(kt) > maxKeyText {
			return buf, false
		}
		buf = append(buf, kt...)
		buf = append(buf, ':')
		t.path = append(t.path, step{key: m.key, text: kt})
		if buf, ok = t.printMember(buf, m.val, indent, len(kt)); !ok {
			return buf, false
		}
		t.path = t.path[:len(t.path)-1]
	}
	t.members = t.members[:base]
	return buf, true
}

// printSeq appends the block sequence of the array at node v, as emitSeq does.
func (t *transcoder) printSeq(buf []byte, v, indent int, inline bool) ([]byte, bool) {
	ok := true
	c := v + 1
	for i := range t.tape[v].n {
		item := c
		c = int(t.tape[item].next)
		if i > 0 || !inline {
			buf = appendSpaces(buf, indent)
		}
		buf = append(buf, "- "...)
		t.path = append(t.path, step{item: true})
		if buf, ok = t.printItem(buf, item, indent); !ok {
			return buf, false
		}
		t.path = t.path[:len(t.path)-1]
	}
	return buf, true
}

// printMember appends the value at node v of a member whose key, at column indent, the
// caller has printed with its colon: the key text is keyLen long.
func (t *transcoder) printMember(buf []byte, v, indent, keyLen int) ([]byte, bool) {
	switch x := &t.tape[v]; {
	case x.kind == '{' && t.empty(v):
		return append(buf, " {}\n"...), true
	case x.kind == '{':
		return t.printMap(append(buf, '\n'), v, indent+2, false)
	case x.kind == '[' && x.n == 0:
		return append(buf, " []\n"...), true
	case x.kind == '[':
		return t.printSeq(append(buf, '\n'), v, indent, false)
	}
	return t.printScalar(append(buf, ' '), v, indent+keyLen+2)
}

// printItem appends the item at node v of a sequence whose dashes are at column indent,
// after the caller has printed its dash.
func (t *transcoder) printItem(buf []byte, v, indent int) ([]byte, bool) {
	switch x := &t.tape[v]; {
	case x.kind == '{' && t.empty(v):
		return append(buf, "{}\n"...), true
	case x.kind == '{':
		return t.printMap(buf, v, indent+2, true)
	case x.kind == '[' && x.n == 0:
		return append(buf, "[]\n"...), true
	case x.kind == '[':
		return t.printSeq(buf, v, indent+2, true)
	}
	return t.printScalar(buf, v, indent+2)
}

// printScalar appends the scalar at node v, which starts at column col, and a newline, as
// emitScalar does; it has the YAML library print what emitScalar declines.
func (t *transcoder) printScalar(buf []byte, v, col int) ([]byte, bool) {
	x := &t.tape[v]
	switch x.kind {
	case '"':
		s, ok := t.str(v)
		if ok {
			s, ok = scalarText(s, col)
		}
		if !ok {
			return t.slowScalar(buf, v)
		}
		buf = append(buf, s...)
	case '0':
		raw := t.data[x.start:x.end]
		var ok bool
		if buf, ok = appendInteger(buf, unsafe.String(unsafe.SliceData(raw), len(raw))); !ok {
			return t.slowScalar(buf, v) // a float
		}
	case 't':
		buf = append(buf, "true"...)
	case 'f':
		buf = append(buf, "false"...)
	case 'n':
		buf = append(buf, "null"...)
	}
	return append(buf, '\n'), true
}

// slowScalar appends the text the YAML library gives the string or number at node v where
// it sits, and a newline. The library prints a scalar the same whatever is around it, given
// the keys and items above it: slowScalar has it print a document of the scalar alone at
// the end of that path, each object of one member and each array of one item, and takes
// the text after the path's own text. It reports false if the text is not there, or if the
// document ends with "..." (after a scalar that ends with blank lines), which the whole
// document would end with only if the scalar were its last.
func (t *transcoder) slowScalar(buf []byte, v int) ([]byte, bool) {
	x := &t.tape[v]
	var val any
	switch x.kind {
	case '"': // as parseJSON reads it
		if !x.esc {
			val = string(t.data[x.start:x.end])
		} else {
			var s string
			if err := json.Unmarshal(t.data[x.start-1:x.end+1], &s); err != nil {
				return buf, false
			}
			val = s
		}
	case '0':
		val = yamlNumbers(json.Number(t.data[x.start:x.end]))
	default:
		return buf, false
	}
	return scalarAt(buf, t.path, val, &t.prefix)
}

// appendInteger appends the number of the JSON text s as emitScalar prints it, if s is an
// integer that fits in an int64 or a uint64; it reports false for other numbers.
func appendInteger(buf []byte, s string) ([]byte, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.AppendInt(buf, i, 10), true
	} else if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return strconv.AppendUint(buf, u, 10), true
	}
	return buf, false
}

// scalarAt appends the text the YAML library gives the scalar val (a string, or a number as
// yamlNumbers gives it) at the end of path, and a newline, as slowScalar does; prefix is
// scratch space.
func scalarAt(buf []byte, path []step, val any, prefix *[]byte) ([]byte, bool) {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].item {
			val = []any{val}
		} else {
			val = map[string]any{path[i].key: val}
		}
	}
	text, err := goyaml.Marshal(val)
	if err != nil {
		return buf, false
	}
	*prefix = pathText((*prefix)[:0], path)
	if !bytes.HasPrefix(text, *prefix) || bytes.HasSuffix(text, []byte("\n...\n")) {
		return buf, false
	}
	return append(buf, text[len(*prefix):]...), true
}

// pathText appends the text that printMap and printSeq write for the steps of path, up to
// where the scalar at its end starts.
func pathText(buf []byte, path []step) []byte {
	indent, inline := 0, false
	for i, s := range path {
		if !inline {
			buf = appendSpaces(buf, indent)
		}
		last := i == len(path)-1
		if s.item {
			buf = append(buf, "- "...)
			indent, inline = indent+2, true // an object or array in an item starts on its line
			continue
		}
		buf = append(buf, s.text...)
		buf = append(buf, ':')
		switch {
		case last:
			buf = append(buf, ' ')
		case path[i+1].item:
			buf = append(buf, '\n') // an array in an object is not indented
			inline = false
		default:
			buf = append(buf, '\n')
			indent, inline = indent+2, false
		}
	}
	return buf
}

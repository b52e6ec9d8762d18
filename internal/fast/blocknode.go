package fast

// This file defines BlockNode, through which a reader takes the nodes of a document of the
// subset of YAML that parseBlockYAML takes as the parser comes to them, to build untyped
// data (parseBlockYAML) or to decode them straight into typed values (convert.DecodePodYAML).

import (
	"bytes"
	"encoding/json"
)

// ReadBlockYAML reads doc, a YAML document of the plain subset that [Document.Parse] reads
// without the YAML library, node by node: it passes the root, a mapping, to read, which
// reads it and the nodes in it with the methods of [BlockNode].
//
// It reports false if doc is outside that subset, if its content passes limit as Parse
// counts it, if read reports false, or if read or a reader of a node in it returns true
// without reading the node: then Parse reads doc with the YAML library, which alone decides
// its errors. When it reports true, the nodes read are those of the data Parse gives, so that
// a reader may build anything from them that it would build from that data.
//
// It takes only texts that [Document.Parse] would give parseBlockYAML, those oneDocument
// takes: the parser refuses their other bytes and lines as it comes to them, and the first
// line of the root must be one isKeyLine takes.
func ReadBlockYAML(doc []byte, limit int64, read func(root BlockNode) bool) bool {
	p := &blockParser{doc: doc, text: doc, left: limit}
	if !p.next() || p.eof || p.indent != 0 || !isKeyLine(p.content) {
		return false
	}
	p.kind, p.col = blockMapping, 0
	root := p.node()
	return read(root) && p.read(root) && p.eof && p.left >= 0
}

// A BlockNode is a node of a document that [ReadBlockYAML] reads: a scalar, a mapping or a
// sequence. Its reader reads it once, with one of the methods Null, Str, Scalar, Entries,
// Items or Untyped, while the parser stands at it: the node given to a function of
// ReadBlockYAML, Entries or Items, before that function returns and before it reads
// another node. A method that does not read the node, because it is of another kind or is
// read out of turn, reports false; what it is, Kind tells.
type BlockNode struct {
	p   *blockParser
	seq int // the node's number among those of p
}

// A BlockKind is the kind of a BlockNode.
type BlockKind uint8

// The kinds of BlockNode.
const (
	BlockScalar   BlockKind = iota // a scalar: a string, a number, a bool or null
	BlockMapping                   // a block or flow mapping
	BlockSequence                  // a block or flow sequence
)

// nodeKind is the kind of a node as the parser reads it.
type nodeKind uint8

const (
	scalarNode    nodeKind = iota
	blockMapping           // at p.col, from the current line
	blockSequence          // at p.col, from the current line
	flowMapping            // p.flow
	flowSequence           // p.flow
)

// A scalar is the resolved value of a scalar node.
type scalar struct {
	kind scalarKind
	text string // a string, or the text of a number
}

// scalarKind is the kind of a scalar's value.
type scalarKind uint8

const (
	unresolved scalarKind = iota // a scalar the parser leaves to the library
	nullScalar
	stringScalar
	numberScalar // an int of at most 18 digits
	trueScalar
	falseScalar
)

// value returns the value of s in untyped JSON data.
func (s scalar) value() any {
	switch s.kind {
	case stringScalar:
		return s.text
	case numberScalar:
		return json.Number(s.text)
	case trueScalar:
		return true
	case falseScalar:
		return false
	}
	return nil
}

// node returns the node the parser has come to, whose kind and value p holds.
func (p *blockParser) node() BlockNode {
	p.seq++
	p.taken = false
	return BlockNode{p: p, seq: p.seq}
}

// read reports whether n has been read: a node is read before any after it is made.
func (p *blockParser) read(n BlockNode) bool {
	return p.seq > n.seq || p.taken
}

// take reads n if the parser stands at it and it is of kind k.
func (n BlockNode) take(k nodeKind) bool {
	p := n.p
	if p == nil || p.seq != n.seq || p.taken || p.kind != k {
		return false
	}
	p.taken = true
	return true
}

// Kind returns the kind of n, which it tells only before n is read.
func (n BlockNode) Kind() BlockKind {
	switch n.p.kind {
	case blockMapping, flowMapping:
		return BlockMapping
	case blockSequence, flowSequence:
		return BlockSequence
	}
	return BlockScalar
}

// Null reads n if it is a null scalar, and reports whether it was.
func (n BlockNode) Null() bool {
	return n.p.val.kind == nullScalar && n.take(scalarNode)
}

// Str reads n if it is a scalar that resolves to a string, and returns that string.
func (n BlockNode) Str() (string, bool) {
	if n.p.val.kind != stringScalar || !n.take(scalarNode) {
		return "", false
	}
	return n.p.val.text, true
}

// Scalar reads n if it is a scalar, and returns its value as untyped JSON data: a string, a
// json.Number (an int), a bool or nil.
func (n BlockNode) Scalar() (any, bool) {
	if !n.take(scalarNode) {
		return nil, false
	}
	return n.p.val.value(), true
}

// Entries reads n if it is a mapping: it calls each with each key and value in turn, until
// each returns false. It reports whether each returned true for all, having read its
// node, and the mapping kept to the subset. A key may come twice: then Parse refuses the
// document, and the reader must report false.
func (n BlockNode) Entries(each func(key string, v BlockNode) bool) bool {
	p := n.p
	switch {
	case n.take(blockMapping):
		return p.entries(p.col, each)
	case n.take(flowMapping):
		return p.flowEntries(p.flow, each)
	}
	return false
}

// Items reads n if it is a sequence: it calls each with each item in turn, until each
// returns false. It reports whether each returned true for all, having read its node, and
// the sequence kept to the subset.
func (n BlockNode) Items(each func(v BlockNode) bool) bool {
	p := n.p
	switch {
	case n.take(blockSequence):
		return p.items(p.col, each)
	case n.take(flowSequence):
		return p.flowItems(p.flow, each)
	}
	return false
}

// Untyped reads n and returns its value as untyped JSON data: map[string]any, []any,
// string, json.Number, bool or nil.
func (n BlockNode) Untyped() (any, bool) {
	switch n.Kind() {
	case BlockMapping:
		m := make(map[string]any)
		ok := n.Entries(func(key string, v BlockNode) bool {
			if _, dup := m[key]; dup {
				return false
			}
			x, ok := v.Untyped()
			m[key] = x
			return ok
		})
		return m, ok
	case BlockSequence:
		s := []any{}
		if n.p.kind == blockSequence {
			s = make([]any, 0, 4)
		}
		ok := n.Items(func(v BlockNode) bool {
			x, ok := v.Untyped()
			s = append(s, x)
			return ok
		})
		return s, ok
	}
	return n.Scalar()
}

// entries reads a block mapping whose keys stand at column indent, from the current line.
func (p *blockParser) entries(indent int, each func(string, BlockNode) bool) bool {
	p.count(1)
	for !p.eof && p.indent == indent {
		key, rest, ok := p.splitKey(p.content)
		if !ok {
			return false
		}
		p.count(len(key))
		if len(rest) > 0 {
			if !p.inline(rest, true) || !p.next() {
				return false
			}
		} else {
			if !p.next() {
				return false
			}
			switch {
			case !p.eof && p.indent > indent:
				p.block()
			case !p.eof && p.indent == indent && isSeqEntry(p.content):
				p.kind, p.col = blockSequence, indent
			default:
				p.null()
			}
		}
		v := p.node()
		if !each(key, v) || !p.read(v) {
			return false
		}
	}
	return p.eof || p.indent <= indent // else a continuation or a node the parser does not take
}

// items reads a block sequence whose dashes stand at column indent, from the current line.
func (p *blockParser) items(indent int, each func(BlockNode) bool) bool {
	p.count(1)
	for !p.eof && p.indent == indent && isSeqEntry(p.content) {
		rest := p.content[1:]
		n := 0
		for n < len(rest) && rest[n] == ' ' {
			n++
		}
		rest = rest[n:]
		switch {
		case len(rest) == 0 || rest[0] == '#':
			if !p.next() {
				return false
			}
			if !p.eof && p.indent > indent {
				p.block()
			} else {
				p.null()
			}
		case isSeqEntry(rest):
			return false // a sequence in a sequence
		default:
			if _, _, isKey := p.splitKey(rest); isKey {
				// A mapping that starts on the line of the dash, at the column of its key.
				p.indent, p.content = indent+1+n, rest
				p.kind, p.col = blockMapping, p.indent
				break
			}
			if !p.inline(rest, false) || !p.next() {
				return false
			}
		}
		v := p.node()
		if !each(v) || !p.read(v) {
			return false
		}
	}
	return p.eof || p.indent <= indent
}

// block makes the current node the block collection that starts at the current line.
func (p *blockParser) block() {
	p.kind, p.col = blockMapping, p.indent
	if isSeqEntry(p.content) {
		p.kind = blockSequence
	}
}

// null makes the current node the null of a value left empty.
func (p *blockParser) null() {
	p.kind, p.val = scalarNode, scalar{kind: nullScalar}
	p.count(1)
}

// flowItems reads a flow sequence of one line, text, of flow scalars (see flowScalar).
func (p *blockParser) flowItems(text []byte, each func(BlockNode) bool) bool {
	if len(text) < 2 || text[len(text)-1] != ']' {
		return false
	}
	p.count(1)
	body := bytes.Trim(text[1:len(text)-1], " ")
	for len(body) > 0 {
		rest, ok := p.flowScalar(body)
		if !ok {
			return false
		}
		v := p.node()
		if !each(v) || !p.read(v) {
			return false
		}
		if body, ok = flowNext(rest); !ok {
			return false
		}
	}
	return true
}

// flowEntries reads a flow mapping of one line, text, of plain keys that resolve to strings
// (as splitKey takes them), each followed by ": " and a flow scalar (see flowScalar).
func (p *blockParser) flowEntries(text []byte, each func(string, BlockNode) bool) bool {
	if len(text) < 2 || text[len(text)-1] != '}' {
		return false
	}
	p.count(1)
	body := bytes.Trim(text[1:len(text)-1], " ")
	for len(body) > 0 {
		i := bytes.IndexByte(body, ':')
		if i < 0 || i+1 == len(body) || body[i+1] != ' ' {
			return false
		}
		key, rest, ok := p.splitKey(body[:i+1])
		if !ok || len(rest) > 0 {
			return false
		}
		p.count(len(key))
		if rest, ok = p.flowScalar(bytes.TrimLeft(body[i+2:], " ")); !ok {
			return false
		}
		v := p.node()
		if !each(key, v) || !p.read(v) {
			return false
		}
		if body, ok = flowNext(rest); !ok {
			return false
		}
	}
	return true
}

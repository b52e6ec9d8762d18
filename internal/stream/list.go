package stream

// This file defines how a Reader reads a v1 List larger than the limit of a document item
// by item, as kubectl get -o yaml prints the objects of a large cluster: each item is a
// Document within the limit, and the text around the items two more.

import (
	"bytes"
	"fmt"
	"io"

	"github.com/starpod/starpod/internal/bound"
)

// A Part says what part of a document a Document is: the whole of it, or a part of a v1 List
// that the Reader read item by item.
type Part int

const (
	Whole    Part = iota // a whole document
	ListHead             // the text of a List before its items, up to its line "items:"
	ListItem             // one item of a List, its text without the item's "- " and indentation
	ListTail             // the text of a List after its items (kind: List, metadata)
)

// A listReader is the state of a Reader in a List it reads item by item.
type listReader struct {
	head      []byte // the text before the items
	headLine  int    // the line the List starts on
	item      []byte // the item being read
	itemLine  int    // the line it starts on
	items     int    // items so far
	tail      []byte // the text after the items, once they have ended
	inTail    bool
	firstSize error // the error the List's size gave as a whole document
}

// startList starts reading the document whose text so far, buf, starting on line start, has
// passed the limit of a document with line (which buf does not hold), if it is a List whose
// items the Reader can read one by one: a mapping at column 0 whose key "items:" is followed
// by a block sequence at column 0, as kubectl prints it. It returns the first part, or nil
// if the document is not such a List.
func (r *Reader) startList(buf, line []byte, start int) (*Document, error) {
	at := 0 // the start of the line after "items:"
	for at < len(buf) {
		end := bytes.IndexByte(buf[at:], '\n')
		if end < 0 {
			return nil, nil
		}
		l := buf[at : at+end+1]
		at += end + 1
		if isItemsKey(l) {
			break
		}
		if at == len(buf) {
			return nil, nil
		}
	}
	rest := append(buf[at:len(buf):len(buf)], line...)
	if !startsItems(rest) {
		return nil, nil
	}
	lr := &listReader{head: append([]byte(nil), buf[:at]...), headLine: start, firstSize: r.sizeError(start)}
	r.list = lr
	r.queue = append(r.queue, r.part(ListHead, lr.head, start))
	lineNo := start + bytes.Count(buf[:at], newline)
	for len(rest) > 0 {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l = rest[:i+1]
		}
		rest = rest[len(l):]
		if err := r.feed(l, lineNo); err != nil {
			return nil, err
		}
		lineNo++
	}
	return r.pop(), nil
}

// isItemsKey reports whether line is a List's key "items:" with its sequence on the lines
// after it.
func isItemsKey(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("items:"))
	rest = bytes.TrimSpace(rest)
	return ok && (len(rest) == 0 || rest[0] == '#')
}

// startsItems reports whether the first line of text that is not blank or a comment starts
// an item of a block sequence at column 0.
func startsItems(text []byte) bool {
	for len(text) > 0 {
		l := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			l = text[:i+1]
		}
		text = text[len(l):]
		t := bytes.TrimSpace(l)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		return isItemStart(l)
	}
	return false
}

// isItemStart reports whether line starts an item of a block sequence at column 0.
func isItemStart(line []byte) bool {
	return bytes.HasPrefix(line, []byte("- ")) || bytes.Equal(bytes.TrimRight(line, "\r\n"), []byte("-"))
}

// part returns a part of the List being read.
func (r *Reader) part(p Part, raw []byte, line int) *Document {
	d := &Document{File: r.file, Index: r.texts, Line: line, Raw: raw, limit: r.maxDoc, Part: p}
	r.texts++
	return d
}

// pop returns the first part in the queue.
func (r *Reader) pop() *Document {
	d := r.queue[0]
	r.queue[0] = nil
	r.queue = r.queue[1:]
	return d
}

// feed adds a line of the List, on line lineNo, to its item or its tail, queueing each item
// as it ends.
func (r *Reader) feed(line []byte, lineNo int) error {
	lr := r.list
	if !lr.inTail {
		t := bytes.TrimSpace(line)
		switch {
		case isItemStart(line):
			r.endItem()
			lr.item, lr.itemLine = nil, lineNo
			line = bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("-")), []byte(" "))
		case bytes.HasPrefix(line, []byte("  ")):
			line = line[2:]
		case len(t) == 0:
			line = newline
		case t[0] == '#':
			// A comment at any column belongs to the item.
		default:
			// A key at column 0: the items have ended.
			r.endItem()
			lr.inTail = true
		}
	}
	if lr.inTail {
		if int64(len(lr.head)+len(lr.tail)+len(line)) > r.maxDoc {
			return lr.firstSize
		}
		lr.tail = append(lr.tail, line...)
		return nil
	}
	if int64(len(lr.item)+len(line)) > r.maxDoc {
		return r.itemSizeError()
	}
	lr.item = append(lr.item, line...)
	return nil
}

// itemSizeError returns the error of an item larger than the limit of a document.
func (r *Reader) itemSizeError() error {
	lr := r.list
	return &Error{File: r.file, Line: lr.itemLine, Err: &bound.SizeError{
		Name: fmt.Sprintf("item %d of the List", lr.items+1), What: "document", Limit: r.maxDoc}}
}

// endItem queues the item being read, if any.
func (r *Reader) endItem() {
	lr := r.list
	if lr.itemLine == 0 {
		return
	}
	if len(bytes.TrimSpace(lr.item)) == 0 {
		lr.item = append(lr.item, "null\n"...) // an empty item is null, as in the List
	}
	r.queue = append(r.queue, r.part(ListItem, lr.item, lr.itemLine))
	lr.item, lr.itemLine = nil, 0
	lr.items++
}

// endList ends the List at the end of its document: it queues the last item and the tail, and
// checks that the text around the items is that of a v1 List.
func (r *Reader) endList() error {
	lr := r.list
	r.endItem()
	r.list = nil
	whole := append(append([]byte(nil), lr.head...), lr.tail...)
	obj, err := yamlToUntyped(whole, r.maxDoc)
	m, _ := obj.(map[string]any)
	if err != nil || m["apiVersion"] != "v1" || m["kind"] != "List" {
		return fmt.Errorf("%w; only a v1 List is read item by item, each within the limit", lr.firstSize)
	}
	if len(lr.tail) > 0 {
		r.queue = append(r.queue, r.part(ListTail, lr.tail, lr.headLine))
	}
	return nil
}

// nextList returns the next part of the List being read.
func (r *Reader) nextList() (*Document, error) {
	for len(r.queue) == 0 {
		line, err := r.r.ReadSlice('\n')
		if err != nil && err != io.EOF {
			n := len(r.list.item)
			if r.list.inTail {
				n = len(r.list.head) + len(r.list.tail)
			}
			if line, err = r.finishLine(line, err, r.list.itemLine, n); err != nil && err != io.EOF {
				if isSizeError(err) && !r.list.inTail {
					return nil, r.itemSizeError()
				}
				return nil, err
			}
		}
		if len(line) > 0 {
			r.line++
			if bytes.HasPrefix(line, separator) {
				if !isSeparator(line) {
					return nil, &Error{File: r.file, Line: r.line, Err: badSeparator(line)}
				}
				if err := r.endList(); err != nil {
					return nil, err
				}
				break
			}
			if err := r.feed(line, r.line); err != nil {
				return nil, err
			}
		}
		if err == io.EOF {
			if err := r.endList(); err != nil {
				return nil, err
			}
			break
		}
	}
	if len(r.queue) == 0 {
		return r.nextYAML()
	}
	return r.pop(), nil
}

// isSizeError reports whether err is the error of a document over its limit.
func isSizeError(err error) bool {
	e, ok := err.(*Error)
	if !ok {
		return false
	}
	_, ok = e.Err.(*bound.SizeError)
	return ok
}

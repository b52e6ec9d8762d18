package main

// This file defines how the fn command writes a ResourceList of many items: item by item,
// in the text kyaml's writer gives.

import (
	"bytes"
	"io"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// writeResourceList writes the ResourceList of items, rw's functionConfig and results to rw's writer,
// as rw.Write does, byte for byte.
//
// rw.Write encodes the whole list as one YAML document, and the YAML encoder keeps every event
// of a document until its end: at 1,000 pods that was some 180 MiB of the command's peak of
// 420, and most of its collector's work. writeResourceList encodes each item as a document of its own
// and indents it into the list, which gives the same text for items whose text does not
// depend on the rest of the document: mappings with no comment (a head comment would come
// before the item's dash), no anchor or alias (an alias needs its anchor in the same
// document) and no style set for the whole list. For any other list it calls rw.Write.
func writeResourceList(rw *kio.ByteReadWriter, items []*kyaml.RNode) error {
	if len(items) == 0 || rw.Style != 0 || rw.NoWrap || !rw.KeepReaderAnnotations || slices.ContainsFunc(items, needsWholeList) {
		return rw.Write(items)
	}
	// As kyaml's writer does, before it writes anything, and on the items themselves, which
	// the command is done with.
	for _, node := range items {
		if err := kyaml.ClearEmptyAnnotations(node); err != nil {
			return err
		}
	}
	// The list's text with one item, a placeholder, which the items' texts then replace.
	var list bytes.Buffer
	placeholder, err := kyaml.Parse(placeholderText)
	if err != nil {
		return err
	}
	if err := (&kio.ByteReadWriter{Writer: &list, KeepReaderAnnotations: true,
		FunctionConfig: rw.FunctionConfig, Results: rw.Results, WrappingAPIVersion: rw.WrappingAPIVersion,
		WrappingKind: rw.WrappingKind}).Write([]*kyaml.RNode{placeholder}); err != nil {
		return err
	}
	mark := []byte("\n- " + placeholderText)
	before, after, ok := bytes.Cut(list.Bytes(), mark)
	if !ok || bytes.Contains(after, mark) {
		return rw.Write(items) // not the text expected: let kyaml write it
	}
	w := rw.Writer
	if _, err := w.Write(append(before, '\n')); err != nil {
		return err
	}
	var item bytes.Buffer
	for _, node := range items {
		item.Reset()
		enc := kyaml.NewEncoder(&item) // a fresh encoder: each keeps its document's events
		if err := enc.Encode(node.Document()); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
		if err := writeIndented(w, item.Bytes()); err != nil {
			return err
		}
	}
	_, err = w.Write(after)
	return err
}

// placeholderText is the text of the item that stands for the items in the list's text.
const placeholderText = "starpod.dev/fn-items: here\n"

// writeIndented writes the document text as an item of a block sequence: "- " before its
// first line, two spaces before each other line that is not empty.
func writeIndented(w io.Writer, text []byte) error {
	var out bytes.Buffer
	out.Grow(len(text) + len(text)/16)
	prefix := "- "
	for line := range bytes.Lines(text) {
		if len(line) > 1 || prefix == "- " {
			out.WriteString(prefix)
		}
		out.Write(line)
		prefix = "  "
	}
	_, err := w.Write(out.Bytes())
	return err
}

// needsWholeList reports whether an item's text may depend on the list it is in: it is not
// a mapping, or it or a node under it holds a comment, an anchor or an alias.
func needsWholeList(item *kyaml.RNode) bool {
	n := item.YNode()
	return n == nil || n.Kind != kyaml.MappingNode || n.Style != 0 || anyNode(n, func(n *kyaml.Node) bool {
		return hasComment(n) || n.Anchor != "" || n.Kind == kyaml.AliasNode
	})
}

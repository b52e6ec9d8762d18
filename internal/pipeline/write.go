package pipeline

// This file defines the output of a pipeline: the encoding of documents, and JSON Lists.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/stream"
)

type docWriter struct {
	w       io.Writer
	format  string
	n       int
	pending []byte // the first JSON document, until the second (a copy: the batch's memory is used again)
}

// The text of a v1 List of JSON documents, before and after its items, as kubectl prints it
// (sorted keys), at the indentation of the documents.
const (
	jsonListHead = "{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n"
	jsonListTail = "\n  ],\n  \"kind\": \"List\",\n  \"metadata\": {\n    \"resourceVersion\": \"\"\n  }\n}\n"
)

// write writes one encoded document, or a part of a List read item by item: in YAML, the
// List as it came, each item indented anew; otherwise the items as documents, and not the
// text around them.
func (w *docWriter) write(data []byte, part stream.Part) error {
	switch part {
	case stream.ListHead:
		if w.format != "yaml" {
			return nil
		}
		return w.writeRaw(data)
	case stream.ListTail:
		if w.format != "yaml" {
			return nil
		}
		_, err := w.w.Write(data)
		return err
	case stream.ListItem:
		if w.format == "yaml" {
			_, err := w.w.Write(indentItem(data))
			return err
		}
	}
	return w.writeRaw(data)
}

// indentItem returns the YAML text of a document as an item of a block sequence at column 0.
func indentItem(data []byte) []byte {
	buf := make([]byte, 0, len(data)+len(data)/8+2)
	prefix := "- "
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i+1]
		}
		data = data[len(line):]
		if len(bytes.TrimRight(line, "\n")) > 0 {
			buf = append(buf, prefix...)
		}
		prefix = "  "
		buf = append(buf, line...)
	}
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		buf = append(buf, '\n')
	}
	return buf
}

// writeRaw writes one encoded document.
func (w *docWriter) writeRaw(data []byte) error {
	w.n++
	if w.format == "json" {
		switch w.n {
		case 1:
			w.pending = append([]byte(nil), data...)
			return nil
		case 2:
			if _, err := io.WriteString(w.w, jsonListHead); err != nil {
				return err
			}
			if err := w.writeItem(w.pending); err != nil {
				return err
			}
			w.pending = nil
		}
		if _, err := io.WriteString(w.w, ",\n"); err != nil {
			return err
		}
		return w.writeItem(data)
	}
	if w.format == "yaml" && w.n > 1 {
		if _, err := io.WriteString(w.w, "---\n"); err != nil {
			return err
		}
	}
	_, err := w.w.Write(data)
	return err
}

// writeItem writes a JSON document as an item of the List: indented two levels, without its
// final newline. JSON text has no newline but between tokens, so every line is indented.
func (w *docWriter) writeItem(data []byte) error {
	data = bytes.TrimSuffix(data, []byte("\n"))
	buf := make([]byte, 0, len(data)+len(data)/8)
	buf = append(buf, "    "...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		buf = append(buf, data[:i+1]...)
		buf = append(buf, "    "...)
		data = data[i+1:]
	}
	buf = append(buf, data...)
	_, err := w.w.Write(buf)
	return err
}

// finish writes what the documents written so far still need: the document held, or the end
// of the List.
func (w *docWriter) finish() error {
	if w.format != "json" {
		return nil
	}
	var err error
	switch {
	case w.n == 1:
		_, err = w.w.Write(w.pending)
		w.pending = nil
	case w.n > 1:
		_, err = io.WriteString(w.w, jsonListTail)
	}
	return err
}

// encode encodes an object the overlays produced.
func encode(obj any, format string) ([]byte, error) {
	if format == "json" {
		data, err := json.MarshalIndent(obj, "", "  ")
		return append(data, '\n'), err
	}
	return stream.MarshalYAML(obj)
}

// EncodePod encodes a pod the overlays changed, or one read in the other format, as YAML or
// JSON (format "yaml" or "json") with sorted keys (as kubectl prints maps) and without the
// empty defaults that every encoded pod holds (status: {} and each container's
// resources: {}) where its document did not hold them, as d records. The YAML is
// sigs.k8s.io/yaml's text of the pod without them.
func EncodePod(pod *corev1.Pod, d *convert.PodDefaults, format string) ([]byte, error) {
	data, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	if format == "json" {
		return indentPod(data, d)
	}
	if text, ok := removeText(data, d); ok {
		return stream.JSONToYAML(text, nil)
	}
	return stream.JSONToYAML(data, d.Remove)
}

// indentPod returns the JSON text of a pod, data, as json.MarshalIndent prints untyped data
// (sorted keys), with a final newline, without the defaults d removes.
func indentPod(data []byte, d *convert.PodDefaults) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	d.Remove(v)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %v", err)
	}
	return append(out, '\n'), nil
}

// emptyStatus ends the JSON text of a pod whose status is empty: encoding/json writes a
// pod's fields in their order, status last.
var emptyStatus = []byte(`,"status":{}}`)

// removeText returns the JSON text of a pod, data, as encoding/json wrote it, without the
// defaults d removes, when it can tell them in the text: when no object in it is an empty
// "resources" (a container's, or another's), only the status at its end is to go. Then
// printing the text as it is saves decoding it to edit it.
func removeText(data []byte, d *convert.PodDefaults) ([]byte, bool) {
	if bytes.Contains(data, []byte(`"resources":{}`)) {
		return nil, false
	}
	if !d.Status() && bytes.HasSuffix(data, emptyStatus) {
		data = append(data[:len(data)-len(emptyStatus)], '}')
	}
	return data, true
}

// passThrough encodes a document that is not a Pod unchanged: its text when the formats
// agree, its content otherwise.
func passThrough(doc *stream.Document, format string) ([]byte, error) {
	if doc.JSON != (format == "json") {
		return encode(doc.Object, format)
	}
	raw := doc.Raw
	if doc.JSON {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return nil, err
		}
		return append(buf.Bytes(), '\n'), nil
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		raw = append(raw[:len(raw):len(raw)], '\n')
	}
	return raw, nil
}

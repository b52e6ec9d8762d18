package pipeline

// This file defines the diff writer: a unified diff of a document's YAML before and after
// the overlays, coloured on a terminal.

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/internal/convert"
	"github.com/starpod/starpod/internal/stream"
	"github.com/starpod/starpod/internal/workload"
)

// diffContext is the number of unchanged lines around each change, as diff -u shows.
const diffContext = 3

// UnifiedDiff returns the unified diff of before and after, headed by the name of the
// document: "--- name" and "+++ name (after the overlays)". It returns nil when they are
// equal. Coloured, removed lines are red, added lines green and hunk headers cyan, as
// git diff colours them.
func UnifiedDiff(name string, before, after []byte, color bool) ([]byte, error) {
	if bytes.Equal(before, after) {
		return nil, nil
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        splitLines(before),
		B:        splitLines(after),
		FromFile: name,
		ToFile:   name + " (after the overlays)",
		Context:  diffContext,
	})
	if err != nil {
		return nil, err
	}
	if !color {
		return []byte(text), nil
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimSuffix(line, "\n")
		var code string
		switch {
		case strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ "):
			code = "1" // bold
		case strings.HasPrefix(line, "@@"):
			code = "36" // cyan
		case strings.HasPrefix(line, "-"):
			code = "31" // red
		case strings.HasPrefix(line, "+"):
			code = "32" // green
		}
		if code == "" {
			b.WriteString(line)
			continue
		}
		fmt.Fprintf(&b, "\x1b[%sm%s\x1b[0m\n", code, body)
	}
	return []byte(b.String()), nil
}

// diffPod returns the diff of a pod document whose pod the overlays turned from in to out, both
// encoded as apply encodes a changed pod; nothing when the overlays changed nothing.
func (p *Pipeline) diffPod(doc *stream.Document, in, out *corev1.Pod, d *convert.PodDefaults) ([]byte, error) {
	if workload.Unchanged(in, out) {
		return nil, nil
	}
	before, err := EncodePod(in, d, "yaml")
	if err != nil {
		return nil, err
	}
	after, err := EncodePod(out, d, "yaml")
	if err != nil {
		return nil, err
	}
	return UnifiedDiff(fmt.Sprintf("%s document %d", doc.File, doc.Index+1), before, after, p.opts.Color)
}

// diffDocument returns the diff of a document holding pod templates, from its YAML before the
// overlays to its YAML after them, both encoded as apply encodes a changed document.
func (p *Pipeline) diffDocument(doc *stream.Document, before, after []byte) ([]byte, error) {
	return UnifiedDiff(fmt.Sprintf("%s document %d", doc.File, doc.Index+1), before, after, p.opts.Color)
}

// splitLines splits text into lines, each with its newline, and the last without one if it
// has none.
func splitLines(text []byte) []string {
	lines := strings.SplitAfter(string(text), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

package main

// This file defines how the fn command reads and writes a ResourceList: with kyaml's kio,
// as kyaml's fn/framework does, and the results of the KRM function specification.

import (
	"fmt"
	"io"
	"strings"

	"github.com/starpod/starpod/internal/stream"

	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// A resourceList is the ResourceList a KRM function reads, and the results it adds.
type resourceList struct {
	Items          []*kyaml.RNode
	FunctionConfig *kyaml.RNode
	Results        fnResults
}

// processList reads a ResourceList from rw, lets process change it, and writes it, with its
// results, to rw. Items keep the config.kubernetes.io annotations of the orchestrator: the
// internal and the legacy forms of the path, index and id are reconciled after process, as
// kustomize expects. It returns the error of process, if the list was written, or of reading
// or writing it.
func processList(rw *kio.ByteReadWriter, process func(*resourceList) error) error {
	items, err := rw.Read()
	if err != nil {
		return fmt.Errorf("reading the ResourceList: %v", err)
	}
	rl := &resourceList{Items: items, FunctionConfig: rw.FunctionConfig}
	annotations, err := kio.PreprocessResourcesForInternalAnnotationMigration(rl.Items)
	if err != nil {
		return err
	}
	processErr := process(rl)
	if err := kio.ReconcileInternalAnnotations(rl.Items, annotations); err != nil {
		return err
	}
	if len(rl.Results) > 0 {
		data, err := kyaml.Marshal(rl.Results)
		if err != nil {
			return err
		}
		if rw.Results, err = kyaml.Parse(string(data)); err != nil {
			return err
		}
	}
	if err := writeResourceList(rw, rl.Items); err != nil {
		return err
	}
	return processErr
}

// The severities of results.
const (
	severityError   = "error"
	severityWarning = "warning"
)

// An fnResult is a result of a KRM function: a problem, where it is, and how bad.
type fnResult struct {
	Message     string                    `yaml:"message,omitempty" json:"message,omitempty"`
	Severity    string                    `yaml:"severity,omitempty" json:"severity,omitempty"`
	ResourceRef *kyaml.ResourceIdentifier `yaml:"resourceRef,omitempty" json:"resourceRef,omitempty"`
	Field       *fnField                  `yaml:"field,omitempty" json:"field,omitempty"`
	File        *fnFile                   `yaml:"file,omitempty" json:"file,omitempty"`
}

// An fnField is the field of an item a result is about.
type fnField struct {
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
}

// An fnFile is the file, and the index of the document in it, that an item came from.
type fnFile struct {
	Path  string `yaml:"path,omitempty" json:"path,omitempty"`
	Index int    `yaml:"index,omitempty" json:"index,omitempty"`
}

// String returns the result as one message: [severity], the item (apiVersion/kind/namespace/
// name, those set) and the field if known, and the message.
func (r *fnResult) String() string {
	var b strings.Builder
	severity := r.Severity
	if severity == "" {
		severity = "info"
	}
	b.WriteString("[" + severity + "]")
	if ref := r.ResourceRef; ref != nil {
		var id []string
		for _, s := range []string{ref.APIVersion, ref.Kind, ref.Namespace, ref.Name} {
			if s != "" {
				id = append(id, s)
			}
		}
		if len(id) > 0 {
			b.WriteString(" " + strings.Join(id, "/"))
		}
	}
	if r.Field != nil {
		b.WriteString(" " + r.Field.Path)
	}
	b.WriteString(": " + r.Message)
	return b.String()
}

// fnResults are the results of a ResourceList; as an error, those that fail it.
type fnResults []*fnResult

func (rs fnResults) Error() string {
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.String()
	}
	return strings.Join(msgs, "\n\n")
}

// readResourceList reads the ResourceList of fn from r: one YAML or JSON document of at most
// max bytes, also with its aliases expanded, whose kind is ResourceList. It returns its text.
func readResourceList(r io.Reader, max int64) ([]byte, error) {
	const name = "<stdin>"
	sr := stream.ReaderOptions{MaxDocumentBytes: max, MaxInputBytes: max}.NewReader(name, r)
	doc, err := sr.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("fn: %s: got no input, want a ResourceList (kustomize and kpt send one); to apply overlays to manifests, use starpod apply", name)
	}
	if err != nil {
		return nil, fmt.Errorf("fn: %v", limitHint(err, map[string]string{"document": "--max-list-size", "input": "--max-list-size"}))
	}
	apiVersion, kind := doc.Kind()
	if kind != kio.ResourceListKind || !strings.HasPrefix(apiVersion, "config.kubernetes.io/") && !strings.HasPrefix(apiVersion, "config.k8s.io/") {
		got := strings.TrimSpace(apiVersion + " " + kind)
		if got == "" {
			got = "a document with no apiVersion and kind"
		}
		return nil, fmt.Errorf("fn: %s:%d: got %s, want a config.kubernetes.io/v1 ResourceList: fn is a KRM function, for kustomize and kpt; to apply overlays to manifests, use starpod apply", name, doc.Line, got)
	}
	if _, err := sr.NextText(); err != io.EOF {
		if err != nil {
			return nil, fmt.Errorf("fn: %v", limitHint(err, map[string]string{"document": "--max-list-size", "input": "--max-list-size"}))
		}
		return nil, fmt.Errorf("fn: %s: got more than one document, want one ResourceList; to apply overlays to a stream of manifests, use starpod apply", name)
	}
	return doc.Raw, nil
}

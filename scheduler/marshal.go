package scheduler

// This file defines the printed form of a job.

import (
	"bytes"
	"encoding/json"
	"fmt"

	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/starpod/starpod/internal/stream"
)

// Marshal returns the job as YAML or JSON (format "yaml" or "json"), with keys sorted and
// without nulls, empty output-only fields (status, creationTimestamp) or objects that held
// nothing else, so that what is printed is what a user would write.
func Marshal(job *vcbatch.Job, format string) ([]byte, error) {
	data, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	prune(obj)
	switch format {
	case "yaml", "":
		return stream.MarshalYAML(obj)
	case "json":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(obj); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return nil, fmt.Errorf("output format %q: want yaml or json", format)
}

// prune removes nulls from x, and the objects that become empty by that.
func prune(x any) (empty bool) {
	switch x := x.(type) {
	case map[string]any:
		if len(x) == 0 {
			return false
		}
		for k, v := range x {
			if v == nil {
				delete(x, k)
			} else if prune(v) {
				delete(x, k)
			}
		}
		return len(x) == 0
	case []any:
		for _, v := range x {
			prune(v)
		}
	}
	return false
}

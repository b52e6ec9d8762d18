package scheduler

// This file defines the error types of the package.

import (
	"fmt"
	"github.com/starpod/starpod/internal/yamlfile"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Position is a line and column in an app spec file, counting from 1. The zero Position
// means unknown.
type Position = yamlfile.Position

// A FieldError is one problem in an app spec: a Kubernetes field error (whose Field is the
// path, such as roles[0].resource.mem_mb) and where in the file the offending value is.
type FieldError = yamlfile.FieldError

// FieldErrors is a list of field errors.
type FieldErrors = yamlfile.FieldErrors

// A SpecError reports every problem found in an app spec, each with its field path and, when
// known, its line and column. Error prints one problem a line:
//
//	app.yaml:7:13: roles[0].resource.mem_mb: must be > 0
type SpecError struct {
	File   string // the spec's file name as given
	Errors FieldErrors
}

func (e *SpecError) Error() string {
	var b strings.Builder
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(yamlfile.Format(e.File, fe))
	}
	return b.String()
}

// FieldErrorList returns the problems as a field.ErrorList.
func (e *SpecError) FieldErrorList() field.ErrorList {
	return (&yamlfile.Error{File: e.File, Errors: e.Errors}).FieldErrorList()
}

// A BuildError lists every problem Build found, in the order [Build] describes: the spec's,
// the run options' and app id's, the overlays', then the replicas'. Errors of one replica are
// *ReplicaError values; errors from overlays wrap *engine.Error values.
type BuildError struct {
	Errs []error
}

func (e *BuildError) Error() string {
	var b strings.Builder
	for i, err := range e.Errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the errors, so that errors.As finds an *engine.Error among them.
func (e *BuildError) Unwrap() []error { return e.Errs }

// A ReplicaError is a problem with one replica's pod: an overlay failed on it, or the pod it
// produced is not valid.
type ReplicaError struct {
	Role      string
	ReplicaID int
	Err       error
}

// Error prints the role and replica in front of each line of the error.
func (e *ReplicaError) Error() string {
	prefix := fmt.Sprintf("role %s replica %d: ", e.Role, e.ReplicaID)
	if e.ReplicaID == TemplateReplicaID {
		prefix = fmt.Sprintf("role %s pod template: ", e.Role)
	}
	if fe, ok := e.Err.(*field.Error); ok {
		return prefix + "pod: " + fe.Field + ": " + yamlfile.Describe(fe)
	}
	return prefix + strings.ReplaceAll(e.Err.Error(), "\n", "\n"+prefix)
}

func (e *ReplicaError) Unwrap() error { return e.Err }

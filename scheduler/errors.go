package scheduler

// This file defines the error types of the package.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Position is a line and column in an app spec file, counting from 1. The zero Position
// means unknown.
type Position struct {
	Line, Col int
}

// A FieldError is one problem in an app spec: a Kubernetes field error (whose Field is the
// path, such as roles[0].resource.mem_mb) and where in the file the offending value is.
type FieldError struct {
	Pos Position
	Err *field.Error
}

// FieldErrors is a list of field errors.
type FieldErrors []*FieldError

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
		b.WriteString(formatFieldError(e.File, fe))
	}
	return b.String()
}

// FieldErrorList returns the problems as a field.ErrorList.
func (e *SpecError) FieldErrorList() field.ErrorList {
	list := make(field.ErrorList, len(e.Errors))
	for i, fe := range e.Errors {
		list[i] = fe.Err
	}
	return list
}

// formatFieldError prints file:line:col: path: detail.
func formatFieldError(file string, fe *FieldError) string {
	var b strings.Builder
	b.WriteString(file)
	if fe.Pos.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", fe.Pos.Line, fe.Pos.Col)
	}
	b.WriteString(": ")
	if fe.Err.Field != "" && fe.Err.Field != "<nil>" {
		b.WriteString(fe.Err.Field)
		b.WriteString(": ")
	}
	b.WriteString(describe(fe.Err))
	return b.String()
}

// describe returns the message of a field error without its path, in this package's wording.
func describe(err *field.Error) string {
	switch err.Type {
	case field.ErrorTypeRequired:
		if err.Field == rootPath {
			return err.Detail
		}
		if err.Detail != "" {
			return "required: " + err.Detail
		}
		return "required"
	case field.ErrorTypeDuplicate:
		return fmt.Sprintf("%s given twice", quote(fmt.Sprint(err.BadValue)))
	case field.ErrorTypeNotSupported:
		return fmt.Sprintf("got %s, want one of %s", quote(fmt.Sprint(err.BadValue)),
			strings.TrimPrefix(err.Detail, "supported values: "))
	case field.ErrorTypeInvalid:
		if s, ok := err.BadValue.(string); ok && s != "" {
			return fmt.Sprintf("got %s, %s", quote(s), err.Detail)
		}
		return err.Detail
	}
	return err.Detail
}

// maxQuoted bounds the bytes of a value that an error quotes: a spec's values may be long,
// and the same value may be wrong in every replica.
const maxQuoted = 256

// quote returns s quoted as %q does, cut to maxQuoted bytes with its length.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", cut(s), len(s))
}

// shorten returns s, or if it is longer than maxQuoted bytes, its start and "...".
func shorten(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return cut(s) + "..."
}

// cut returns the first maxQuoted bytes of s, or fewer so as not to cut a rune.
func cut(s string) string {
	n := min(maxQuoted, len(s))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
		return prefix + "pod: " + fe.Field + ": " + describe(fe)
	}
	return prefix + strings.ReplaceAll(e.Err.Error(), "\n", "\n"+prefix)
}

func (e *ReplicaError) Unwrap() error { return e.Err }

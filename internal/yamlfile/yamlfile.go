// Package yamlfile reads YAML files that people write, such as app specs and config files,
// strictly into Go structs, and reports every problem with its line, column and field path.
//
// To read a file, use [DecodeFile]: it refuses data over a size limit, bounds what YAML
// aliases add (see [AliasFactor]), and returns an *[Error] that lists every unknown key (with
// a did-you-mean), duplicate key and value of the wrong type, one a line:
//
//	config.yaml:7:13: rules[0].onError: unknown field; did you mean "onError"?
//
// A package that checks the decoded value further, as the app spec's does, uses a [Decoder]
// on the node that [Parse] returns, and keeps its positions to report later problems where
// their values were written.
//
// The YAML library is go.yaml.in/yaml/v3, whose node tree carries the positions.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/starpod/starpod/internal/bound"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A Position is a line and column in a file, counting from 1. The zero Position means
// unknown.
type Position struct {
	Line, Col int
}

// A FieldError is one problem in a file: a Kubernetes field error (whose Field is the path,
// such as roles[0].resource.mem_mb) and where in the file the offending value is.
type FieldError struct {
	Pos Position
	Err *field.Error
}

// FieldErrors is a list of field errors.
type FieldErrors []*FieldError

// Sort sorts the errors in file order, keeping the order of errors at one position.
func (errs FieldErrors) Sort() {
	slices.SortStableFunc(errs, func(a, b *FieldError) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
}

// An Error reports every problem found in a file, each with its field path and, when known,
// its line and column. Error prints one problem a line:
//
//	app.yaml:7:13: roles[0].resource.mem_mb: must be > 0
type Error struct {
	File   string // the file's name as given
	Errors FieldErrors
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, fe := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(Format(e.File, fe))
	}
	return b.String()
}

// FieldErrorList returns the problems as a field.ErrorList.
func (e *Error) FieldErrorList() field.ErrorList {
	list := make(field.ErrorList, len(e.Errors))
	for i, fe := range e.Errors {
		list[i] = fe.Err
	}
	return list
}

// Format prints file:line:col: path: detail.
func Format(file string, fe *FieldError) string {
	var b strings.Builder
	b.WriteString(file)
	if fe.Pos.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", fe.Pos.Line, fe.Pos.Col)
	}
	b.WriteString(": ")
	if fe.Err.Field != "" && fe.Err.Field != rootPath {
		b.WriteString(fe.Err.Field)
		b.WriteString(": ")
	}
	b.WriteString(Describe(fe.Err))
	return b.String()
}

// Options says how [Parse] and [DecodeFile] read a file. The zero value reads a config
// file of at most DefaultMaxBytes in which an empty file is an empty config.
type Options struct {
	// What names the file's kind in errors, such as "app spec"; "" means "config".
	What string
	// MaxBytes bounds the file's size; 0 means DefaultMaxBytes.
	MaxBytes int
	// NoEmpty refuses an empty file (one with no YAML document).
	NoEmpty bool
}

// DefaultMaxBytes is the size limit of a file when Options.MaxBytes is 0.
const DefaultMaxBytes = 1 << 20

func (o *Options) what() string {
	if o == nil || o.What == "" {
		return "config"
	}
	return o.What
}

// Parse parses data, which must hold at most one YAML document, into its node tree. It
// returns a nil node for an empty file, unless opts.NoEmpty, and an *Error for data over the
// size limit, a syntax error or more than one document.
func Parse(file string, data []byte, opts *Options) (*yaml.Node, error) {
	limit := limit(opts)
	fail := func(fe *FieldError) error { return &Error{File: file, Errors: FieldErrors{fe}} }
	if len(data) > limit {
		return nil, fail(&FieldError{Err: LimitError(field.ErrorTypeTooLong, nil,
			fmt.Sprintf("the %s is larger than the limit of %s", opts.what(), bound.FormatSize(int64(limit))))})
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		if opts != nil && opts.NoEmpty {
			return nil, fail(&FieldError{Err: field.Required(nil, "got an empty file, want an "+opts.what())})
		}
		return nil, nil
	case err != nil:
		return nil, fail(syntaxError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fail(&FieldError{Pos: nodePos(&extra), Err: field.Invalid(nil, nil, "got several YAML documents, want one")})
	} else if !errors.Is(err, io.EOF) {
		return nil, fail(syntaxError(err))
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// DecodeFile decodes data, one YAML document named file, strictly into v, a pointer to a
// struct whose fields carry yaml tags (see [Decoder.Decode] for the types it decodes). It
// refuses data larger than the limit of opts, bounds what aliases add (see [AliasFactor]) and
// the text the values add up to (the same limit), and
// returns an *Error listing every problem in file order. An empty file leaves v unchanged,
// unless opts.NoEmpty.
func DecodeFile(file string, data []byte, v any, opts *Options) error {
	root, err := Parse(file, data, opts)
	if err != nil || root == nil {
		return err
	}
	d := NewDecoder(root, opts.what())
	d.MaxText = limit(opts)
	d.Decode(root, reflect.ValueOf(v).Elem(), nil)
	if errs := d.Errors(); len(errs) > 0 {
		errs.Sort()
		return &Error{File: file, Errors: errs}
	}
	return nil
}

// limit returns the size limit of a file that opts reads, and of the text its values add up
// to.
func limit(opts *Options) int {
	if opts != nil && opts.MaxBytes > 0 {
		return opts.MaxBytes
	}
	return DefaultMaxBytes
}

// syntaxError turns a YAML syntax error into a FieldError with its line.
func syntaxError(err error) *FieldError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
		_, msg, _ = strings.Cut(msg, ": ")
		return &FieldError{Pos: Position{Line: line, Col: 1}, Err: field.Invalid(nil, nil, msg)}
	}
	return &FieldError{Err: field.Invalid(nil, nil, msg)}
}

// LimitError returns a field error of the type given (field.ErrorTypeTooMany or
// field.ErrorTypeTooLong) with the detail as it is: a limit of the file passed at p.
func LimitError(t field.ErrorType, p *field.Path, detail string) *field.Error {
	return &field.Error{Type: t, Field: p.String(), Detail: detail}
}

package engine

// This file defines the engine's error types.

import (
	"fmt"
	"strings"

	"go.starlark.net/syntax"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// An Error is a failure to compile or apply an overlay.
type Error struct {
	Overlay   string          // the overlay's name, usually its file name
	Pos       syntax.Position // where in the script, when known
	Backtrace string          // the Starlark backtrace, for errors during execution
	// Fields lists the problems of an invalid result, each with its pod field path,
	// e.g. spec.containers[0].ports[0].containerPort.
	Fields field.ErrorList
	Err    error // the cause: a syntax error, a *LimitError, a context error, ...
}

func (e *Error) Error() string {
	var b strings.Builder
	prefix := e.Overlay
	if e.Pos.IsValid() {
		prefix = e.Pos.String()
		if e.Pos.Filename() != e.Overlay && e.Overlay != "" {
			prefix = e.Overlay + ": " + prefix
		}
	}
	if len(e.Fields) > 0 {
		for i, fe := range e.Fields {
			if i > 0 {
				b.WriteByte('\n')
			}
			fmt.Fprintf(&b, "%s: %s: %s", prefix, fe.Field, fe.Detail)
		}
		return b.String()
	}
	msg := "unknown error"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	// Errors that carry their own positions (syntax and resolve errors) print as they are.
	if !e.Pos.IsValid() && strings.HasPrefix(msg, e.Overlay+":") {
		return msg
	}
	return prefix + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// A LimitError reports that an overlay hit one of its limits.
type LimitError struct {
	Limit string // "steps", "time", "result size" or "memory"
	Value string // the limit's value, e.g. "1000000", "2s", "1048576 bytes"
	Path  string // for "result size", the pod field path where the limit was passed
	Err   error  // what the interpreter reported, if anything
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "steps":
		return fmt.Sprintf("exceeded the limit of %s execution steps", e.Value)
	case "time":
		return fmt.Sprintf("exceeded the time limit of %s", e.Value)
	case "result size":
		msg := fmt.Sprintf("result exceeds the size limit of %s of JSON", e.Value)
		if e.Path != "" && e.Path != "<nil>" {
			msg += " at " + e.Path
		}
		return msg
	default:
		return fmt.Sprintf("exceeded the %s limit of %s", e.Limit, e.Value)
	}
}

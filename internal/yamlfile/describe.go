package yamlfile

// This file defines how a field error reads: its message without its path, and values
// quoted within a bound.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// rootPath is the printed form of the root's field path.
var rootPath = (*field.Path)(nil).String()

// Describe returns the message of a field error without its path: what was got and what
// was wanted.
func Describe(err *field.Error) string {
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
		return fmt.Sprintf("%s given twice", Quote(fmt.Sprint(err.BadValue)))
	case field.ErrorTypeNotSupported:
		return fmt.Sprintf("got %s, want one of %s", Quote(fmt.Sprint(err.BadValue)),
			strings.TrimPrefix(err.Detail, "supported values: "))
	case field.ErrorTypeInvalid:
		if s, ok := err.BadValue.(string); ok && s != "" {
			return fmt.Sprintf("got %s, %s", Quote(s), err.Detail)
		}
		return err.Detail
	}
	return err.Detail
}

// MaxQuoted bounds the bytes of a value that an error quotes: a file's values may be long,
// and the same value may be wrong many times.
const MaxQuoted = 256

// Quote returns s quoted as %q does, cut to MaxQuoted bytes with its length.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q... (%d bytes)", cut(s), len(s))
}

// Shorten returns s, or if it is longer than MaxQuoted bytes, its start and "...".
func Shorten(s string) string {
	if len(s) <= MaxQuoted {
		return s
	}
	return cut(s) + "..."
}

// cut returns the first MaxQuoted bytes of s, or fewer so as not to cut a rune.
func cut(s string) string {
	n := min(MaxQuoted, len(s))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

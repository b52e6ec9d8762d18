package engine

// This file defines the engine's error types, and the wording of compile errors: Python
// habits that the Starlark parser reports in its own terms ("got import, want primary
// expression") are named, with what Starlark offers instead, and an undefined name gets the
// nearest defined one.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/spell"
)

// An Error is a failure to compile or apply an overlay.
type Error struct {
	Overlay string          // the overlay's name, usually its file name
	Pos     syntax.Position // where in the script, when known
	// Backtrace is the Starlark call stack of an error during execution, outermost call
	// first: "Traceback (most recent call last):" and a line "  file:line:col: in function"
	// per call. It leaves out the message, which Error gives, and the builtin that failed,
	// whose name begins the message.
	Backtrace string
	// Fields lists the problems of an invalid result, each with its pod field path,
	// e.g. spec.containers[0].ports[0].containerPort.
	Fields field.ErrorList
	// Writes says, for each of the first Fields (those Error prints, 20 at most), where the
	// overlay last wrote the offending value: the statement or helper call, in the script or
	// a module it loads, with the call stack to it; or that the value came from the input pod. It is empty when no write could be
	// found; then Pos is the overlay function's. Pos and Backtrace are those of Writes[0].
	Writes []Write
	Err    error // the cause: a syntax error, a *LimitError, a context error, ...
}

// maxFieldErrors bounds the problems of a result that Error prints, one a line: an overlay
// that writes a bad value into every one of 10,000 items would print as many lines. Fields
// keeps them all.
const maxFieldErrors = 20

// Error prints the error: for an invalid result, its first maxFieldErrors problems, one a
// line, each at the statement that wrote the value, and how many more there are.
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
			if i == maxFieldErrors {
				fmt.Fprintf(&b, "%s: and %d more errors in this pod", prefix, len(e.Fields)-i)
				break
			}
			p, note := prefix, ""
			if i < len(e.Writes) {
				w := e.Writes[i]
				if w.Pos.IsValid() {
					p = w.Pos.String()
					if w.Pos.Filename() != e.Overlay && e.Overlay != "" {
						p = e.Overlay + ": " + p
					}
				}
				if w.Input {
					note = "; the value came from the input pod"
				}
			}
			fmt.Fprintf(&b, "%s: %s: %s%s", p, fe.Field, detail(fe), note)
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

// detail returns the message of a field error without its path: its detail, and the value
// got when the detail does not say it.
func detail(fe *field.Error) string {
	switch fe.Type {
	case field.ErrorTypeNotSupported:
		if want, ok := strings.CutPrefix(fe.Detail, "supported values: "); ok {
			return fmt.Sprintf("got %s, want one of %s", excerpt(strconv.Quote(fmt.Sprint(fe.BadValue))), want)
		}
	case field.ErrorTypeInvalid:
		if s, ok := fe.BadValue.(string); ok && s != "" && !strings.HasPrefix(fe.Detail, "got ") {
			return fmt.Sprintf("got %s, %s", excerpt(strconv.Quote(s)), fe.Detail)
		}
	}
	return fe.Detail
}

// A Limit names one of the limits of an overlay.
type Limit int

const (
	LimitSteps      Limit = iota + 1 // execution steps (Options.MaxSteps)
	LimitTime                        // wall time (Options.Timeout)
	LimitResultSize                  // the JSON size of the result (Options.MaxResultBytes)
	LimitMemory                      // the memory of a worker process (Options.MaxMemory)
)

func (l Limit) String() string {
	switch l {
	case LimitSteps:
		return "steps"
	case LimitTime:
		return "time"
	case LimitResultSize:
		return "result size"
	case LimitMemory:
		return "memory"
	}
	return fmt.Sprintf("Limit(%d)", int(l))
}

// A LimitError reports that an overlay hit one of its limits.
type LimitError struct {
	Limit Limit
	Value string // the limit's value, e.g. "1000000", "2s", "1048576 bytes", "512Mi"
	Path  string // for LimitResultSize, the pod field path where the limit was passed
	Err   error  // what the interpreter reported, if anything
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitSteps:
		return fmt.Sprintf("exceeded the limit of %s execution steps", e.Value)
	case LimitTime:
		return fmt.Sprintf("exceeded the time limit of %s", e.Value)
	case LimitResultSize:
		msg := fmt.Sprintf("result exceeds the size limit of %s of JSON", e.Value)
		if e.Path != "" && e.Path != "<nil>" {
			msg += " at " + e.Path
		}
		return msg
	default:
		return fmt.Sprintf("exceeded the %s limit of %s", e.Limit, e.Value)
	}
}

func (e *LimitError) Unwrap() error { return e.Err }

// A DeadlineError reports that the deadline of the context of an apply passed before the
// overlay finished: the caller's deadline, not a limit of the overlay (a *LimitError). It
// wraps context.DeadlineExceeded, for errors.Is. An overlay in a worker process is told its
// caller's deadline and stops there with the same error.
type DeadlineError struct {
	After time.Duration // how long the apply had run when the deadline passed; zero if it had not begun
}

func (e *DeadlineError) Error() string {
	if e.After <= 0 {
		return "the caller's deadline had passed before the apply began"
	}
	return fmt.Sprintf("the caller's deadline passed after %v", e.After)
}

func (e *DeadlineError) Unwrap() error { return context.DeadlineExceeded }

// ctxError returns the error of ctx, which has ended, for an apply that did not begin: a
// *DeadlineError for its deadline, as for an apply its deadline stopped.
func ctxError(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return &DeadlineError{}
	}
	return err
}

// backtrace returns the call stack of an error during execution for Error.Backtrace.
func backtrace(eval *starlark.EvalError) string {
	stack := eval.CallStack
	if n := len(stack); n > 0 && stack[n-1].Pos.Filename() == "<builtin>" {
		stack = stack[:n-1]
	}
	return strings.TrimRight(stack.String(), "\n")
}

// The patterns of evalHint, compiled when an error first needs them.
var (
	noFieldError  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^dict has no \.(\w+) field or method$`) })
	unassignedVar = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^local variable (\w+) referenced before assignment$`)
	})
)

// evalHint returns what a Python habit that gave the message of an error of execution likely
// meant, or "": a pod's fields read as attributes (pod.spec), a global assigned in a function
// (COUNT += 1).
func evalHint(msg string) string {
	if m := noFieldError().FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf(`a pod and its fields are dicts: write pod[%q], or pod.get(%q) for a field that may be absent`, m[1], m[1])
	}
	if m := unassignedVar().FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("if %s is a global, a function cannot assign it (globals are frozen once the top level has run): "+
			"compute the value in the function, or change a dict or list in place", m[1])
	}
	return ""
}

// pythonKeywords says what Starlark offers instead of the Python keywords it lacks, which its
// parser reports as "got KEYWORD, want ...".
var pythonKeywords = map[string]string{
	"import":   `"import" is not Starlark; use load("lib.star", "name") for the names of another .star file (json, math, yaml, quantity and struct need no import)`,
	"from":     `"from ... import" is not Starlark; use load("lib.star", "name") for the names of another .star file`,
	"try":      `"try" is not Starlark, and errors cannot be caught; check first (key in d, d.get(key, default)) and call fail("message") to stop with an error`,
	"except":   `"except" is not Starlark, and errors cannot be caught; check first (key in d, d.get(key, default)) and call fail("message") to stop with an error`,
	"finally":  `"finally" is not Starlark, and errors cannot be caught; check first (key in d, d.get(key, default)) and call fail("message") to stop with an error`,
	"raise":    `"raise" is not Starlark; call fail("message") to stop with an error`,
	"class":    `"class" is not Starlark; use dicts, or struct(name = value) for a record, and functions`,
	"with":     `"with" is not Starlark; an overlay has no files or other resources to open and close`,
	"global":   `"global" is not Starlark: a function cannot assign a global; return the value, or change a dict or list in place`,
	"nonlocal": `"nonlocal" is not Starlark: a function cannot assign a variable of another; return the value, or change a dict or list in place`,
	"del":      `"del" is not Starlark; use d.pop(key), l.remove(x), l.pop(i), or remove(value, path)`,
	"yield":    `"yield" is not Starlark; build a list and return it`,
	"is":       `"is" is not Starlark; compare with == and != (x == None, x != None)`,
}

// Hints of other Python habits.
const (
	fstringHint   = `f-strings are not Starlark; format with % or format(): "%s-%d" % (name, n), "{}-{}".format(name, n)`
	lambdaHint    = `a lambda's body is one expression, not a statement; define the function with def`
	assertHint    = `the assert statement is not Starlark; write if not cond: fail("message") (test files have assert.true(cond))`
	decoratorHint = `decorators are not Starlark; call the function instead: f = wrap(f)`
)

// lambdaStatements are the tokens that start a statement where a lambda wants an expression.
var lambdaStatements = []string{"pass", "return", "break", "continue", "if", "for", "def", "load", "'='"}

// The patterns of explainSyntax, compiled when a syntax error first needs them rather than
// at every start of the program.
var (
	fstringPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[^\w])([fF][rR]?|[rR][fF])["']`) })
	lambdaKeyword = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|[^\w])(lambda)(?:[^\w]|$)`) })
)

// explainSyntax rewords a syntax error of the file src that is a Python habit: the message
// says what Starlark offers instead, and the position is where the habit begins.
func explainSyntax(e syntax.Error, src []byte) syntax.Error {
	file := e.Pos.Filename()
	at := func(line int32, col int, msg string) syntax.Error {
		return syntax.Error{Pos: syntax.MakePosition(&file, line, int32(col)), Msg: msg}
	}
	text := srcLine(src, e.Pos.Line)
	col := int(e.Pos.Col) // 1-based, in runes
	if e.Msg == "unexpected input character '@'" && strings.HasPrefix(strings.TrimSpace(text), "@") {
		return at(e.Pos.Line, col, decoratorHint)
	}
	rest, ok := strings.CutPrefix(e.Msg, "got ")
	if !ok {
		return e
	}
	tok, want, ok := strings.Cut(rest, ", want ")
	if !ok {
		return e
	}
	// The parser gives the start of the token it got when it wants a primary expression, and
	// the end of it otherwise.
	start := col
	if want != "primary expression" {
		start = col - utf8.RuneCountInString(strings.Trim(tok, "'"))
	}
	switch {
	case tok == "string literal":
		if line, c, ok := fstringStart(src, e.Pos); ok {
			return at(line, c, fstringHint)
		}
	case slices.Contains(lambdaStatements, tok) && lambdaKeyword().MatchString(prefixRunes(text, start-1)):
		before := prefixRunes(text, start-1)
		locs := lambdaKeyword().FindAllStringSubmatchIndex(before, -1)
		return at(e.Pos.Line, utf8.RuneCountInString(before[:locs[len(locs)-1][2]])+1, lambdaHint)
	case pythonKeywords[tok] != "":
		return at(e.Pos.Line, start, pythonKeywords[tok])
	case want == "newline":
		// "assert cond" parses as the name assert followed by another expression.
		indent := len(text) - len(strings.TrimLeft(text, " \t"))
		if rest, ok := strings.CutPrefix(text[indent:], "assert"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return at(e.Pos.Line, indent+1, assertHint)
		}
	}
	return e
}

// lineOffset returns the offset in src of the 1-based line n, or -1 if src has fewer lines.
func lineOffset(src []byte, n int32) int {
	off := 0
	for i := int32(1); i < n; i++ {
		j := bytes.IndexByte(src[off:], '\n')
		if j < 0 {
			return -1
		}
		off += j + 1
	}
	return off
}

// srcLine returns the text of the 1-based line n of src, without its newline.
func srcLine(src []byte, n int32) string {
	off := lineOffset(src, n)
	if off < 0 {
		return ""
	}
	line := src[off:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return strings.TrimSuffix(string(line), "\r")
}

// prefixRunes returns the first n runes of s, or all of s.
func prefixRunes(s string, n int) string {
	for i := range s {
		if n <= 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// fstringStart reports whether the string literal that ends at end (the position the parser
// gives an unexpected string literal) has an f prefix, and returns the prefix's line and
// column.
func fstringStart(src []byte, end syntax.Position) (int32, int, bool) {
	off := lineOffset(src, end.Line)
	if off < 0 {
		return 0, 0, false
	}
	off += len(prefixRunes(string(src[off:min(len(src), off+4*int(end.Col))]), int(end.Col)-1))
	// The last f-prefixed literal before end that ends there.
	locs := fstringPrefix().FindAllSubmatchIndex(src[:off], -1)
	for i := len(locs) - 1; i >= 0; i-- {
		prefix, quote := locs[i][2], locs[i][3]
		if stringEnd(src, quote) != off {
			continue
		}
		line := int32(bytes.Count(src[:prefix], []byte("\n"))) + 1
		ls := bytes.LastIndexByte(src[:prefix], '\n') + 1
		return line, utf8.RuneCount(src[ls:prefix]) + 1, true
	}
	return 0, 0, false
}

// stringEnd returns the offset just after the Python string literal whose opening quote is at
// src[i], or -1 if it does not end.
func stringEnd(src []byte, i int) int {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	if triple {
		i += 3
	} else {
		i++
	}
	for i < len(src) {
		switch c := src[i]; {
		case c == '\\':
			i += 2
			continue
		case c == '\n' && !triple:
			return -1
		case c == q && !triple:
			return i + 1
		case c == q && i+2 < len(src) && src[i+1] == q && src[i+2] == q:
			return i + 3
		}
		i++
	}
	return -1
}

// pythonNames says what Starlark offers instead of names a Python programmer may expect.
var pythonNames = map[string]string{
	"null":       "use None",
	"nil":        "use None",
	"isinstance": `compare type(x) with a type name: type(x) == "dict"`,
}

// maxHintName bounds the names that "did you mean" hints compare and suggest: a compile error
// quotes only short excerpts of a file, which may be any file (a secret read by mistake).
const maxHintName = 64

// explainResolve adds hints to the errors of resolving file, whose predeclared names are
// those of predecl: an undefined name gets the nearest name the file could have meant.
func explainResolve(file *syntax.File, list resolve.ErrorList, predecl starlark.StringDict) resolve.ErrorList {
	var names []string
	out := make(resolve.ErrorList, len(list))
	for i, e := range list {
		e.Msg = excerpt(e.Msg)
		if name, ok := strings.CutPrefix(e.Msg, "undefined: "); ok {
			// The resolver's own hint looks at the file's names only.
			name, _, _ = strings.Cut(name, " ")
			e.Msg = "undefined: " + name
			if names == nil {
				names = definedNames(file, predecl)
			}
			if hint, ok := pythonNames[name]; ok {
				e.Msg += "; " + hint
			} else if len(name) <= maxHintName {
				if near := spell.Nearest(name, names); near != "" && near != name {
					e.Msg += fmt.Sprintf("; did you mean %q?", near)
				}
			}
		}
		switch e.Msg {
		case "this Starlark dialect does not support while loops":
			e.Msg += "; loop with for over range(n) or a list, and break"
		case "if statement not within a function", "for loop not within a function":
			e.Msg += "; the top level holds only load, def and assignments: move it into a function"
		}
		out[i] = e
	}
	return out
}

// definedNames returns, sorted, the names a file may use: the predeclared ones, the universe's,
// and those the file binds (globals, parameters and locals, in any function).
func definedNames(file *syntax.File, predecl starlark.StringDict) []string {
	seen := make(map[string]bool)
	for name := range predecl {
		seen[name] = true
	}
	for name := range starlark.Universe {
		seen[name] = true
	}
	if file != nil {
		syntax.Walk(file, func(n syntax.Node) bool {
			if id, ok := n.(*syntax.Ident); ok && len(id.Name) <= maxHintName {
				if b, ok := id.Binding.(*resolve.Binding); ok && b.Scope != resolve.Undefined {
					seen[id.Name] = true
				}
			}
			return true
		})
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Bounds of the errors of a file that does not compile, which may be any file (a secret read
// by mistake): they quote only short excerpts of it.
const (
	maxCompileErrors = 10  // errors reported of one file
	maxExcerpt       = 120 // bytes of one error's message
)

// excerpt cuts msg to maxExcerpt bytes.
func excerpt(msg string) string {
	if len(msg) <= maxExcerpt {
		return msg
	}
	n := maxExcerpt
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "..."
}

// resolveErrors reports every resolve error, one a line, each with its position. Their
// messages are short (see explainResolve).
type resolveErrors resolve.ErrorList

func (e resolveErrors) Error() string {
	var b strings.Builder
	for i, err := range e {
		if i > 0 {
			b.WriteString("\n")
		}
		if i == maxCompileErrors {
			fmt.Fprintf(&b, "%s: and %d more errors", err.Pos.Filename(), len(e)-i)
			break
		}
		b.WriteString(err.Pos.String() + ": " + err.Msg)
	}
	return b.String()
}

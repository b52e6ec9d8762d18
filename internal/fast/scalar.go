package fast

// This file defines how go.yaml.in/yaml/v2 prints scalars and orders keys, for the text
// whose form does not depend on details of that emitter (long lines folded, multi-line and
// non-ASCII strings, floats): the printers fall back to the YAML library for the rest.

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	goyaml "go.yaml.in/yaml/v2"
)

const (
	yamlWidth  = 80  // the YAML library's line width: it folds lines at spaces beyond it
	maxKeyText = 120 // keys longer than this may stop being simple keys
)

// scalarText returns the text of the string s as a scalar that starts at column col.
func scalarText(s string, col int) (string, bool) {
	if isPlain(s) {
		return s, true
	}
	t, ok := quotedText(s)
	if !ok || strings.IndexByte(s, ' ') >= 0 && col+len(t) > yamlWidth {
		return "", false // the YAML library might fold it
	}
	return t, true
}

// isPlain reports whether the YAML library writes s as it is: s starts with a letter or /, has
// only letters, digits and . _ / - = and colons not at its end, and is not a word such as
// "yes" that reads as something other than a string.
func isPlain(s string) bool {
	if len(s) == 0 {
		return false
	}
	switch c := s[0]; {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		if len(s) <= 5 && strings.IndexByte("yYnNtTfFoO", c) >= 0 && isYAMLWord(s) {
			return false
		}
	case c == '/': // a path
	default:
		return false
	}
	t := s[1:]
	for ; len(t) >= 4; t = t[4:] { // four bytes a test
		if plainByte[t[0]]&plainByte[t[1]]&plainByte[t[2]]&plainByte[t[3]] == 0 {
			return false
		}
	}
	for i := range len(t) {
		if plainByte[t[i]] == 0 {
			return false
		}
	}
	return s[len(s)-1] != ':'
}

// isYAMLWord reports whether s is one of the words starting with a letter that the YAML
// library reads as a bool or null (the words of its resolve table), which it quotes.
func isYAMLWord(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
		"null", "Null", "NULL":
		return true
	}
	return false
}

// plainByte is 1 for the bytes isPlain allows after the first, else 0.
var plainByte = func() (plain [256]uint8) {
	for c := range 256 {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._/-=:", byte(c)) >= 0 {
			plain[c] = 1
		}
	}
	return plain
}()

// quoted caches the text the YAML library gives single-line printable ASCII strings that
// are not plain: quoted, or plain with spaces or other characters.
var quoted struct {
	sync.RWMutex
	m map[string]string
}

const (
	maxQuoted    = 4096 // strings quoted holds at most
	maxQuotedLen = 256  // length of the longest string quoted holds
)

// quotedText returns the text the YAML library gives the string s when s is alone on a
// line, if s is printable ASCII and that text is one line.
func quotedText(s string) (string, bool) {
	quoted.RLock()
	t, ok := quoted.m[s]
	quoted.RUnlock()
	if ok { // it holds only printable ASCII
		return t, t != ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return "", false
		}
	}
	data, err := goyaml.Marshal(s)
	if err != nil {
		return "", false
	}
	t = strings.TrimSuffix(string(data), "\n")
	if strings.IndexByte(t, '\n') >= 0 {
		t = "" // never a valid text: the empty string is written ""
	}
	if len(s) <= maxQuotedLen {
		quoted.Lock()
		if quoted.m == nil {
			quoted.m = make(map[string]string)
		}
		if len(quoted.m) < maxQuoted {
			quoted.m[strings.Clone(s)] = t // s may be part of a larger text
		}
		quoted.Unlock()
	}
	return t, t != ""
}

const spaces = "                                                                "

// appendSpaces appends n spaces to buf.
func appendSpaces(buf []byte, n int) []byte {
	if l := len(buf); n <= 16 && cap(buf)-l >= 16 {
		// Sixteen spaces in two stores rather than a call of memmove; those past n are
		// past the length of the result.
		*(*[16]byte)(buf[l : l+16]) = [16]byte([]byte(spaces[:16]))
		return buf[:l+n]
	}
	for n > len(spaces) {
		buf = append(buf, spaces...)
		n -= len(spaces)
	}
	return append(buf, spaces[:n]...)
}

// sortKeys orders the items of s by their keys as the YAML library orders the keys of a
// mapping (letters before other characters, runs of digits by their numeric value), and the
// same way every time. That order is not transitive for some sets of keys ("a01" < "a10" <
// "a1b" < "a01"), and the library sorts keys starting from Go's random map order, so for
// those sets its text changes from run to run. sortKeys starts from byte order and sorts as
// the library does, with sort.Sort: its result is always one the library may give, and for
// all other sets of keys the one it gives.
func sortKeys[T any](s []T, key func(T) string) {
	o := &keyOrder[T]{key: key}
	o.sort(s)
}

// A keyOrder sorts as sortKeys does. Reusing one saves an allocation a sort.
type keyOrder[T any] struct {
	s     []T
	key   func(T) string
	ascii bool // whether all keys are ASCII
}

func (o *keyOrder[T]) sort(s []T) {
	o.s = s
	slices.SortFunc(s, func(a, b T) int { return strings.Compare(o.key(a), o.key(b)) })
	sort.Sort(o)
	o.s = nil
}

func (o *keyOrder[T]) Len() int { return len(o.s) }
func (o *keyOrder[T]) Less(i, j int) bool {
	if o.ascii {
		return keyLessASCII(o.key(o.s[i]), o.key(o.s[j]))
	}
	return keyLess(o.key(o.s[i]), o.key(o.s[j]))
}
func (o *keyOrder[T]) Swap(i, j int) { o.s[i], o.s[j] = o.s[j], o.s[i] }

// keyLess is the order of string keys of go.yaml.in/yaml/v2's sorter.
func keyLess(a, b string) bool {
	if isASCII(a) && isASCII(b) {
		return keyLessASCII(a, b)
	}
	return keyLessRunes(a, b)
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// keyLessASCII is keyLessRunes for ASCII strings, without converting them to runes.
func keyLessASCII(a, b string) bool {
	isLetter := func(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al := isLetter(a[i])
		bl := isLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
				if a[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(a) && isDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for bi = i; bi < len(b) && isDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

// keyLessRunes is the order of string keys of go.yaml.in/yaml/v2's sorter, as it is written.
func keyLessRunes(a, b string) bool {
	ar, br := []rune(a), []rune(b)
	for i := 0; i < len(ar) && i < len(br); i++ {
		if ar[i] == br[i] {
			continue
		}
		al := unicode.IsLetter(ar[i])
		bl := unicode.IsLetter(br[i])
		if al && bl {
			return ar[i] < br[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar[i] == '0' || br[i] == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar[j]); j-- {
				if ar[j] != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < len(ar) && unicode.IsDigit(ar[ai]); ai++ {
			an = an*10 + int64(ar[ai]-'0')
		}
		for bi = i; bi < len(br) && unicode.IsDigit(br[bi]); bi++ {
			bn = bn*10 + int64(br[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar[i] < br[i]
	}
	return len(ar) < len(br)
}

// oneDocument reports whether the YAML text doc, cut from a stream at lines "---", can only
// hold one document, which is so for nearly every manifest: its first line that is not blank
// or a comment is "key: ..." at column 0, so that its root is a block mapping that ends only
// with the text, at a line that starts with "...", "%" or "---" (which splitting leaves
// none of), or at a line break other than \n (\r, U+0085, U+2028, U+2029). For the other texts,
// the parser tells.
func oneDocument(doc []byte) bool {
	if bytes.IndexByte(doc, '\r') >= 0 ||
		bytes.IndexByte(doc, 0xc2) >= 0 && bytes.Contains(doc, []byte("\u0085")) ||
		bytes.IndexByte(doc, 0xe2) >= 0 && (bytes.Contains(doc, []byte("\u2028")) || bytes.Contains(doc, []byte("\u2029"))) {
		return false
	}
	for text := doc; ; { // lines that start with "..." or "%"
		if bytes.HasPrefix(text, []byte("...")) || len(text) > 0 && text[0] == '%' {
			return false
		}
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		text = text[i+1:]
	}
	for len(doc) > 0 {
		line := doc
		if i := bytes.IndexByte(doc, '\n'); i >= 0 {
			line, doc = doc[:i], doc[i+1:]
		} else {
			doc = nil
		}
		if t := bytes.TrimLeft(line, " \t"); len(t) == 0 || t[0] == '#' {
			continue
		}
		return isKeyLine(line)
	}
	return true // no content
}

// isKeyLine reports whether line starts with a plain key of letters, digits and "_-./",
// followed by ":" and a space or the end of the line.
func isKeyLine(line []byte) bool {
	for i, c := range line {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '/', c == '.' && i > 0, c == '-' && i > 0:
			continue
		case c == ':' && i > 0:
			return i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t'
		}
		return false
	}
	return false
}

// yamlNumbers returns v for the YAML library: each json.Number replaced with the int, uint64
// or float64 that the YAML parser resolves its text to, and each map with a goyaml.MapSlice
// in the order of sortKeys.
func yamlNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		// A map in key order: the library would sort its keys starting from Go's random
		// map order, which for some sets of keys changes its text from run to run.
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sortKeys(keys, func(k string) string { return k })
		m := make(goyaml.MapSlice, len(keys))
		for i, k := range keys {
			m[i] = goyaml.MapItem{Key: k, Value: yamlNumbers(v[k])}
		}
		return m
	case []any:
		for i, x := range v {
			v[i] = yamlNumbers(x)
		}
	case json.Number:
		s := string(v)
		if i, err := strconv.ParseInt(s, 10, 0); err == nil {
			return int(i)
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
		return s
	}
	return v
}

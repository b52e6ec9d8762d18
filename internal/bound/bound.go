// Package bound reads untrusted files and checks untrusted values within limits, before
// anything parses them.
//
// To read a script, a module or an app spec, use [ReadFile]: it reads only regular files, and
// no more than a limit. To open a stream that may also be a pipe, use [Open]. A file that is
// too large is a [*SizeError]; a file of the wrong type is a [*TypeError]. To check a
// Kubernetes quantity before resource.ParseQuantity sees it, use [Quantity].
package bound

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Limits of the scripts that every command reads.
const (
	// MaxScript bounds one overlay script or module file. The largest overlay library in
	// the examples is a few KiB.
	MaxScript = 1 << 20
	// MaxModules bounds the modules of one compile together: what the loads of a script and
	// of its modules read.
	MaxModules = 8 << 20
)

// A SizeError is an input over its size limit.
type SizeError struct {
	Name  string // the file, or what was read: "<stdin>", "document 3"
	What  string // what the limit bounds: "script", "module", "app spec", "document", "stream"
	Limit int64  // the limit, in bytes
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("%s: the %s is larger than the limit of %s", e.Name, e.What, FormatSize(e.Limit))
}

// A TypeError is a file that is not of a type that may be read: a directory, a device, a
// named pipe or a socket where a regular file is wanted.
type TypeError struct {
	Name string
	Mode fs.FileMode
	Want string // "a regular file", "a regular file or a pipe"
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("%s: is %s, want %s", e.Name, describeMode(e.Mode), e.Want)
}

// describeMode names the type of a file mode with its article.
func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	default:
		return "not a regular file"
	}
}

// ReadFile reads the regular file name, of at most limit bytes; what says what the file is
// ("script", "module", "app spec") in a *SizeError. It refuses directories, devices, named
// pipes and sockets with a *TypeError without reading them, and never reads more than limit+1
// bytes, also of a file that grows while it is read.
func ReadFile(name string, limit int64, what string) ([]byte, error) {
	f, err := openRegular(name, "a regular file", false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, name, limit, what)
}

// ReadAll reads r to its end, refusing with a *SizeError once it passes limit bytes.
func ReadAll(r io.Reader, name string, limit int64, what string) ([]byte, error) {
	var size int64
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
			if size > limit {
				return nil, &SizeError{Name: name, What: what, Limit: limit}
			}
		}
	}
	buf := make([]byte, 0, min(size, limit)+512)
	lr := &io.LimitedReader{R: r, N: limit + 1}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &SizeError{Name: name, What: what, Limit: limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Open opens the file name of a stream: a regular file or a pipe (a named pipe, or the
// /dev/fd/N of a shell's process substitution). It refuses directories, devices and sockets
// with a *TypeError.
func Open(name string) (*os.File, error) {
	return openRegular(name, "a regular file or a pipe", true)
}

// openRegular opens name and checks its type after opening, so that a file swapped between a
// check and the open cannot pass. A named pipe is opened only when pipes are allowed: opening
// one for reading blocks until a writer comes, so its type is checked before too.
func openRegular(name, want string, pipes bool) (*os.File, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !allowed(fi.Mode(), pipes) {
		return nil, &TypeError{Name: name, Mode: fi.Mode(), Want: want}
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if !allowed(fi.Mode(), pipes) {
		f.Close()
		return nil, &TypeError{Name: name, Mode: fi.Mode(), Want: want}
	}
	return f, nil
}

func allowed(m fs.FileMode, pipes bool) bool {
	return m.IsRegular() || pipes && m&fs.ModeNamedPipe != 0
}

// Regular returns a *TypeError unless fi, the information of the file name, is of a regular
// file.
func Regular(name string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &TypeError{Name: name, Mode: fi.Mode(), Want: "a regular file"}
	}
	return nil
}

// IsLimit reports whether err is a *SizeError or a *TypeError: an input refused by this
// package rather than an error of the file system.
func IsLimit(err error) bool {
	var size *SizeError
	var typ *TypeError
	return errors.As(err, &size) || errors.As(err, &typ)
}

// Limits of a quantity's text, checked by [Quantity].
const (
	// MaxQuantityLen bounds the length of a quantity's text. The longest quantity the API
	// server ever prints is well under it (19 digits of an int64, a fraction, a suffix).
	MaxQuantityLen = 64
	// MaxQuantityExponent bounds the absolute value of a quantity's decimal exponent
	// ("1e300"). resource.ParseQuantity works in time that grows with the exponent, and
	// never returns for one near 2^31.
	MaxQuantityExponent = 100
)

// Quantity checks the text of a Kubernetes quantity against the bounds above, so that
// resource.ParseQuantity, which takes time that grows with the exponent and the number of
// digits, only ever sees short texts. It does not check the syntax: ParseQuantity does.
func Quantity(s string) error {
	if len(s) > MaxQuantityLen {
		return fmt.Errorf("quantity of %d characters is longer than the limit of %d", len(s), MaxQuantityLen)
	}
	for i := 0; i < len(s); i++ {
		if s[i] != 'e' && s[i] != 'E' {
			continue
		}
		exp := s[i+1:]
		if exp == "" {
			return nil // the suffix E (exa), not an exponent
		}
		n, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			// Not an exponent: ParseQuantity reports the syntax. A run of digits too
			// long for an int64 is an exponent out of range.
			if isDigits(exp) {
				return fmt.Errorf("quantity exponent %s is out of range [-%d, %d]", exp, MaxQuantityExponent, MaxQuantityExponent)
			}
			return nil
		}
		if n > MaxQuantityExponent || n < -MaxQuantityExponent {
			return fmt.Errorf("quantity exponent %d is out of range [-%d, %d]", n, MaxQuantityExponent, MaxQuantityExponent)
		}
		return nil
	}
	return nil
}

// isDigits reports whether s is an optional sign and then only decimal digits.
func isDigits(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && strings.TrimLeft(s, "0123456789") == ""
}

// FormatSize formats a number of bytes as the Kubernetes quantity it is written as most
// simply: 512Mi, 2Gi, 1000.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Ei", 1 << 60}, {"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return fmt.Sprint(n)
}

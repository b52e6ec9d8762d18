package component

// This file defines the reading of a component's docstring and the help it gives.

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"

	"go.starlark.net/starlark"
)

// A doc is what a docstring says: its summary, description, and the text and type of each
// parameter in its Args: section.
type doc struct {
	summary, description string
	args                 map[string]argDoc
}

type argDoc struct{ typ, help string }

// maxHelp bounds the help text of one parameter: the lines after it are left out, so that a
// docstring of many continuation lines is read in time linear in its size.
const maxHelp = 4 << 10

// argLine matches an entry of an Args: section: "name: text" or "name (type): text", with
// "*args" and "**kwargs" too. It is compiled when a docstring is first read, rather than at
// every start of the program.
var argLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$`)
})

// sectionLine matches the header of a Google-style docstring section.
var sectionLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(Args|Arguments|Returns|Raises|Example|Examples|Note|Notes|Usage):\s*$`)
})

// parseDoc reads a Google-style docstring.
func parseDoc(s string) doc {
	d := doc{args: make(map[string]argDoc)}
	lines := strings.Split(strings.ReplaceAll(s, "\t", "    "), "\n")
	var para []string
	var desc []string
	section, sectionIndent, entryIndent := "", 0, -1
	var cur string
	var help []string // the help lines of cur, joined when the next entry begins
	helpLen := 0
	flush := func() {
		if cur != "" {
			a := d.args[cur]
			a.help = strings.TrimSpace(strings.Join(help, " "))
			d.args[cur] = a
		}
		help, helpLen = help[:0], 0
	}
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if m := sectionLine().FindStringSubmatch(trimmed); m != nil {
			flush()
			section, sectionIndent, entryIndent, cur = m[1], indent, -1, ""
			continue
		}
		if section != "" && trimmed != "" && indent <= sectionIndent {
			flush()
			section, cur = "", "" // the section has ended: back to the description
		}
		switch {
		case section == "Args" || section == "Arguments":
			if trimmed == "" {
				continue
			}
			if entryIndent < 0 {
				entryIndent = indent
			}
			if m := argLine().FindStringSubmatch(trimmed); m != nil && indent == entryIndent {
				flush()
				cur = m[1]
				d.args[cur] = argDoc{typ: strings.TrimSpace(m[2])}
				help, helpLen = append(help, m[3]), len(m[3])
			} else if cur != "" && helpLen < maxHelp {
				help = append(help, trimmed)
				helpLen += len(trimmed) + 1
			}
		case section != "":
			// Other sections are not shown.
		case d.summary == "":
			if trimmed == "" {
				if len(para) > 0 {
					d.summary = strings.Join(para, " ")
				}
				continue
			}
			para = append(para, trimmed)
		default:
			desc = append(desc, strings.TrimRight(line, " "))
		}
	}
	flush()
	if d.summary == "" {
		d.summary = strings.Join(para, " ")
	}
	d.description = strings.Trim(dedent(desc), "\n")
	return d
}

// dedent removes the indentation common to the non-blank lines.
func dedent(lines []string) string {
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// WriteHelp writes the help of the component: its usage line, summary, description and
// flags, each with its type, default and text.
func (c *Component) WriteHelp(w io.Writer, command string) error {
	var b strings.Builder
	usage := command + " " + c.Name + " [flags]"
	if c.Varargs != nil {
		usage += " [-- " + strings.ToUpper(c.Varargs.Name) + "...]"
	}
	fmt.Fprintf(&b, "Usage: %s\n\n", usage)
	if c.Summary != "" {
		fmt.Fprintf(&b, "%s\n\n", c.Summary)
	}
	if c.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", c.Description)
	}
	b.WriteString("Flags:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, p := range c.Params {
		def := "required"
		if !p.Required {
			def = "default " + showDefault(p.Default)
		}
		fmt.Fprintf(tw, "  %s %s\t%s (%s)\n", p.Flag(), p.Kind, p.Help, def)
	}
	if c.Varargs != nil {
		fmt.Fprintf(tw, "  -- %s...\t%s\n", strings.ToUpper(c.Varargs.Name), c.Varargs.Help)
	}
	fmt.Fprintf(tw, "  --help\tshow this help\n")
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// showDefault formats a default value as a command line would give it.
func showDefault(v starlark.Value) string {
	switch v := v.(type) {
	case starlark.NoneType:
		return "none"
	case starlark.Bool:
		if v {
			return "true"
		}
		return "false"
	case starlark.String:
		return fmt.Sprintf("%q", string(v))
	case *starlark.Dict:
		var kvs []string
		for _, kv := range v.Items() {
			k, _ := starlark.AsString(kv[0])
			val, _ := starlark.AsString(kv[1])
			kvs = append(kvs, k+"="+val)
		}
		if len(kvs) == 0 {
			return "none"
		}
		return fmt.Sprintf("%q", strings.Join(kvs, ","))
	case *starlark.List:
		var items []string
		for i := 0; i < v.Len(); i++ {
			s, _ := starlark.AsString(v.Index(i))
			items = append(items, s)
		}
		if len(items) == 0 {
			return "none"
		}
		return fmt.Sprintf("%q", strings.Join(items, ","))
	}
	return v.String()
}

package builtins

//go:generate go test -run TestReference -update

// This file defines the user reference of the builtins, generated from the doc tables that
// sit next to each builtin, and printed by `starpod builtins` and into docs/builtins.md.

import (
	"fmt"
	"strings"
)

// A Doc documents one builtin or module for the reference.
type Doc struct {
	Name    string // as scripts call it: "merge", "quantity.add", "json"
	Params  string // the parameter list, "(base, patch, lists=\"merge\", keys=None)"; "" for a module
	Summary string // one line
	Notes   string // optional: more detail, one paragraph
	Example string // Starlark statements whose last line is an expression
	Result  string // a Starlark expression equal to the value of Example's last line
}

// Signature returns the name and parameters: "merge(base, patch, ...)".
func (d *Doc) Signature() string { return d.Name + d.Params }

// String returns the Markdown of the doc's section in the reference.
func (d *Doc) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### `%s`\n\n%s\n", d.Signature(), d.Summary)
	if d.Notes != "" {
		fmt.Fprintf(&b, "\n%s\n", d.Notes)
	}
	if d.Example != "" {
		fmt.Fprintf(&b, "\n```python\n%s\n# == %s\n```\n", d.Example, d.Result)
	}
	return b.String()
}

// A docSection is a titled group of docs in the reference.
type docSection struct {
	title string
	intro string
	docs  []Doc
}

// sections returns the reference, in order.
func sections() []docSection {
	return []docSection{
		{"Merging and patching", `merge, patch and strategic_merge return new values and never change their arguments.`,
			concat(mergeDocs, patchDocs)},
		{"Paths", pathIntro, pathDocs},
		{"Pod helpers", `They change the pod in place and upsert, so an overlay that calls them twice gives the same pod as one call.`,
			podDocs},
		{"Lists", "", appendDocs},
		{"quantity", `Kubernetes resource quantities ("500m", "2", "8Gi"). Quantity arguments are strings or ints; quantity results are strings in canonical form.`,
			quantityDocs},
		{"yaml, json, math, struct", "", concat(yamlDocs, libraryDocs)},
	}
}

func concat(lists ...[]Doc) []Doc {
	var out []Doc
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Docs returns the doc of every builtin, in the order of the reference.
func Docs() []Doc {
	var docs []Doc
	for _, s := range sections() {
		docs = append(docs, s.docs...)
	}
	return docs
}

// Reference returns the Markdown reference of the builtins, the text of docs/builtins.md.
func Reference() string {
	var b strings.Builder
	b.WriteString("# Starlark builtins\n\n")
	b.WriteString("<!-- Generated from package builtins by `go generate ./builtins`; do not edit. -->\n\n")
	b.WriteString("Every overlay sees these names besides the Starlark universe. A pod is plain values in JSON\n")
	b.WriteString("shape: `pod[\"spec\"][\"containers\"][0][\"env\"]` is a list of dicts. Each error a builtin raises\n")
	b.WriteString("starts with its name, as in `merge: spec.containers[0].env: got dict in patch, want list as in base`.\n")
	b.WriteString("Each example's last line equals the `# ==` line below it.\n")
	for _, s := range sections() {
		fmt.Fprintf(&b, "\n## %s\n\n", s.title)
		if s.intro != "" {
			fmt.Fprintf(&b, "%s\n\n", s.intro)
		}
		for _, d := range s.docs {
			fmt.Fprintf(&b, "- [`%s`](#%s)\n", d.Signature(), anchor(d.Signature()))
		}
		for _, d := range s.docs {
			b.WriteString("\n")
			b.WriteString(d.String())
		}
	}
	return b.String()
}

// anchor returns the GitHub anchor of the heading "`text`".
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pathIntro describes the paths that get, put and remove take.
const pathIntro = "A path names values inside a value: `spec.containers[name=trainer].env[0].value`. " +
	"Steps are `.name` (a dict field; names are letters, digits, `_`, `-` and `$`), " +
	"`[\"any key\"]` (a field with other characters: `metadata.labels[\"app.kubernetes.io/name\"]`), " +
	"`[2]` and `[-1]` (a list index), `[*]` (every item) and `[k=v]` (every item that is a dict whose field `k` is `v`; " +
	"a bare `v` also matches a number that prints as it, a quoted `\"v\"` only a string). " +
	"A leading `.` is optional, and the empty path is the value itself. " +
	"A malformed path is an error that gives the column: `get: invalid path \"spec.containers[\": at column 16: unclosed \"[\"`."

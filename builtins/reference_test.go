package builtins_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/starpod/starpod/builtins"
)

var update = flag.Bool("update", false, "rewrite docs/builtins.md")

// referenceFile is the generated reference, relative to this package.
const referenceFile = "../docs/builtins.md"

// TestReference checks that docs/builtins.md is the reference the code generates;
// go generate (go test -run TestReference -update) rewrites it.
func TestReference(t *testing.T) {
	got := builtins.Reference()
	if *update {
		if err := os.MkdirAll(filepath.Dir(referenceFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(referenceFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatalf("%v (run go generate ./builtins)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s is stale; run go generate ./builtins (-want +got):\n%s", referenceFile, diff)
	}
}

// TestDocsComplete checks that every predeclared name and module member has exactly one doc,
// and every doc names something predeclared.
func TestDocsComplete(t *testing.T) {
	docs := make(map[string]bool)
	for _, d := range builtins.Docs() {
		if docs[d.Name] {
			t.Errorf("%s is documented twice", d.Name)
		}
		docs[d.Name] = true
		if d.Summary == "" || strings.Contains(d.Summary, "\n") {
			t.Errorf("%s: got summary %q, want one line", d.Name, d.Summary)
		}
		if d.Example == "" || d.Result == "" {
			t.Errorf("%s: no example", d.Name)
		}
	}
	var names []string
	for name, v := range builtins.Predeclared() {
		if docs[name] {
			names = append(names, name)
			continue
		}
		m, ok := v.(*starlarkstruct.Module)
		if !ok {
			t.Errorf("%s is not documented", name)
			continue
		}
		for member := range m.Members {
			names = append(names, name+"."+member)
			if !docs[name+"."+member] {
				t.Errorf("%s.%s is not documented", name, member)
			}
		}
	}
	sort.Strings(names)
	for _, n := range names {
		delete(docs, n)
	}
	for n := range docs {
		t.Errorf("doc of %s, which is not predeclared", n)
	}
}

// TestDocExamples runs the example of every doc and checks its result.
func TestDocExamples(t *testing.T) {
	for _, d := range builtins.Docs() {
		t.Run(d.Name, func(t *testing.T) {
			lines := strings.Split(d.Example, "\n")
			last := len(lines) - 1
			lines[last] = "result__ = " + lines[last]
			thread := &starlark.Thread{Name: d.Name}
			globals, err := starlark.ExecFile(thread, d.Name+".star", strings.Join(lines, "\n"), builtins.Predeclared())
			if err != nil {
				t.Fatalf("example: %v", err)
			}
			want, err := starlark.Eval(thread, "result", d.Result, builtins.Predeclared())
			if err != nil {
				t.Fatalf("result: %v", err)
			}
			got := globals["result__"]
			if eq, err := starlark.Equal(got, want); err != nil || !eq {
				t.Errorf("example gives %s, want %s", got, want)
			}
		})
	}
}

// TestPackageDoc checks that the package doc comment lists every builtin, and that the doc
// comment of each module lists its members, as "name(params) - summary" lines.
func TestPackageDoc(t *testing.T) {
	fset := token.NewFileSet()
	comments := make(map[string]string) // "" for the package doc, else the var's name
	for _, file := range []string{"builtins.go", "quantity.go", "yaml.go"} {
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			comments[""] += f.Doc.Text()
		}
		for _, decl := range f.Decls {
			if g, ok := decl.(*ast.GenDecl); ok && g.Doc != nil {
				for _, spec := range g.Specs {
					if v, ok := spec.(*ast.ValueSpec); ok {
						comments[v.Names[0].Name] = g.Doc.Text()
					}
				}
			}
		}
	}
	modules := map[string]string{"quantity": "Quantity", "yaml": "YAML"}
	for _, d := range builtins.Docs() {
		line := "\t" + d.Signature() + " - " + d.Summary + "\n"
		if !strings.Contains(comments[""], line) {
			t.Errorf("package doc lacks the line %q", line)
		}
		if mod, member, ok := strings.Cut(d.Name, "."); ok {
			line := "\t" + member + d.Params + " - " + d.Summary + "\n"
			if !strings.Contains(comments[modules[mod]], line) {
				t.Errorf("doc of %s lacks the line %q", modules[mod], line)
			}
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/starpod/starpod"

// TestArchitecture checks that the "Depends on" list of docs/architecture.md names every
// package of the module and every import of one module package by another (outside tests),
// as go list shows them, and that no package imports one listed above it.
func TestArchitecture(t *testing.T) {
	t.Chdir("../..")
	doc, order, err := readDependsOn("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := listImports()
	if err != nil {
		t.Fatal(err)
	}

	var problems []string
	for _, pkg := range archKeys(got) {
		if _, ok := doc[pkg]; !ok {
			problems = append(problems, fmt.Sprintf("package %s is not in the list; add: %s", pkg, dependsOnLine(pkg, inOrder(order, got[pkg]))))
		}
	}
	for _, pkg := range order {
		if _, ok := got[pkg]; !ok {
			problems = append(problems, fmt.Sprintf("package %s is in the list but not in the module; remove its line", pkg))
		}
	}
	for _, pkg := range archKeys(got) {
		want, ok := doc[pkg]
		if !ok {
			continue
		}
		for _, dep := range got[pkg] {
			if !slices.Contains(want, dep) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which the list does not show", pkg, dep))
			}
		}
		for _, dep := range want {
			if !slices.Contains(got[pkg], dep) {
				problems = append(problems, fmt.Sprintf("the list says %s depends on %s, which it does not import", pkg, dep))
			}
		}
	}
	// No package imports one above it: every import, as go list shows it, is of a package
	// listed below the importer.
	rank := map[string]int{}
	for i, pkg := range order {
		rank[pkg] = i
	}
	for _, pkg := range archKeys(got) {
		for _, dep := range got[pkg] {
			ri, ok1 := rank[pkg]
			rd, ok2 := rank[dep]
			if ok1 && ok2 && rd <= ri {
				problems = append(problems, fmt.Sprintf("%s imports %s, which the list puts above it", pkg, dep))
			}
		}
	}
	if len(problems) > 0 {
		var b strings.Builder
		for _, p := range problems {
			b.WriteString("\n  " + p)
		}
		b.WriteString("\n\nthe list as go list shows it (keep the doc's order, highest package first):")
		for _, pkg := range orderLike(order, got) {
			b.WriteString("\n" + dependsOnLine(pkg, inOrder(order, got[pkg])))
		}
		t.Errorf("docs/architecture.md's \"Depends on\" list differs from go list:%s", b.String())
	}
}

// readDependsOn reads the list of the "## Depends on" section of a Markdown file: lines of the
// form "- `PKG` depends on `A`, `B`." or "- `PKG` depends on no package of the module.". It
// returns each package's dependencies and the packages in the list's order.
func readDependsOn(name string) (map[string][]string, []string, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, err
	}
	deps := map[string][]string{}
	var order []string
	in := false
	quoted := regexp.MustCompile("`([^`]+)`")
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Depends on"
			continue
		}
		if !in || !strings.HasPrefix(line, "- `") {
			continue
		}
		head, tail, ok := strings.Cut(line, " depends on ")
		if !ok {
			return nil, nil, fmt.Errorf("%s: %q: want \"- `PKG` depends on ...\"", name, line)
		}
		m := quoted.FindStringSubmatch(head)
		if m == nil {
			return nil, nil, fmt.Errorf("%s: %q: no package", name, line)
		}
		pkg := m[1]
		if _, dup := deps[pkg]; dup {
			return nil, nil, fmt.Errorf("%s: %s is listed twice", name, pkg)
		}
		list := []string{}
		for _, d := range quoted.FindAllStringSubmatch(tail, -1) {
			list = append(list, d[1])
		}
		deps[pkg] = list
		order = append(order, pkg)
	}
	if len(order) == 0 {
		return nil, nil, fmt.Errorf("%s has no \"## Depends on\" list", name)
	}
	return deps, order, sc.Err()
}

// listImports returns the module's packages (relative to the module's path, as the doc names
// them) with the module packages each imports outside its tests.
func listImports() (map[string][]string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(goCmd, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, stderr.String())
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := relative(fields[0])
		if !ok {
			continue
		}
		list := []string{}
		for _, imp := range fields[1:] {
			if dep, ok := relative(imp); ok {
				list = append(list, dep)
			}
		}
		got[pkg] = list
	}
	return got, nil
}

// relative returns the path of a module package relative to the module's path.
func relative(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

func archKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// orderLike returns the packages of got in the order of the doc's list, those the list does
// not name last.
func orderLike(order []string, got map[string][]string) []string {
	var out []string
	for _, pkg := range order {
		if _, ok := got[pkg]; ok {
			out = append(out, pkg)
		}
	}
	for _, pkg := range archKeys(got) {
		if !slices.Contains(order, pkg) {
			out = append(out, pkg)
		}
	}
	return out
}

// inOrder returns deps in the order of the doc's list, those the list does not name last.
func inOrder(order, deps []string) []string {
	return orderLike(order, func() map[string][]string {
		m := map[string][]string{}
		for _, d := range deps {
			m[d] = nil
		}
		return m
	}())
}

// dependsOnLine writes a line of the list in the doc's form.
func dependsOnLine(pkg string, deps []string) string {
	if len(deps) == 0 {
		return "- `" + pkg + "` depends on no package of the module."
	}
	quoted := make([]string, len(deps))
	for i, d := range deps {
		quoted[i] = "`" + d + "`"
	}
	return "- `" + pkg + "` depends on " + strings.Join(quoted, ", ") + "."
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// TestREADMETour checks that the output the README's tour shows is the command's output.
func TestREADMETour(t *testing.T) {
	t.Chdir("../..")
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```console\n$ starpod apply --overlay-script examples/gpu-tolerations/overlay.star"
	i := bytes.Index(data, []byte(start))
	if i < 0 {
		t.Fatal("README.md has no tour of the GPU example")
	}
	block := string(data[i+len("```console\n$ "):])
	block = block[:strings.Index(block, "```")]
	command, want, _ := strings.Cut(block, "\n")
	// The output is the same in process; the test binary cannot serve as a worker here.
	args := append(strings.Fields(command)[1:], "--isolation=none")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("%s: exit %d: %s", command, code, stderr.String())
	}
	if diff := cmp.Diff(want, stdout.String()); diff != "" {
		t.Errorf("README.md's tour output (-README +command):\n%s", diff)
	}
}

// TestREADMESetUp checks the README's two set-up commands: the first runs the GPU example and
// prints its expected output; the second is the test script, which CI runs.
func TestREADMESetUp(t *testing.T) {
	t.Chdir("../..")
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(data)
	i := strings.Index(section, "\n## Set up\n")
	if i < 0 {
		t.Fatal("README.md has no Set up section")
	}
	section = section[i+1:]
	if j := strings.Index(section[1:], "\n## "); j >= 0 {
		section = section[:j+1]
	}
	var commands []string
	for _, block := range strings.Split(section, "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		commands = append(commands, strings.TrimSpace(block))
	}
	const apply = "go run ./cmd/starpod apply --overlay-script examples/gpu-tolerations/overlay.star -f examples/gpu-tolerations/pod.yaml"
	if len(commands) != 2 || commands[0] != apply || commands[1] != "./scripts/test.sh" {
		t.Fatalf("README.md's Set up shows %q, want the two commands %q and %q", commands, apply, "./scripts/test.sh")
	}

	want, err := os.ReadFile("examples/gpu-tolerations/expected.yaml")
	if err != nil {
		t.Fatal(err)
	}
	args := append(strings.Fields(apply)[3:], "--isolation=none")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("%s: exit %d: %s", apply, code, stderr.String())
	}
	if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
		t.Errorf("%s (-expected.yaml +output):\n%s", apply, diff)
	}

	if fi, err := os.Stat("scripts/test.sh"); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("scripts/test.sh is not an executable file: %v", err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "\n./scripts/test.sh") {
		t.Errorf(".ci/run does not run ./scripts/test.sh, the README's test command")
	}
}

// TestREADMELength keeps the README a product page: details go to docs/.
func TestREADMELength(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n > 350 {
		t.Errorf("README.md has %d lines, want at most 350: move details to docs/", n)
	}
}

// TestDocLinks checks that every relative link of README.md and docs/*.md names a file or
// folder of the repository, and every link to a heading of README.md names one of its headings.
func TestDocLinks(t *testing.T) {
	t.Chdir("../..")
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		anchors := headingAnchors(string(data))
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				if !anchors[anchor] {
					t.Errorf("%s: link %q names no heading of the file", name, target)
				}
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(name), path)); err != nil {
				t.Errorf("%s: link %q: %v", name, target, err)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub makes of a Markdown file's headings.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range title {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

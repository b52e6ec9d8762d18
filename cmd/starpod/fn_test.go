package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestFnExitCodes checks the exit codes of the KRM function: 0 with a warning, 1 with an
// error result (and the ResourceList still written), 2 for bad usage with nothing written.
func TestFnExitCodes(t *testing.T) {
	const items = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: batch/v1
  kind: Job
  metadata: {name: once}
  spec:
    template:
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox}]
functionConfig:
  apiVersion: starpod.dev/v1alpha1
  kind: StarpodOverlay
  metadata: {name: x}
  spec:
    script: |
      def overlay(pod, ctx):
          %s
`
	for _, test := range []struct {
		name, body string
		args       []string
		code       int
		stdout     string // a substring of standard output
	}{
		{"changes", `pod["spec"]["nodeName"] = ctx.workload.name`, nil, 0, "nodeName: once"},
		{"fails", `fail("no")`, nil, 1, "severity: error"},
		{"names the template", `pod["metadata"]["name"] = "x"`, nil, 1, "path: spec.template.metadata.name"},
		{"bad usage", `pass`, []string{"--pod-template", "x"}, 2, ""},
	} {
		t.Run(test.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			in := strings.NewReader(strings.Replace(items, "%s", test.body, 1))
			args := append([]string{"fn", "--isolation", "none"}, test.args...)
			code := run(context.Background(), args, in, &stdout, &stderr)
			if code != test.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, test.code, stderr.String())
			}
			if test.stdout == "" && stdout.Len() > 0 {
				t.Errorf("stdout:\n%s\nwant nothing", stdout.String())
			}
			if !strings.Contains(stdout.String(), test.stdout) {
				t.Errorf("stdout:\n%s\nwant it to hold %q", stdout.String(), test.stdout)
			}
		})
	}
}

func TestCommented(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{"a: 1\nb: [x, y]\n", false},
		{"# head\na: 1\n", true},
		{"a: 1 # line\n", true},
		{"a:\n  b:\n    - c: 1\n      # foot of c\n", true},
		{"a:\n  b:\n    - c: 1\n      d: 2 # deep\n", true},
		{"a: '# no comment'\n", false},
	} {
		node, err := kyaml.Parse(tc.doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := commented(node.YNode()); got != tc.want {
			t.Errorf("commented(%q) = %v, want %v", tc.doc, got, tc.want)
		}
	}
	if commented(nil) {
		t.Error("commented(nil) = true")
	}
}

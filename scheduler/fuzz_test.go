package scheduler_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/starpod/starpod/scheduler"
)

// FuzzParseApp checks that no app spec makes the loader panic or hang, that every failure is
// a *SpecError whose problems each have a field path or a position inside the file, and that
// an accepted spec has the shape the builder relies on. Its seeds use anchors and aliases,
// and some are alias bombs, so that the decoder is fuzzed where it follows aliases.
func FuzzParseApp(f *testing.F) {
	for _, file := range []string{"../examples/llama-ft/app.yaml", "../testdata/bench/app-1000.yaml"} {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	for _, seed := range []string{
		"name: a\nroles:\n- name: r\n  image: i\n  entrypoint: e\n",
		"name: a\nroles:\n- {name: r, image: i, entrypoint: e, num_replicas: 0, resource: {mem_mb: -1}}\n",
		"name: a\nrolse: []\n",
		"name: a\nroles:\n- name: r\n  image: i\n  entrypoint: e\n  args: [\"${nope}\"]\n  mounts: [{type: bind, src: /a, dst: /dev/shm}]\n",
		"- a\n- b\n",
		"name: [\n",
		"a: &x [*x]\n",
		"\r\r0", // CR alone breaks lines too
		// Anchors and aliases where they fit, where they do not, and inside themselves.
		"name: &n a\nroles:\n- &r {name: r, image: *n, entrypoint: *n, env: &e {A: *n, B: b}, resource: &res {cpu: 1, mem_mb: 2}}\n- {name: s, image: i, entrypoint: e, env: *e, resource: *res, args: [*n, *n]}\n",
		"name: a\nroles: &r\n- {name: r, image: i, entrypoint: e, args: *r}\n- *r\n",
		"name: a\nroles:\n- name: r\n  image: i\n  entrypoint: e\n  metadata: &m {labels: {a: b}, annotations: *m}\n",
		"name: a\nroles:\n- &r {name: r, image: i, entrypoint: e}\n- *r\n- {<<: *r, name: s}\n",
	} {
		f.Add([]byte(seed))
	}
	// Alias bombs: a billion laughs, and many aliases to a large value.
	for _, file := range []string{"../testdata/hostile-input/spec/alias_laughs.yaml", "../testdata/hostile-input/spec/alias_cycle.yaml"} {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("name: bomb\nroles: [&r {name: r, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}, args: [" +
		strings.TrimSuffix(strings.Repeat("a,", 300), ",") + "]}, " + strings.TrimSuffix(strings.Repeat("*r,", 300), ",") + "]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := yamlLines(string(data))
		app, err := scheduler.ParseApp("app.yaml", data)
		if err != nil {
			var spec *scheduler.SpecError
			if !errors.As(err, &spec) {
				t.Fatalf("got %T %v, want *scheduler.SpecError", err, err)
			}
			if len(spec.Errors) == 0 {
				t.Fatal("a SpecError with no problems")
			}
			for _, fe := range spec.Errors {
				if fe.Err == nil {
					t.Fatal("a problem without an error")
				}
				if fe.Pos.Line > lines+1 {
					t.Fatalf("problem at line %d of a %d-line file: %v", fe.Pos.Line, lines, fe.Err)
				}
			}
			return
		}
		if app == nil || len(app.Roles) == 0 {
			t.Fatalf("accepted a spec without roles: %q", data)
		}
		for _, r := range app.Roles {
			if r.Name == "" || r.Replicas() < 1 {
				t.Fatalf("accepted a role without a name or replicas: %+v", r)
			}
		}
	})
}

// yamlLines returns the number of lines of a YAML text, whose line breaks are CR LF, CR, LF,
// NEL, LS and PS.
func yamlLines(s string) int {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Count(s, "\n") + strings.Count(s, "\r") + strings.Count(s, "\u0085") +
		strings.Count(s, "\u2028") + strings.Count(s, "\u2029") + 1
}

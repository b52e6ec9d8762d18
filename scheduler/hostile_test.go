package scheduler_test

// This file defines the tests of hostile app specs: alias bombs, huge files and files that
// are not regular, macros and replicas that make huge jobs, and overlay paths that lead out
// of the spec's directory. Each must fail with its error, within bounded memory.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/starpod/starpod/internal/bound"
	"github.com/starpod/starpod/scheduler"
)

// hostileAppID is the app id every hostile spec is built with: ${app_id} expands to it.
const hostileAppID = "hostile-input-spec-test-app-id"

// maxHostileAlloc bounds what loading and building one hostile spec may allocate in all.
const maxHostileAlloc = 64 << 20 * raceFactor

// loadAndBuild loads the spec file and builds and renders its job as starpod run does,
// returning the error, which must be the same both ways, and the bytes allocated.
func loadAndBuild(t *testing.T, file string, opts scheduler.BuildOptions) (error, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	app, err := scheduler.LoadApp(file)
	var rerr error
	if app != nil {
		if opts.AppID == "" {
			opts.AppID = hostileAppID
		}
		_, err = scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), opts)
		_, rerr = scheduler.Render(context.Background(), app, scheduler.DefaultConfig(), opts, "yaml")
	}
	runtime.ReadMemStats(&after)
	if app != nil && fmt.Sprint(err) != fmt.Sprint(rerr) {
		t.Errorf("Build gives\n%v\nRender gives\n%v", err, rerr)
	}
	return err, (after.TotalAlloc - before.TotalAlloc) / 2 // two builds
}

// TestHostileSpecs runs every app spec of testdata/hostile-input/spec (*.yaml, and */app.yaml
// for a spec with files around it) through LoadApp, Build and Render, and checks that it
// fails with the errors of its "# want: " lines, in order, having allocated less than
// maxHostileAlloc, and that no error shows the secret_token there.
func TestHostileSpecs(t *testing.T) {
	t.Chdir(filepath.Join("..", "testdata", "hostile-input", "spec"))
	secret, err := os.ReadFile("secret_token")
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.yaml")
	more, _ := filepath.Glob(filepath.Join("*", "app.yaml"))
	files = append(files, more...)
	if err != nil || len(files) == 0 || len(more) == 0 {
		t.Fatalf("no specs: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.ToSlash(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, line := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					want = append(want, w)
				}
			}
			if len(want) == 0 {
				t.Fatal(`no "# want: " lines`)
			}
			err, alloc := loadAndBuild(t, file, scheduler.BuildOptions{})
			if err == nil {
				t.Fatal("got no error")
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
			}
			if strings.Contains(err.Error(), strings.TrimSpace(string(secret))) {
				t.Errorf("the error shows the secret: %v", err)
			}
			if alloc > maxHostileAlloc {
				t.Errorf("allocated %d MiB, want at most %d MiB", alloc>>20, maxHostileAlloc>>20)
			}
		})
	}
}

// hostileSpec returns the app spec of one role with the given extra lines (indented under
// the role) and replicas.
func hostileSpec(replicas int, extra string) string {
	return fmt.Sprintf("name: hostile\nroles:\n- name: r\n  image: i\n  entrypoint: e\n  num_replicas: %d\n  resource: {cpu: 1, mem_mb: 1}\n%s",
		replicas, extra)
}

// TestHostileSpecsGenerated checks the hostile specs too large to keep as files: each fails
// with its error, and loading and building it allocates less than maxHostileAlloc.
func TestHostileSpecsGenerated(t *testing.T) {
	items := strings.TrimSuffix(strings.Repeat("a,", 3000), ",")
	aliases := strings.TrimSuffix(strings.Repeat("*r,", 3000), ",")
	var roles strings.Builder
	for i := range 200 {
		fmt.Fprintf(&roles, "- {name: r%d, image: i, entrypoint: e, num_replicas: 1000, resource: {cpu: 1, mem_mb: 1}}\n", i)
	}
	var typos strings.Builder // every role has a type error and a validation error
	for i := 0; typos.Len() < scheduler.MaxSpecFile-200; i++ {
		fmt.Fprintf(&typos, "- {name: R%d, image: [i], resource: {cpu: 1, mem_mb: 1}}\n", i)
	}
	var keys strings.Builder // unknown keys
	for i := 0; keys.Len() < scheduler.MaxSpecFile-200; i++ {
		fmt.Fprintf(&keys, "k%d: 1\n", i)
	}
	for _, test := range []struct {
		name, spec string
		want       string          // a regular expression
		typ        field.ErrorType // of the first problem, if not ""
	}{{
		// 3,000 aliases to a role of 3,000 args: 9,000,000 values from 15 KB.
		name: "alias_roles",
		spec: "name: bomb\nroles: [&r {name: r, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}, args: [" + items + "]}, " + aliases + "]\n",
		want: `^alias_roles\.yaml:2:6187: roles\[34\]: alias \*r: aliases add more than the limit of 100000 values$`,
		typ:  field.ErrorTypeTooMany,
	}, {
		// The limit of a smaller spec is relative to its size.
		name: "alias_relative",
		spec: "name: bomb\nroles: [&r {name: r, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}, args: [" +
			items[:600] + "]}, " + aliases[:600] + "]\n",
		want: `^alias_relative\.yaml:2:1184: roles\[166\]: alias \*r: aliases add more than the limit of 52000 values \(100 times the 520 values written in the spec\)$`,
	}, {
		name: "too_large",
		spec: "name: big\n" + strings.Repeat("# padding\n", scheduler.MaxSpecFile/10+1),
		want: `^too_large\.yaml: the app spec is larger than the limit of 256Ki$`,
	}, {
		// 12,000 ${app_id} in one arg of 1,000 replicas: 360 MB of job.
		name: "macros",
		spec: hostileSpec(1000, `  args: ["`+strings.Repeat("${app_id}", 12000)+"\"]\n"),
		want: `^macros\.yaml:8:9: roles\[0\]\.args: after macro expansion the job is larger than the limit of 3Mi the API server accepts: 1000 replicas of about 352Ki$`,
		typ:  field.ErrorTypeTooLong,
	}, {
		name: "roles",
		spec: "name: roles\nroles:\n" + roles.String(),
		want: `^roles\.yaml:3:1: roles: got 200000 replicas in all, want at most 5000: each replica is a task of one Volcano Job, which must fit in the 3Mi the API server accepts$`,
		typ:  field.ErrorTypeTooMany,
	}, {
		name: "typos",
		spec: "name: typos\nroles:\n" + typos.String(),
		want: `^typos\.yaml:3:3: roles\[0\]\.entrypoint: required\ntypos\.yaml:3:10: roles\[0\]\.name: got "R0", want a lower-case DNS label .*\ntypos\.yaml:3:21: roles\[0\]\.image: got list, want string\n`,
	}, {
		name: "unknown_keys",
		spec: "name: keys\n" + keys.String(),
		want: `^unknown_keys\.yaml:1:1: roles: required: an app needs at least one role\nunknown_keys\.yaml:2:1: k0: unknown field\n`,
	}} {
		t.Run(test.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), test.name+".yaml")
			if err := os.WriteFile(file, []byte(test.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			err, alloc := loadAndBuild(t, file, scheduler.BuildOptions{})
			if err == nil {
				t.Fatal("got no error")
			}
			got := strings.ReplaceAll(err.Error(), filepath.Dir(file)+string(filepath.Separator), "")
			if !regexp.MustCompile(test.want).MatchString(got) {
				t.Errorf("got\n%.2000s\nwant\n%s", got, test.want)
			}
			var se *scheduler.SpecError
			if test.typ != "" && (!errors.As(err, &se) || se.Errors[0].Err.Type != test.typ) {
				t.Errorf("got %#v, want a *SpecError whose first problem is of type %s", err, test.typ)
			}
			if alloc > maxHostileAlloc {
				t.Errorf("allocated %d MiB, want at most %d MiB", alloc>>20, maxHostileAlloc>>20)
			}
		})
	}
}

// TestParseAppTooLarge checks that ParseApp refuses data larger than a spec file may be.
func TestParseAppTooLarge(t *testing.T) {
	data := []byte("name: x\n" + strings.Repeat("#", scheduler.MaxSpecFile))
	_, err := scheduler.ParseApp("app.yaml", data)
	if want := "app.yaml: the app spec is larger than the limit of 256Ki"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestLoadAppNotRegular checks that LoadApp reads only regular files, without blocking or
// reading a device.
func TestLoadAppNotRegular(t *testing.T) {
	dir := t.TempDir()
	for _, test := range []struct{ file, want string }{
		{dir, dir + ": is a directory, want a regular file"},
		{"/dev/zero", "/dev/zero: is a character device, want a regular file"},
	} {
		if _, err := os.Stat(test.file); err != nil {
			continue // no /dev/zero here
		}
		_, err := scheduler.LoadApp(test.file)
		var te *bound.TypeError
		if !errors.As(err, &te) || err.Error() != test.want {
			t.Errorf("got %T %v, want a *bound.TypeError %s", err, err, test.want)
		}
	}
}

// TestAliasesWithinBudget checks that aliases used as they are meant to be, many times over,
// are fine.
func TestAliasesWithinBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: aliases\nx-env: &env {")
	for i := range 100 {
		fmt.Fprintf(&b, "V%d: v, ", i)
	}
	b.WriteString("}\nroles:\n")
	for i := range 90 {
		fmt.Fprintf(&b, "- {name: r%d, image: &i i, entrypoint: *i, env: *env, resource: &res {cpu: 1, mem_mb: 1}}\n", i)
	}
	// x-env is an unknown field: the anchor is only there to be used.
	_, err := scheduler.ParseApp("app.yaml", []byte(b.String()))
	var se *scheduler.SpecError
	if !errors.As(err, &se) || len(se.Errors) != 1 || se.Errors[0].Err.Field != "x-env" {
		t.Fatalf("got %v, want only the unknown field x-env", err)
	}
}

// TestSpecOverlaysConfined checks that the overlay files a spec names are read only inside
// the spec's directory, or the overlay root, and only if they are regular files, and that
// nothing of a file outside shows in an error.
func TestSpecOverlaysConfined(t *testing.T) {
	dir := t.TempDir()
	secret := "fake_token_for_confinement_test"
	app := filepath.Join(dir, "app")
	for _, d := range []string{app, filepath.Join(app, "sub.star"), filepath.Join(dir, "lib")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{
		"secret_token":     secret + "\n",
		"lib/shared.star":  "def overlay(pod):\n    pass\n",
		"app/inside.star":  "def overlay(pod):\n    pass\n",
		"app/big.star":     strings.Repeat("#", bound.MaxScript+1),
		"app/secret.star":  "", // replaced by a link below
		"app/inside2.star": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"app/secret.star":  "../secret_token", // leads out
		"app/inside2.star": "inside.star",     // stays in
		"app/zero.star":    "/dev/zero",       // absolute
	} {
		p := filepath.Join(dir, link)
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			t.Skipf("no symbolic links: %v", err)
		}
	}
	spec := `name: c
overlays: [inside.star, inside2.star, ../secret_token, ../lib/shared.star]
roles:
- name: r
  image: i
  entrypoint: e
  resource: {cpu: 1, mem_mb: 1}
  overlays: [secret.star, zero.star, sub.star, big.star, missing.star, /etc/passwd]
`
	if err := os.WriteFile(filepath.Join(app, "app.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	file := filepath.Join("app", "app.yaml")
	err, _ := loadAndBuild(t, file, scheduler.BuildOptions{})
	want := `app/app.yaml:8:72: roles[0].overlays[5]: got "/etc/passwd", want a path relative to the spec's directory
app/app.yaml:2:39: overlays[2]: got "../secret_token", want a file inside the overlay root app
app/app.yaml:2:56: overlays[3]: got "../lib/shared.star", want a file inside the overlay root app
app/app.yaml:8:14: roles[0].overlays[0]: got "secret.star", want a file inside the overlay root app, not a symbolic link that leads out
app/app.yaml:8:27: roles[0].overlays[1]: got "zero.star", want a file inside the overlay root app, not a symbolic link that leads out
app/app.yaml:8:38: roles[0].overlays[2]: cannot read overlay: app/sub.star: is a directory, want a regular file
app/app.yaml:8:48: roles[0].overlays[3]: cannot read overlay: app/big.star: the script is larger than the limit of 1Mi
app/app.yaml:8:58: roles[0].overlays[4]: cannot read overlay: open app/missing.star: no such file or directory`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the error shows the secret: %v", err)
	}

	// With the overlay root above the spec's directory, ../ paths inside it are read.
	ok := "name: c\noverlays: [inside.star, ../lib/shared.star]\nroles:\n- {name: r, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}, overlays: [inside2.star]}\n"
	if err := os.WriteFile(filepath.Join(app, "ok.yaml"), []byte(ok), 0o644); err != nil {
		t.Fatal(err)
	}
	if err, _ := loadAndBuild(t, filepath.Join("app", "ok.yaml"), scheduler.BuildOptions{OverlayRoot: "."}); err != nil {
		t.Errorf("with the overlay root .: %v", err)
	}
	if err, _ := loadAndBuild(t, filepath.Join("app", "ok.yaml"), scheduler.BuildOptions{}); err == nil {
		t.Error("without the overlay root: got no error")
	}
}

// TestOverlaysMakeJobTooLarge checks that a job that overlays make larger than the API server
// accepts is refused, by Build and by Render, however many replicas were built before.
func TestOverlaysMakeJobTooLarge(t *testing.T) {
	app := writeApp(t, map[string]string{
		"app.yaml":  "name: grow\noverlays: [grow.star]\nroles:\n- {name: r, image: i, entrypoint: e, num_replicas: 1000, resource: {cpu: 1, mem_mb: 1}}\n",
		"grow.star": "def overlay(pod):\n    pod[\"metadata\"][\"annotations\"][\"big\"] = \"x\" * 10000\n",
	})
	_, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "x"})
	_, rerr := scheduler.Render(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "x"}, "yaml")
	for _, err := range []error{err, rerr} {
		var se *scheduler.JobSizeError
		if !errors.As(err, &se) || se.Limit != scheduler.MaxJobBytes {
			t.Errorf("got %v, want a *JobSizeError", err)
		}
		want := app.File + ": with the overlays applied, the job is larger than the limit of 3Mi the API server accepts"
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}

package component_test

// The command line as TorchX reads it: the expectations of TorchX's types_test (to_dict,
// to_list), its builders (argparse bools, REMAINDER *args) and its runner (TORCHX_JOB_ID).

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/scheduler"
)

func TestSplitDict(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][2]string
	}{
		// TorchX's to_dict examples.
		{"", nil},
		{"FOO=v1", [][2]string{{"FOO", "v1"}}},
		{"FOO=''", [][2]string{{"FOO", ""}}},
		{`FOO=""`, [][2]string{{"FOO", ""}}},
		{"FOO=v1,v2", [][2]string{{"FOO", "v1,v2"}}},
		{"FOO=v1;v2", [][2]string{{"FOO", "v1;v2"}}},
		{"FOO=v1,v2,BAR=v3", [][2]string{{"FOO", "v1,v2"}, {"BAR", "v3"}}},
		{"FOO=v1;v2,BAR=v3", [][2]string{{"FOO", "v1;v2"}, {"BAR", "v3"}}},
		{"FOO=v1;v2;BAR=v3", [][2]string{{"FOO", "v1;v2"}, {"BAR", "v3"}}},
		// The command lines.
		{"A=1;B=2", [][2]string{{"A", "1"}, {"B", "2"}}},
		{"LOGLEVEL=INFO,PATHS=a,b,c", [][2]string{{"LOGLEVEL", "INFO"}, {"PATHS", "a,b,c"}}},
		{"A='',B = spaced ", [][2]string{{"A", ""}, {"B", "spaced"}}},
		{"A=1,", [][2]string{{"A", "1,"}}},
		// Where TorchX fails, a value keeps its '='.
		{"URL=http://x?a=b", [][2]string{{"URL", "http://x?a=b"}}},
		{"URL=http://x?a=b,C=d", [][2]string{{"URL", "http://x?a=b"}, {"C", "d"}}},
	} {
		got, err := component.SplitDict(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitDict(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"NOVALUE", "=v", "A=,B=1", "A=1,,=2"} {
		if got, err := component.SplitDict(in); err == nil {
			t.Errorf("SplitDict(%q) = %q, want an error", in, got)
		}
	}
}

// envOf returns the env of the first role of the app of the component with args.
func envOf(t *testing.T, comp string, args ...string) map[string]string {
	t.Helper()
	app := appOf(t, comp, args...)
	env := map[string]string{}
	for _, e := range app.Roles[0].Env {
		env[e.Name] = e.Value
	}
	return env
}

func appOf(t *testing.T, comp string, args ...string) *scheduler.App {
	t.Helper()
	ctx := context.Background()
	c, err := component.Load(ctx, comp, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.ParseArgs(args, nil)
	if err != nil {
		t.Fatalf("%s %q: %v", comp, args, err)
	}
	app, err := c.App(ctx, a)
	if err != nil {
		t.Fatalf("%s %q: %v", comp, args, err)
	}
	return app
}

func TestParityFlags(t *testing.T) {
	// --debug takes True or False as its value, as TorchX's argparse does; alone it is a
	// switch.
	for _, tc := range []struct {
		args  []string
		debug bool
		rest  string
	}{
		{[]string{"--script", "t.py", "--debug", "False"}, false, "t.py"},
		{[]string{"--script", "t.py", "--debug", "True"}, true, "t.py"},
		{[]string{"--script", "t.py", "--debug", "false", "--", "x"}, false, "t.py x"},
		{[]string{"--debug", "--script", "t.py"}, true, "t.py"},
		{[]string{"--debug=False", "--script", "t.py"}, false, "t.py"},
		{[]string{"--script", "t.py", "--debug", "pos"}, true, "t.py pos"},
	} {
		env := envOf(t, "dist.ddp", tc.args...)
		if _, on := env["TORCH_DISTRIBUTED_DEBUG"]; on != tc.debug {
			t.Errorf("%q: debug %v, want %v", tc.args, on, tc.debug)
		}
		cmd := appOf(t, "dist.ddp", tc.args...).Roles[0].Args[1]
		if !strings.HasSuffix(cmd, "--role '' "+tc.rest) {
			t.Errorf("%q: got %s, want it to end with %s", tc.args, cmd, tc.rest)
		}
	}

	// Everything from the first positional argument on is the script's, as with argparse's
	// REMAINDER; a negative number is an argument, not a flag.
	cmd := appOf(t, "dist.ddp", "--script", "train.py", "pos1", "--flag", "v", "-j", "9").Roles[0].Args[1]
	if want := "--nnodes 1 --nproc_per_node 2 --tee 3 --role '' train.py pos1 --flag v -j 9"; !strings.HasSuffix(cmd, want) {
		t.Errorf("got %s, want it to end with %s", cmd, want)
	}
	args := appOf(t, "utils.python", "-m", "train", "-1", "--lr", "-0.5").Roles[0].Args
	if want := []string{"-m", "train", "-1", "--lr", "-0.5"}; !reflect.DeepEqual(args, want) {
		t.Errorf("got %q, want %q", args, want)
	}

	// --env splits as TorchX's to_dict.
	env := envOf(t, "dist.ddp", "--script", "t.py", "--env", "A=1;B=2", "--env", "LOGLEVEL=INFO,PATHS=a,b,c")
	for k, v := range map[string]string{"A": "1", "B": "2", "LOGLEVEL": "INFO", "PATHS": "a,b,c"} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}

	// List items are stripped: the mounts TorchX gets from 'type=bind, src=/a, dst=/b'.
	m := appOf(t, "dist.ddp", "--script", "t.py", "--mounts", "type=bind, src=/a, dst=/b").Roles[0].Mounts
	if len(m) != 1 || m[0].Src != "/a" || m[0].Dst != "/b" {
		t.Errorf("got mounts %+v, want a bind mount of /a at /b", m)
	}

	// Hydra's ${...} and $$ reach the job as TorchX gives them.
	args = appOf(t, "utils.python", "-m", "train", "--", "model.dir=${oc.env:HOME}", "a$$b").Roles[0].Args
	if want := []string{"-m", "train", "model.dir=${oc.env:HOME}", "a$$b"}; !reflect.DeepEqual(args, want) {
		t.Errorf("got %q, want %q (substituted when the job is built)", args, want)
	}
}

// TestJobID checks that every role of every builtin component gets TORCHX_JOB_ID as TorchX's
// runner sets it, once, even when the component sets it too.
func TestJobID(t *testing.T) {
	for _, tc := range [][]string{
		{"dist.ddp", "--script", "t.py"},
		{"dist.spmd", "--script", "t.py"},
		{"utils.echo"},
		{"utils.sh", "--env", "TORCHX_JOB_ID=mine", "--", "true"},
		{"utils.python", "-c", "pass"},
		{"utils.binary", "--entrypoint", "x"},
		{"utils.copy", "--src", "a", "--dst", "b"},
		{"utils.booth", "--x1", "1", "--x2", "2"},
		{"utils.touch", "--file", "f"},
	} {
		app := appOf(t, tc[0], tc[1:]...)
		for _, r := range app.Roles {
			n := 0
			for _, e := range r.Env {
				if e.Name == "TORCHX_JOB_ID" {
					n++
					if e.Value != "kubernetes://torchx/${app_id}" {
						t.Errorf("%q: role %s: TORCHX_JOB_ID=%q", tc, r.Name, e.Value)
					}
				}
			}
			if n != 1 {
				t.Errorf("%q: role %s: TORCHX_JOB_ID set %d times, want once", tc, r.Name, n)
			}
		}
	}
}

// TestPositionalBeforeVarargs: a component in Python's usual order, parameters with defaults
// before *args, gets its flags and the arguments after -- as TorchX calls it.
func TestPositionalBeforeVarargs(t *testing.T) {
	dir := t.TempDir()
	src := `def serve(model = "gpt2", port = 8000, *args, image = "srv"):
    """Serves a model.

    Args:
        model: the model
        port: the port
        args: more arguments
        image: the image
    """
    return {"name": "serve", "roles": [{"name": "serve", "image": image, "entrypoint": "serve",
        "args": [model, str(port)] + list(args), "resource": {"cpu": 1, "mem_mb": 100}}]}
`
	file := filepath.Join(dir, "serve.star")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--model", "llama", "--", "--verbose"}, []string{"llama", "8000", "--verbose"}},
		{[]string{"--", "a", "b"}, []string{"gpt2", "8000", "a", "b"}},
		{[]string{"--port", "9", "--image", "x", "a"}, []string{"gpt2", "9", "a"}},
		{[]string{"--model", "m"}, []string{"m", "8000"}},
	} {
		app := appOf(t, file[:len(file)-len(".star")]+".star:serve", tc.args...)
		if got := app.Roles[0].Args; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestConfigValues: the project config's maps stay maps and its lists lists.
func TestConfigValues(t *testing.T) {
	ctx := context.Background()
	c, err := component.Load(ctx, "dist.ddp", nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.ParseArgs([]string{"--script", "t.py"}, map[string]any{
		"env":    map[string]any{"A": "x,LOGLEVEL=DEBUG", "CUDA_VISIBLE_DEVICES": "0,1", "N": int64(8)},
		"mounts": []any{"type=bind", "src=/a,b", "dst=/b"},
		"debug":  true,
		"cpu":    int64(4),
		"j":      "2x8",
	})
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.App(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	r := app.Roles[0]
	env := map[string]string{}
	for _, e := range r.Env {
		env[e.Name] = e.Value
	}
	if env["A"] != "x,LOGLEVEL=DEBUG" || env["CUDA_VISIBLE_DEVICES"] != "0,1" || env["N"] != "8" || env["LOGLEVEL"] != "WARNING" || env["TORCH_DISTRIBUTED_DEBUG"] != "DETAIL" {
		t.Errorf("got env %v", env)
	}
	if len(r.Mounts) != 1 || r.Mounts[0].Src != "/a,b" || r.Resource.CPU != 4 || r.Replicas() != 2 {
		t.Errorf("got mounts %+v, cpu %v, %d replicas", r.Mounts, r.Resource.CPU, r.Replicas())
	}
	for _, tc := range []struct {
		defaults map[string]any
		want     string
	}{
		{map[string]any{"env": []any{"A=1"}}, `dist.ddp: config: env: got a list, want dict`},
		{map[string]any{"cpu": "two"}, `dist.ddp: config: cpu: got "two", want an int`},
		{map[string]any{"cpu": 1.5}, `dist.ddp: config: cpu: got a number, want int`},
		{map[string]any{"env": map[string]any{"A": []any{}}}, `dist.ddp: config: env: A: got a list, want a string`},
		{map[string]any{"scrpt": "x"}, `dist.ddp: config: scrpt: unknown parameter; did you mean --script?`},
	} {
		_, err := c.ParseArgs(nil, tc.defaults)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: got %v, want %s", tc.defaults, err, tc.want)
		}
	}
}

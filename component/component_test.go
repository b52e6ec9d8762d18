package component_test

// The expectations of TorchX's component tests (dist_test, structured_arg_test, utils_test),
// as golden files: each case's command line gives the app in testdata/golden/NAME.yaml.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/component"
	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/scheduler"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// run loads the component, parses args and returns its app as YAML.
func run(t *testing.T, name string, args ...string) ([]byte, error) {
	t.Helper()
	ctx := context.Background()
	c, err := component.Load(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	a, err := c.ParseArgs(args, nil)
	if err != nil {
		return nil, err
	}
	app, err := c.App(ctx, a)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(app)
}

func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		comp string
		args []string
	}{
		// dist.ddp
		{"ddp_elastic", "dist.ddp", []string{"-j", "2:4x8", "--script", "train.py", "--", "--lr", "0.1"}},
		{"ddp_multi_node", "dist.ddp", []string{"-j", "2x8", "--script", "foo/bar.py"}},
		{"ddp_single_node", "dist.ddp", []string{"-j", "1x2", "--script", "foo/bar.py"}},
		{"ddp_nproc_only", "dist.ddp", []string{"-j", "4", "-m", "my.trainer.main"}},
		{"ddp_module", "dist.ddp", []string{"-m", "foo.bar.baz", "--name", "exp/"}},
		{"ddp_static", "dist.ddp", []string{"-j", "2x1", "--script", "train.py", "--rdzv_backend", "static"}},
		{"ddp_rdzv_conf", "dist.ddp", []string{"-j", "2x1", "--script", "train.py", "--rdzv_conf", "join_timeout=600,close_timeout=600", "--rdzv_port", "1234"}},
		{"ddp_debug", "dist.ddp", []string{"--script", "train.py", "--debug", "--env", "FOO=bar,LOGLEVEL=INFO"}},
		{"ddp_named_resource", "dist.ddp", []string{"--script", "train.py", "-h", "aws_p4d.24xlarge", "-j", "2x8", "--max_retries", "3"}},
		{"ddp_mounts", "dist.ddp", []string{"--script", "train.py", "--mounts", "type=bind,src=/data,dst=/data,readonly,type=volume,src=ckpt,dst=/ckpt", "--mounts", "type=device,src=/dev/fuse"}},
		{"ddp_quoting", "dist.ddp", []string{"--script", "my train.py", "--name", "exp/run 1", "--", "--msg", "it's"}},
		{"ddp_name_run", "dist.ddp", []string{"--script", "train.py", "--name", "/trial"}},
		{"ddp_name_both", "dist.ddp", []string{"--script", "train.py", "--name", "exp/trial", "--tee", "2", "--cpu", "8", "--gpu", "2", "--memMB", "4096", "--image", "my/image:1"}},
		// dist.spmd
		{"spmd_default", "dist.spmd", []string{"--script", "train.py"}},
		{"spmd_infer_nproc", "dist.spmd", []string{"-j", "2", "-h", "aws_p4d.24xlarge", "--script", "train.py", "--", "-foo", "bar"}},
		{"spmd_explicit_nproc", "dist.spmd", []string{"-j", "2x4", "-h", "aws_p4d.24xlarge", "-m", "my.trainer"}},
		{"spmd_trn1", "dist.spmd", []string{"-j", "2x16", "-h", "aws_trn1.32xlarge", "--script", "train.py"}},
		// utils
		{"echo", "utils.echo", nil},
		{"echo_msg", "utils.echo", []string{"--msg", "hi there", "--num_replicas", "2"}},
		{"touch", "utils.touch", []string{"--file", "/tmp/x"}},
		{"sh", "utils.sh", []string{"--", "echo", "hello world", "$HOME"}},
		{"sh_entrypoint", "utils.sh", []string{"--entrypoint", "bash", "--env", "LOGLEVEL=INFO", "--max_retries", "2", "-h", "cpu.small", "--", "-c", "echo hi"}},
		{"copy", "utils.copy", []string{"--src", "s3://a/b", "--dst", "/tmp/b", "--mounts", "type=volume,src=data,dst=/tmp"}},
		{"python_mounts", "utils.python", []string{"-m", "a.b", "--mounts", "type=bind,src=/data,dst=/data", "--cpu", "4", "--memMB", "8192"}},
		{"python_module", "utils.python", []string{"-m", "foo.bar", "--", "--x", "1"}},
		{"python_command", "utils.python", []string{"-c", "print('hi')"}},
		{"python_script", "utils.python", []string{"--script", "main.py", "-h", "gpu.small", "--num_replicas", "2"}},
		{"binary", "utils.binary", []string{"--entrypoint", "/bin/date", "--", "-u"}},
		{"booth", "utils.booth", []string{"--x1", "1", "--x2", "3.5", "--trial_idx", "2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := run(t, tc.comp, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "golden", tc.name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s %s: (-want +got)\n%s", tc.comp, strings.Join(tc.args, " "), diff)
			}
		})
	}
}

// TestTorchrunCommand checks the torchrun command line token for token against what TorchX's
// dist.ddp gives for the same arguments (dist_test.py), with starpod's rendezvous endpoint.
func TestTorchrunCommand(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-j", "2:4x8", "--script", "train.py", "--", "--lr", "0.1"},
			"torchrun --rdzv_backend c10d --rdzv_endpoint ${rank0_env}:29500 --rdzv_id '${app_id}' --nnodes 2:4 --nproc_per_node 8 --tee 3 --role '' train.py --lr 0.1"},
		{[]string{"-j", "1x2", "--script", "train.py"},
			"torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id '${app_id}' --nnodes 1 --nproc_per_node 2 --tee 3 --role '' train.py"},
		{[]string{"-j", "2x2", "--script", "train.py", "--rdzv_backend", "static"},
			"torchrun --rdzv_backend static --rdzv_endpoint ${rank0_env}:29500 --rdzv_id '${app_id}' --nnodes 2 --nproc_per_node 2 --tee 3 --role '' --node_rank '${replica_id}' train.py"},
		{[]string{"-j", "2x2", "-m", "a.b", "--rdzv_conf", "timeout=600"},
			"torchrun --rdzv_backend c10d --rdzv_conf timeout=600 --rdzv_endpoint ${rank0_env}:29500 --rdzv_id '${app_id}' --nnodes 2 --nproc_per_node 2 --tee 3 --role '' -m a.b"},
		{[]string{"--script", "train.py", "--", "--msg", "a b"},
			"torchrun --rdzv_backend c10d --rdzv_endpoint localhost:0 --rdzv_id '${app_id}' --nnodes 1 --nproc_per_node 2 --tee 3 --role '' train.py --msg 'a b'"},
	}
	for _, tc := range cases {
		ctx := context.Background()
		c, err := component.Load(ctx, "dist.ddp", nil)
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.ParseArgs(tc.args, nil)
		if err != nil {
			t.Fatal(err)
		}
		app, err := c.App(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		r := app.Roles[0]
		if r.Entrypoint != "bash" || len(r.Args) != 2 || r.Args[0] != "-c" {
			t.Fatalf("%v: got entrypoint %q args %q, want bash -c CMD", tc.args, r.Entrypoint, r.Args)
		}
		if r.Args[1] != tc.want {
			t.Errorf("%v:\ngot  %s\nwant %s", tc.args, r.Args[1], tc.want)
		}
	}
}

// TestErrors checks the failures of TorchX's tests: each is an evaluation error (exit 1) or,
// for a bad command line, a *UsageError (exit 2).
func TestErrors(t *testing.T) {
	cases := []struct {
		comp  string
		args  []string
		usage bool
		want  string
	}{
		{"dist.ddp", []string{"-j", "1x2"}, true, "exactly one of --script and -m"},
		{"dist.ddp", []string{"--script", "a.py", "-m", "a"}, true, "exactly one of --script and -m"},
		{"dist.ddp", []string{"--script", "a.py", "-j", "1x"}, true, `^dist.ddp: -j: invalid format, usage example: 1:2x4 or 1x4 or 4; got "1x"$`},
		{"dist.ddp", []string{"--script", "a.py", "-j", "x2"}, true, `^dist.ddp: -j: invalid format`},
		{"dist.ddp", []string{"--script", "a.py", "-j", "1:2"}, true, `^dist.ddp: -j: invalid format`},
		{"dist.ddp", []string{"--script", "a.py", "-j", "a:2x1"}, true, `^dist.ddp: -j: invalid format`},
		{"dist.ddp", []string{"--script", "a.py", "-h", "aws_p4d"}, true, `named_resource: unknown named resource "aws_p4d"$`},
		{"dist.ddp", []string{"--script", "a.py", "-h", "aws_p4d.24xlrge"}, true, `named_resource: unknown named resource "aws_p4d.24xlrge"; did you mean "aws_p4d.24xlarge"\?`},
		{"dist.spmd", []string{"--script", "a.py", "-h", "gpu.smal"}, true, `did you mean "gpu.small"\?`},
		{"dist.ddp", []string{"--script", "a.py", "--mounts", "src=/a"}, true, `before type=`},
		{"dist.ddp", []string{"--script", "a.py", "--mounts", "type=nfs,src=/a"}, true, `invalid mount type "nfs"`},
		{"dist.ddp", []string{"--script", "a.py", "--mounts", "type=bind,from=/a"}, true, `unknown mount option "from"`},
		{"dist.spmd", []string{"-j", "2", "-h", "aws_trn1.32xlarge", "--script", "a.py"}, true, "cannot be inferred from the GPU count"},
		{"dist.spmd", []string{"-j", "2", "-h", "cpu.small", "--script", "a.py"}, true, "cannot be inferred"},
		{"utils.python", nil, true, "exactly one of -m, -c and --script"},
		{"utils.python", []string{"-m", "a", "-c", "b"}, true, "exactly one of -m, -c and --script"},
		{"dist.ddp", []string{"--scrip", "a.py"}, true, `unknown flag --scrip; did you mean --script\?`},
		{"dist.ddp", []string{"--j", "2x8", "--script", "a.py", "--cpu", "two"}, true, `--cpu: got "two", want an int`},
		{"dist.ddp", []string{"--script"}, true, `flag --script needs a value`},
		{"dist.ddp", []string{"--script", "a.py", "--env", "NOVALUE"}, true, `--env: got "NOVALUE", want KEY=VALUE`},
		{"dist.ddp", []string{"-script", "a.py"}, true, `unknown flag -script; did you mean --script\?`},
		{"utils.touch", nil, true, `missing required flag --file`},
		{"utils.touch", []string{"--file", "a", "b"}, true, `unexpected argument "b"`},
		{"utils.booth", []string{"--x1", "a", "--x2", "1"}, true, `--x1: got "a", want a float`},
		{"utils.binary", nil, true, `missing required flag --entrypoint`},
		{"dist.ddp", []string{"--script", "a.py", "-j", "2x"}, true, `^dist.ddp: -j: invalid format, usage example: 1:2x4 or 1x4 or 4; got "2x"$`},
		{"dist.ddp", []string{"--script", "a.py", "--debug=yes"}, true, `^dist.ddp: --debug: got "yes", want true or false$`},
		{"dist.ddp", []string{"--script", "a.py", "--env", "A=,B=1"}, true, `^dist.ddp: --env: got "A=,B=1", want KEY=VALUE,...: cannot split ",B" into a value and the next key$`},
		{"dist.ddp", []string{"--script", "a.py", "--mounts", "type=bind, src=/a"}, true, `^dist.ddp: --mounts: a bind mount needs src= and dst=$`},
	}
	for _, tc := range cases {
		_, err := run(t, tc.comp, tc.args...)
		if err == nil {
			t.Errorf("%s %v: no error, want %q", tc.comp, tc.args, tc.want)
			continue
		}
		var usage *component.UsageError
		if errors.As(err, &usage) != tc.usage {
			t.Errorf("%s %v: got %T %v, usage error: want %v", tc.comp, tc.args, err, err, tc.usage)
		}
		if !tc.usage {
			var e *engine.Error
			if !errors.As(err, &e) {
				t.Errorf("%s %v: got %T, want an *engine.Error", tc.comp, tc.args, err)
			}
		}
		if !regexp.MustCompile(tc.want).MatchString(err.Error()) {
			t.Errorf("%s %v: got %q, want match %q", tc.comp, tc.args, err, tc.want)
		}
	}
}

func TestHelpRequested(t *testing.T) {
	c, err := component.Load(context.Background(), "dist.ddp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ParseArgs([]string{"-j", "1x2", "--help"}, nil); !errors.Is(err, component.ErrHelp) {
		t.Fatalf("got %v, want ErrHelp", err)
	}
	// -h is the named resource, not help.
	if _, err := c.ParseArgs([]string{"-h", "gpu.small", "--script", "a.py"}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestNamedResources(t *testing.T) {
	res := component.NamedResources()
	p4d := res["aws_p4d.24xlarge"]
	if p4d.CPU != 96 || p4d.GPU != 8 || p4d.MemMB != 1152*983 || p4d.Devices[scheduler.EFADevice] != 4 ||
		p4d.Capabilities[scheduler.InstanceTypeLabel] != "p4d.24xlarge" {
		t.Errorf("aws_p4d.24xlarge: got %+v", p4d)
	}
	trn := res["aws_trn1.32xlarge"]
	if trn.Devices[component.NeuronDevice] != 16 || trn.Devices[scheduler.EFADevice] != 8 {
		t.Errorf("aws_trn1.32xlarge: got %+v", trn)
	}
	if g := res["gpu.small"]; g.CPU != 8 || g.GPU != 1 || g.MemMB != 32*1024 || g.Capabilities != nil {
		t.Errorf("gpu.small: got %+v", g)
	}
	if n := len(res); n != 10+61 {
		t.Errorf("got %d named resources, want 71", n)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":           "''",
		"abc":        "abc",
		"a b":        "'a b'",
		"it's":       `'it'"'"'s'`,
		"${app_id}":  "'${app_id}'",
		"a=b,c:d/e@": "a=b,c:d/e@",
		"é":          "'é'",
	} {
		if got := component.Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestDeterministicAndConcurrent calls one loaded component from several goroutines: every
// call gives the same app, as a fresh load does.
func TestDeterministicAndConcurrent(t *testing.T) {
	argv := []string{"-j", "2:4x8", "--script", "train.py", "-h", "aws_p4d.24xlarge", "--env", "B=1,A=2", "--debug", "--", "--lr", "0.1"}
	want, err := run(t, "dist.ddp", argv...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := component.Load(ctx, "dist.ddp", nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 5 {
				a, err := c.ParseArgs(argv, nil)
				if err != nil {
					errs <- err
					return
				}
				app, err := c.App(ctx, a)
				if err != nil {
					errs <- err
					return
				}
				got, err := yaml.Marshal(app)
				if err != nil {
					errs <- err
					return
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					errs <- fmt.Errorf("(-first +concurrent):\n%s", diff)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestDDPParseJ translates TorchX's dist_test: -j 1, 1x2 and 1:2x3 give 1, 1 and 2 replicas,
// and only the elastic one has MIN:MAX nodes; mounts given as separate options make one mount.
// (-j 0:1xN, which TorchX accepts, is refused here: the scheduler wants min_replicas >= 1.)
func TestDDPParseJ(t *testing.T) {
	ctx := context.Background()
	c, err := component.Load(ctx, "dist.ddp", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		j        string
		replicas int
		min      int
		nnodes   string
	}{{"1", 1, 1, "--nnodes 1 "}, {"1x2", 1, 1, "--nnodes 1 "}, {"1:2x3", 2, 1, "--nnodes 1:2 "}} {
		a, err := c.ParseArgs([]string{"--script", "foo.py", "-j", tc.j}, nil)
		if err != nil {
			t.Fatal(err)
		}
		app, err := c.App(ctx, a)
		if err != nil {
			t.Fatalf("-j %s: %v", tc.j, err)
		}
		r := app.Roles[0]
		if r.Replicas() != tc.replicas || *r.MinReplicas != tc.min || !strings.Contains(r.Args[1], tc.nnodes) {
			t.Errorf("-j %s: got %d replicas, min %d, %q; want %d, %d, %q", tc.j, r.Replicas(), *r.MinReplicas, r.Args[1], tc.replicas, tc.min, tc.nnodes)
		}
	}
	a, err := c.ParseArgs([]string{"--script", "foo.py", "--mounts", "type=bind", "--mounts", "src=/dst", "--mounts", "dst=/dst", "--mounts", "readonly"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := c.App(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if m := app.Roles[0].Mounts; len(m) != 1 || m[0].Type != scheduler.MountBind || !m[0].ReadOnly || m[0].Src != "/dst" {
		t.Errorf("got mounts %+v, want one read-only bind mount of /dst", m)
	}
}

// TestStructuredName translates TorchX's structured_arg_test: --name EXPERIMENT/RUN, with the
// run name from the script's stem or the module's last part when it is left out.
func TestStructuredName(t *testing.T) {
	ctx := context.Background()
	c, err := component.Load(ctx, "dist.ddp", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args            []string
		experiment, run string
	}{
		{[]string{"--name", "foo/bar", "--script", "bar/baz.py"}, "foo", "bar"},
		{[]string{"--name", "foo/", "--script", "bar/baz.py"}, "foo", "baz"},
		{[]string{"--name", "/bar", "--script", "bar/baz.py"}, "default-experiment", "bar"},
		{[]string{"--name", "foobar", "-m", "foo.bar"}, "default-experiment", "foobar"},
		{[]string{"--name", "foo/bar", "-m", "foo.bar.baz"}, "foo", "bar"},
		{[]string{"--name", "foo/", "-m", "foo.bar.baz"}, "foo", "baz"},
		{[]string{"--name", "/bar", "-m", "foo.bar.baz"}, "default-experiment", "bar"},
		{[]string{"--name", "/", "--script", "a/b.tar.py"}, "default-experiment", "b.tar"},
	} {
		a, err := c.ParseArgs(tc.args, nil)
		if err != nil {
			t.Fatal(err)
		}
		app, err := c.App(ctx, a)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		env := map[string]string{}
		for _, e := range app.Roles[0].Env {
			env[e.Name] = e.Value
		}
		if env["TORCHX_TRACKING_EXPERIMENT_NAME"] != tc.experiment || env["TORCHX_TRACKING_RUN_NAME"] != tc.run || app.Name != tc.run {
			t.Errorf("%v: got experiment %q, run %q, app %q; want %q, %q", tc.args,
				env["TORCHX_TRACKING_EXPERIMENT_NAME"], env["TORCHX_TRACKING_RUN_NAME"], app.Name, tc.experiment, tc.run)
		}
	}
}

// TestHugeDocstring: a docstring of hundreds of thousands of continuation lines is read in
// linear time, and each parameter's help is cut short.
func TestHugeDocstring(t *testing.T) {
	var b strings.Builder
	b.WriteString("def f(x = 1):\n    \"\"\"Summary.\n\n    Args:\n        x: first\n")
	for b.Len() < 1<<20-100 {
		b.WriteString("          a\n")
	}
	b.WriteString("    \"\"\"\n    return {}\n")
	file := filepath.Join(t.TempDir(), "doc.star")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := component.Load(context.Background(), file+":f", nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Params[0].Help; !strings.HasPrefix(h, "first a a") || len(h) > 5<<10 {
		t.Errorf("got help of %d bytes, want it cut short at about 4 KiB", len(h))
	}
}

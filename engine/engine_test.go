package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/engine"
)

// testPod is a small pod for behaviour tests.
func testPod() *corev1.Pod {
	pod := new(corev1.Pod)
	err := yaml.UnmarshalStrict([]byte(`
apiVersion: v1
kind: Pod
metadata:
  name: trainer-0
  labels: {app: demo}
spec:
  restartPolicy: Never
  tolerations:
  - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
  containers:
  - name: trainer
    image: trainer:v1
    ports: [{containerPort: 29500, name: rdzv}]
    resources:
      limits: {cpu: "4", nvidia.com/gpu: "8"}
`), pod)
	if err != nil {
		panic(err)
	}
	return pod
}

func compile(t testing.TB, src string, opts *engine.Options) *engine.Overlay {
	t.Helper()
	o, err := engine.Compile(context.Background(), "overlay.star", []byte(src), opts)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return o
}

func TestCompileErrors(t *testing.T) {
	for _, test := range []struct {
		name, src, want string
	}{
		{"syntax", "def overlay(pod):\n    return pod[\n", `^overlay.star:3:1: got outdent, want primary expression`},
		{"undefined", "def overlay(pod):\n    return opne(pod)\n", `^overlay.star:2:12: undefined: opne`},
		{"no overlay", "def f(pod):\n    pass\n", `^overlay.star: no top-level function named overlay; define`},
		{"near plural", "def overlays(pod):\n    pass\n", `^overlay.star:1:1: no top-level function named overlay; did you mean "overlays"\?`},
		{"near case", "def Overlay(pod):\n    pass\n", `did you mean "Overlay"\?`},
		{"not a function", "overlay = 3\n", `^overlay.star:1:1: overlay is an int, want a function overlay\(pod\) or overlay\(pod, ctx\)$`},
		{"not a function later", "x = 1\noverlay = \"pod\"\n", `^overlay.star:2:1: overlay is a string, want a function`},
		{"not a function in a tuple", "x, overlay = 1, None\n", `^overlay.star:1:4: overlay is a NoneType, want a function`},
		{"no params", "def overlay():\n    pass\n", `^overlay.star:1:1: overlay has parameters \(\), want \(pod\) or \(pod, ctx\)`},
		{"three params", "def overlay(pod, ctx, x):\n    pass\n", `overlay has parameters \(pod, ctx, x\), want`},
		{"varargs", "def overlay(*pods):\n    pass\n", `overlay has parameters \(\*pods\), want`},
		{"kwargs", "def overlay(pod, **kw):\n    pass\n", `overlay has parameters \(pod, \*\*kw\), want`},
		{"while", "def overlay(pod):\n    while True:\n        pass\n", `^overlay.star:2:5: this Starlark dialect does not support while loops`},
		{"global reassign", "x = 1\nx = 2\ndef overlay(pod):\n    pass\n", `^overlay.star:2:1: cannot reassign global x`},
		{"top-level error", "x = {}[\"a\"]\ndef overlay(pod):\n    pass\n", `^overlay.star:1:7: key "a" not in dict`},
		{"load without loader", "load(\"lib.star\", \"f\")\ndef overlay(pod):\n    pass\n", `^overlay.star:1:6: cannot load lib.star: load is not enabled`},
		{"open", "def overlay(pod):\n    open(\"/etc/passwd\")\n", `undefined: open`},
	} {
		t.Run(test.name, func(t *testing.T) {
			_, err := engine.Compile(context.Background(), "overlay.star", []byte(test.src), nil)
			var e *engine.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *engine.Error", err, err)
			}
			if e.Overlay != "overlay.star" {
				t.Errorf("Overlay = %q, want overlay.star", e.Overlay)
			}
			matchErr(t, err, test.want)
		})
	}
}

func matchErr(t *testing.T, err error, pattern string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", pattern)
	}
	if !regexpMatch(pattern, err.Error()) {
		t.Errorf("got error:\n%v\nwant match for %s", err, pattern)
	}
}

func TestApplyReturnsAndMutates(t *testing.T) {
	in := testPod()
	orig := in.DeepCopy()
	for _, src := range []string{
		// mutate in place and return None
		"def overlay(pod):\n    pod[\"spec\"][\"nodeSelector\"] = {\"pool\": \"gpu\"}\n",
		// return a new dict
		"def overlay(pod):\n    p = dict(pod)\n    p[\"spec\"] = dict(pod[\"spec\"], nodeSelector = {\"pool\": \"gpu\"})\n    return p\n",
		// the two-parameter form
		"def overlay(pod, ctx):\n    pod[\"spec\"][\"nodeSelector\"] = {\"pool\": \"gpu\"}\n    return pod\n",
	} {
		got, err := compile(t, src, nil).Apply(context.Background(), in, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := orig.DeepCopy()
		want.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff(orig, in); diff != "" {
		t.Errorf("Apply changed its input (-before +after):\n%s", diff)
	}
}

func TestPodShape(t *testing.T) {
	// The pod reaches the script in the JSON shape, keys in declaration order.
	src := `
def overlay(pod):
    if list(pod.keys()) != ["kind", "apiVersion", "metadata", "spec", "status"]:
        fail("keys: %s" % list(pod.keys()))
    c = pod["spec"]["containers"][0]
    if list(c.keys()) != ["name", "image", "ports", "resources"]:
        fail("container keys: %s" % list(c.keys()))
    if c["ports"][0]["containerPort"] != 29500:
        fail("port: %r" % c["ports"][0]["containerPort"])
    if list(c["resources"]["limits"].keys()) != ["cpu", "nvidia.com/gpu"]:
        fail("limits: %s" % c["resources"]["limits"])
    if c["resources"]["limits"]["cpu"] != "4":
        fail("cpu: %r" % c["resources"]["limits"]["cpu"])
    if pod["status"] != {}:
        fail("status: %r" % pod["status"])
`
	if _, err := compile(t, src, nil).Apply(context.Background(), testPod(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestCtx(t *testing.T) {
	src := `
def overlay(pod, ctx):
    got = (ctx.app_id, ctx.role, ctx.replica_id, ctx.num_replicas, ctx.scheduler, ctx.args)
    pod["metadata"]["annotations"] = {"ctx": repr(got)}
    ctx.args["x"] = "y"
`
	o := compile(t, src, nil)
	env := &engine.Env{AppID: "llama-x1", Role: "trainer", ReplicaID: 3, NumReplicas: 4,
		Scheduler: "kubernetes", Args: map[string]string{"b": "2", "a": "1"}}
	_, err := o.Apply(context.Background(), testPod(), env)
	matchErr(t, err, `^overlay.star:5:13: cannot insert into frozen hash table`)

	o = compile(t, strings.Replace(src, "    ctx.args[\"x\"] = \"y\"\n", "", 1), nil)
	got, err := o.Apply(context.Background(), testPod(), env)
	if err != nil {
		t.Fatal(err)
	}
	want := `("llama-x1", "trainer", 3, 4, "kubernetes", {"a": "1", "b": "2"})`
	if got.Annotations["ctx"] != want {
		t.Errorf("ctx = %s, want %s", got.Annotations["ctx"], want)
	}
	// Without an Env, or outside a scheduler, the strings are empty and the pod is no
	// replica: None, not replica 0 of 0.
	for _, env := range []*engine.Env{nil, {ReplicaID: 3, NumReplicas: 4}} {
		got, err = o.Apply(context.Background(), testPod(), env)
		if err != nil {
			t.Fatal(err)
		}
		if want := `("", "", None, None, "", {})`; got.Annotations["ctx"] != want {
			t.Errorf("ctx of %+v = %s, want %s", env, got.Annotations["ctx"], want)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	for _, test := range []struct {
		name, body string
		want       string         // regexp over Error()
		fields     []*field.Error // type and path of each result error, when the result is invalid
		limit      engine.Limit   // the LimitError's Limit, when a limit is hit
		pos        string         // the error's position
	}{
		{name: "return int", body: "    return 1", want: `^overlay.star:1:1: overlay returned int, want dict or None$`, pos: "overlay.star:1:1"},
		{name: "return list", body: "    return [pod]", want: `overlay returned list, want dict or None`},
		{name: "runtime", body: "    x = pod[\"nope\"]", want: `^overlay.star:3:12: key "nope" not in dict$`, pos: "overlay.star:3:12"},
		{name: "fail", body: "    fail(\"no GPUs here\")", want: `^overlay.star:3:9: fail: no GPUs here$`},
		{name: "recursion", body: "    f(1)\ndef f(n):\n    f(n)", want: `function f called recursively`},
		{name: "mutual recursion", body: "    f(1)\ndef f(n):\n    g(n)\ndef g(n):\n    f(n)", want: `called recursively`},
		{name: "wrong type", body: "    pod[\"spec\"][\"containers\"][0][\"ports\"][0][\"containerPort\"] = \"29500\"",
			want:   `^overlay.star:3:45: spec.containers\[0\].ports\[0\].containerPort: got string, want int`,
			fields: []*field.Error{field.TypeInvalid(field.NewPath("spec", "containers").Index(0).Child("ports").Index(0).Child("containerPort"), nil, "")}},
		{name: "unknown field", body: "    pod[\"spec\"][\"tolerration\"] = []",
			want:   `spec.tolerration: unknown field; did you mean "tolerations"\?`,
			fields: []*field.Error{field.Forbidden(field.NewPath("spec", "tolerration"), "")}},
		{name: "several", body: "    pod[\"spec\"][\"hostname\"] = 1\n    pod[\"metadata\"][\"labels\"][\"x\"] = 2",
			want: `^overlay.star:4:30: metadata.labels\[x\]: got int, want string\noverlay.star:3:16: spec.hostname: got int, want string$`,
			fields: []*field.Error{
				field.TypeInvalid(field.NewPath("metadata", "labels").Key("x"), nil, ""),
				field.TypeInvalid(field.NewPath("spec", "hostname"), nil, ""),
			}},
		{name: "function value", body: "    pod[\"metadata\"][\"name\"] = len",
			want:   `metadata.name: got builtin_function_or_method, want string`,
			fields: []*field.Error{field.Invalid(field.NewPath("metadata", "name"), nil, "")}},
		{name: "nan", body: "    pod[\"spec\"][\"activeDeadlineSeconds\"] = float(\"nan\")",
			fields: []*field.Error{field.Invalid(field.NewPath("spec", "activeDeadlineSeconds"), nil, "")}},
		{name: "inf", body: "    pod[\"spec\"][\"activeDeadlineSeconds\"] = float(\"inf\")",
			fields: []*field.Error{field.Invalid(field.NewPath("spec", "activeDeadlineSeconds"), nil, "")}},
		{name: "int64 overflow", body: "    pod[\"spec\"][\"activeDeadlineSeconds\"] = 1 << 70",
			fields: []*field.Error{field.Invalid(field.NewPath("spec", "activeDeadlineSeconds"), nil, "")}},
		{name: "int32 overflow", body: "    pod[\"spec\"][\"containers\"][0][\"ports\"][0][\"containerPort\"] = 1 << 32",
			fields: []*field.Error{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("ports").Index(0).Child("containerPort"), nil, "")}},
		{name: "non-string key", body: "    pod[\"metadata\"][\"labels\"][1] = \"x\"",
			fields: []*field.Error{field.Invalid(field.NewPath("metadata", "labels"), nil, "")}},
		// A value that contains itself never hangs: the typed decoder meets the cycle as a type error.
		{name: "cycle", body: "    pod[\"spec\"][\"containers\"].append(pod[\"spec\"][\"containers\"])",
			fields: []*field.Error{field.TypeInvalid(field.NewPath("spec", "containers").Index(1), nil, "")}},
		{name: "cycle in dict", body: "    pod[\"metadata\"][\"labels\"][\"self\"] = pod[\"metadata\"][\"labels\"]",
			fields: []*field.Error{field.TypeInvalid(field.NewPath("metadata", "labels").Key("self"), nil, "")}},
		{name: "bad quantity", body: "    pod[\"spec\"][\"containers\"][0][\"resources\"][\"limits\"][\"cpu\"] = \"four\"",
			fields: []*field.Error{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("resources", "limits").Key("cpu"), nil, "")}},
		{name: "kind changed", body: "    pod[\"kind\"] = \"Deployment\"",
			want:   `^overlay.star:3:8: kind: got "Deployment", want "Pod"$`,
			fields: []*field.Error{field.Invalid(field.NewPath("kind"), nil, "")}},
		{name: "apiVersion changed", body: "    pod[\"apiVersion\"] = \"v2\"",
			want:   `^overlay.star:3:8: apiVersion: got "v2", want "v1"$`,
			fields: []*field.Error{field.Invalid(field.NewPath("apiVersion"), nil, "")}},
		{name: "new dict of another kind", body: "    return {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"spec\": {\"hostname\": 1}}",
			want: `^overlay.star:3:66: kind: got "Deployment", want "Pod"\n` +
				`overlay.star:3:66: apiVersion: got "apps/v1", want "v1"\n` +
				`overlay.star:3:66: spec.hostname: got int, want string$`,
			fields: []*field.Error{
				field.Invalid(field.NewPath("kind"), nil, ""),
				field.Invalid(field.NewPath("apiVersion"), nil, ""),
				field.TypeInvalid(field.NewPath("spec", "hostname"), nil, ""),
			}},
		{name: "kind of the wrong type", body: "    pod[\"kind\"] = 1",
			want:   `^overlay.star:3:8: kind: got int, want string$`,
			fields: []*field.Error{field.TypeInvalid(field.NewPath("kind"), nil, "")}},
		{name: "steps", body: "    for i in range(1 << 40):\n        pass", want: `^overlay.star:3:5: exceeded the limit of 1000000 execution steps`, limit: engine.LimitSteps},
		{name: "result size", body: "    pod[\"metadata\"][\"annotations\"] = {\"big\": \"x\" * (2 << 20)}",
			want: `^overlay.star:1:1: result exceeds the size limit of 1048576 bytes of JSON`, limit: engine.LimitResultSize},
	} {
		t.Run(test.name, func(t *testing.T) {
			o := compile(t, "def overlay(pod):\n    pass\n"+test.body+"\n", nil)
			_, err := o.Apply(context.Background(), testPod(), nil)
			if err == nil {
				t.Fatal("got no error")
			}
			var e *engine.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T, want *engine.Error", err)
			}
			if e.Overlay != "overlay.star" {
				t.Errorf("Overlay = %q", e.Overlay)
			}
			if !e.Pos.IsValid() {
				t.Errorf("no position in %v", err)
			}
			if test.want != "" {
				matchErr(t, err, test.want)
			}
			if test.pos != "" && e.Pos.String() != test.pos {
				t.Errorf("Pos = %s, want %s", e.Pos, test.pos)
			}
			if test.fields != nil {
				var got, want []string
				for _, fe := range e.Fields {
					got = append(got, string(fe.Type)+" "+fe.Field)
				}
				for _, fe := range test.fields {
					want = append(want, string(fe.Type)+" "+fe.Field)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("field errors (-want +got):\n%s\nerror: %v", diff, err)
				}
			}
			var lim *engine.LimitError
			if errors.As(err, &lim) != (test.limit != 0) || (lim != nil && lim.Limit != test.limit) {
				t.Errorf("LimitError = %v, want limit %v", lim, test.limit)
			}
		})
	}
}

// TestKindAndAPIVersion checks that a result without a kind or an apiVersion is a v1 Pod,
// whether the overlay dropped them or the input had none.
func TestKindAndAPIVersion(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	noType := testPod()
	noType.TypeMeta = metav1.TypeMeta{}
	for _, test := range []struct {
		name, src string
		in        *corev1.Pod
	}{
		{"new dict", "def overlay(pod):\n    return {\"metadata\": pod[\"metadata\"], \"spec\": pod[\"spec\"]}\n", testPod()},
		{"deleted", "def overlay(pod):\n    pod.pop(\"kind\")\n    pod.pop(\"apiVersion\")\n", testPod()},
		{"None", "def overlay(pod):\n    pod[\"kind\"] = None\n    pod[\"apiVersion\"] = None\n", testPod()},
		{"input without them", "def overlay(pod):\n    pass\n", noType},
	} {
		t.Run(test.name, func(t *testing.T) {
			for _, opts := range []*engine.Options{nil, workerOptions(pool)} {
				got, err := compile(t, test.src, opts).Apply(context.Background(), test.in, nil)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(testPod(), got); diff != "" {
					t.Errorf("isolation %v: (-want +got):\n%s", opts != nil, diff)
				}
			}
		})
	}
}

// TestApplyBatch checks that a batch stops at the first pod that fails, says which it is by
// the results before it, and applies no pod twice.
func TestApplyBatch(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	for _, isolation := range []string{"in-process", "worker"} {
		t.Run(isolation, func(t *testing.T) {
			var mu sync.Mutex
			var visits []string
			opts := &engine.Options{Print: func(pos syntax.Position, msg string) {
				mu.Lock()
				defer mu.Unlock()
				visits = append(visits, pos.Filename()+" "+msg)
			}}
			if isolation == "worker" {
				opts.Isolation, opts.Workers = engine.WorkerProcess, pool
			}
			overlay := func(name, bad string) *engine.Overlay {
				src := fmt.Sprintf("def overlay(pod):\n    print(\"visit\", pod[\"metadata\"][\"name\"])\n"+
					"    if pod[\"metadata\"][\"name\"] == %q:\n        fail(\"bad\")\n", bad)
				o, err := engine.Compile(context.Background(), name, []byte(src), opts)
				if err != nil {
					t.Fatal(err)
				}
				return o
			}
			var pods []*corev1.Pod
			for _, name := range []string{"a", "b", "c", "d"} {
				pod := testPod()
				pod.Name = name
				pods = append(pods, pod)
			}
			check := func(chain engine.Chain, wantOut int, wantErr string, wantVisits []string) {
				t.Helper()
				visits = nil
				out, err := chain.ApplyBatch(context.Background(), pods, nil)
				if len(out) != wantOut {
					t.Errorf("got %d results, want %d", len(out), wantOut)
				}
				for i, pod := range out {
					if pod == nil || pod.Name != pods[i].Name {
						t.Errorf("result %d = %v, want pod %s", i, pod, pods[i].Name)
					}
				}
				if wantErr == "" {
					if err != nil {
						t.Errorf("got %v, want no error", err)
					}
				} else {
					matchErr(t, err, wantErr)
				}
				// A worker goes on with the pods after the one that failed, so the visits
				// of the last overlay to fail may be more; but never twice.
				seen := make(map[string]bool)
				for _, v := range visits {
					if seen[v] {
						t.Errorf("%q twice in %q", v, visits)
					}
					seen[v] = true
				}
				for _, v := range wantVisits {
					if !seen[v] {
						t.Errorf("no %q in %q", v, visits)
					}
				}
				if isolation == "in-process" && len(visits) != len(wantVisits) {
					t.Errorf("visits = %q, want %q", visits, wantVisits)
				}
			}
			x, y := overlay("x.star", "c"), overlay("y.star", "b")
			check(engine.Chain{x}, 2, `^x.star:4:13: fail: bad$`, []string{"x.star visit a", "x.star visit b", "x.star visit c"})
			if out, err := x.ApplyBatch(context.Background(), pods, nil); len(out) != 2 || err == nil {
				t.Errorf("Overlay.ApplyBatch: got %d results and %v, want 2 and an error", len(out), err)
			}
			// y fails on a pod before the one x failed on: that is the first pod to fail.
			check(engine.Chain{x, y}, 1, `^y.star:4:13: fail: bad$`,
				[]string{"x.star visit a", "x.star visit b", "x.star visit c", "y.star visit a", "y.star visit b"})
			check(engine.Chain{y, x}, 1, `^y.star:4:13: fail: bad$`, []string{"y.star visit a", "y.star visit b", "x.star visit a"})
			check(engine.Chain{overlay("ok1.star", "none"), overlay("ok2.star", "none")}, 4, "", []string{
				"ok1.star visit a", "ok1.star visit b", "ok1.star visit c", "ok1.star visit d",
				"ok2.star visit a", "ok2.star visit b", "ok2.star visit c", "ok2.star visit d"})
		})
	}
}

func TestBacktrace(t *testing.T) {
	o := compile(t, "def overlay(pod):\n    helper(pod)\n\ndef helper(pod):\n    return pod[\"x\"]\n", nil)
	_, err := o.Apply(context.Background(), testPod(), nil)
	var e *engine.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	if want := "Traceback (most recent call last):\n  overlay.star:2:11: in overlay\n  overlay.star:5:15: in helper"; e.Backtrace != want {
		t.Errorf("backtrace:\n%s\nwant:\n%s", e.Backtrace, want)
	}
	if want := `overlay.star:5:15: key "x" not in dict`; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	// A builtin's error names it once, in the message: the backtrace leaves it out.
	o = compile(t, "def overlay(pod):\n    add_toleration(pod, \"k\", operator = \"exists\")\n", nil)
	_, err = o.Apply(context.Background(), testPod(), nil)
	if !errors.As(err, &e) {
		t.Fatalf("got %v", err)
	}
	if want := "Traceback (most recent call last):\n  overlay.star:2:19: in overlay"; e.Backtrace != want {
		t.Errorf("backtrace:\n%s\nwant:\n%s", e.Backtrace, want)
	}
	if strings.Count(err.Error(), "add_toleration") != 1 {
		t.Errorf("got %q, want add_toleration named once", err)
	}
}

func TestTimeLimit(t *testing.T) {
	o := compile(t, "def overlay(pod):\n    for i in range(1 << 62):\n        pass\n",
		&engine.Options{Timeout: 50 * time.Millisecond, MaxSteps: 1 << 62})
	_, err := o.Apply(context.Background(), testPod(), nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitTime || lim.Value != "50ms" {
		t.Fatalf("got %v, want the time limit", err)
	}
	matchErr(t, err, `^overlay.star:2:5: exceeded the time limit of 50ms`)
}

func TestContextCancel(t *testing.T) {
	o := compile(t, "def overlay(pod):\n    for i in range(1 << 62):\n        pass\n",
		&engine.Options{Timeout: time.Hour, MaxSteps: 1 << 62})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := o.Apply(ctx, testPod(), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	_, err = o.Apply(ctx, testPod(), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	// An already cancelled context does not run the script at all.
	_, err = o.Apply(ctx, testPod(), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
}

func TestStepLimitOption(t *testing.T) {
	src := "def overlay(pod):\n    for i in range(500):\n        pass\n"
	if _, err := compile(t, src, &engine.Options{MaxSteps: 100_000}).Apply(context.Background(), testPod(), nil); err != nil {
		t.Fatal(err)
	}
	_, err := compile(t, src, &engine.Options{MaxSteps: 100}).Apply(context.Background(), testPod(), nil)
	matchErr(t, err, `exceeded the limit of 100 execution steps`)
	// The limit applies to the top level too, at compile time.
	_, err = engine.Compile(context.Background(), "overlay.star", []byte("X = [i for i in range(1000)]\ndef overlay(pod):\n    pass\n"), &engine.Options{MaxSteps: 100})
	matchErr(t, err, `^overlay.star:1:\d+: exceeded the limit of 100 execution steps`)
}

func TestResultSizeOption(t *testing.T) {
	src := "def overlay(pod):\n    pod[\"metadata\"][\"annotations\"] = {\"a\": \"x\" * 5000}\n"
	if _, err := compile(t, src, nil).Apply(context.Background(), testPod(), nil); err != nil {
		t.Fatal(err)
	}
	_, err := compile(t, src, &engine.Options{MaxResultBytes: 4096}).Apply(context.Background(), testPod(), nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitResultSize || lim.Value != "4096 bytes" {
		t.Fatalf("got %v, want the result size limit", err)
	}
}

func TestPrint(t *testing.T) {
	var got []string
	var mu sync.Mutex
	o := compile(t, "def overlay(pod):\n    print(\"hello\", pod[\"metadata\"][\"name\"])\n", &engine.Options{
		Print: func(pos syntax.Position, msg string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%s:%d: %s", pos.Filename(), pos.Line, msg))
		},
	})
	if _, err := o.Apply(context.Background(), testPod(), nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"overlay.star:2: hello trainer-0"}, got); diff != "" {
		t.Error(diff)
	}
	// Without a sink, print is discarded.
	if _, err := compile(t, "def overlay(pod):\n    print(\"x\")\n", nil).Apply(context.Background(), testPod(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestChain(t *testing.T) {
	a := compile(t, "def overlay(pod):\n    pod[\"metadata\"][\"labels\"][\"step\"] = \"a\"\n", nil)
	b, err := engine.Compile(context.Background(), "b.star", []byte("def overlay(pod):\n    pod[\"metadata\"][\"labels\"][\"step\"] += \"b\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := engine.Chain{a, b}.Apply(context.Background(), testPod(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["step"] != "ab" {
		t.Errorf("step = %q, want ab", got.Labels["step"])
	}
	bad, err := engine.Compile(context.Background(), "bad.star", []byte("def overlay(pod):\n    pod[\"spec\"][\"nope\"] = 1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Chain{a, bad, b}.Apply(context.Background(), testPod(), nil)
	var e *engine.Error
	if !errors.As(err, &e) || e.Overlay != "bad.star" {
		t.Fatalf("got %v, want an error of bad.star", err)
	}
	matchErr(t, err, `^bad.star:2:16: spec.nope: unknown field`)
	// An empty chain returns a copy.
	in := testPod()
	got, err = engine.Chain{}.Apply(context.Background(), in, nil)
	if err != nil || got == in || !cmp.Equal(got, in) {
		t.Errorf("empty chain: got %v, %v", got, err)
	}
}

func TestNoStateBetweenApplies(t *testing.T) {
	o := compile(t, "seen = []\ndef overlay(pod):\n    seen.append(1)\n    pod[\"metadata\"][\"labels\"][\"n\"] = str(len(seen))\n", nil)
	for i := 0; i < 3; i++ {
		got, err := o.Apply(context.Background(), testPod(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels["n"] != "1" {
			t.Fatalf("apply %d saw state of an earlier apply: n = %s", i, got.Labels["n"])
		}
	}
}

// TestApplyAfterApply checks that an apply leaves nothing to the next in the memory of the
// pod's values, which the next apply reuses: applies of two pods, some failing, in turn, by an
// overlay that grows, moves and shares what it gets, each give what the first apply of that
// pod gave.
func TestApplyAfterApply(t *testing.T) {
	o := compile(t, `
def overlay(pod, ctx):
    if ctx.replica_id % 3 == 2:
        pod["spec"]["containers"].append(pod["metadata"])
        fail("replica %d" % ctx.replica_id)
    labels = pod["metadata"]["labels"]
    for i in range(12):
        labels["k%d" % i] = str(i)
    c = pod["spec"]["containers"][0]
    c["env"] = [{"name": k, "value": v} for k, v in labels.items()]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod["metadata"], "spec": {"containers": [c, dict(c, name = "copy")]}}
`, nil)
	pods := [2]*corev1.Pod{testPod(), testPod()}
	pods[1].Name, pods[1].Labels = "other", map[string]string{"other": "yes"}
	pods[1].Spec.Containers[0].Args = []string{"--a", "--b"}
	var first [2][]byte
	for i := range 60 {
		pod := i % 2
		got, err := o.Apply(context.Background(), pods[pod], &engine.Env{ReplicaID: i, NumReplicas: 60, Scheduler: "kubernetes"})
		if i%3 == 2 {
			if err == nil {
				t.Fatalf("apply %d: got no error", i)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := yaml.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if first[pod] == nil {
			first[pod] = data
		} else if string(data) != string(first[pod]) {
			t.Fatalf("apply %d differs:\n%s\nfirst:\n%s", i, data, first[pod])
		}
	}
	if string(first[0]) == string(first[1]) {
		t.Fatal("the two pods gave the same result")
	}
}

func TestDeterminism(t *testing.T) {
	o := compile(t, `
def overlay(pod):
    pod["metadata"]["annotations"] = {k: str(hash(k)) for k in ["b", "a", "c"]}
    pod["spec"]["nodeSelector"] = {"z": "1", "a": "2"}
    pod["metadata"]["labels"]["set"] = ",".join([str(x) for x in set([3, 1, 2])])
`, nil)
	var first []byte
	for i := 0; i < 100; i++ {
		got, err := o.Apply(context.Background(), testPod(), nil)
		if err != nil {
			t.Fatal(err)
		}
		data, err := yaml.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = data
		} else if string(data) != string(first) {
			t.Fatalf("apply %d differs:\n%s\nfirst:\n%s", i, data, first)
		}
	}
}

func TestConcurrentApply(t *testing.T) {
	o := compile(t, `
def overlay(pod, ctx):
    pod["metadata"]["labels"]["replica"] = str(ctx.replica_id)
    pod["spec"]["tolerations"].append({"key": "r%d" % ctx.replica_id, "operator": "Exists"})
`, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				got, err := o.Apply(context.Background(), testPod(), &engine.Env{ReplicaID: g, NumReplicas: 32, Scheduler: "kubernetes"})
				if err != nil {
					errs <- err
					return
				}
				if got.Labels["replica"] != fmt.Sprint(g) || len(got.Spec.Tolerations) != 2 ||
					got.Spec.Tolerations[1].Key != fmt.Sprintf("r%d", g) {
					errs <- fmt.Errorf("goroutine %d got a mixed-up pod: %v %v", g, got.Labels, got.Spec.Tolerations)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib/gpu.star", "load(\"../lib/util.star\", \"label\")\ndef add_gpu(pod):\n    label(pod, \"gpu\", \"yes\")\n")
	write("lib/util.star", "calls = []\ndef label(pod, k, v):\n    pod[\"metadata\"][\"labels\"][k] = v\n")
	write("lib/a.star", "load(\"b.star\", \"b\")\na = 1\n")
	write("lib/b.star", "load(\"a.star\", \"a\")\nb = 1\n")
	write("lib/bad.star", "x = 1 +\n")
	write("lib/mut.star", "load(\"util.star\", \"calls\")\ndef f():\n    calls.append(1)\n")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "evil.star"), []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "evil.star"), filepath.Join(dir, "lib", "link.star")); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(dir, "overlay.star")
	opts := &engine.Options{Loader: engine.DirLoader(dir)}

	o, err := engine.Compile(context.Background(), top, []byte("load(\"lib/gpu.star\", \"add_gpu\")\ndef overlay(pod):\n    add_gpu(pod)\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Apply(context.Background(), testPod(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["gpu"] != "yes" {
		t.Errorf("labels = %v", got.Labels)
	}

	for _, test := range []struct{ src, want string }{
		{"load(\"lib/a.star\", \"a\")", `load cycle: .*lib/a.star -> .*lib/b.star -> .*lib/a.star`},
		{"load(\"../x.star\", \"x\")", `overlay.star:1:6: cannot load ../x.star: ../x.star is outside the overlay root`},
		{"load(\"/etc/passwd\", \"x\")", `cannot load /etc/passwd: absolute module paths are not allowed`},
		{"load(\"lib/link.star\", \"x\")", `cannot load lib/link.star: lib/link.star leads outside the overlay root`},
		{"load(\"lib/none.star\", \"x\")", `cannot load lib/none.star: .*lib/none.star does not exist`},
		{"load(\"lib/gpu.star\", \"nope\")", `overlay.star:1:\d+: load: name nope not found in module lib/gpu.star`},
		{"load(\"lib/bad.star\", \"x\")", `lib/bad.star:1:8: got newline, want primary expression`},
	} {
		_, err := engine.Compile(context.Background(), top, []byte(test.src+"\ndef overlay(pod):\n    pass\n"), opts)
		matchErr(t, err, test.want)
	}

	// Loaded modules are frozen.
	o, err = engine.Compile(context.Background(), top, []byte("load(\"lib/mut.star\", \"f\")\ndef overlay(pod):\n    f()\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Apply(context.Background(), testPod(), nil)
	matchErr(t, err, `cannot append to frozen list`)
}

func TestFSLoader(t *testing.T) {
	fsys := fstest.MapFS{
		"overlays/main.star":  {Data: []byte("load(\"lib/x.star\", \"v\")\ndef overlay(pod):\n    pod[\"metadata\"][\"labels\"][\"v\"] = v\n")},
		"overlays/lib/x.star": {Data: []byte("v = \"from-fs\"\n")},
	}
	src, _ := fsys.ReadFile("overlays/main.star")
	o, err := engine.Compile(context.Background(), "overlays/main.star", src, &engine.Options{Loader: engine.FSLoader(fsys)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Apply(context.Background(), testPod(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["v"] != "from-fs" {
		t.Errorf("labels = %v", got.Labels)
	}
	_, err = engine.Compile(context.Background(), "overlays/main.star", []byte("load(\"../../x.star\", \"v\")\ndef overlay(pod):\n    pass\n"),
		&engine.Options{Loader: engine.FSLoader(fsys)})
	matchErr(t, err, `outside the module file system`)
}

// TestCompileBudget checks that the top levels of a script and of the modules it loads share
// one budget of steps and one of time: each module alone is well within the limits, all of
// them together are not.
func TestCompileBudget(t *testing.T) {
	fsys := fstest.MapFS{}
	var src strings.Builder
	for i := range 6 {
		name := fmt.Sprintf("m%d.star", i)
		// About 300,000 steps each: 1,800,000 together. Each prints once.
		fsys[name] = &fstest.MapFile{Data: []byte("def burn():\n    n = 0\n    for i in range(30000):\n        n += i\n    return n\nx = burn()\nprint(\"burnt\")\n")}
		fmt.Fprintf(&src, "load(%q, x%d = \"x\")\n", name, i)
	}
	src.WriteString("def overlay(pod):\n    pass\n")
	one := "load(\"m0.star\", \"x\")\ndef overlay(pod):\n    pass\n"
	for name, isolation := range map[string]engine.Isolation{"in-process": engine.InProcess, "worker": engine.WorkerProcess} {
		t.Run(name, func(t *testing.T) {
			pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
			defer pool.Close()
			opts := engine.Options{Loader: engine.FSLoader(fsys), Isolation: isolation, Workers: pool, MaxSteps: 1_000_000}
			// Each module alone compiles; all six together pass the step limit.
			if _, err := engine.Compile(context.Background(), "one.star", []byte(one), &opts); err != nil {
				t.Fatal(err)
			}
			_, err := engine.Compile(context.Background(), "six.star", []byte(src.String()), &opts)
			var lim *engine.LimitError
			if !errors.As(err, &lim) || lim.Limit != engine.LimitSteps {
				t.Fatalf("got %v, want the step limit", err)
			}
		})
	}
	// The time limit: in process, print() calls the Print option at once, which sleeps a
	// quarter of the limit at each module. One module fits the limit, six do not, unless each
	// has a limit of its own; a busy machine only makes them slower. (In a worker, the same
	// budget holds the same way: a worker compiles in process.)
	const limit = 2 * time.Second
	opts := engine.Options{Loader: engine.FSLoader(fsys), MaxSteps: 1 << 40, Timeout: limit,
		Print: func(syntax.Position, string) { time.Sleep(limit / 4) }}
	if _, err := engine.Compile(context.Background(), "one.star", []byte(one), &opts); err != nil {
		t.Fatal(err)
	}
	_, err := engine.Compile(context.Background(), "six.star", []byte(src.String()), &opts)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitTime {
		t.Fatalf("got %v, want the time limit of %v", err, limit)
	}
}

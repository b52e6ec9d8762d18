package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkDecodeRoundTrip checks that Decode(ToStarlark(pod)) equals pod after a JSON round trip.
func checkDecodeRoundTrip(t *testing.T, name string, pod *corev1.Pod) {
	t.Helper()
	want, _ := jsonRoundTrip(t, pod)
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ToStarlark(pod)
	if err != nil {
		t.Fatalf("%s: ToStarlark: %v", name, err)
	}
	got := &corev1.Pod{Spec: corev1.PodSpec{Hostname: "stale"}} // replaced by Decode
	errs, err := Decode(x, got, nil, nil)
	if err != nil || len(errs) > 0 {
		t.Fatalf("%s: Decode: %v %v", name, err, errs)
	}
	if !apiequality.Semantic.DeepEqual(want, got) || !reflect.DeepEqual(want, got) {
		t.Errorf("%s: Decode(ToStarlark(pod)) differs from the JSON round trip:\n%s", name, cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("%s: JSON of the decoded pod differs: %s", name, firstDiff(string(gotJSON), string(wantJSON)))
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	checkDecodeRoundTrip(t, "training", trainingPod(t))
	checkDecodeRoundTrip(t, "rich", richPod())
	checkDecodeRoundTrip(t, "empty", &corev1.Pod{})
	for i, pod := range randomPods(2, 200) {
		checkDecodeRoundTrip(t, fmt.Sprintf("random pod %d", i), pod)
	}
}

func TestDecodeKinds(t *testing.T) {
	yes := true
	for _, v := range []*Kinds{
		{},
		{
			Embedded:    Embedded{E: "e", A: 99, EE: 2},
			PtrEmbedded: &PtrEmbedded{P: "p"},
			A:           1,
			I8:          -8,
			U64:         1<<64 - 1,
			F32:         0.1,
			F64:         []float64{0, 1, 1.5, 1e20, 1e21, 123456789012345678, 1e-7, -2.5e-300},
			Bytes:       []byte("hello\x00\xff"),
			Arr:         [2]byte{1, 2},
			IntKeys:     map[int]string{10: "ten", -1: "minus"},
			UintKeys:    map[uint8]bool{255: true, 0: false},
			TextKeys:    map[textKey]int{{"b", "x"}: 1, {"a", "y"}: 2},
			Any:         map[string]any{"z": 1, "a": []any{1.5, "s", nil, true, 1e300}},
			AnyMap:      map[string]any{"n": json.Number("123456789012345678901234567890"), "f": 2.0},
			Ptr:         &Inner{A: 3},
			Zero:        zeroer{N: 7},
			PZero:       ptrZeroer{N: 3},
			ZeroPtr:     &zeroer{N: 1},
			Quoted:      42,
			QStr:        "a<b\"",
			QPtr:        &yes,
			RawMsg:      json.RawMessage(`{"b":[1,2.0],"a":"x"}`),
			Nested:      map[string][]bool{"x": nil, "y": {true}},
		},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want := new(Kinds)
		if err := strictUnmarshal(data, want); err != nil {
			t.Fatalf("strict unmarshal: %v", err)
		}
		x, err := ToStarlark(v)
		if err != nil {
			t.Fatal(err)
		}
		got := new(Kinds)
		errs, err := Decode(x, got, nil, nil)
		if err != nil || len(errs) > 0 {
			t.Fatalf("Decode(%s): %v %v", x, err, errs)
		}
		if diff := cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })); diff != "" {
			t.Errorf("Decode(ToStarlark(v)) differs from the JSON round trip (-want +got):\n%s", diff)
		}
	}
}

// execStarlark runs the Starlark statements in src and returns the global x.
func execStarlark(t *testing.T, src string) starlark.Value {
	t.Helper()
	thread := &starlark.Thread{Name: "test"}
	globals, err := starlark.ExecFileOptions(&syntax.FileOptions{Set: true, TopLevelControl: true, GlobalReassign: true}, thread, "test.star", src, nil)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return globals["x"]
}

type wantError struct {
	typ    field.ErrorType
	path   string
	detail string
}

func TestDecodeErrors(t *testing.T) {
	const (
		typ       = field.ErrorTypeTypeInvalid
		invalid   = field.ErrorTypeInvalid
		forbidden = field.ErrorTypeForbidden
	)
	nestedFields := "fieldsV1" + strings.Repeat("[a]", maxDepth-4)
	for _, test := range []struct {
		src  string // Starlark statements that set x
		want []wantError
	}{
		{`x = {"spec": {"tolerration": []}}`,
			[]wantError{{forbidden, "spec.tolerration", `unknown field; did you mean "tolerations"?`}}},
		{`x = {"spec": {"zzzzzzzz": 1}}`,
			[]wantError{{forbidden, "spec.zzzzzzzz", "unknown field"}}},
		{`x = {"Kind": "Pod", "spec": {"node_selector": {}}}`,
			[]wantError{
				{forbidden, "Kind", `unknown field; did you mean "kind"?`},
				{forbidden, "spec.node_selector", `unknown field; did you mean "nodeSelector"?`},
			}},
		{`x = {"metadata": {"name": 1}}`,
			[]wantError{{typ, "metadata.name", "got int, want string"}}},
		{`x = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}`,
			[]wantError{{typ, "spec.containers[0].ports[0].containerPort", "got string, want int"}}},
		{`x = {"spec": {"containers": [{"ports": [{}, {"containerPort": 4294967296}]}]}}`,
			[]wantError{{invalid, "spec.containers[0].ports[1].containerPort", "got 4294967296, want int32"}}},
		{`x = {"spec": {"containers": [{"ports": [{"containerPort": 80.0}]}]}}`,
			[]wantError{{invalid, "spec.containers[0].ports[0].containerPort", "got float, want int"}}},
		{`x = {"spec": {"activeDeadlineSeconds": -9223372036854775809}}`,
			[]wantError{{invalid, "spec.activeDeadlineSeconds", "got -9223372036854775809, want int64"}}},
		{`x = {"metadata": {"labels": {"app": 1, "ok": "yes", "none": None}}}`,
			[]wantError{{typ, "metadata.labels[app]", "got int, want string"}}},
		{`x = {"metadata": {"labels": {1: "x"}}}`,
			[]wantError{{invalid, "metadata.labels", "got int key, want string"}}},
		{`x = {"spec": {"containers": [{"resources": {"limits": {("cpu",): "1"}}}]}}`,
			[]wantError{{invalid, "spec.containers[0].resources.limits", "got tuple key, want string"}}},
		{`x = {None: 1}`,
			[]wantError{{invalid, "<nil>", "got NoneType key, want string"}}},
		{`x = {"metadata": {"labels": []}}`,
			[]wantError{{typ, "metadata.labels", "got list, want dict"}}},
		{`x = {"spec": {"containers": {}}}`,
			[]wantError{{typ, "spec.containers", "got dict, want list"}}},
		{`x = {"spec": {"containers": "c"}}`,
			[]wantError{{typ, "spec.containers", "got string, want list"}}},
		{`x = {"spec": {"hostNetwork": "true", "hostPID": 1}}`,
			[]wantError{{typ, "spec.hostNetwork", "got string, want bool"}, {typ, "spec.hostPID", "got int, want bool"}}},
		{`x = {"spec": []}`,
			[]wantError{{typ, "spec", "got list, want dict"}}},
		{`x = [1]`,
			[]wantError{{typ, "<nil>", "got list, want dict"}}},
		{`x = {"metadata": {"name": float("nan")}}`,
			[]wantError{{typ, "metadata.name", "got float, want string"}}},
		{`x = {"metadata": {"name": lambda: 1, "namespace": len, "uid": set()}}`,
			[]wantError{
				{invalid, "metadata.name", "got function, want string"},
				{invalid, "metadata.namespace", "got builtin_function_or_method, want string"},
				{invalid, "metadata.uid", "got set, want string"},
			}},
		{`x = {"spec": {"containers": [{"resources": {"limits": {"cpu": "1x", "memory": 1.5, "x": "1Gi"}}}]}}`,
			[]wantError{{invalid, "spec.containers[0].resources.limits[cpu]", resource.ErrFormatWrong.Error()}}},
		{`x = {"spec": {"containers": [{"livenessProbe": {"tcpSocket": {"port": True}}}]}}`,
			[]wantError{{invalid, "spec.containers[0].livenessProbe.tcpSocket.port", "json: cannot unmarshal bool into Go value of type int32"}}},
		{`x = {"spec": {"containers": [{"livenessProbe": {"tcpSocket": {"port": lambda: 1}}}]}}`,
			[]wantError{{invalid, "spec.containers[0].livenessProbe.tcpSocket.port", "got function, want dict, list, string, int, float, bool or None"}}},
		{`x = {"metadata": {"creationTimestamp": "yesterday"}}`,
			[]wantError{{invalid, "metadata.creationTimestamp", `parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`}}},
		{`
d = {"metadata": {"name": "n"}}
d["spec"] = {"containers": [d]}
x = d`,
			[]wantError{{invalid, "spec.containers[0]", "value contains itself"}}},
		{`
c = {}
c["a"] = [c]
x = {"metadata": {"managedFields": [{"fieldsV1": c}]}}`,
			[]wantError{{invalid, "metadata.managedFields[0].fieldsV1[a][0]", "value contains itself"}}},
		{`
l = []
l.append(l)
x = {"spec": {"containers": [{"args": l, "command": ["a", l]}]}}`,
			[]wantError{
				{typ, "spec.containers[0].args[0]", "got list, want string"},
				{typ, "spec.containers[0].command[1]", "got list, want string"},
			}},
		{`
def nest(n):
    v = {}
    for _ in range(n):
        v = {"a": v}
    return v
x = {"metadata": {"managedFields": [{"fieldsV1": nest(2000)}]}}`,
			[]wantError{{invalid, "metadata.managedFields[0]." + nestedFields, "nested too deeply"}}},
		{`
def nest(n):
    v = ()
    for _ in range(n):
        v = (v,)
    return v
x = {"metadata": {"managedFields": [{"fieldsV1": {"a": nest(100000)}}]}, "spec": {"bogus": nest(100000)}}`,
			[]wantError{
				{invalid, "metadata.managedFields[0].fieldsV1[a]" + strings.Repeat("[0]", maxDepth-5), "nested too deeply"},
				{forbidden, "spec.bogus", "unknown field"},
			}},
		{`x = {"spec": {"containers": [{"name": "c", "image": 1, "bogus": 2, "ports": [{"containerPort": "x"}]}], "hostPID": "no"}}`,
			[]wantError{
				{typ, "spec.containers[0].image", "got int, want string"},
				{forbidden, "spec.containers[0].bogus", "unknown field"},
				{typ, "spec.containers[0].ports[0].containerPort", "got string, want int"},
				{typ, "spec.hostPID", "got string, want bool"},
			}},
	} {
		x := execStarlark(t, test.src)
		var pod corev1.Pod
		errs, err := Decode(x, &pod, nil, nil)
		if err != nil {
			t.Errorf("%s: unexpected error %v", test.src, err)
			continue
		}
		var got []wantError
		for _, e := range errs {
			got = append(got, wantError{e.Type, e.Field, e.Detail})
		}
		if diff := cmp.Diff(test.want, got, cmp.AllowUnexported(wantError{})); diff != "" {
			t.Errorf("%s: errors mismatch (-want +got):\n%s", test.src, diff)
		}
	}
}

func TestDecodePathRoot(t *testing.T) {
	x := execStarlark(t, `x = {"spec": {"containers": [{"name": 1}]}}`)
	var pod corev1.Pod
	errs, _ := Decode(x, &pod, field.NewPath("items").Index(3), nil)
	if len(errs) != 1 || errs[0].Field != "items[3].spec.containers[0].name" {
		t.Errorf("errors = %v, want one at items[3].spec.containers[0].name", errs)
	}
	if got := errs[0].Error(); got != "items[3].spec.containers[0].name: Invalid value: got int, want string" {
		t.Errorf("message = %q", got)
	}
}

func TestDecodeValues(t *testing.T) {
	x := execStarlark(t, `x = {
    "metadata": {"name": "n", "labels": {"a": "1"}, "annotations": None},
    "spec": {
        "containers": ({"name": "c", "args": ("a", "b"), "ports": [{"containerPort": 80, "protocol": "UDP"}],
                        "resources": {"limits": {"cpu": 2, "memory": "1Gi", "x": 0.5}},
                        "livenessProbe": {"httpGet": {"port": "http"}}, "readinessProbe": {"tcpSocket": {"port": 8080}}},),
        "nodeSelector": None,
        "hostNetwork": None,
        "securityContext": None,
        "priority": None,
    },
}`)
	var got corev1.Pod
	errs, err := Decode(x, &got, nil, nil)
	if err != nil || len(errs) > 0 {
		t.Fatalf("Decode: %v %v", err, errs)
	}
	const text = `{
    "metadata": {"name": "n", "labels": {"a": "1"}, "annotations": null},
    "spec": {
        "containers": [{"name": "c", "args": ["a", "b"], "ports": [{"containerPort": 80, "protocol": "UDP"}],
                        "resources": {"limits": {"cpu": 2, "memory": "1Gi", "x": 0.5}},
                        "livenessProbe": {"httpGet": {"port": "http"}}, "readinessProbe": {"tcpSocket": {"port": 8080}}}],
        "nodeSelector": null, "hostNetwork": null, "securityContext": null, "priority": null
    }
}`
	var want corev1.Pod
	if err := strictUnmarshal([]byte(text), &want); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Errorf("Decode differs from strict JSON decoding:\n%s", cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
	}
}

func TestDecodeFloats(t *testing.T) {
	type F struct {
		F64 float64 `json:"f64"`
		F32 float32 `json:"f32"`
		U8  uint8   `json:"u8"`
		Any any     `json:"any"`
	}
	for _, test := range []struct {
		src  string
		want []wantError
		ok   F
	}{
		{`x = {"f64": 1, "f32": 0.1, "u8": 255, "any": [1, 2.5, 123456789012345678901234567890]}`, nil,
			F{F64: 1, F32: 0.1, U8: 255, Any: []any{int64(1), 2.5, 1.2345678901234568e29}}},
		{`x = {"f64": float("nan")}`, []wantError{{field.ErrorTypeInvalid, "f64", "got nan, want finite float"}}, F{}},
		{`x = {"f64": float("-inf")}`, []wantError{{field.ErrorTypeInvalid, "f64", "got -inf, want finite float"}}, F{}},
		{`x = {"f32": 1e300}`, []wantError{{field.ErrorTypeInvalid, "f32", "got 1e+300, want float32"}}, F{}},
		{`x = {"f64": int("1" + "0" * 400)}`, []wantError{{field.ErrorTypeInvalid, "f64", "got " + "1" + strings.Repeat("0", 400) + ", want float64"}}, F{}},
		{`x = {"u8": 256}`, []wantError{{field.ErrorTypeInvalid, "u8", "got 256, want uint8"}}, F{}},
		{`x = {"u8": -1}`, []wantError{{field.ErrorTypeInvalid, "u8", "got -1, want uint8"}}, F{}},
		{`x = {"u8": 1.0}`, []wantError{{field.ErrorTypeInvalid, "u8", "got float, want int"}}, F{}},
		{`x = {"f64": "1"}`, []wantError{{field.ErrorTypeTypeInvalid, "f64", "got string, want float"}}, F{}},
		{`x = {"any": {"a": float("inf")}}`, []wantError{{field.ErrorTypeInvalid, "any[a]", "got +inf, want finite float"}}, F{}},
		{`x = {"any": {1: 2}}`, []wantError{{field.ErrorTypeInvalid, "any", "got int key, want string"}}, F{}},
	} {
		var got F
		errs, err := Decode(execStarlark(t, test.src), &got, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var gotErrs []wantError
		for _, e := range errs {
			gotErrs = append(gotErrs, wantError{e.Type, e.Field, e.Detail})
		}
		if diff := cmp.Diff(test.want, gotErrs, cmp.AllowUnexported(wantError{})); diff != "" {
			t.Errorf("%s: errors mismatch (-want +got):\n%s", test.src, diff)
		}
		if test.want == nil {
			if diff := cmp.Diff(test.ok, got); diff != "" {
				t.Errorf("%s: value mismatch (-want +got):\n%s", test.src, diff)
			}
		}
	}
}

func TestDecodeSize(t *testing.T) {
	pod := trainingPod(t)
	data, _ := json.Marshal(pod)
	n := int64(len(data))
	x, _ := ToStarlark(pod)

	// The running count is within 2% of the JSON length.
	var out corev1.Pod
	if _, err := Decode(x, &out, nil, &Options{MaxBytes: n * 102 / 100}); err != nil {
		t.Errorf("Decode with MaxBytes 2%% above the JSON length %d: %v", n, err)
	}
	errs, err := Decode(x, &out, nil, &Options{MaxBytes: n * 98 / 100})
	var serr *SizeError
	if !errors.As(err, &serr) || errs != nil {
		t.Fatalf("Decode with MaxBytes 2%% below the JSON length %d: errs %v, err %v; want *SizeError", n, errs, err)
	}
	if serr.Limit != n*98/100 {
		t.Errorf("SizeError.Limit = %d, want %d", serr.Limit, n*98/100)
	}
	if _, err := Decode(starlark.String("xxxxxxxx"), new(string), nil, &Options{MaxBytes: 4}); err == nil || err.Error() != "value too large: JSON encoding exceeds 4 bytes" {
		t.Errorf("Decode of a long string at the top: %v", err)
	}

	// A huge list fails at once, before anything is allocated for it.
	elems := make([]starlark.Value, 1_000_000)
	for i := range elems {
		elems[i] = starlark.String("")
	}
	huge := starlark.NewDict(1)
	spec := starlark.NewDict(1)
	huge.SetKey(starlark.String("spec"), spec)
	containers := starlark.NewList([]starlark.Value{starlark.NewDict(0)})
	spec.SetKey(starlark.String("containers"), containers)
	containers.Index(0).(*starlark.Dict).SetKey(starlark.String("args"), starlark.NewList(elems))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	errs, err = Decode(huge, &out, field.NewPath("pod"), &Options{MaxBytes: 1 << 20})
	runtime.ReadMemStats(&after)
	if !errors.As(err, &serr) || errs != nil {
		t.Fatalf("Decode of a huge list: errs %v, err %v; want *SizeError", errs, err)
	}
	if got, want := serr.Error(), "pod.spec.containers[0].args: value too large: JSON encoding exceeds 1048576 bytes"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
		t.Errorf("Decode of a huge list allocated %d bytes before failing", allocated)
	}

	// Values not decoded (unknown fields, wrong types) count too.
	big := execStarlark(t, `x = {"spec": {"bogus": ["x" * 1000] * 100}, "metadata": {"name": ["x" * 1000] * 100}}`)
	if _, err := Decode(big, &out, nil, &Options{MaxBytes: 50_000}); !errors.As(err, &serr) || serr.Path.String() != "spec.bogus[49]" {
		t.Errorf("Decode of a big unknown field: %v, want *SizeError at spec.bogus[49]", err)
	}
}

// TestDecodeLikeStrictJSON checks that Decode of json.decode(text) agrees with strict JSON
// decoding of text.
func TestDecodeLikeStrictJSON(t *testing.T) {
	for _, text := range []string{
		`{}`,
		`null`,
		`{"spec": null, "metadata": {"labels": null}}`,
		`{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x", "labels": {"a": "b"}}}`,
		`{"Kind": "Pod"}`,
		`{"kind": 1}`,
		`{"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80.5}]}]}}`,
		`{"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1e2}]}]}}`,
		`{"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 2147483648}]}]}}`,
		`{"spec": {"containers": [{"resources": {"limits": {"cpu": 1.5, "memory": "1Gi", "x": -1, "y": 1e3}}}]}}`,
		`{"spec": {"containers": [{"resources": {"limits": {"cpu": "abc"}}}]}}`,
		`{"spec": {"containers": [{"livenessProbe": {"httpGet": {"port": 1.0}}}]}}`,
		`{"spec": {"containers": [{"livenessProbe": {"httpGet": {"port": "1"}}}]}}`,
		`{"spec": {"containers": [{"livenessProbe": {"httpGet": {"port": null}}}]}}`,
		`{"spec": {"containers": [{"livenessProbe": {"httpGet": {"port": {}}}}]}}`,
		`{"metadata": {"creationTimestamp": null, "deletionTimestamp": null}}`,
		`{"metadata": {"creationTimestamp": "2020-01-01T00:00:00Z"}}`,
		`{"metadata": {"creationTimestamp": 5}}`,
		`{"metadata": {"managedFields": [{"fieldsV1": {"f:a":{},"f:b":[1,2.5,"x\n"]}}]}}`,
		`{"metadata": {"managedFields": [{"fieldsV1": [1]}]}}`,
		`{"metadata": {"managedFields": [{"fieldsV1": null}]}}`,
		`{"spec": {"hostNetwork": "true"}}`,
		`{"spec": {"tolerations": [{"key": "k", "tolerationSeconds": 30}]}}`,
		`{"spec": {"overhead": {"cpu": "1"}}}`,
		`{"spec": {"containers": [null]}}`,
		`{"status": {"hostIPs": [{"ip": "1.2.3.4"}]}}`,
	} {
		var want corev1.Pod
		wantErr := strictUnmarshal([]byte(text), &want)
		x := starlarkJSONDecode(t, []byte(text))
		var got corev1.Pod
		errs, err := Decode(x, &got, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (wantErr == nil) != (len(errs) == 0) {
			t.Errorf("%s: strict JSON error %v, but Decode errors %v", text, wantErr, errs)
			continue
		}
		if wantErr == nil && !apiequality.Semantic.DeepEqual(want, got) {
			t.Errorf("%s: Decode differs from strict JSON decoding:\n%s", text, cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
		}
	}
}

func TestDecodePanicsOnBadOut(t *testing.T) {
	for _, out := range []any{nil, corev1.Pod{}, (*corev1.Pod)(nil)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Decode(%T) did not panic", out)
				}
			}()
			Decode(starlark.None, out, nil, nil)
		}()
	}
}

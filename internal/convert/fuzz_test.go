package convert

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	starjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/randfill"
)

// Documented differences between Decode of json.decode(text) and strict JSON decoding of
// text:
//   - a key given twice is an error for strict JSON decoding; json.decode keeps the last value;
//   - values nested more than maxDepth deep are an error for Decode only;
//   - an UnmarshalJSON method receives equivalent JSON text, not the original bytes: numbers
//     and strings are written anew and object keys have no spaces around them, so a
//     metav1.FieldsV1 holds different (equivalent) bytes and a resource.Quantity may keep a
//     different (equal) format.

// fuzzSeeds returns JSON texts of pods to start the fuzzers from.
func fuzzSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{
		[]byte(`{}`),
		[]byte(`null`),
		[]byte(`{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80.5}]}]}}`),
		[]byte(`{"spec":{"containers":[{"resources":{"limits":{"cpu":1.5,"memory":"1Gi"}}}]}}`),
		[]byte(`{"metadata":{"managedFields":[{"fieldsV1":{"f:a":{"b":[1,2.5,"x"]}}}]}}`),
		[]byte(`{"spec":{"containers":[{"livenessProbe":{"httpGet":{"port":"http"}}}]},"Kind":"Pod"}`),
	}
	for _, pod := range []*corev1.Pod{trainingPod(t), richPod()} {
		data, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	return seeds
}

// normalize rewrites the FieldsV1 of pod in compact canonical JSON, so that pods decoded from
// equivalent texts compare equal.
func normalize(t testing.TB, pod *corev1.Pod) {
	for i := range pod.ManagedFields {
		f := pod.ManagedFields[i].FieldsV1
		if f == nil || f.Raw == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(f.Raw, &v); err != nil {
			t.Fatalf("FieldsV1 %q: %v", f.Raw, err)
		}
		f.Raw, _ = json.Marshal(v)
	}
}

func FuzzDecode(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	thread := &starlark.Thread{Name: "fuzz"}
	decodeJSON := starjson.Module.Members["decode"]
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			// Starlark's json.decode accepts a little more than JSON (such as 1. for 1.0),
			// which the strict JSON decoding this is checked against rejects as text.
			return
		}
		x, err := starlark.Call(thread, decodeJSON, starlark.Tuple{starlark.String(data)}, nil)
		if err != nil {
			return // not JSON for json.decode
		}
		var got corev1.Pod
		errs, err := Decode(x, &got, nil, &Options{MaxBytes: 1 << 20})
		if err != nil {
			var serr *SizeError
			if !errors.As(err, &serr) {
				t.Fatalf("Decode returned %T: %v", err, err)
			}
			return
		}
		var want corev1.Pod
		jsonErr := strictUnmarshal(data, &want)
		switch {
		case jsonErr == nil && len(errs) > 0:
			if strings.Contains(errs.ToAggregate().Error(), "nested too deeply") {
				return
			}
			t.Fatalf("strict JSON decoding succeeds, Decode fails: %v", errs)
		case jsonErr != nil && len(errs) == 0:
			if strings.Contains(jsonErr.Error(), "duplicate field") {
				return
			}
			t.Fatalf("strict JSON decoding fails (%v), Decode succeeds", jsonErr)
		case jsonErr == nil:
			normalize(t, &want)
			normalize(t, &got)
			if !apiequality.Semantic.DeepEqual(want, got) {
				t.Fatalf("Decode differs from strict JSON decoding:\n%s", cmp.Diff(want, got, cmp.Exporter(func(reflect.Type) bool { return true })))
			}
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	recycledOther = trainingPod(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		pod := new(corev1.Pod)
		if strictUnmarshal(data, pod) != nil {
			return
		}
		text, err := json.Marshal(pod)
		if err != nil {
			return // a pod json.Marshal cannot encode (a bad IntOrString type, ...)
		}
		x, err := ToStarlark(pod)
		if err != nil {
			t.Fatalf("json.Marshal succeeds, ToStarlark fails: %v", err)
		}
		want := starlarkJSONDecode(t, text)
		if got, want := x.String(), want.String(); got != want {
			t.Fatalf("ToStarlark differs from json.decode(json.Marshal(pod)): %s", firstDiff(got, want))
		}
		// A recycled conversion gives the same values, each time, in memory that the one
		// before it held: the pod's, then the training pod's, then the pod's again.
		for _, p := range []*corev1.Pod{pod, recycledOther, pod} {
			rx, release, err := ToStarlarkRecycled(p)
			if err != nil {
				t.Fatalf("ToStarlark succeeds, ToStarlarkRecycled fails: %v", err)
			}
			if p == pod && rx.String() != x.String() {
				t.Fatalf("ToStarlarkRecycled differs from ToStarlark: %s", firstDiff(rx.String(), x.String()))
			}
			release()
		}
		var got corev1.Pod
		errs, err := Decode(x, &got, nil, nil)
		if err != nil || len(errs) > 0 {
			t.Fatalf("Decode(ToStarlark(pod)): %v %v", err, errs)
		}
		var again corev1.Pod
		if err := strictUnmarshal(text, &again); err != nil {
			t.Fatalf("strict unmarshal of json.Marshal(pod): %v", err)
		}
		normalize(t, &again)
		normalize(t, &got)
		if !apiequality.Semantic.DeepEqual(again, got) {
			t.Fatalf("Decode(ToStarlark(pod)) differs from the JSON round trip:\n%s", cmp.Diff(again, got, cmp.Exporter(func(reflect.Type) bool { return true })))
		}
	})
}

// recycledOther is the pod FuzzRoundTrip converts, recycled, between two conversions of its
// input.
var recycledOther *corev1.Pod

// FuzzRandomPod fills a pod at random from the fuzzer's bytes and checks that ToStarlark
// agrees with encoding/json and that Decode gives the pod back.
func FuzzRandomPod(f *testing.F) {
	f.Add([]byte("starpod"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Fuzz(func(t *testing.T, data []byte) {
		pod := new(corev1.Pod)
		podFiller(randfill.NewFromGoFuzz(data)).Fill(pod)
		checkLikeJSON(t, "random pod", pod)
		checkDecodeRoundTrip(t, "random pod", pod)
	})
}

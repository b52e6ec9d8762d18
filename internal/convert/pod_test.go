package convert

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.starlark.net/starlark"
	"sigs.k8s.io/yaml"
)

// untypedTrainingPod returns the training pod as the untyped data of its document.
func untypedTrainingPod(t testing.TB) any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pods", "training.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return untypedJSON(t, data)
}

// untypedJSON returns the untyped data of a YAML or JSON text, numbers as json.Number.
func untypedJSON(t testing.TB, data []byte) any {
	t.Helper()
	data, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUntypedToStarlark checks that untypedToStarlark gives what FromGo gives, and declines
// what FromGo refuses or it does not know.
func TestUntypedToStarlark(t *testing.T) {
	for _, x := range []any{
		untypedTrainingPod(t),
		untypedJSON(t, []byte(`{"a": [1, 2.5, -3, 1e400, "x", "", null, true, {}, [], {"b": {"c": [[{"d": 1}]]}}]}`)),
		untypedJSON(t, []byte(`{"k0": 0, "k1": 1, "k2": 2, "k3": 3, "k4": 4, "k5": 5, "k6": 6, "k7": 7, "k8": 8, "k9": 9}`)),
		untypedJSON(t, []byte(`[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]`)),
		int64(3),
		float64(2.5),
	} {
		want, wantErr := FromGo(x)
		var a arena
		got, ok := untypedToStarlark(&a, x)
		if !ok {
			if wantErr == nil {
				switch x.(type) {
				case int64, float64: // not in untyped data of a document: FromGo's
					continue
				}
				t.Errorf("%v: untypedToStarlark declines what FromGo takes", x)
			}
			continue
		}
		if wantErr != nil {
			t.Errorf("%v: untypedToStarlark takes what FromGo refuses (%v)", x, wantErr)
			continue
		}
		if eq, err := starlark.Equal(want, got); err != nil || !eq {
			t.Errorf("%v: got %v, want %v (%v)", x, got, want, err)
		}
		if want.String() != got.String() {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// BenchmarkDecodePod decodes the untyped data of the training pod's document into a pod.
func BenchmarkDecodePod(b *testing.B) {
	x := untypedTrainingPod(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodePod(x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePodSlow is BenchmarkDecodePod through the Starlark values of the pod, the
// path DecodePod takes for a pod its fast path declines.
func BenchmarkDecodePodSlow(b *testing.B) {
	x := untypedTrainingPod(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodePodSlow(x); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzUntypedToStarlark checks that untypedToStarlark gives what FromGo gives for the
// untyped data of any JSON text, and declines what FromGo refuses.
func FuzzUntypedToStarlark(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var x any
		if dec.Decode(&x) != nil {
			return
		}
		want, wantErr := FromGo(x)
		var a arena
		got, ok := untypedToStarlark(&a, x)
		if ok != (wantErr == nil) {
			t.Fatalf("untypedToStarlark ok %v, FromGo error %v", ok, wantErr)
		}
		if ok && want.String() != got.String() {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

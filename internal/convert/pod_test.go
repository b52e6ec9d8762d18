package convert

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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

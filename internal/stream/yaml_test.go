package stream

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestMarshalYAML checks that MarshalYAML writes what sigs.k8s.io/yaml.Marshal writes.
func TestMarshalYAML(t *testing.T) {
	pod := trainingPod(t)
	var numbers any
	dec := json.NewDecoder(bytes.NewReader([]byte(`{"int": 42, "neg": -7, "zero": -0, "big": 9223372036854775807,
		"bigger": 18446744073709551615, "huge": 1e400, "float": 1.5, "exp": 1e+21, "small": 1.5e-7,
		"strings": ["true", "1", "0x10", "", "null", "~", "a: b", "- x", "#c", "yes", "1e3", "\u00e9\n\t"],
		"nested": [{"b": 1, "a10": 2, "a9": 3}], "none": null, "bool": false}`)))
	dec.UseNumber()
	if err := dec.Decode(&numbers); err != nil {
		t.Fatal(err)
	}
	for name, obj := range map[string]any{"pod": pod, "numbers": numbers} {
		want, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalYAML(obj)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s: MarshalYAML differs from yaml.Marshal (-want +got):\n%s", name, diff)
		}
	}
}

// BenchmarkMarshalYAML measures MarshalYAML on the training pod.
func BenchmarkMarshalYAML(b *testing.B) {
	pod := trainingPod(b)
	for b.Loop() {
		if _, err := MarshalYAML(pod); err != nil {
			b.Fatal(err)
		}
	}
}

package stream

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/starpod/starpod/internal/fast"
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
	bothWays(t, func(t *testing.T) {
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
	})
}

// TestPrune checks YAMLOptions.Prune on a case of each kind, with and without fast paths.
func TestPrune(t *testing.T) {
	const in = `{"a":null,"b":{"c":null,"d":{"e":null}},"f":{},"g":[null,{"h":null},{}],"i":{"j":1,"k":null},"x":%s}`
	const want = "f: {}\ng:\n- null\n- {}\n- {}\ni:\n  j: 1\nx: %s\n"
	bothWays(t, func(t *testing.T) {
		for _, x := range []string{"2", "2.5"} {
			got, err := YAMLOptions{Prune: true}.JSONToYAML([]byte(strings.ReplaceAll(in, "%s", x)))
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(want, "%s", x); string(got) != want {
				t.Errorf("x %s: got\n%s\nwant\n%s", x, got, want)
			}
		}
	})
}

// bothWays runs test with the fast paths on and off.
func bothWays(t *testing.T, test func(t *testing.T)) {
	t.Run("fast", test)
	t.Run("library", func(t *testing.T) {
		fast.Off = true
		defer func() { fast.Off = false }()
		test(t)
	})
}

// trainingPod returns the shared training pod of testdata.
func trainingPod(tb testing.TB) *corev1.Pod {
	pod := new(corev1.Pod)
	if err := yaml.UnmarshalStrict(mustRead(tb, filepath.Join("..", "..", "testdata", "pods", "training.yaml")), pod); err != nil {
		tb.Fatal(err)
	}
	return pod
}

func mustRead(tb testing.TB, file string) []byte {
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	return data
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

package engine

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzParseFieldPath checks that parseFieldPath takes any text without panicking, and gives
// back the steps of a path that field.Path printed.
func FuzzParseFieldPath(f *testing.F) {
	f.Add("spec", "app.kubernetes.io/name", 0)
	f.Add("metadata", "", 3)
	f.Add("a.b", "x]y", -1)
	f.Fuzz(func(t *testing.T, name, key string, index int) {
		parseFieldPath(name)
		parseFieldPath(key)
		if name == "" || strings.ContainsAny(name, ".[") || strings.Contains(key, "]") || index < 0 {
			return
		}
		p := field.NewPath(name).Key(key).Index(index)
		got := parseFieldPath(p.String())
		want := []pathStep{{name: name}, {name: key, bracket: true}, {name: strconv.Itoa(index), bracket: true}}
		if len(got) != len(want) {
			t.Fatalf("parseFieldPath(%q) = %v, want %v", p.String(), got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("parseFieldPath(%q) = %v, want %v", p.String(), got, want)
			}
		}
	})
}

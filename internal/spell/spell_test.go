package spell

import (
	"strings"
	"testing"
)

func TestNearest(t *testing.T) {
	fields := []string{"containers", "initContainers", "tolerations", "nodeSelector", "volumes", "affinity"}
	for _, test := range []struct {
		x          string
		candidates []string
		want       string
	}{
		{"Overlay", []string{"overlay"}, "overlay"},
		{"overlay", []string{"overlay"}, "overlay"},
		{"OVERLAY", []string{"apply", "overlay"}, "overlay"},
		{"tolerration", fields, "tolerations"},
		{"nmae", []string{"name", "image"}, "name"},
		{"toleration", fields, "tolerations"},
		{"node_selector", fields, "nodeSelector"},
		{"nodeselectr", fields, "nodeSelector"},
		{"container", fields, "containers"},
		{"initcontainer", fields, "initContainers"},
		{"volume", fields, "volumes"},
		{"afinity", fields, "affinity"},
		{"xyz", fields, ""},
		{"hostname", fields, ""},
		{"", fields, ""},
		{"a", []string{"b"}, ""},
		{"ab", []string{"xb"}, "xb"},
		{"abc", []string{"xyc"}, ""},
		{"name", nil, ""},
		{"name", []string{}, ""},
		// Ties go to the earlier candidate.
		{"cat", []string{"bat", "cot", "cab"}, "bat"},
		{"cat", []string{"cot", "bat"}, "cot"},
		// A closer later candidate wins.
		{"images", []string{"imageID", "image"}, "image"},
		// Runes, not bytes.
		{"größe", []string{"grösse", "grüße"}, "grüße"},
	} {
		if got := Nearest(test.x, test.candidates); got != test.want {
			t.Errorf("Nearest(%q, %q) = %q, want %q", test.x, test.candidates, got, test.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, test := range []struct {
		x, y string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"abc", "abc", 0},
		{"kitten", "sitting", 3},
		{"sitting", "kitten", 3},
		{"flaw", "lawn", 2},
		{"tolerration", "tolerations", 2},
		{"abcdef", "azcdez", 2},
		{"nmae", "name", 1},
		{"conatiners", "containers", 1},
		{"ab", "ba", 1},
		{"ca", "abc", 3},
	} {
		if got := distance([]rune(test.x), []rune(test.y), 100); got != test.want {
			t.Errorf("distance(%q, %q) = %d, want %d", test.x, test.y, got, test.want)
		}
		// With a lower limit, the result is still at least the limit when the
		// distance is.
		if test.want > 0 {
			if got := distance([]rune(test.x), []rune(test.y), test.want); got < test.want {
				t.Errorf("distance(%q, %q, limit %d) = %d, want >= limit", test.x, test.y, test.want, got)
			}
		}
	}
}

// TestNearestBounded: names longer than MaxLen are never compared, so that a did-you-mean
// search over hostile names costs no more than over short ones.
func TestNearestBounded(t *testing.T) {
	long := strings.Repeat("a", MaxLen+1)
	if got := Nearest(long, []string{long, long + "b"}); got != "" {
		t.Errorf("a query longer than MaxLen: got %q, want no suggestion", got)
	}
	if got := Nearest("gpu.smal", []string{long, "gpu.small"}); got != "gpu.small" {
		t.Errorf("got %q, want gpu.small past the long candidate", got)
	}
	edge := strings.Repeat("a", MaxLen)
	if got := Nearest(edge[1:]+"b", []string{edge}); got != edge {
		t.Errorf("names of MaxLen bytes are still compared: got %q", got)
	}
}

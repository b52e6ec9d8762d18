package main

import "testing"

func TestHeadComment(t *testing.T) {
	for _, test := range []struct{ raw, want string }{
		{"# Source: a/templates/d.yaml\napiVersion: v1\n", "# Source: a/templates/d.yaml\n"},
		{"\n# one\n  # two\nkind: Pod\n# not at the head\n", "\n# one\n  # two\n"},
		{"kind: Pod\n", ""},
		{"# only a comment", ""},
	} {
		if got := string(headComment([]byte(test.raw))); got != test.want {
			t.Errorf("headComment(%q) = %q, want %q", test.raw, got, test.want)
		}
	}
}

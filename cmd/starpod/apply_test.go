package main

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// TestSpool checks that a spool gives back everything written, from memory or from its
// temporary file, and removes the file.
func TestSpool(t *testing.T) {
	for _, limit := range []int{1 << 20, 10} {
		s := &spool{limit: limit}
		var want bytes.Buffer
		for i := range 100 {
			line := []byte(fmt.Sprintf("document %d\n", i))
			want.Write(line)
			if _, err := s.Write(line); err != nil {
				t.Fatal(err)
			}
		}
		var got bytes.Buffer
		if err := s.copyTo(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("limit %d: got %q, want %q", limit, got.String(), want.String())
		}
		if (s.file != nil) != (limit == 10) {
			t.Errorf("limit %d: spilled to a file: %v", limit, s.file != nil)
		}
		name := ""
		if s.file != nil {
			name = s.file.Name()
		}
		s.Close()
		if name != "" {
			if _, err := os.Stat(name); !os.IsNotExist(err) {
				t.Errorf("limit %d: temporary file %s not removed: %v", limit, name, err)
			}
		}
	}
}

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// The hidden command "hostile-stream" exists only in the test binary, which scripts run as
// starpod: "exec starpod hostile-stream KIND FILE" writes a hostile stream that a script's
// archive cannot hold. It writes in a process of its own and a piece at a time, so that the
// test process stays small: Linux counts the peak memory of a process that starts a command
// into the peak memory of that command, which the scripts' bounded command checks.
func init() { commands = append(commands, newHostileStreamCmd) }

// hostileStreams are the kinds of hostile-stream: a prefix, a text written count times and a
// suffix.
var hostileStreams = map[string]struct {
	prefix, text, suffix string
	count                int
}{
	// 300,001 digits of a quantity, which resource.ParseQuantity takes 33 s to parse.
	"digits": {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: c\n    image: i\n" +
		"    resources:\n      requests:\n        memory: \"", "9", "\"\n", 300001},
	// A third document of 200 MB on one line.
	"big": {"a: 1\n---\nb: 2\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    a: ", "x", "\n", 200_000_000},
	// 20,000 small documents, 1.1 MB.
	"many": {"", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n", "", 20000},
	// A string of 1 MB and 100 aliases to it: 100 MB where the aliases are expanded.
	"aliases": {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    a: &a ", "x",
		"\nspec:\n  containers:\n  - name: c\n    image: i\n    args: [" + strings.Repeat("*a, ", 99) + "*a]\n", 1_000_000},
	// A pod of 2 MB, over the size limit of an overlay's result before any overlay runs.
	"large-pod": {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    a: ", "x", "\n", 2_000_000},
}

func newHostileStreamCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "hostile-stream KIND FILE",
		Hidden: true,
		Args:   usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, ok := hostileStreams[args[0]]
			if !ok {
				return usagef("hostile-stream: unknown kind %q", args[0])
			}
			f, err := os.Create(args[1])
			if err != nil {
				return err
			}
			w := bufio.NewWriterSize(f, 1<<20)
			w.WriteString(kind.prefix)
			per := max(1, (64<<10)/len(kind.text)) // texts in a piece of 64 KiB
			piece := strings.Repeat(kind.text, per)
			for n := kind.count; n > 0; n -= per {
				w.WriteString(piece[:min(n, per)*len(kind.text)])
			}
			w.WriteString(kind.suffix)
			if err := w.Flush(); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
}

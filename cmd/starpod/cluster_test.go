package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/starpod/starpod/cluster"
)

// TestClusterExitCodes checks the exit codes of the cluster commands when no cluster is
// involved: 2 for bad usage, 1 for a configuration that leads nowhere.
func TestClusterExitCodes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, test := range []struct {
		args []string
		want int
	}{
		{[]string{"status", "kubernetes://ml"}, exitUsage},
		{[]string{"status"}, exitUsage},
		{[]string{"status", "-o", "yaml", "app"}, exitUsage},
		{[]string{"describe", "-o", "table", "app"}, exitUsage},
		{[]string{"logs", "-c", "a", "--all-containers", "app"}, exitUsage},
		{[]string{"logs", "--tail", "-2", "app"}, exitUsage},
		{[]string{"logs", "--since", "-1s", "app"}, exitUsage},
		{[]string{"logs", "app/r/x"}, exitUsage},
		{[]string{"list", "--cfg", "queue=q"}, exitUsage},
		{[]string{"list", "--cfg", "nonsense"}, exitUsage},
		{[]string{"list", "x"}, exitUsage},
		{[]string{"cancel", "a/b"}, exitUsage},
		{[]string{"delete"}, exitUsage},
		{[]string{"list"}, exitError},
		{[]string{"status", "app"}, exitError},
		{[]string{"cancel", "--kubeconfig", filepath.Join(dir, "missing"), "app"}, exitError},
	} {
		var stdout, stderr bytes.Buffer
		got := run(context.Background(), test.args, strings.NewReader(""), &stdout, &stderr)
		if got != test.want {
			t.Errorf("starpod %s: exit %d, want %d; stderr:\n%s", strings.Join(test.args, " "), got, test.want, stderr.String())
		}
		if stdout.Len() > 0 {
			t.Errorf("starpod %s: unexpected output %q", strings.Join(test.args, " "), stdout.String())
		}
	}
}

func TestWriteList(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	apps := []cluster.Status{
		{Handle: "kubernetes://ml/llama-ft-x7k2", Name: "llama-ft", State: cluster.Running, Created: now.Add(-90 * time.Second)},
		{Handle: "kubernetes://ml/old", State: cluster.Succeeded, Created: now.Add(-50 * time.Hour)},
		{Handle: "kubernetes://team/x", Name: "x", State: cluster.Unknown},
	}
	var buf bytes.Buffer
	if err := writeList(&buf, apps, now); err != nil {
		t.Fatal(err)
	}
	want := `HANDLE                         NAME      STATE      AGE
kubernetes://ml/llama-ft-x7k2  llama-ft  RUNNING    90s
kubernetes://ml/old            <none>    SUCCEEDED  2d2h
kubernetes://team/x            x         UNKNOWN    <unknown>
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
}

func TestTerminalDetection(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || liveOutput(f) || colorOutput(f) {
		t.Errorf("a regular file is taken for a terminal")
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Errorf("a buffer is taken for a terminal")
	}
}

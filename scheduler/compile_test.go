package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/starpod/starpod/engine"
)

// TestCompileOnce checks that each overlay file is compiled once per build, however many
// roles, replicas and levels use it.
func TestCompileOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"app.yaml": `
name: x
overlays: [a.star, ./a.star, sub/../a.star]
roles:
- {name: r, image: i, entrypoint: e, num_replicas: 3, resource: {cpu: 1, mem_mb: 2000}, overlays: [a.star, b.star]}
- {name: s, image: i, entrypoint: e, num_replicas: 2, resource: {cpu: 1, mem_mb: 2000}, overlays: [b.star]}
`,
		"a.star": "def overlay(pod, ctx):\n    return pod\n",
		"b.star": "def overlay(pod):\n    return pod\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int32
	compile = func(ctx context.Context, name string, src []byte, opts *engine.Options) (*engine.Overlay, error) {
		n.Add(1)
		return engine.Compile(ctx, name, src, opts)
	}
	defer func() { compile = engine.Compile }()

	app, err := LoadApp(filepath.Join(dir, "app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := Build(context.Background(), app, DefaultConfig(), BuildOptions{
		AppID:    "x",
		Overlays: []string{filepath.Join(dir, "b.star")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("compiled %d times, want 2 (a.star and b.star)", got)
	}
	if got := len(job.Spec.Tasks); got != 5 {
		t.Errorf("got %d tasks, want 5", got)
	}
}

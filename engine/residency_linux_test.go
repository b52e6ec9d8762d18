package engine_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/starpod/starpod/engine"
)

func init() {
	// test.rssfile answers the kB of the worker's resident pages that files back: mostly
	// the executable's.
	engine.RegisterTask("test.rssfile", func(ctx context.Context, chain engine.Chain, env *engine.Env, req []byte, note func([]byte) error) ([]byte, error) {
		data, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(string(data)) {
			if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
				return []byte(strings.Fields(rest)[0]), nil
			}
		}
		return nil, nil
	})
}

// TestWorkerReleasesExecutable checks that a worker gives back the pages of the executable
// that its start touched once it has answered its second request (its overlays being the
// first), and serves on.
func TestWorkerReleasesExecutable(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	chain, _ := compileTaskChain(t, pool)
	opts := engine.TaskOptions{Timeout: 10 * time.Second, MaxAnswer: 1 << 10}
	rssFile := func() int {
		t.Helper()
		answer, err := chain.RunTask(context.Background(), "test.rssfile", nil, nil, opts)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := strconv.Atoi(string(answer))
		if err != nil {
			t.Fatalf("answer %q: %v", answer, err)
		}
		return kb
	}
	before := rssFile() // the second request: the worker releases after answering it
	after := rssFile()
	if after >= before {
		t.Errorf("the worker's RssFile is %d kB after its second request, %d kB before, want less", after, before)
	}
	// And it serves on.
	req := []byte(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}`)
	if _, err := chain.RunTask(context.Background(), "test.apply", &engine.Env{AppID: "demo"}, req, opts); err != nil {
		t.Fatal(err)
	}
}

package scheduler_test

// This file defines the benchmarks of Build on a role of 1,000 replicas
// (testdata/bench/app-1000.yaml), with the overlay in process and in worker processes, as
// "starpod run --dry-run" runs it; and of printing the job.

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/scheduler"
)

// TestMain lets the test binary serve as its own overlay worker, and as a child of
// TestDeterminismAcrossProcesses.
func TestMain(m *testing.M) {
	engine.ServeWorkerIfRequested()
	if os.Getenv(determinismEnv) != "" {
		os.Exit(determinismChild())
	}
	os.Exit(m.Run())
}

// benchApp is the app of 1,000 replicas shared with scripts/bench.sh. Its overlay is one of
// the examples, so the overlay root is the repository's.
var (
	benchApp  = filepath.Join("..", "testdata", "bench", "app-1000.yaml")
	benchRoot = ".."
)

func benchBuild(b *testing.B, eopts engine.Options) {
	app, err := scheduler.LoadApp(benchApp)
	if err != nil {
		b.Fatal(err)
	}
	opts := scheduler.BuildOptions{AppID: "bench", Engine: eopts, OverlayRoot: benchRoot}
	b.ReportAllocs()
	for b.Loop() {
		job, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), opts)
		if err != nil {
			b.Fatal(err)
		}
		if len(job.Spec.Tasks) != 1000 {
			b.Fatalf("got %d tasks, want 1000", len(job.Spec.Tasks))
		}
	}
}

// BenchmarkBuild1000 builds the job of 1,000 replicas with the overlay in process.
func BenchmarkBuild1000(b *testing.B) {
	benchBuild(b, engine.Options{})
}

// BenchmarkBuild1000Worker builds the job of 1,000 replicas with the overlay in worker
// processes, started once for the whole benchmark.
func BenchmarkBuild1000Worker(b *testing.B) {
	pool := engine.NewWorkerPool(nil)
	b.Cleanup(func() { pool.Close() })
	benchBuild(b, engine.Options{Isolation: engine.WorkerProcess, Workers: pool})
}

// BenchmarkMarshal1000 prints the job of 1,000 replicas as YAML.
func BenchmarkMarshal1000(b *testing.B) {
	app, err := scheduler.LoadApp(benchApp)
	if err != nil {
		b.Fatal(err)
	}
	job, err := scheduler.Build(context.Background(), app, scheduler.DefaultConfig(), scheduler.BuildOptions{AppID: "bench", OverlayRoot: benchRoot})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scheduler.Marshal(job, "yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender1000Worker builds and prints the job of 1,000 replicas with the overlay in
// worker processes, as "starpod run --dry-run" does.
func BenchmarkRender1000Worker(b *testing.B) {
	app, err := scheduler.LoadApp(benchApp)
	if err != nil {
		b.Fatal(err)
	}
	pool := engine.NewWorkerPool(nil)
	b.Cleanup(func() { pool.Close() })
	opts := scheduler.BuildOptions{AppID: "bench", OverlayRoot: benchRoot, Engine: engine.Options{Isolation: engine.WorkerProcess, Workers: pool}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scheduler.Render(context.Background(), app, scheduler.DefaultConfig(), opts, "yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

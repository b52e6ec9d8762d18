// Command starpod applies programmable Starlark overlays to Kubernetes pods and launches
// apps of roles as Volcano Jobs. Run "starpod --help" for the commands.
package main

import (
	"context"
	"os"

	"github.com/starpod/starpod/engine"
	"github.com/starpod/starpod/internal/residency"
)

func main() {
	// A worker serves its parent at once, without the signal handling below: its parent stops
	// it, and the thread that waits for signals would take address space from its memory limit.
	engine.ServeWorkerIfRequested()
	if len(os.Args) > 1 && hugeHeapCommands[os.Args[1]] {
		residency.HugeHeap(16 << 20) // best effort
	}
	// Ctrl-C or a SIGTERM ends the context: the command stops its work, writes nothing more,
	// waits for its overlay workers and exits 130 or 143; a second signal kills the workers
	// and ends the process at once.
	ctx, stop := withSignals(context.Background(), killWorkers)
	endProfile := startProfile()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	endProfile()
	stop()
	os.Exit(code)
}

// hugeHeapCommands are the commands whose heap grows in huge pages (see residency.HugeHeap):
// those that read, apply and print pods in a short life, where page faults can cost more than
// the work. With their workers' heaps, that takes a quarter off apply of 1,000 pods. The
// others would pay more for the collection it takes than it saves.
var hugeHeapCommands = map[string]bool{"apply": true, "run": true, "fn": true}

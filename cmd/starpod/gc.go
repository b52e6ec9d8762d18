package main

// This file defines how the commands that hold little but stream a lot tune the collector.

import (
	"os"
	"runtime/debug"
)

// collectLess raises GOGC to percent, and sets a soft limit of limit bytes on the memory of
// the process, at which the collector runs at the latest, unless GOGC or GOMEMLIMIT in the
// environment decide: a command whose heap is small but whose garbage is much pays for each
// collection in full (start and stop, and the mutator slowed by the write barrier while it
// marks), so that collecting less often saves more than the few MiB it costs.
func collectLess(percent int, limit int64) {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(percent)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}

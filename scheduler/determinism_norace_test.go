//go:build !race

package scheduler_test

// The runs of each case under each GOMAXPROCS in TestDeterminismAcrossProcesses.
const (
	determinismRuns       = 200
	determinismWorkerRuns = 20
)

//go:build race

package scheduler_test

// The runs of each case under each GOMAXPROCS in TestDeterminismAcrossProcesses: a build
// with the race detector is about five times slower, so there are a quarter as many.
const (
	determinismRuns       = 50
	determinismWorkerRuns = 10
)

//go:build !race

package engine

// raceMemoryFactor scales the memory limit of worker processes built with the race detector;
// this build has none.
const raceMemoryFactor = 1

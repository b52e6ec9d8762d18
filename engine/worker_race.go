//go:build race

package engine

// raceMemoryFactor scales the memory limit of worker processes built with the race detector,
// whose shadow memory and allocator need several times the memory of a normal build.
const raceMemoryFactor = 8

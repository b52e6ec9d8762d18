//go:build race

package sandbox

// RaceMemoryFactor scales the memory limit of children built with the race detector, whose
// shadow memory and allocator need several times the memory of a normal build.
const RaceMemoryFactor = 8

//go:build !race

package sandbox

// RaceMemoryFactor scales the memory limit of children built with the race detector; this
// build has none.
const RaceMemoryFactor = 1

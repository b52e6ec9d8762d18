//go:build !race

package engine_test

// raceMemoryFactor is the factor by which the engine scales worker memory limits under the
// race detector; this build has none.
const raceMemoryFactor = 1

//go:build !race

package engine_test

// raceMemoryFactor is the factor by which the engine scales worker memory limits under the
// race detector; this build has none.
const raceMemoryFactor = 1

// raceTimeFactor scales the margins of wall-time bounds: the race detector makes every
// process, and starting and stopping workers, several times slower.
const raceTimeFactor = 1

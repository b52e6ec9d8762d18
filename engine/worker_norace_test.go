//go:build !race

package engine_test

// raceMemoryFactor is the factor by which the engine scales worker memory limits under the
// race detector; this build has none.
const raceMemoryFactor = 1

// raceTimeFactor scales the margins of wall-time bounds: the race detector makes every
// process, and starting and stopping workers, several times slower.
const raceTimeFactor = 1

// raceTimeLimit is whether a hostile case may stop at the time limit instead of its own
// error or limit; this build has no race detector, and each case must stop where it says.
const raceTimeLimit = false

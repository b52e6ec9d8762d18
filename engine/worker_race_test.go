//go:build race

package engine_test

// raceMemoryFactor is the factor by which the engine scales worker memory limits under the
// race detector; peak memory bounds scale with it.
const raceMemoryFactor = 8

// raceTimeFactor scales the margins of wall-time bounds: the race detector makes every
// process, and starting and stopping workers, several times slower.
const raceTimeFactor = 3

//go:build race

package engine_test

// raceMemoryFactor is the factor by which the engine scales worker memory limits under the
// race detector; peak memory bounds scale with it.
const raceMemoryFactor = 8

// raceTimeFactor scales the margins of wall-time bounds: the race detector makes every
// process, and starting and stopping workers, several times slower.
const raceTimeFactor = 3

// raceTimeLimit is whether a hostile case may stop at the time limit instead of its own
// error or limit: under the race detector, allocation-heavy code runs many times slower and
// memory limits are raceMemoryFactor times larger, so on a loaded machine a memory bomb can
// reach the time limit first. The runs without the detector keep every case to its own stop.
const raceTimeLimit = true

//go:build race

package main

// raceMemoryFactor is the factor by which the engine scales worker memory limits under the
// race detector (see package engine), and by which bounded scales its memory bound.
const raceMemoryFactor = 8

// raceTimeFactor is the factor by which bounded scales the margin of its time bound: the
// race detector makes every process several times slower.
const raceTimeFactor = 3

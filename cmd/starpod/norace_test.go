//go:build !race

package main

// raceMemoryFactor is the factor by which the engine scales worker memory limits under the
// race detector (see package engine), and by which bounded scales its memory bound.
const raceMemoryFactor = 1

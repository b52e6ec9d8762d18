//go:build !race

package scheduler_test

// raceFactor scales the allocation bounds of the hostile spec tests: under the race
// detector, sync.Pool keeps little, so that every regexp match allocates, among others.
const raceFactor = 1

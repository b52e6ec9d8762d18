//go:build !race

package convert

// typedRandomPods is how many random pods TestTypedYAML prints.
const typedRandomPods = 300

//go:build race

package convert

// typedRandomPods is how many random pods TestTypedYAML prints: the race detector makes
// printing them through the YAML library many times slower.
const typedRandomPods = 50

package engine

// ReadTestPod is readTestPod, for the tests of package engine_test.
var ReadTestPod = readTestPod

package engine

// ReadTestPod is readTestPod, for the tests of package engine_test.
var ReadTestPod = readTestPod

// ServeWorker is serveWorker, for a worker of the tests that writes a profile.
var ServeWorker = serveWorker

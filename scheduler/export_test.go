package scheduler

// WorkerChunks counts the chunks of replicas that Render had workers build.
var WorkerChunks = &workerChunks

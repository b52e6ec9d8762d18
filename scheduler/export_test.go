package scheduler

// WorkerChunks counts the chunks of replicas that Render had workers build, and
// RetriedReplicas the replicas that failed in workers and were built again.
var WorkerChunks, RetriedReplicas = &workerChunks, &retriedReplicas

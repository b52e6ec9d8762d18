package sandbox

// rlimitAS is -1: OpenBSD has no address-space limit, and the data limit bounds the heap.
const rlimitAS = -1

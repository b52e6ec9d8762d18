//go:build unix && !openbsd

package sandbox

import "syscall"

// rlimitAS is the resource of the address-space limit.
const rlimitAS = syscall.RLIMIT_AS

//go:build !linux

package sandbox

import "os/exec"

// dieWithParent does nothing where the kernel cannot signal a child when its parent dies: an
// orphaned worker busy with a script runs on to the script's time limit, and exits once it
// finds its input closed.
func dieWithParent(*exec.Cmd) {}

package main

// This file defines how a command profiles itself, for the profile-guided optimisation of the
// starpod binary (default.pgo, made by scripts/pgo.sh).

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// profileEnv names a file to write a CPU profile of the command to: with $STARPOD_CPUPROFILE
// set to PREFIX, each command writes PREFIX.PID.pprof. Worker processes are not profiled:
// scripts/pgo.sh runs the overlays in process (--isolation none), where they take the same
// paths.
const profileEnv = "STARPOD_CPUPROFILE"

// startProfile starts the CPU profile that $STARPOD_CPUPROFILE asks for, if any, and returns
// the function that ends it.
func startProfile() (stop func()) {
	prefix := os.Getenv(profileEnv)
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d.pprof", prefix, os.Getpid()))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", profileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

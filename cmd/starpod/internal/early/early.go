// Package early starts the overlay worker of a starpod command as the program starts: from
// its init, which runs before those of the packages that import it. A starpod process spends
// tens of milliseconds initialising its packages where page faults are slow, and a worker as
// long again; started here, the worker's start runs beside the parent's on another processor
// instead of after it. The worker pool of the command takes it (see sandbox.StartEarly).
//
// It starts one only for the commands that would start one anyway, as soon as they compile
// their overlays: apply with --overlay-script, run, and fn (a KRM function, which compiles
// its overlays only once it has read its whole input), when their overlays run in workers
// with the default memory limit. Any other command, -h or --help, --isolation other than
// worker or a --max-memory of its own leaves the start to the command.
package early

import (
	"os"
	"strings"
	"sync"

	"github.com/starpod/starpod/internal/sandbox"
)

// MaxMemory is the default memory limit of an overlay worker: the default of --max-memory.
const MaxMemory = 512 << 20

// Args are the arguments of the starpod binary that make it an overlay worker.
var Args = []string{"worker"}

// Path returns the program of overlay workers: this one.
var Path = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
})

func init() {
	if wantsWorker(os.Args[1:]) {
		sandbox.StartEarly(&sandbox.PoolOptions{Path: Path(), Args: Args}, MaxMemory)
	}
}

// wantsWorker reports whether the command line args (without the program's name) runs a
// command that starts an overlay worker of the default memory limit.
func wantsWorker(args []string) bool {
	if len(args) == 0 {
		return false
	}
	run := args[0] == "run"
	// Run and fn always run overlays (fn may name them in its functionConfig, on standard
	// input); apply only with --overlay-script.
	overlays := run || args[0] == "fn"
	if !overlays && args[0] != "apply" {
		return false
	}
	// Run's flags end at its first argument, the app or the component, whose own flags
	// follow: -h there is a component's (TorchX's named resources), not help. Not knowing
	// which flags of run take a value, a -h after any argument that is not a flag is taken
	// for a component's: at worst a worker starts for nothing.
	positional := false
	for i, arg := range args[1:] {
		if arg == "--" {
			break
		}
		name, value, hasValue := strings.Cut(arg, "=")
		switch name {
		case "--help", "--max-memory":
			return false
		case "-h":
			if !run || !positional {
				return false
			}
		case "--isolation":
			if !hasValue && i+2 < len(args) {
				value = args[i+2]
			}
			if value != "worker" {
				return false
			}
		case "--overlay-script":
			overlays = true
		default:
			positional = positional || !strings.HasPrefix(arg, "-")
		}
	}
	return overlays
}

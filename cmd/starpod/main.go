// Command starpod applies programmable Starlark overlays to Kubernetes pods and launches
// apps of roles as Volcano Jobs. Run "starpod --help" for the commands.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

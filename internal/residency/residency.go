// Package residency manages how the system maps a process's memory: it gives back the pages
// of the program's own file that the process touched while it started, so that its resident
// memory is what it uses afterwards, and it has the heap grow in huge pages, so that a
// short-lived process takes few page faults ([HugeHeap]).
//
// Starting a Go program touches code and read-only data all over its executable: the
// runtime's tables, and the initialisation of every linked package, most of which a
// process such as an overlay worker never runs again. The kernel maps these pages from its
// page cache, several at once around each one touched, and counts them as the process's
// resident memory for as long as the process lives: about 17 MiB of starpod's workers, more
// than their heap. [ReleaseExecutable] unmaps them; the kernel maps again, from the same
// cache, those the process uses later. Only pages the process never wrote are released, so
// that nothing but their mapping changes.
//
// Both are measured choices for starpod's short-lived processes, not needs. Releasing keeps
// them well under 32 MiB resident at an apply of 10,000 pods: 26 MiB at their peak, against
// 32 without it (medians of 11 runs), for no measurable time. Huge pages in apply's process
// and in its workers take a quarter off an apply of 1,000 pods with workers (349 ms against
// 473 ms, medians of 21 runs), on a virtual machine whose page faults are slow. With
// $STARPOD_RESIDENCY set to "off" (see [Off]) the package does nothing, and a process maps
// its memory as any Go program does.
package residency

import "os"

// Off reports whether the environment turns this package off: $STARPOD_RESIDENCY is "off".
// [ReleaseExecutable] and [HugeHeap] then do nothing, and report 0.
func Off() bool { return os.Getenv("STARPOD_RESIDENCY") == "off" }

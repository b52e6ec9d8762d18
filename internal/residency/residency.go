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
package residency

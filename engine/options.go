package engine

// This file defines the options of a compile: limits, isolation, loaders, validation.

import (
	"time"

	"go.starlark.net/syntax"
)

// Defaults for the zero values of [Options].
const (
	DefaultMaxSteps       = 1_000_000
	DefaultTimeout        = 2 * time.Second
	DefaultMaxResultBytes = 1 << 20
)

// Options configures [Compile]. The zero value is the safe default: a zero limit means its
// documented default, never "unlimited".
type Options struct {
	// MaxSteps bounds the Starlark execution steps of one apply (top level and overlay
	// together), and of Compile (the top levels of the script and of every module it loads,
	// together). Zero means DefaultMaxSteps.
	MaxSteps uint64

	// Timeout bounds the wall time of one apply, and of Compile as MaxSteps does. Zero means
	// DefaultTimeout. A deadline or cancellation of the context given to Apply stops the
	// script too, whichever comes first; a deadline gives a *DeadlineError, not a
	// *LimitError.
	Timeout time.Duration

	// MaxResultBytes bounds the size of the JSON encoding of the pod an overlay returns.
	// Zero means DefaultMaxResultBytes.
	MaxResultBytes int64

	// Print receives the output of print() with the position of the call. Nil discards it.
	// It may be called from several goroutines at once when an overlay is applied
	// concurrently. In a worker, each message is cut at 64 KiB, and the output of a compile
	// or of a pod's apply at 1 MiB, with a line saying so.
	Print func(pos syntax.Position, msg string)

	// Loader resolves load statements. Nil makes every load fail with an error.
	Loader Loader

	// Isolation says where the overlay compiles and applies: InProcess (the zero value) or
	// in a WorkerProcess with a memory limit. See [Isolation].
	Isolation Isolation

	// MaxMemory bounds, in bytes, the memory of the worker process of an overlay compiled
	// with WorkerProcess isolation. Zero means DefaultMaxMemory. In-process overlays are not
	// bounded in memory.
	MaxMemory int64

	// Workers is the pool of worker processes for WorkerProcess isolation. Nil means a
	// pool shared by the whole program that re-executes the program itself, which must then
	// call [ServeWorkerIfRequested] first thing in main.
	Workers *WorkerPool

	// Validation says what is checked of the pod an overlay returns besides its schema.
	// The zero value, ValidateSchema, checks the schema only.
	Validation Validation
}

// Validation says what [Overlay.Apply] checks of the pod an overlay returns. Every level
// checks the schema strictly (types, unknown fields, kind and apiVersion).
type Validation int

const (
	// ValidateSchema checks the schema only.
	ValidateSchema Validation = iota
	// ValidatePod also checks what the API server would reject of a pod: names, labels,
	// enumerations, ports, env, requests above limits, an image for every container. A pod
	// applied with an Env that names a Workload is that workload's pod template, and is
	// checked as ValidatePodTemplate checks.
	ValidatePod
	// ValidatePodTemplate checks as ValidatePod does, but not the name and namespace,
	// which the controller of a pod template sets.
	ValidatePodTemplate
)

func (o *Options) maxSteps() uint64 {
	if o.MaxSteps == 0 {
		return DefaultMaxSteps
	}
	return o.MaxSteps
}

func (o *Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

func (o *Options) maxResultBytes() int64 {
	if o.MaxResultBytes <= 0 {
		return DefaultMaxResultBytes
	}
	return o.MaxResultBytes
}

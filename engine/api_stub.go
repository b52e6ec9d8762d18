package engine

// This file is a temporary stub of the engine's public API; engine.go replaces it.

import (
	"context"
	"time"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"
)

// Options configures Compile. The zero value is the safe default: every zero limit means
// its documented default, never "unlimited".
type Options struct {
	MaxSteps       uint64                                // default 1,000,000
	Timeout        time.Duration                         // wall time per apply, default 2s
	MaxResultBytes int64                                 // JSON size of the returned pod, default 1 MiB
	Print          func(pos syntax.Position, msg string) // print() sink; nil discards
	Loader         Loader                                // resolves load(); nil makes load fail
}

// A Loader returns the source of the module that load(module) names, from the file `from`.
type Loader interface {
	Load(from, module string) (name string, src []byte, err error)
}

// Env is the ctx an overlay sees as its second parameter.
type Env struct {
	AppID       string
	Role        string
	ReplicaID   int
	NumReplicas int
	Scheduler   string
	Args        map[string]string
}

// Overlay is a compiled overlay: immutable, safe for concurrent Apply.
type Overlay struct{ name string }

// Compile compiles the overlay script src named name. It returns an *Error.
func Compile(name string, src []byte, opts *Options) (*Overlay, error) { panic("stub") }

// Name returns the overlay's name (its file name).
func (o *Overlay) Name() string { return o.name }

// Apply runs the overlay on a copy of pod. It returns an *Error.
func (o *Overlay) Apply(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, error) {
	panic("stub")
}

// Chain applies overlays in order.
type Chain []*Overlay

// Apply applies every overlay in order; an error names the overlay that failed.
func (c Chain) Apply(ctx context.Context, pod *corev1.Pod, env *Env) (*corev1.Pod, error) {
	panic("stub")
}

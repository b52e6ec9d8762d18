package engine_test

// This file tests the print() output of overlays in worker processes: bounded, passed on
// before a death, and not passed on twice.

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"testing"

	"go.starlark.net/syntax"
	corev1 "k8s.io/api/core/v1"

	"github.com/starpod/starpod/engine"
)

// TestWorkerPrintBounded checks that the print() output the parent receives stays bounded:
// each message is cut, and the output of each pod's apply stops after a total, with a notice.
func TestWorkerPrintBounded(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	var msgs []string
	total := 0
	opts := workerOptions(pool)
	// Each print makes a MiB of garbage: under 128 MiB, a worker starved of processor time by
	// other tests could reach its limit before its collector caught up.
	opts.MaxMemory = 512 << 20
	opts.Print = func(pos syntax.Position, msg string) {
		msgs = append(msgs, msg)
		total += len(msg)
	}
	o := compile(t, "def overlay(pod):\n    s = \"a\" * (1 << 20)\n    for i in range(64):\n        print(s)\n", opts)
	pods := []*corev1.Pod{testPod(), testPod()}
	if _, err := o.ApplyBatch(context.Background(), pods, nil); err != nil {
		t.Fatal(err)
	}
	// Each pod: 16 messages of 64 KiB and their markers, then the notice.
	if bound := len(pods) * (1<<20 + 17*100); total > bound || len(msgs) > len(pods)*17 {
		t.Errorf("received %d bytes in %d messages, want at most %d bytes in %d", total, len(msgs), bound, len(pods)*17)
	}
	notices := 0
	marker := regexp.MustCompile(`^a+\.\.\. \[\d+ bytes cut\]$`)
	for _, msg := range msgs {
		switch {
		case msg == "[print output passed 1048576 bytes; the rest is dropped]":
			notices++
		case len(msg) > 64<<10+100 || !marker.MatchString(msg):
			t.Errorf("got a message of %d bytes ending %q, want 64 KiB and a marker", len(msg), msg[max(0, len(msg)-40):])
		}
	}
	if notices != len(pods) {
		t.Errorf("got %d notices of dropped output, want one for each of %d pods", notices, len(pods))
	}
}

// TestWorkerPrintBeforeDeath checks that print() output reaches the parent even when a later
// step kills the worker.
func TestWorkerPrintBeforeDeath(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	var msgs []string
	opts := workerOptions(pool)
	opts.Print = func(pos syntax.Position, msg string) { msgs = append(msgs, pos.String()+": "+msg) }
	o := compile(t, "def overlay(pod):\n    print(\"before\", pod[\"metadata\"][\"name\"])\n    s = \"ab\" * 1024\n    for i in range(40):\n        s += s\n", opts)
	_, err := o.Apply(context.Background(), testPod(), nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
		t.Fatalf("got %v, want a memory LimitError", err)
	}
	if want := []string{"overlay.star:2:10: before " + testPod().Name}; !slices.Equal(msgs, want) {
		t.Errorf("printed %q, want %q", msgs, want)
	}
}

// TestWorkerCrowdedPrints checks that a pod whose overlay kills a worker that holds another
// script, and so applies again in a worker of its own, prints once: what it printed in the
// first worker is dropped.
func TestWorkerCrowdedPrints(t *testing.T) {
	pool := engine.NewWorkerPool(&engine.WorkerPoolOptions{Size: 1})
	defer pool.Close()
	opts := workerOptions(pool)
	var msgs []string
	opts.Print = func(pos syntax.Position, msg string) { msgs = append(msgs, msg) }
	other := compile(t, "def overlay(pod):\n    return pod\n", opts)
	bomb := compile(t, "def overlay(pod):\n    print(\"before\")\n    s = \"ab\" * 1024\n    for i in range(40):\n        s += s\n", opts)
	if _, err := other.Apply(context.Background(), testPod(), nil); err != nil {
		t.Fatal(err)
	}
	msgs = nil
	_, err := bomb.Apply(context.Background(), testPod(), nil)
	var lim *engine.LimitError
	if !errors.As(err, &lim) || lim.Limit != engine.LimitMemory {
		t.Fatalf("got %v, want a memory LimitError", err)
	}
	if want := []string{"before"}; !slices.Equal(msgs, want) {
		t.Errorf("printed %q, want %q", msgs, want)
	}
}

package main

// This file defines the hostile command of the CLI scripts, which writes the hostile app
// specs of testdata/script/hostile_input_spec.txtar that are too large, or of a kind, that a
// script's archive cannot hold.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/starpod/starpod/scheduler"
)

// hostileSpec writes a hostile app spec: hostile KIND FILE, where KIND is
//
//	aliases  3,000 aliases to a role of 3,000 args (15 KB; 9,000,000 values expanded)
//	large    a spec one byte larger than scheduler.MaxSpecFile
//	macros   one arg of 12,000 ${app_id}, in each of 1,000 replicas
//	roles    200 roles of 1,000 replicas
//	devzero  a spec whose role overlay is /dev/zero, by a path relative to FILE's directory
//	fifo     not a spec: a named pipe
func hostileSpec(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: hostile aliases|large|macros|roles|devzero|fifo FILE")
	}
	file := ts.MkAbs(args[1])
	const role = "{name: r, image: i, entrypoint: e, resource: {cpu: 1, mem_mb: 1}"
	var spec string
	switch args[0] {
	case "aliases":
		spec = "name: bomb\nroles: [&r " + role + ", args: [" + strings.TrimSuffix(strings.Repeat("a,", 3000), ",") + "]}, " +
			strings.TrimSuffix(strings.Repeat("*r,", 3000), ",") + "]\n"
	case "large":
		spec = "name: large\n"
		spec += strings.Repeat("#", scheduler.MaxSpecFile+1-len(spec))
	case "macros":
		spec = "name: macros\nroles:\n- " + role + ", num_replicas: 1000, args: [\"" + strings.Repeat("${app_id}", 12000) + "\"]}\n"
	case "roles":
		var b strings.Builder
		b.WriteString("name: roles\nroles:\n")
		for i := range 200 {
			fmt.Fprintf(&b, "- {name: r%d, image: i, entrypoint: e, num_replicas: 1000, resource: {cpu: 1, mem_mb: 1}}\n", i)
		}
		spec = b.String()
	case "devzero":
		rel, err := filepath.Rel(filepath.Dir(file), "/dev/zero")
		ts.Check(err)
		spec = "name: zero\nroles:\n- " + role + ", overlays: [" + rel + "]}\n"
	case "fifo":
		ts.Check(syscall.Mkfifo(file, 0o644))
		return
	default:
		ts.Fatalf("hostile: unknown kind %q", args[0])
	}
	ts.Check(os.WriteFile(file, []byte(spec), 0o644))
}

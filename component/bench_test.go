package component_test

import (
	"context"
	"testing"

	"github.com/starpod/starpod/component"
)

// BenchmarkLoadDDP measures loading the builtin dist.ddp: compiling dist.star and the module
// it loads, and running their top levels.
func BenchmarkLoadDDP(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := component.Load(ctx, "dist.ddp", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppDDP measures one call of a loaded dist.ddp: parsing the command line, calling
// the function and decoding its app strictly.
func BenchmarkAppDDP(b *testing.B) {
	ctx := context.Background()
	c, err := component.Load(ctx, "dist.ddp", nil)
	if err != nil {
		b.Fatal(err)
	}
	argv := []string{"-j", "2:4x8", "--script", "train.py", "-h", "aws_p4d.24xlarge", "--env", "A=b", "--", "--lr", "0.1"}
	for b.Loop() {
		args, err := c.ParseArgs(argv, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.App(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

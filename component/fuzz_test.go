package component

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// FuzzParseArgs parses any command line for dist.ddp: it never panics, and fails only with
// ErrHelp or a *UsageError.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"-j\x002:4x8\x00--script\x00train.py\x00--\x00--lr\x000.1",
		"--env\x00A=b,C=d\x00--mounts\x00type=bind,src=/a,dst=/b\x00--debug=false",
		"-h\x00gpu.small\x00--help", "--max-retries=3\x00--cpu\x00x", "---j", "-", "--=",
	} {
		f.Add(s)
	}
	c, err := Load(context.Background(), "dist.ddp", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := c.ParseArgs(strings.Split(s, "\x00"), nil)
		var usage *UsageError
		if err != nil && !errors.Is(err, ErrHelp) && !errors.As(err, &usage) {
			t.Fatalf("got %T %v", err, err)
		}
	})
}

// FuzzParseDoc reads any docstring without panicking, and finds the Args: entries it is given.
func FuzzParseDoc(f *testing.F) {
	f.Add("Summary.\n\n    More.\n\n    Args:\n        x (int): the x\n            continued\n        y: the y\n    Returns:\n        z\n")
	f.Add("Args:\nx:")
	f.Add("\t\tArgs:\n\t\t\t*args: a\n")
	f.Fuzz(func(t *testing.T, s string) {
		d := parseDoc(s)
		if strings.Contains(d.summary, "\n") {
			t.Errorf("summary %q has a newline", d.summary)
		}
	})
}

// FuzzParseConfig decodes any project config without panicking.
func FuzzParseConfig(f *testing.F) {
	f.Add("run_options: {kubernetes: {queue: q}}\ncomponents: {dist.ddp: {j: 2x8, env: {A: b}}}\n")
	f.Add("named_resources: {x: {cpu: 1, mem_mb: 2}}\noverlays: [a.star]\n")
	f.Add("components: {x.star:f: {a: [1, 2]}}")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(".starpod.yaml", []byte(s))
		if err == nil {
			c.Settings("kubernetes")
			for name := range c.Components {
				c.ComponentArgs(name)
			}
		}
	})
}

// FuzzSplitDict reads any dict flag value: it never panics, and each pair it gives has a key
// with no '=' and no space at either end.
func FuzzSplitDict(f *testing.F) {
	for _, s := range []string{"", "A=1", "A=1;B=2", "LOGLEVEL=INFO,PATHS=a,b,c", "A='',B = spaced ",
		"URL=http://x?a=b,C=d", "=", "A=,B=1", ",=;", "A==B", " = = "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kvs, err := SplitDict(s)
		if err != nil {
			return
		}
		for _, kv := range kvs {
			if kv[0] == "" || strings.Contains(kv[0], "=") || strings.TrimSpace(kv[0]) != kv[0] {
				t.Fatalf("SplitDict(%q): key %q", s, kv[0])
			}
		}
	})
}

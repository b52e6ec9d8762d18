package validate

import (
	"strconv"
	"sync"
	"testing"
)

// TestCacheBounded checks that a Cache stops remembering names at maxCached, and still
// answers for the names it does not hold.
func TestCacheBounded(t *testing.T) {
	var c Cache
	for i := range maxCached + 100 {
		if msgs := c.labelValue("v" + strconv.Itoa(i)); len(msgs) != 0 {
			t.Fatalf("label value v%d: %v", i, msgs)
		}
	}
	if msgs := c.envName("1BAD"); len(msgs) == 0 {
		t.Error("env name 1BAD: no problem reported past the bound")
	}
	n := 0
	for _, m := range []*sync.Map{&c.keys, &c.values, &c.dns, &c.env, &c.ports} {
		m.Range(func(any, any) bool { n++; return true })
	}
	if n != maxCached {
		t.Errorf("the cache holds %d names, want %d", n, maxCached)
	}
}

package sandbox

import "slices"

// A Cache holds up to a number of values by key; adding one more forgets the one added or used
// least recently. A worker keeps the work it holds (compiled scripts) in one, and the parent
// keeps an account of each worker's in another, which it updates as the worker does. The
// zero value holds nothing; use NewCache.
type Cache[V any] struct {
	max  int
	keys []string // least recently used first
	vals map[string]V
}

// NewCache returns a cache of at most max values.
func NewCache[V any](max int) *Cache[V] {
	return &Cache[V]{max: max, vals: make(map[string]V)}
}

// Get returns the value of key, if the cache holds it.
func (c *Cache[V]) Get(key string) (V, bool) {
	v, ok := c.vals[key]
	return v, ok
}

// Use makes key the one used last, if the cache holds it.
func (c *Cache[V]) Use(key string) {
	if i := slices.Index(c.keys, key); i >= 0 {
		c.keys = append(slices.Delete(c.keys, i, i+1), key)
	}
}

// Add adds or replaces the value of key, as the one used last, and forgets the one used least
// recently if the cache holds more than its maximum.
func (c *Cache[V]) Add(key string, v V) {
	if _, ok := c.vals[key]; ok {
		c.Use(key)
	} else {
		c.keys = append(c.keys, key)
	}
	c.vals[key] = v
	for len(c.keys) > c.max {
		delete(c.vals, c.keys[0])
		c.keys = slices.Delete(c.keys, 0, 1)
	}
}

// Len returns the number of values the cache holds.
func (c *Cache[V]) Len() int { return len(c.keys) }

package round

import (
	"cmp"
	"sync"
)

// memoSize bounds each of a Runner's memos; a full memo starts over, which
// costs each run that comes back one lookup the memo would have saved.
const memoSize = 4096

// memo is a bounded map from run-scoped keys to what a Runner learned of
// them in earlier rounds: up to size entries (memoSize if zero). Safe for
// concurrent use.
type memo[V any] struct {
	size int
	mu   sync.Mutex
	m    map[string]V
}

func (c *memo[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *memo[V]) put(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := cmp.Or(c.size, memoSize)
	if c.m == nil || len(c.m) >= size {
		c.m = make(map[string]V, size)
	}
	c.m[key] = v
}

func (c *memo[V]) del(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

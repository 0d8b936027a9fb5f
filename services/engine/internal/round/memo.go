package round

import "sync"

// memoSize bounds each of a Runner's memos; a full memo starts over, which
// costs each run that comes back one lookup the memo would have saved.
const memoSize = 4096

// memo is a bounded map from run-scoped keys to what a Runner learned of
// them in earlier rounds. Safe for concurrent use.
type memo[V any] struct {
	mu sync.Mutex
	m  map[string]V
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
	if c.m == nil || len(c.m) >= memoSize {
		c.m = make(map[string]V, memoSize)
	}
	c.m[key] = v
}

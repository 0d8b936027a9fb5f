package keylimit

import (
	"cmp"
	"sync"
)

// DefaultMaxInFlight is how many requests one key may hold at once under
// a zero ConcurrencyLimit.
const DefaultMaxInFlight = 100

// Concurrency caps how many requests one key has in flight at once (long
// polls, say). Memory is held only for keys with a request in flight. It
// is safe for concurrent use.
type Concurrency struct {
	max int

	mu       sync.Mutex
	inFlight map[string]int
}

// NewConcurrency returns a cap of limit requests in flight per key; zero
// means DefaultMaxInFlight, a negative limit turns the cap off.
func NewConcurrency(limit int) *Concurrency {
	return &Concurrency{max: cmp.Or(limit, DefaultMaxInFlight), inFlight: map[string]int{}}
}

// Max returns the cap (negative: off).
func (c *Concurrency) Max() int { return c.max }

// Acquire takes one of key's places. It returns ok false, and takes
// nothing, when key already holds Max; otherwise release gives the place
// back (calling it more than once is harmless). A nil Concurrency, or one
// turned off, always grants.
func (c *Concurrency) Acquire(key string) (release func(), ok bool) {
	if c == nil || c.max < 0 {
		return func() {}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight[key] >= c.max {
		return nil, false
	}
	c.inFlight[key]++
	var once sync.Once
	return func() { once.Do(func() { c.release(key) }) }, true
}

// InFlight returns how many places key holds.
func (c *Concurrency) InFlight(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inFlight[key]
}

func (c *Concurrency) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight[key] <= 1 {
		delete(c.inFlight, key)
		return
	}
	c.inFlight[key]--
}

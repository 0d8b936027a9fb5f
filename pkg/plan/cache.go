package plan

import (
	"crypto/sha256"
	"sync"
)

// DefaultCacheBytes bounds a Cache whose NewCache was given no budget: the
// documents of the plans it holds, 8 MiB.
const DefaultCacheBytes = 8 << 20

// Cache remembers the plans ParseValidated found valid, by the SHA-256 of
// their documents, so that a service handed the same plan again and again
// (every start carries its plan whole, and most starts are of plans
// started before) parses and validates each once. A document it has seen
// gets the same Validated as the first time, which is what ParseValidated
// would return, since parsing and validating depend on nothing but the
// document and the limits; it holds the plan's input schema compiled, so
// a start checking its input against it does not compile it again. Invalid documents are not remembered. The
// documents held are bounded by a budget of bytes; a Cache that would go
// over it starts over. Safe for concurrent use.
type Cache struct {
	limits   Limits
	maxBytes int

	mu    sync.Mutex
	plans map[[sha256.Size]byte]Validated
	bytes int
}

// NewCache returns a Cache validating against limits that holds up to
// maxBytes of plan documents (DefaultCacheBytes if maxBytes is 0 or
// less).
func NewCache(limits Limits, maxBytes int) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{limits: limits, maxBytes: maxBytes}
}

// ParseValidated is ParseValidated(data, limits) of the Cache's limits,
// from the Cache when it holds data's plan.
func (c *Cache) ParseValidated(data []byte) (Validated, error) {
	key := sha256.Sum256(data)
	c.mu.Lock()
	v, ok := c.plans[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := ParseValidated(data, c.limits)
	if err != nil {
		return v, err
	}
	c.put(key, v)
	return v, nil
}

// put remembers v under key, starting over when v's document would take
// the Cache over its budget. A document over the whole budget is not
// remembered.
func (c *Cache) put(key [sha256.Size]byte, v Validated) {
	size := len(v.doc)
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil || c.bytes+size > c.maxBytes {
		c.plans, c.bytes = map[[sha256.Size]byte]Validated{}, 0
	}
	if _, ok := c.plans[key]; !ok {
		c.plans[key] = v
		c.bytes += size
	}
}

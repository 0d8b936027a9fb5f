package keylimit

import (
	"cmp"
	"container/list"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The defaults a zero Limit and a zero Config mean.
const (
	// DefaultRate is the sustained requests per second of one key.
	DefaultRate = 100.0
	// DefaultBurst is how many requests one key may make at once, after
	// an idle spell.
	DefaultBurst = 200
	// DefaultIdleAfter is how long a key unused is kept before its bucket
	// is dropped (never shorter than the bucket takes to refill).
	DefaultIdleAfter = 5 * time.Minute
	// DefaultMaxKeys is how many keys' buckets are kept at most; past it
	// the least recently used is dropped.
	DefaultMaxKeys = 100_000
)

// Limit is the rate one key is allowed: Rate requests per second
// sustained, Burst at once. The zero value means DefaultRate and
// DefaultBurst; a zero Burst with a positive Rate means DefaultBurst. A
// negative Rate turns the limit off (Off).
type Limit struct {
	// Rate is requests per second; zero means DefaultRate, negative off.
	Rate float64
	// Burst is the bucket's size; zero means DefaultBurst.
	Burst int
}

// Off is the Limit that allows everything.
var Off = Limit{Rate: -1}

// Disabled reports whether l allows everything.
func (l Limit) Disabled() bool { return l.Rate < 0 }

// resolved returns l with its defaults filled in.
func (l Limit) resolved() Limit {
	if l.Rate == 0 {
		l.Rate = DefaultRate
	}
	l.Burst = cmp.Or(l.Burst, DefaultBurst)
	return l
}

// Validate reports a limit no limiter can apply: a negative Burst, or a
// Rate that is not a finite number.
func (l Limit) Validate() error {
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) {
		return fmt.Errorf("keylimit: rate %v is not a finite number", l.Rate)
	}
	if l.Burst < 0 {
		return fmt.Errorf("keylimit: burst %d is negative", l.Burst)
	}
	return nil
}

// String renders l for logs and flag help: "100/s burst 200" or "off".
func (l Limit) String() string {
	if l.Disabled() {
		return "off"
	}
	r := l.resolved()
	return fmt.Sprintf("%g/s burst %d", r.Rate, r.Burst)
}

// Config configures a Limiter. The zero value is a Limiter at the
// default Limit.
type Config struct {
	// Limit is every key's rate.
	Limit Limit
	// IdleAfter is how long a key unused keeps its bucket; zero means
	// DefaultIdleAfter. It is raised to the time an empty bucket takes to
	// refill, so dropping a bucket never gives a key more than it had.
	IdleAfter time.Duration
	// MaxKeys bounds the buckets kept; zero means DefaultMaxKeys. Past it
	// the least recently used key's bucket is dropped.
	MaxKeys int
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

// Limiter is a token bucket per key. It is safe for concurrent use.
type Limiter struct {
	limit   Limit
	idle    time.Duration
	maxKeys int
	now     func() time.Time

	mu   sync.Mutex
	keys map[string]*list.Element // of *bucket
	lru  list.List                // front: most recently used
}

type bucket struct {
	key      string
	lim      *rate.Limiter
	lastSeen time.Time
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("keylimit: invalid config")

// New returns a Limiter for cfg, or an error wrapping ErrConfig.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.Limit.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.IdleAfter < 0 || cfg.MaxKeys < 0 {
		return nil, fmt.Errorf("%w: negative IdleAfter or MaxKeys", ErrConfig)
	}
	l := &Limiter{
		limit:   cfg.Limit,
		idle:    cmp.Or(cfg.IdleAfter, DefaultIdleAfter),
		maxKeys: cmp.Or(cfg.MaxKeys, DefaultMaxKeys),
		now:     cfg.Now,
		keys:    map[string]*list.Element{},
	}
	if l.now == nil {
		l.now = time.Now
	}
	if !l.limit.Disabled() {
		l.limit = l.limit.resolved()
		refill := time.Duration(float64(l.limit.Burst) / l.limit.Rate * float64(time.Second))
		l.idle = max(l.idle, refill)
	}
	return l, nil
}

// Limit returns the limit l applies (defaults filled in).
func (l *Limiter) Limit() Limit { return l.limit }

// Allow takes n tokens from key's bucket. It returns true when they were
// there; otherwise it takes none and returns false and how long until n
// tokens will be (the Retry-After to tell the caller). n below 1 counts
// as 1; n above Burst is charged as Burst (it needs, and empties, a full
// bucket), so a large batch is slow, never impossible. A nil Limiter, or
// a disabled Limit, allows everything.
func (l *Limiter) Allow(key string, n int) (ok bool, retryAfter time.Duration) {
	if l == nil || l.limit.Disabled() {
		return true, 0
	}
	n = min(max(n, 1), l.limit.Burst)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(key, now)
	r := b.lim.ReserveN(now, n)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// Keys returns how many keys' buckets are held (for tests and metrics).
func (l *Limiter) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// bucket returns key's bucket, made full if new, marked used at now, and
// drops idle buckets and those past MaxKeys. Called with mu held.
func (l *Limiter) bucket(key string, now time.Time) *bucket {
	if e, ok := l.keys[key]; ok {
		b := e.Value.(*bucket)
		b.lastSeen = now
		l.lru.MoveToFront(e)
		l.evict(now)
		return b
	}
	b := &bucket{key: key, lim: rate.NewLimiter(rate.Limit(l.limit.Rate), l.limit.Burst), lastSeen: now}
	l.keys[key] = l.lru.PushFront(b)
	l.evict(now)
	return b
}

// evict drops buckets unused for longer than idle, and the least recently
// used beyond maxKeys. Amortised O(1): each bucket is dropped once.
func (l *Limiter) evict(now time.Time) {
	for e := l.lru.Back(); e != nil; e = l.lru.Back() {
		b := e.Value.(*bucket)
		if len(l.keys) <= l.maxKeys && now.Sub(b.lastSeen) <= l.idle {
			return
		}
		l.lru.Remove(e)
		delete(l.keys, b.key)
	}
}

package keylimit_test

import (
	"strconv"
	"testing"

	"github.com/weftrun/weft/internal/policy/keylimit"
)

// BenchmarkAllow is the cost of one Allow over 1,000 keys, in parallel.
func BenchmarkAllow(b *testing.B) {
	l, err := keylimit.New(keylimit.Config{Limit: keylimit.Limit{Rate: 1e9, Burst: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "tenant\x00key-" + strconv.Itoa(i)
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(keys[i%len(keys)], 1)
			i++
		}
	})
}

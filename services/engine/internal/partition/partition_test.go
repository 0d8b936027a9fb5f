package partition_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/partition"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// Every member computes the same division: each partition has exactly one
// owner, no member holds more than its ceiling, whatever the order of
// the member list.
func TestAssignDividesEveryPartitionOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, 16, 64} {
		for members := 1; members <= 5; members++ {
			ms := ids(members)
			owners := map[int]string{}
			for _, m := range ms {
				reversed := slices.Clone(ms)
				slices.Reverse(reversed)
				mine := partition.Assign(reversed, m, n)
				require.Equal(t, mine, partition.Assign(ms, m, n), "the order of the members does not matter")
				require.LessOrEqual(t, len(mine), (n+members-1)/members, "n=%d members=%d", n, members)
				for _, p := range mine {
					require.Empty(t, owners[p], "partition %d has one owner", p)
					owners[p] = m
				}
			}
			require.Len(t, owners, n, "every partition has an owner (n=%d members=%d)", n, members)
		}
	}
	require.Empty(t, partition.Assign(ids(3), "not-a-member", 16))
}

// A member joining takes about its share and moves little else; a member
// leaving frees its share and moves little else.
func TestAssignMovesFewPartitionsWhenMembersChange(t *testing.T) {
	t.Parallel()
	const n = 64
	three, four := ids(3), ids(4)
	owner := func(ms []string) map[int]string {
		o := map[int]string{}
		for _, m := range ms {
			for _, p := range partition.Assign(ms, m, n) {
				o[p] = m
			}
		}
		return o
	}
	before, after := owner(three), owner(four)
	moved := 0
	for p := range n {
		if before[p] != after[p] {
			moved++
		}
	}
	// The joiner takes 16; a division that ignored the old one would move
	// about 48 of 64.
	require.Less(t, moved, 32, "a join moved %d of %d partitions", moved, n)
}

// Two managers on one database divide the partitions; when one stops (it
// leaves), the other takes every partition; when one dies without leaving,
// the other takes its partitions once its lease ran out.
func TestManagersDivideAndTakeOver(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	const n, lease = 8, 2 * time.Second
	a, b := newFake(t, db, "engine-a", n, lease), newFake(t, db, "engine-b", n, lease)
	stopA := a.run(t)
	stopB := b.run(t)
	waitHeld(t, func() bool { return len(a.get()) == n/2 && len(b.get()) == n/2 })
	require.Empty(t, intersect(a.get(), b.get()))

	stopA() // leaves
	waitHeld(t, func() bool { return len(b.get()) == n && len(a.get()) == 0 })

	// A member that stopped heartbeating without leaving: its row stays
	// until its lease runs out.
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO engine_members (engine_id) VALUES ('engine-dead')`)
	require.NoError(t, err)
	waitHeld(t, func() bool { return len(b.get()) == n/2 })
	waitHeld(t, func() bool { return len(b.get()) == n })
	stopB()
	var rows int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM engine_members WHERE engine_id LIKE 'engine-_'`).Scan(&rows))
	require.Zero(t, rows, "a stopped manager leaves")
}

// fake is a Manager whose acquisitions and releases are recorded.
type fake struct {
	m    *partition.Manager
	mu   sync.Mutex
	held map[int]bool
}

func newFake(t *testing.T, db *weftest.DB, id string, n int, lease time.Duration) *fake {
	f := &fake{held: map[int]bool{}}
	f.m = &partition.Manager{
		Members: partition.NewMembers(db.Pool, id, lease),
		Count:   func(context.Context) (int, error) { return n, nil },
		Refresh: lease / 5, Lease: lease,
		Acquire: func(_ context.Context, p int) error { f.set(p, true); return nil },
		Release: func(_ context.Context, p int) { f.set(p, false) },
		Logger:  slog.New(slog.DiscardHandler),
	}
	return f
}

func (f *fake) set(p int, held bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if held {
		f.held[p] = true
	} else {
		delete(f.held, p)
	}
}

func (f *fake) get() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ps []int
	for p := range f.held {
		ps = append(ps, p)
	}
	return ps
}

// run runs the manager until the returned stop, which waits for it.
func (f *fake) run(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); f.m.Run(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func waitHeld(t *testing.T, ok func() bool) {
	t.Helper()
	require.Eventually(t, ok, 30*time.Second, 20*time.Millisecond)
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("host-%d-%08x", 1000+i, i*2654435761)
	}
	return out
}

func intersect(a, b []int) []int {
	var out []int
	for _, p := range a {
		if slices.Contains(b, p) {
			out = append(out, p)
		}
	}
	return out
}

// A manager whose acquisitions and partition count are slow (the bus
// electing a leader) still heartbeats, so the others never count it dead
// and take its partitions meanwhile.
func TestSlowAcquisitionsDoNotStopTheHeartbeat(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	const n, lease = 8, 2 * time.Second
	slow, quick := newFake(t, db, "engine-slow", n, lease), newFake(t, db, "engine-quick", n, lease)
	release := make(chan struct{})
	acquire := slow.m.Acquire
	slow.m.Acquire = func(ctx context.Context, p int) error {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return acquire(ctx, p)
	}
	var counted atomic.Bool
	slow.m.Count = func(ctx context.Context) (int, error) {
		if counted.Swap(true) {
			select {
			case <-release:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		return n, nil
	}
	slow.run(t)
	quick.run(t)
	waitHeld(t, func() bool { return len(quick.get()) == n/2 })
	// Three leases with the slow manager's acquisitions blocked: the
	// quick one keeps its half.
	for deadline := time.Now().Add(3 * lease); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		require.Len(t, quick.get(), n/2, "the slow manager's partitions stay its own")
	}
	close(release)
	waitHeld(t, func() bool { return len(slow.get()) == n/2 })
}

// A manager whose heartbeats fail for a lease releases every partition
// it holds.
func TestFailingHeartbeatsReleaseEveryPartition(t *testing.T) {
	t.Parallel()
	db := weftest.NewDB(t)
	const n, lease = 4, time.Second
	pool, err := pgxpool.New(t.Context(), db.URL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	f := newFake(t, db, "engine-a", n, lease)
	f.m.Members = partition.NewMembers(pool, "engine-a", lease)
	f.run(t)
	waitHeld(t, func() bool { return len(f.get()) == n })
	pool.Close() // every heartbeat fails from now on
	waitHeld(t, func() bool { return len(f.get()) == 0 })
}

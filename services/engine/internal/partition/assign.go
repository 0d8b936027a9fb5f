// Package partition divides the runs' partitions among the engines that
// are running (docs/scaling.md, "Partitioned engines").
//
// Membership is a Postgres table (Members): every engine heartbeats its
// row, and the members are the rows younger than the lease. Every member
// computes the same division from the same member list (Assign), so no
// engine hands partitions to another: each takes its share and lets go of
// the rest. While two engines disagree (one has seen a join the other has
// not), both may consume a partition; the consumer's pinned_client
// priority policy then delivers it to one of them, and the run head's
// compare-and-swap keeps their rounds safe in any case.
//
// Why Postgres and not a JetStream key-value bucket: an engine makes
// progress only with both the bus and the database. One cut off from the
// bus pulls nothing, so the server unpins it; one cut off from the
// database cannot heartbeat, so it lets go of its partitions after a lease
// (Manager) and the others take them, where with a bucket it would keep
// them and stall their runs. The table also gives every engine one clock.
package partition

import (
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Assign returns the partitions of n that self owns when members (self
// among them) divide them: each partition goes to the member ranking
// highest for it by a rendezvous hash, among those that hold fewer than
// ceil(n/len(members)) so far, partitions taken in order. The division
// depends on the member set only (not its order), so every member computes
// the same; it is balanced (no member holds more than its ceiling); and a
// member joining or leaving moves few partitions beyond the ones it takes
// or frees. The result is sorted; it is empty when self is not a member.
func Assign(members []string, self string, n int) []int {
	if len(members) == 0 || n <= 0 {
		return nil
	}
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	limit := (n + len(ms) - 1) / len(ms)
	load := make(map[string]int, len(ms))
	var mine []int
	ranked := make([]string, len(ms))
	for p := range n {
		copy(ranked, ms)
		slices.SortFunc(ranked, func(a, b string) int {
			return cmp.Or(cmp.Compare(score(b, p), score(a, p)), cmp.Compare(a, b))
		})
		for _, m := range ranked {
			if load[m] < limit {
				load[m]++
				if m == self {
					mine = append(mine, p)
				}
				break
			}
		}
	}
	return mine
}

// score is member's rendezvous weight for partition p.
func score(member string, p int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(strconv.Itoa(p)))
	return mix(h.Sum64())
}

// mix is splitmix64's finalizer: FNV alone leaves hashes of strings that
// differ in their last bytes close, which skews a rendezvous ranking.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

package admission

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weftrun/weft/pkg/plan"
)

// A Key is one slot of a plan's run concurrency limits that a run needs
// (plan.RunKey, placed): at most Limit runs hold a slot at once, counted
// across every engine (engine_run_keys, migration 0025).
type Key struct {
	// Slot names what is counted: the run's environment, its plan, the
	// limit's place in the plan and, but under GROUP_ROUND_ROBIN, the
	// key's value (KeysOf).
	Slot string
	// Group is the run's turn in the slot's queue, which takes the groups
	// in turn (plan.RunKey.Group): its fairness value, or its key's value
	// under GROUP_ROUND_ROBIN, whose slot every value shares. Weight is
	// how many of a group's runs a visit starts.
	Group    string
	Weight   int
	Limit    int
	Strategy plan.ConcurrencyStrategy
	// Label names the key for people: the key's expression and value
	// (`input.customerId = "42"`).
	Label string
	// Plan and Rule name the limit the key is of, bounded in number as
	// plans are (a metric's attributes): the plan's id and the limit's
	// place and expression in it ("0: input.customerId").
	Plan, Rule string
}

// KeysOf places a run's evaluated keys (plan.Validated.RunKeys) in
// their slots: those of environment, of plan planID, whose limits cs
// are (plan.Plan.Concurrency).
func KeysOf(environment, planID string, cs []plan.Concurrency, keys []plan.RunKey) []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		slot := strings.Join([]string{environment, planID, strconv.Itoa(k.Index)}, "\x1f")
		if k.Strategy != plan.StrategyGroupRoundRobin {
			slot += "\x1f" + k.Value
		}
		out[i] = Key{Slot: slot, Group: k.Group, Weight: max(k.Weight, 1), Limit: k.Limit, Strategy: k.Strategy,
			Label: cs[k.Index].Key + " = " + strconv.Quote(k.Value), Plan: planID, Rule: strconv.Itoa(k.Index) + ": " + cs[k.Index].Key}
	}
	return out
}

// keyLockName is the name of a slot's admission lock, which every check
// of the slot's room and every scan of its queue takes first.
func keyLockName(slot string) string { return "weft-key:" + slot }

// Waiter is a run whose room a Ledger checks: its id and its admission
// priority (api.MinPriority to api.MaxPriority).
type Waiter struct {
	RunID    string
	Priority int
}

// KeyRoom is what a Ledger found of a run's keys.
type KeyRoom struct {
	// Blocked is the index of the first key without room for the run, -1
	// when every key has room.
	Blocked int
	// Held is how many runs hold the blocked key's slot, and Ahead how
	// many of its waiters come before the run (higher priorities, then,
	// within the run's own and in its group, those approved first),
	// counted up to MaxAheadCounted.
	Held, Ahead int
}

// MaxAheadCounted bounds how many waiters ahead of a run a Ledger
// counts: a reason says "1000 queued ahead" of a longer queue.
const MaxAheadCounted = 1000

// A Ledger holds the room of the slots a batch of rounds may start runs
// in: counted once, under the batch's locks of them (QueueLocks), by
// CountKeysTx, then kept by the batch's own takes and waits. Holding the
// locks, no other transaction takes a place in those slots or queues a
// run in them until the batch ends; a run that ends meanwhile only frees
// a place, and its wake offers the place once the batch has committed,
// so a ledger's counts err only on the side of waiting.
type Ledger struct {
	held  map[string]int            // slot → its holders, and the batch's takes
	ahead map[string]map[string]int // run → slot → the waiters ahead of it
	// queued counts, by slot, the runs the batch put in the slot's queue:
	// every later run of the batch waits behind them; left counts those it
	// started out of the slot's queue, the ones a later run's count had
	// ahead of it when the queue offered them in order.
	queued, left map[string]int
	// waiting holds the slot whose queue each run counted waited in, and
	// approved when it was approved.
	waiting  map[string]string
	approved map[string]time.Time
}

// countKeysSQL counts, for each run $1[i] and its slot $2[i] (its group
// $3[i], its priority $4[i]), the slot's holders other than the run and
// the waiters ahead of it, as two ranges of engine_runs_key_queue.
const countKeysSQL = `
	SELECT k.run_id::text, k.slot, coalesce((SELECT key_slot FROM engine_runs WHERE run_id = k.run_id), ''),
	       coalesce((SELECT approved_at FROM engine_runs WHERE run_id = k.run_id), now()),
	       (SELECT count(*) FROM engine_run_keys h WHERE h.slot = k.slot AND h.run_id <> k.run_id),
	       (SELECT count(*) FROM engine_runs w WHERE w.key_slot = k.slot AND w.priority > k.priority AND w.run_id <> k.run_id)
	       + (SELECT count(*) FROM (
	           SELECT 1 FROM engine_runs w, engine_runs me
	           WHERE me.run_id = k.run_id AND w.key_slot = k.slot AND w.priority = k.priority AND w.key_group = k.grp
	             AND (w.approved_at, w.run_id) < (me.approved_at, me.run_id) AND w.run_id <> k.run_id
	           LIMIT $5) a)
	FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[]) AS k(run_id, slot, grp, priority)`

// QueueCountKeys queues on b the count, in one statement, of the room of
// every run of runs in each slot of its keys (keys[i] are runs[i]'s), for
// a batch that queued the locks of them all before it (QueueLocks); the
// ledger it returns holds the count once b has been sent.
func QueueCountKeys(b *pgx.Batch, runs []Waiter, keys [][]Key) *Ledger {
	l := &Ledger{held: map[string]int{}, ahead: map[string]map[string]int{}, queued: map[string]int{}, left: map[string]int{},
		waiting: map[string]string{}, approved: map[string]time.Time{}}
	var ids, slots, groups []string
	var priorities []int
	for i, r := range runs {
		for _, k := range keys[i] {
			ids, slots, groups, priorities = append(ids, r.RunID), append(slots, k.Slot), append(groups, k.Group), append(priorities, r.Priority)
		}
	}
	if len(ids) == 0 {
		return l
	}
	b.Queue(countKeysSQL, ids, slots, groups, priorities, MaxAheadCounted).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id, slot, waits string
			var approved time.Time
			var held, ahead int
			if err := rows.Scan(&id, &slot, &waits, &approved, &held, &ahead); err != nil {
				return fmt.Errorf("admission: count the keys of %d runs: %w", len(runs), err)
			}
			l.held[slot], l.waiting[id], l.approved[id] = held, waits, approved
			if l.ahead[id] == nil {
				l.ahead[id] = map[string]int{}
			}
			l.ahead[id][slot] = ahead
		}
		return rows.Err()
	})
	return l
}

// Room returns the room run has in each of keys' slots, in order,
// stopping at the first without: a slot has room for the run when its
// holders are fewer than the key's limit and no waiter comes before the
// run. The run's keys must be among those the ledger counted.
func (l *Ledger) Room(run Waiter, keys []Key) KeyRoom {
	for i, k := range keys {
		held, ahead := l.held[k.Slot], max(l.ahead[run.RunID][k.Slot]-l.left[k.Slot], 0)+l.queued[k.Slot]
		if held >= k.Limit || ahead > 0 {
			return KeyRoom{Blocked: i, Held: held, Ahead: min(ahead, MaxAheadCounted)}
		}
	}
	return KeyRoom{Blocked: -1}
}

// Took records that run took every slot of keys, and returns how long
// it waited in a queue: since its approval, or zero when it waited in
// none.
func (l *Ledger) Took(run Waiter, keys []Key, now time.Time) time.Duration {
	for _, k := range keys {
		l.held[k.Slot]++
	}
	slot := l.waiting[run.RunID]
	if slot == "" {
		return 0
	}
	l.left[slot]++
	return now.Sub(l.approved[run.RunID])
}

// Queued records that a run of the batch waits in k's slot's queue.
func (l *Ledger) Queued(k Key) { l.queued[k.Slot]++ }

// QueueTakeKeys queues on b, in one statement, what makes run a holder
// of every slot of keys, out of the queue it waited in: its rows in
// engine_run_keys, and the turn of each slot's queue. A take that no
// queue offered (the run did not wait in the slot's) counts in the turn:
// the queue's next visit is to the group after this one. A
// GROUP_ROUND_ROBIN slot keeps its turn while its runs start; any other
// keeps one while runs wait in it. The queue the run leaves is one of its
// slots', which it takes: the pass that offered it the place counted the
// room, and no wake is owed.
func QueueTakeKeys(b *pgx.Batch, runID string, keys []Key) {
	slots, groups, rr := make([]string, len(keys)), make([]string, len(keys)), make([]bool, len(keys))
	for i, k := range keys {
		slots[i], groups[i], rr[i] = k.Slot, k.Group, k.Strategy == plan.StrategyGroupRoundRobin
	}
	b.Queue(takeSQL, runID, slots, groups, rr)
}

// takeSQL is QueueTakeKeys's statement: run $1 takes slots $2 (its
// groups $3; $4: GROUP_ROUND_ROBIN's).
const takeSQL = `
	WITH k AS (SELECT * FROM unnest($2::text[], $3::text[], $4::bool[]) AS k(slot, grp, rr)),
	     me AS (SELECT key_slot FROM engine_runs WHERE run_id = $1),
	     held AS (INSERT INTO engine_run_keys (run_id, slot, key_group) SELECT $1, slot, grp FROM k ON CONFLICT DO NOTHING),
	     turn AS (INSERT INTO engine_key_turns AS t (slot, key_group, used)
	              SELECT k.slot, k.grp, 1 FROM k, me WHERE k.rr AND me.key_slot IS DISTINCT FROM k.slot
	              ON CONFLICT (slot) DO UPDATE SET used = CASE WHEN t.key_group = excluded.key_group THEN t.used + 1 ELSE 1 END,
	                  key_group = excluded.key_group),
	     other AS (UPDATE engine_key_turns t SET used = CASE WHEN t.key_group = k.grp THEN t.used + 1 ELSE 1 END, key_group = k.grp
	               FROM k, me WHERE t.slot = k.slot AND NOT k.rr AND me.key_slot IS DISTINCT FROM k.slot)
	UPDATE engine_runs SET key_slot = NULL, key_group = '', key_weight = 1, key_limit = 0
	WHERE run_id = $1 AND key_slot IS NOT NULL`

// QueueWaitOnKey queues on b what puts run in the queue of k's slot, out
// of any other it waited in; that one is woken, since the run may have
// been the head of a queue with room (engine_key_wakes).
func QueueWaitOnKey(b *pgx.Batch, run Waiter, k Key) {
	queueLeaveQueue(b, run.RunID, k.Slot)
	b.Queue(`UPDATE engine_runs SET key_slot = $2, key_group = $3, key_weight = $4, key_limit = $5, priority = $6, queued_at = NULL
		WHERE run_id = $1`, run.RunID, k.Slot, k.Group, k.Weight, k.Limit, run.Priority)
	// A queue's first waiter starts its turns after the group of a run
	// that holds the slot.
	b.Queue(`INSERT INTO engine_key_turns (slot, key_group, used)
		VALUES ($1, coalesce((SELECT key_group FROM engine_run_keys WHERE slot = $1 LIMIT 1), ''), 1) ON CONFLICT DO NOTHING`, k.Slot)
}

// QueueWaitOnEnvironment queues on b what puts run in its environment's
// queue (the run-queue reconciler's), at its priority. A run of a plan
// with concurrency limits first leaves any key's queue it waited in
// (QueueLeaveKeyQueue).
func QueueWaitOnEnvironment(b *pgx.Batch, run Waiter) {
	b.Queue(`UPDATE engine_runs SET queued_at = coalesce(queued_at, now()), priority = $2 WHERE run_id = $1`, run.RunID, run.Priority)
}

// QueueLeaveKeyQueue queues on b what takes run out of the key's queue it
// waits in, if any, and wakes that slot, since the run may have been the
// head of a queue with room.
func QueueLeaveKeyQueue(b *pgx.Batch, runID string) { queueLeaveQueue(b, runID, "") }

// queueLeaveQueue queues the wake of the slot run waits on, unless it is
// keep or none, and takes run out of its queue.
func queueLeaveQueue(b *pgx.Batch, runID, keep string) {
	b.Queue(`
		WITH old AS (SELECT key_slot AS slot FROM engine_runs WHERE run_id = $1 AND key_slot <> $2),
		     gone AS (UPDATE engine_runs SET key_slot = NULL, key_group = '', key_weight = 1, key_limit = 0
		              WHERE run_id = $1 AND key_slot <> $2)
		`+wakeSQL("SELECT slot FROM old"), runID, keep)
}

// wakeSQL inserts, or renews, the wakes of the slots src selects, in
// slot order (so that two transactions that wake the same slots lock
// their rows in one order).
func wakeSQL(src string) string {
	return `INSERT INTO engine_key_wakes (slot) SELECT DISTINCT slot FROM (` + src + `) s WHERE slot IS NOT NULL ORDER BY slot
		ON CONFLICT (slot) DO UPDATE SET woken_at = clock_timestamp()`
}

// QueueReleaseKeys queues on b, for runs that end, the release of every
// slot they hold and the wake of each (KeyWakes), so that the slot's
// waiters are offered the room.
func QueueReleaseKeys(b *pgx.Batch, runIDs []string) {
	if len(runIDs) == 0 {
		return
	}
	b.Queue(`WITH gone AS (DELETE FROM engine_run_keys WHERE run_id = ANY($1::uuid[]) RETURNING slot) `+wakeSQL("SELECT slot FROM gone"), runIDs)
}

// CancelOldestTx returns the runs that CANCEL_OLDEST cancels so that run
// fits in k's slot: the slot's oldest runs, holders or waiters, by
// approval, as many as put the slot over its limit with run counted.
func CancelOldestTx(ctx context.Context, tx pgx.Tx, runID string, k Key, room KeyRoom) ([]string, error) {
	n := room.Held + room.Ahead + 1 - k.Limit
	if n <= 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `
		SELECT run_id::text FROM (
		    SELECT r.run_id, r.approved_at FROM engine_run_keys h JOIN engine_runs r USING (run_id) WHERE h.slot = $1
		    UNION ALL
		    SELECT run_id, approved_at FROM engine_runs WHERE key_slot = $1 AND run_id <> $2
		) v ORDER BY approved_at, run_id LIMIT $3`, k.Slot, runID, n)
	if err != nil {
		return nil, fmt.Errorf("admission: oldest runs of %s: %w", k.Label, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

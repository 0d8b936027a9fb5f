// Package projector is Weft's snapshot projector. It consumes every run
// event from JetStream (WEFT_EVENTS), reduces each run's events in strict
// runSeq order with pkg/events' reducer, and stores the RunSnapshot with its
// watermark in Postgres (run_snapshots) in one transaction. It serves the
// read API and the web UI (docs/read-api.md), which internal/readapi
// holds: this package holds the projection (consume, project, store,
// resync, rebuild, verify, alerts, gauges, metrics) and what wakes the read
// API's long polls (notify.go, listen.go, fence.go), and builds the read
// API from its Config, its read pool and itself as the readapi.Projection.
//
// The bus is a transport, never the truth (DESIGN.md). An event that
// arrives past a runSeq gap is never applied: the run is marked STALE, a P1
// PROJECTOR_GAP_DETECTED alert is raised, and the missing events are read
// from the Postgres log. The run resumes when the gap closes; a gap the
// log cannot close yet (a read replica behind, say) is retried by the
// resync loop until it can. Other runs keep flowing. An event whose lag
// (persistedAt to applied) exceeds Config.ResyncLag makes its run catch up
// from the log at once rather than from the bus's backlog, and lag above
// Config.LagAlert raises the P2 PROJECTOR_LAG_HIGH alert. The alert's lag
// counts from persistedAt or this process's start, whichever is later: a
// restart's backlog is downtime, not lag.
//
// The read API may read a hot standby of the primary (Config.ReadPool,
// `weft projector --read-database-url`) while every write, the projection's
// own reads and the LISTEN for other projectors' commits stay on the
// primary. The standby's replay lag is measured (replica.go) and added to
// the projection lag the projector reports, and a long poll is woken only
// once the standby has replayed the commit that wakes it (fence.go).
//
// Any number of projectors may run: they share one durable consumer, and
// each locks a run's snapshot row before it reads the watermark, so two
// projectors never apply the same event twice or build past each other.
package projector

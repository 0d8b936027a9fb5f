// Package readapi is the snapshot projector's read API over HTTP
// (docs/read-api.md, openapi.json): GET /v1/runs, a run's view with its
// long poll, its events, a step's detail and a forEach step's children,
// the alerts and whoami; GET /openapi.json and /healthz; the UI
// (internal/ui) and its forwarding to the gateway.
//
// It only reads: run_snapshots, projector_alerts and the event log, on
// the pool it is given (the primary, or a hot standby of it). What the
// projection writes it learns from a Projection, which the projector
// implements: Wait tells a long poll that its run changed once the pool
// shows the change, and ReadLag is the pool's replay lag, which a run's
// lagMs includes. A long poll also rereads its run every
// Config.WaitRecheck, so a lost wakeup delays its answer, never loses it.
//
// Every /v1/ request is authenticated (Config.Keys), held to its key's
// request rate (Config.KeyRate, weighed by the steps an answer holds:
// Config.StepsPerToken) and to its key's cap on long polls
// (Config.MaxLongPollsPerKey), authorized (Config.Authorizer) and
// checked for query parameters its route does not take, before any
// query. A key reads its own tenant's runs only: another tenant's run is
// no run at all (404).
package readapi

// Package soak is Weft's process-level soak (`make soak`, docs/reliability.md):
// the production topology as separate processes (two gateways, two engines,
// a relay, two workers, a projector, a nats-server of go.mod's version, a
// fresh database with deploy/'s roles and grants), a seeded driver that
// starts a mix of runs and signals them through the gateways' HTTP API, a
// seeded fault injector (SIGKILL and restart of each service and of
// nats-server, cut database connections, a deleted consumer, wiped
// snapshots), and, once the faults stop and the runs end, an invariant
// checker that reads the event log, the read API and the workers' logs.
//
// Everything is loopback; every loop is bounded in count and time; every
// process the soak starts is ended by its PID.
package soak

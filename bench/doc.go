// Package bench holds Weft's benchmarks: `make bench` runs them and prints
// the figures recorded in BENCHMARKS.md.
//
// The headline is BenchmarkSystem: the whole system as a user runs it
// (`weft dev` in a process of its own, runs started through the gateway's
// HTTP API), next to the host's insert ceiling measured in the same run;
// BenchmarkSystemTopology, the second headline, runs the same loads on the
// compose topology as processes (nats-server and each service a process of
// its own). BenchmarkSystemCost breaks the cost down per run, closed and at
// 100 runs/s offered, against issue #40's budget, and BenchmarkSystemParked
// measures it with many runs waiting. Every other benchmark measures a part
// (the engine without the gateway, the relay, the projector, the event log)
// against the same real Postgres and embedded JetStream the tests use: they
// are diagnostics, not what a user gets.
package bench

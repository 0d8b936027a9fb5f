// Package bench holds Weft's benchmarks: `make bench` runs them and prints
// the figures recorded in BENCHMARKS.md. Every figure is measured against the
// same real Postgres and embedded JetStream the tests use, next to this
// machine's raw ceilings measured in the same run.
package bench

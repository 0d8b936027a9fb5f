// Package events is Weft's canonical event model: the envelope every service
// reads and writes, the event types, the idempotency key, and the pure reducer
// that turns an ordered run history into a RunSnapshot.
//
// The package depends on nothing else in Weft and does no I/O. The normative
// source for everything here is ../shared/seeds/state-store-contract.md
// (CanonicalEngineEvent) and execution-semantics-v1.md §1.
package events

// Package e2e holds end-to-end tests that run every service together
// (gateway, relay, engine, worker, projector) against real Postgres and
// embedded JetStream, and check what only the whole system shows, such as
// one trace following a run across all of them. It has no code of its own:
// a test that needs one service belongs with that service.
package e2e

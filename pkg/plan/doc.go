// Package plan defines Weft's plans: a DAG of steps, each running a named
// activity on a worker or waiting for a named signal. It parses plans from
// JSON or YAML, validates them, and answers the questions the engine asks
// of a plan (roots, a topological order, a step's dependants, retry
// backoff). It does no I/O and depends on nothing else in Weft but
// internal/strictjson, which does its strict JSON checks.
//
// # Strict parsing
//
// Plans come from callers over the network and are persisted for the life
// of a run, so Parse is strict: it bounds size and nesting before and
// while parsing, rejects unknown and case-mismatched field names,
// duplicate keys, trailing data and invalid UTF-8, and returns every
// problem it finds as a *ValidationError whose Problems carry stable codes
// (the Code… constants) and name the offending step. See Parse and
// Validate for the full list.
//
// # Secrets
//
// A plan carries references to secrets, never values (execution-semantics
// §2). A step declares the secrets it needs as SecretRefs, which the worker
// resolves through its secrets provider, and its input points at them with
// {"secretRef": "<name>"}. Validate rejects inputs that look like they hold
// a secret value instead, without ever repeating the value; see IsSecretKey
// and SecretShape.
//
// # Persisted format
//
// The JSON encoding of a Plan (json.Marshal) is a persisted format: it is
// stored inside RunApproved's eventData and read back by later, possibly
// newer, code. It carries SchemaVersion; Parse rejects versions newer than
// it knows. A parsed plan has every default filled in, so its encoding does
// not depend on the defaults of the code that reads it, and it round-trips:
// Parse(json.Marshal(p)) equals p.
package plan

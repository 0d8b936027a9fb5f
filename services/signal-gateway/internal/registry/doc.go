// Package registry keeps the gateway's registered plans: the versions of
// each plan of a tenant's project, pushed once and immutable after, but
// for being archived and restored (docs/api.md, "Registered plans").
//
// A version is keyed by (tenant, project, planId, planVersion) and stores
// the plan as a start validates it (intake.CheckPlan: the plan's JSON
// with its defaults filled in, the form RunApproved records) and the
// SHA-256 of that document's canonical JSON (intake.CanonicalJSON). A
// push whose digest equals the stored version's is a repeat and answers
// it; one whose digest differs is refused with CodePlanVersionConflict.
// Concurrent pushes of one version are decided by the table's unique key:
// one inserts, the others read what it stored.
//
// A start may name a version by planRef instead of carrying the plan
// (Service.Resolve): "latest" is the newest version, by push order, that
// is not archived. Resolution reads the registry before the start's
// transaction: an archive that commits while a start resolves may let
// that one start through, as a start made just before it would be.
// Runs never read the registry: their RunApproved holds the full plan.
package registry

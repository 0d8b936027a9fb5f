package engine

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/pkg/eventlog"
)

// CheckpointOwnership says how the engine makes sure one owner at a time
// drives a run (tier0 contract, "Concurrent Resume And Checkpoint
// Ownership"; docs/checkpoints.md).
type CheckpointOwnership string

// Checkpoint ownership modes.
const (
	// SingleOwner (the default) relies on the deployment to run one engine
	// owner per run (docs/checkpoints.md says how). Rounds still append
	// under the run head's compare-and-swap, but the checkpoint version is
	// not compared and the store's conditionalBatch is not required.
	SingleOwner CheckpointOwnership = "single-owner"
	// CASRequired makes every round that writes to a run commit only if the
	// run's head and its checkpoint version are still what the round read;
	// a losing owner gets a deterministic conflict, reloads and decides
	// again. It needs a store with conditionalBatch: New fails with a
	// *CheckpointOwnershipCapabilityError otherwise.
	CASRequired CheckpointOwnership = "cas-required"
)

// CapabilityConditionalBatch is the name of the store capability
// cas-required ownership needs, as the tier0 contract spells it.
const CapabilityConditionalBatch = "conditionalBatch"

// CapabilityReporter reports what a store promises; *eventlog.Store is
// one.
type CapabilityReporter interface {
	// Capabilities returns the store's capabilities. It does no I/O and
	// always returns the same value.
	Capabilities() eventlog.Capabilities
}

// CheckpointOwnershipCapabilityError is New's error for an ownership mode
// the store cannot support: cas-required on a store without
// conditionalBatch. Nothing was started and no work was claimed.
type CheckpointOwnershipCapabilityError struct {
	// Capability is the missing capability: CapabilityConditionalBatch.
	Capability string
	// Mode is the ownership mode that needs it.
	Mode CheckpointOwnership
	// Store is the store's Go type name, such as "*eventlog.Store".
	Store string
}

func (e *CheckpointOwnershipCapabilityError) Error() string {
	return fmt.Sprintf("engine: checkpoint ownership %q needs the store capability %s, which %s does not report",
		e.Mode, e.Capability, e.Store)
}

// checkOwnership validates the ownership mode of cfg (defaults applied)
// against the store's capabilities: cfg.StoreCapabilities, or the event
// log over pool.
func checkOwnership(pool *pgxpool.Pool, cfg Config) error {
	switch cfg.CheckpointOwnership {
	case SingleOwner:
		return nil
	case CASRequired:
	default:
		return fmt.Errorf("engine: CheckpointOwnership %q: want %q or %q", cfg.CheckpointOwnership, SingleOwner, CASRequired)
	}
	var store CapabilityReporter = eventlog.New(pool)
	if cfg.StoreCapabilities != nil {
		store = cfg.StoreCapabilities
	}
	if !store.Capabilities().ConditionalBatch {
		return &CheckpointOwnershipCapabilityError{Capability: CapabilityConditionalBatch,
			Mode: cfg.CheckpointOwnership, Store: fmt.Sprintf("%T", store)}
	}
	return nil
}

package eventlog

// Capabilities is what a store promises about its writes (tier0 contract,
// "Storage Capability Requirements"). Features that need one of them check
// it at start and refuse to run without it, rather than fall back to a
// read-then-write race.
type Capabilities struct {
	// ConditionalBatch: a batch of writes can be made conditional on values
	// read before it (a compare-and-swap), and then commits whole or not
	// at all. CAS checkpoint ownership and idempotent signal delivery need
	// it.
	ConditionalBatch bool
	// AtomicBatch: a batch of writes commits whole or not at all.
	AtomicBatch bool
	// ReadAfterWrite: a read sees every write committed before it began.
	ReadAfterWrite bool
	// ScanConsistency: a range read sees a consistent snapshot.
	ScanConsistency bool
}

// Capabilities reports the Postgres event log's capabilities: all of them.
// A Postgres transaction is the batch; a row lock taken in it (the run
// head's, which every append takes) and a comparison of the values it
// guards make the batch conditional.
func (s *Store) Capabilities() Capabilities {
	return Capabilities{ConditionalBatch: true, AtomicBatch: true, ReadAfterWrite: true, ScanConsistency: true}
}

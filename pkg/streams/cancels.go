package streams

import "github.com/nats-io/nats.go/jetstream"

// CancelsStream captures weft.cancel.*: the engine's cancel notices, one
// per cancelled run (task.Cancel), relayed from the Postgres outbox.
const CancelsStream = "WEFT_CANCELS"

// DefaultCancelsMaxBytes is Config.CancelsMaxBytes's default. A notice is
// a few hundred bytes with its subject and headers, so this holds about
// half a million cancelled runs per MaxAge.
const DefaultCancelsMaxBytes int64 = 256 << 20

// Cancels returns the definition of WEFT_CANCELS, which captures
// weft.cancel.* (one subject per run). No consumer reads it: running
// workers hear a notice as it is published (core NATS subscribers of the
// subject get it as the stream stores it), and a worker about to start
// an attempt reads the last message of the run's subject with a direct get
// (AllowDirect) to learn whether the run was cancelled meanwhile.
//
// It keeps a notice for MaxAge, as long as WEFT_TASKS keeps a task, so a
// notice outlives every task it covers. Unlike the other streams it
// discards its oldest notices when full (CancelsMaxBytes) rather than
// refusing new ones: a refused notice would hold the outbox relay back,
// while a dropped old one only lets a long-queued task of a cancelled run
// start, as it did before notices were kept.
func Cancels(cfg Config) jetstream.StreamConfig {
	cfg = cfg.WithDefaults()
	sc := base(CancelsStream, "Weft cancel notices, one subject per run", CancelSubjectPrefix+".*", cfg)
	sc.MaxBytes = cfg.CancelsMaxBytes
	sc.Discard = jetstream.DiscardOld
	sc.AllowDirect = true
	return sc
}

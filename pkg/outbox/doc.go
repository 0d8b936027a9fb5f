// Package outbox is Weft's transactional outbox: messages for JetStream are
// written to Postgres in the same transaction as the events they carry
// (EnqueueBatch), and a Relay publishes them once that transaction has
// committed, then deletes them. Nothing reaches the bus that is not in the
// log; nothing in the log fails to reach the bus.
//
// Guarantees, in short (docs/outbox.md has the reasoning and the limits):
//
//   - At least once: a row is deleted only after JetStream acked it; a
//     crash between publish and delete republishes it, and JetStream's
//     duplicate window (Nats-Msg-Id = Message.DedupeID) drops the copy.
//   - In order per OrderKey: rows of one key are published in id order,
//     and a failing row holds back every later row of its key until it is
//     published or moved to outbox_dead.
//   - After RelayConfig.MaxAttempts failures charged to it, a row moves to
//     outbox_dead and the relay logs alert=OUTBOX_DLQ at error level. Bus
//     outages are not charged to rows: the relay pauses and retries.
//
// The bus is a transport (DESIGN.md): JetStream's ack is not relied on to
// survive a machine crash, and consumers still dedupe on (runId, runSeq).
//
// A typical wiring:
//
//	relay, err := outbox.NewRelay(pool, js, outbox.RelayConfig{Logger: logger})
//	if err != nil { return err }
//	if err := relay.Start(ctx); err != nil { return err }
//	defer relay.Stop(shutdownCtx)
//
// and in a writer:
//
//	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
//		b := &pgx.Batch{}
//		// ... queue the writes the messages commit with ...
//		if err := outbox.EnqueueBatch(ctx, b, outbox.Message{
//			Subject: subject, Payload: body, DedupeID: eventID, OrderKey: runID,
//		}); err != nil {
//			return err
//		}
//		return tx.SendBatch(ctx, b).Close()
//	})
package outbox

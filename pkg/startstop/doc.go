// Package startstop is the lifecycle every long-running Weft component
// shares (the outbox relay, the task worker, the consumer lanes, the
// engine), modelled on river's rivershared/startstop.
//
// A component holds a Base (an unexported field, so that its own Stop can
// say what a drain means for it) and implements its Start with Base.Start,
// passing a StartFunc that does the component's set-up and returns its run
// loop; its Stop, Started and Stopped call the Base's. The contract, for
// every component built this way:
//
//   - Start does the set-up synchronously and returns its error; a failed
//     Start leaves the component as it was, and Start may be called again.
//     Once a Start has succeeded, a second one returns ErrAlreadyStarted: a
//     component runs once, build a new one to run again.
//   - The run loop then runs in its own goroutine with two contexts: hard,
//     which ends when Start's context ends or a drain is cut short, and
//     soft, which also ends when Stop asks for a drain. The loop finishes
//     the work in hand when soft ends and abandons it when hard ends.
//   - Stop(ctx) asks for the drain and waits for the run loop to return.
//     When ctx ends first it ends hard, still waits for the loop, and
//     returns an error wrapping ErrDrainCutShort and ctx.Err(). Stop is
//     idempotent and safe to call concurrently, and a no-op on a component
//     never started. A Stop called while Start sets up waits for it, then
//     stops what it started.
//   - Started is closed once a Start has succeeded and the run loop is
//     launched; Stopped once the run loop has returned, whether Stop or the
//     end of Start's context ended it. Neither closes for a component that
//     never started.
//
// Run gives a service's Run(ctx) on top of that: start, wait for ctx,
// then stop with a bounded drain.
//
// All Base methods are safe for concurrent use. The zero Base is ready to
// use and must not be copied after first use.
package startstop

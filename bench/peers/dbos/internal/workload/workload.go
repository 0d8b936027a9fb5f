// Package workload is the job Weft's headline benchmark runs, written for
// DBOS Transact: a workflow of three echo steps in a line, data flowing
// through them, run by a worker that dequeues it from a DBOS queue, and
// started by a DBOS client that only enqueues.
package workload

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

const (
	// AppName is the DBOS application the worker runs and the client
	// enqueues for.
	AppName = "weft-peer"
	// QueueName is the DBOS queue the client enqueues into.
	QueueName = "weft-peer"
	// WorkflowName is the name ThreeEchoes is registered under and the
	// client enqueues by.
	WorkflowName = "threeEchoes"

	// DefaultPoll is the queue and result poll interval the peer runs
	// with: DBOS's own default is 1 s for both.
	DefaultPoll = 50 * time.Millisecond
)

// Order is a workflow's input and every step's output: the same document
// Weft's benchmark starts its runs with.
type Order struct {
	N   int    `json:"n"`
	SKU string `json:"sku"`
}

// NewOrder is the i-th input, as Weft's benchmark builds it.
func NewOrder(i int) Order { return Order{N: i, SKU: fmt.Sprintf("sku-%d", i%100)} }

// ThreeEchoes is the workflow: step a echoes the input, b echoes a's
// output, c echoes b's, and the workflow returns c's. Each step is a DBOS
// step, checkpointed before the next one starts.
func ThreeEchoes(ctx dbos.Context, in Order) (Order, error) {
	out := in
	for _, name := range []string{"a", "b", "c"} {
		prev := out
		var err error
		out, err = dbos.RunAsStep(ctx, func(context.Context) (Order, error) { return prev, nil }, dbos.WithStepName(name))
		if err != nil {
			return Order{}, fmt.Errorf("step %s: %w", name, err)
		}
	}
	return out, nil
}

// Config is how the worker polls. The zero value means DefaultPoll.
type Config struct {
	// QueuePoll is the queue's base polling interval: how often the worker
	// looks for enqueued workflows.
	QueuePoll time.Duration
	// Logger receives DBOS's log; nil means discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.QueuePoll = cmp.Or(c.QueuePoll, DefaultPoll)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// StartWorker creates a DBOS context on the system database at dbURL
// (migrating it), registers ThreeEchoes and the queue polled every
// cfg.QueuePoll, and launches it: from then on it dequeues and runs the
// workflows enqueued. The caller stops it with dbos.Shutdown.
func StartWorker(ctx context.Context, dbURL string, cfg Config) (dbos.Context, error) {
	cfg = cfg.withDefaults()
	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: AppName, DatabaseURL: dbURL, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("dbos context: %w", err)
	}
	dbos.RegisterWorkflow(dctx, ThreeEchoes, dbos.WithWorkflowName(WorkflowName))
	if _, err := dbos.RegisterQueue(dctx, QueueName, dbos.WithQueueBasePollingInterval(cfg.QueuePoll)); err != nil {
		_ = dbos.Shutdown(dctx, 5*time.Second)
		return nil, fmt.Errorf("register queue: %w", err)
	}
	if err := dbos.Launch(dctx); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	return dctx, nil
}

// NewClient is a DBOS client on the system database at dbURL, acting for
// the worker's application; logger nil means discard. The caller closes it
// with dbos.Shutdown.
func NewClient(ctx context.Context, dbURL string, logger *slog.Logger) (dbos.Client, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := dbos.NewClient(ctx, dbos.ClientConfig{AppName: AppName, DatabaseURL: dbURL, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("dbos client: %w", err)
	}
	return c, nil
}

// Enqueue enqueues ThreeEchoes of in under the workflow id id.
func Enqueue(c dbos.Client, id string, in Order) (dbos.WorkflowHandle[Order], error) {
	h, err := dbos.Enqueue[Order](c, QueueName, WorkflowName, in, dbos.WithEnqueueWorkflowID(id))
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", id, err)
	}
	return h, nil
}

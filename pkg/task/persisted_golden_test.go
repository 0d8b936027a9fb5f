package task_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/task"
	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

// The golden files in testdata/persisted hold the Task, Result and Cancel
// messages as today's engine and workers write them. Tasks and results
// wait in JetStream streams across a rolling upgrade, so a new build must
// read what the old one wrote (docs/persisted-format.md).
// WEFT_UPDATE_GOLDEN=1 rewrites the files; review the diff.

const goldenRun = "0190a8e2-7b3c-7def-8123-456789abcdef"

// goldenToken is a task token as an engine writes it (task.Signer).
const goldenToken = "v1.AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"

var goldenT0 = time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC)

// messageOf is the golden record of a message of T: write builds it as
// today's writer does, want is what today's reader must decode.
func messageOf[T any](name string, write func() T, want T) goldentest.Record {
	return goldentest.JSON(name, func(testing.TB) T { return write() }, want, nil)
}

func goldenTask() task.Task {
	return task.Task{
		SchemaVersion: task.SchemaVersion, RunID: goldenRun, StepID: "extract", LogicalAttemptID: "2",
		PlanVersion: "v3", Activity: "dbt.run", Queue: "default", Input: json.RawMessage(`{"db":{"secretRef":"pg"}}`),
		Secrets:        []plan.SecretRef{{Name: "pg", Provider: "env", Key: "PG_URL"}},
		IdempotencyKey: "extract-2024-07-01", TimeoutMillis: 90000, ScheduledAt: goldenT0,
	}
}

func messages() []goldentest.Record {
	key := func(kind task.Kind) string {
		return events.IdempotencyKey(goldenRun, "extract", "2", events.Type(kind), "v3")
	}
	stepErr := &events.StepError{Code: "E_USER", Message: "bad input", Category: "USER"}
	artifact := events.ArtifactRef{URI: "s3://bucket/out.parquet", Kind: "table", SizeBytes: 7}
	result := func(kind task.Kind) task.Result {
		r := task.NewResult(goldenTask(), kind, "1", "worker-1")
		r.EmittedAt = goldenT0 // now in NewResult
		return r
	}
	want := func(kind task.Kind) task.Result {
		return task.Result{SchemaVersion: 1, Kind: kind, RunID: goldenRun, StepID: "extract", LogicalAttemptID: "2",
			EngineAttemptID: "1", IdempotencyKey: key(kind), WorkerID: "worker-1", EmittedAt: goldenT0}
	}
	completed := want(task.Completed)
	completed.Output, completed.Artifacts = json.RawMessage(`{"rows":3}`), []events.ArtifactRef{artifact}
	failed := want(task.Failed)
	failed.Error = stepErr
	signedStarted := want(task.Started)
	signedStarted.Token = goldenToken
	return []goldentest.Record{
		messageOf("Task_v1", goldenTask, task.Task{
			SchemaVersion: 1, RunID: goldenRun, StepID: "extract", LogicalAttemptID: "2", PlanVersion: "v3",
			Activity: "dbt.run", Queue: "default", Input: json.RawMessage(`{"db":{"secretRef":"pg"}}`),
			Secrets:        []plan.SecretRef{{Name: "pg", Provider: "env", Key: "PG_URL"}},
			IdempotencyKey: "extract-2024-07-01", TimeoutMillis: 90000, ScheduledAt: goldenT0,
		}),
		messageOf("Result_started_v1", func() task.Result { return result(task.Started) }, want(task.Started)),
		messageOf("Result_completed_v1", func() task.Result {
			r := result(task.Completed)
			r.Output, r.Artifacts = json.RawMessage(`{"rows":3}`), []events.ArtifactRef{artifact}
			return r
		}, completed),
		messageOf("Result_failed_v1", func() task.Result {
			r := result(task.Failed)
			r.Error = stepErr
			return r
		}, failed),
		messageOf("Task_signed_v1", func() task.Task {
			tk := goldenTask()
			tk.Token = goldenToken
			return tk
		}, task.Task{
			SchemaVersion: 1, RunID: goldenRun, StepID: "extract", LogicalAttemptID: "2", PlanVersion: "v3",
			Activity: "dbt.run", Queue: "default", Input: json.RawMessage(`{"db":{"secretRef":"pg"}}`),
			Secrets:        []plan.SecretRef{{Name: "pg", Provider: "env", Key: "PG_URL"}},
			IdempotencyKey: "extract-2024-07-01", TimeoutMillis: 90000, ScheduledAt: goldenT0, Token: goldenToken,
		}),
		messageOf("Result_signed_v1", func() task.Result {
			tk := goldenTask()
			tk.Token = goldenToken
			r := task.NewResult(tk, task.Started, "1", "worker-1")
			r.EmittedAt = goldenT0
			return r
		}, signedStarted),
		messageOf("Result_startedAt_v1", func() task.Result {
			r := result(task.Completed)
			r.StartedAt = goldenT0.Add(-time.Second)
			return r
		}, func() task.Result {
			r := want(task.Completed)
			r.StartedAt = goldenT0.Add(-time.Second)
			return r
		}()),
		messageOf("Cancel_v1", func() task.Cancel {
			return task.Cancel{SchemaVersion: task.SchemaVersion, RunID: goldenRun, StepIDs: []string{"extract"}, Reason: "run cancelled"}
		}, task.Cancel{SchemaVersion: 1, RunID: goldenRun, StepIDs: []string{"extract"}, Reason: "run cancelled"}),
	}
}

// TestPersistedGolden: today's reader decodes every golden message to the
// expected fields, also with a field only a newer writer knows, and today's
// writer still writes it byte for byte.
func TestPersistedGolden(t *testing.T) {
	t.Parallel()
	goldentest.CheckAll(t, filepath.Join("testdata", "persisted"), append(messages(), reconcileMessages()...))
}

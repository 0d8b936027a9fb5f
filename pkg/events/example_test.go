package events_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/weftrun/weft/pkg/events"
)

func ExampleProject() {
	const runID = "0190a8e2-7b3c-7def-8123-456789abcdef"
	at := time.Date(2026, 2, 11, 10, 0, 0, 0, time.UTC)
	completed, err := events.MarshalData(events.StepCompletedData{
		Artifacts: []events.ArtifactRef{{URI: "s3://weft-artifacts/run/manifest.json", Kind: "dbt-manifest"}},
	})
	if err != nil {
		panic(err)
	}
	log := []events.Event{
		{RunID: runID, RunSeq: 1, EventType: events.RunApproved, PersistedAt: at},
		{RunID: runID, RunSeq: 2, EventType: events.RunStarted, PersistedAt: at.Add(time.Second)},
		{RunID: runID, RunSeq: 3, EventType: events.StepStarted, StepID: "build", LogicalAttemptID: "1", EngineAttemptID: "1", PersistedAt: at.Add(2 * time.Second)},
		{RunID: runID, RunSeq: 4, EventType: events.StepCompleted, StepID: "build", LogicalAttemptID: "1", EventData: completed, PersistedAt: at.Add(4 * time.Second)},
		{RunID: runID, RunSeq: 5, EventType: events.RunCompleted, PersistedAt: at.Add(5 * time.Second)},
	}

	snap, err := events.Project(runID, log[:4])
	if err != nil {
		panic(err)
	}
	fmt.Println(snap.Status, snap.LastEventSeq)

	// Continue from the watermark; a refetch that overlaps it is harmless.
	snap, err = events.ProjectIncremental(snap, log[3:])
	if err != nil {
		panic(err)
	}
	fmt.Println(snap.Status, snap.LastEventSeq, *snap.TotalDurationMs, "ms")
	for _, st := range snap.Steps {
		fmt.Println(st.StepID, st.Status, "attempts:", st.Attempts, "artifacts:", len(st.Artifacts))
	}

	// A missing runSeq stops the projection at the gap.
	_, err = events.Project(runID, []events.Event{log[0], log[2]})
	var gap *events.GapError
	fmt.Println(errors.As(err, &gap), gap.LastEventSeq, gap.NextSeq)
	// Output:
	// RUNNING 4
	// COMPLETED 5 4000 ms
	// build SUCCESS attempts: 1 artifacts: 1
	// true 1 3
}

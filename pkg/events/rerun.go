package events

// EventRef names one event of a run's log.
type EventRef struct {
	RunID  string `json:"runId"`
	RunSeq int64  `json:"runSeq"`
}

// RerunOf links a rerun to its source: RunApprovedData.RerunOf. The rerun
// runs the source's plan version anew from FromStepID: that step and its
// descendants run, and every other step's outcome in the source,
// its StepCompleted or StepSkipped, is copied in at the rerun's start
// (StepCompletedData.ReusedFrom), without a StepScheduled or a task.
type RerunOf struct {
	RunID      string `json:"runId"`
	FromStepID string `json:"fromStepId"`
	// Reuse lists the steps whose outcomes are copied, each with the
	// source event that holds it.
	Reuse []ReusedStep `json:"reuse,omitempty"`
}

// ReusedStep is one step a rerun copies: its terminal event in the
// source run's log.
type ReusedStep struct {
	StepID string `json:"stepId"`
	RunSeq int64  `json:"runSeq"`
}

// RunRerun is a rerun's link to its source, as the snapshot shows it.
type RunRerun struct {
	RunID      string `json:"runId"`
	FromStepID string `json:"fromStepId"`
}

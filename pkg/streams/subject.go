package streams

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidToken is wrapped by every error ValidToken and the subject
// builders return, so callers can test for it with errors.Is.
var ErrInvalidToken = errors.New("invalid subject token")

// Subject prefixes; each is followed by one token.
const (
	EventsSubjectPrefix  = "weft.events"   // + run id, captured by WEFT_EVENTS
	TasksSubjectPrefix   = "weft.tasks"    // + queue, captured by WEFT_TASKS
	ResultsSubjectPrefix = "weft.results"  // + run id, captured by WEFT_RESULTS
	CancelSubjectPrefix  = "weft.cancel"   // + run id, core NATS
	SignalSubjectPrefix  = "weft.signals"  // + run id, core NATS: the gateway's signal ingress
	TriggerSubjectPrefix = "weft.triggers" // + trigger id, core NATS: the gateway's event ingress
)

// ReconcileSubject is the engine's reconciliation lookup, core NATS
// request-reply: a worker's request carries a task.ReconcileRequest and the
// reply a task.ReconcileReply (docs/reconciliation.md). Engines serve it in
// the queue group ReconcileQueue, so one engine answers each request.
const ReconcileSubject = "weft.engine.reconcile"

// ReconcileQueue is the queue group the engines serve ReconcileSubject in.
const ReconcileQueue = "weft-engine"

// RunStartSubject is the gateway's run-start ingress, core NATS: a publish
// carries an api.StartRunRequest, a request gets the answer as its reply.
const RunStartSubject = "weft.runs.start"

// EventSubject returns weft.events.<runID>, the subject every event of the
// run is published on. It fails with an error wrapping ErrInvalidToken when
// runID is not a valid subject token (see ValidToken).
func EventSubject(runID string) (string, error) { return subject(EventsSubjectPrefix, "run id", runID) }

// TaskSubject returns weft.tasks.<queue>, the subject of a queue's tasks.
func TaskSubject(queue string) (string, error) { return subject(TasksSubjectPrefix, "queue", queue) }

// ResultSubject returns weft.results.<runID>, where workers report on the
// run's tasks.
func ResultSubject(runID string) (string, error) {
	return subject(ResultsSubjectPrefix, "run id", runID)
}

// CancelSubject returns weft.cancel.<runID>, where the engine tells workers
// to stop the run's activities.
func CancelSubject(runID string) (string, error) {
	return subject(CancelSubjectPrefix, "run id", runID)
}

// SignalSubject returns weft.signals.<runID>, where a publish sends the run
// a signal through the gateway (docs/api.md).
func SignalSubject(runID string) (string, error) {
	return subject(SignalSubjectPrefix, "run id", runID)
}

// TriggerSubject returns weft.triggers.<triggerID>, where a publish sends
// an event to a trigger through the gateway (docs/schedules.md).
func TriggerSubject(triggerID string) (string, error) {
	return subject(TriggerSubjectPrefix, "trigger id", triggerID)
}

func subject(prefix, what, token string) (string, error) {
	if err := ValidToken(token); err != nil {
		return "", fmt.Errorf("streams: %s: %w", what, err)
	}
	return prefix + "." + token, nil
}

// ValidToken reports whether s can be one token of a NATS subject that Weft
// publishes to: a run id, a queue name. It refuses the empty string, '.',
// the wildcards '*' and '>', any whitespace or control character, a leading
// '$' (reserved for the system, as in $JS and $SYS) and invalid UTF-8.
// The error wraps ErrInvalidToken and names the offending character.
func ValidToken(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty", ErrInvalidToken)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidToken, s)
	}
	if s[0] == '$' {
		return fmt.Errorf("%w: %q starts with '$', which is reserved", ErrInvalidToken, s)
	}
	for i, r := range s {
		switch {
		case r == '.':
			return fmt.Errorf("%w: %q contains '.' at byte %d (a token cannot span levels)", ErrInvalidToken, s, i)
		case r == '*' || r == '>':
			return fmt.Errorf("%w: %q contains the wildcard %q at byte %d", ErrInvalidToken, s, r, i)
		case unicode.IsSpace(r):
			return fmt.Errorf("%w: %q contains whitespace %U at byte %d", ErrInvalidToken, s, r, i)
		case unicode.IsControl(r):
			return fmt.Errorf("%w: %q contains the control character %U at byte %d", ErrInvalidToken, s, r, i)
		}
	}
	return nil
}

// ValidSubject reports whether subject is a concrete subject Weft may
// publish to: one or more '.'-separated tokens, each passing ValidToken (so
// no wildcards, no empty levels, nothing reserved). The error wraps
// ErrInvalidToken.
func ValidSubject(subject string) error {
	if subject == "" {
		return fmt.Errorf("%w: empty subject", ErrInvalidToken)
	}
	for i, tok := range strings.Split(subject, ".") {
		if err := ValidToken(tok); err != nil {
			return fmt.Errorf("subject %q, token %d: %w", subject, i+1, err)
		}
	}
	return nil
}

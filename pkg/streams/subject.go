package streams

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weftrun/weft/pkg/events"
)

// ErrInvalidToken is wrapped by every error ValidToken and the subject
// builders return, so callers can test for it with errors.Is.
var ErrInvalidToken = errors.New("invalid subject token")

// Subject prefixes; each is followed by one token.
const (
	EventsSubjectPrefix  = "weft.events"   // + class + run id, captured by WEFT_EVENTS
	TasksSubjectPrefix   = "weft.tasks"    // + queue [+ lane], captured by WEFT_TASKS
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

// Header names set on every event message on WEFT_EVENTS, so consumers can
// route and dedupe without decoding the payload.
const (
	// HeaderEventType is the event's type (events.Type).
	HeaderEventType = "Weft-Event-Type"
	// HeaderRunSeq is the event's runSeq, in decimal.
	HeaderRunSeq = "Weft-Run-Seq"
)

// ReconcileQueue is the queue group the engines serve ReconcileSubject in.
const ReconcileQueue = "weft-engine"

// RunStartSubject is the gateway's run-start ingress, core NATS: a publish
// carries an api.StartRunRequest, a request gets the answer as its reply.
const RunStartSubject = "weft.runs.start"

// The gateway's plan-registry ingress, core NATS request-reply, in the
// same queue group as RunStartSubject (docs/api.md, "NATS ingress").
const (
	// PlanPushSubject takes an api.PlanPushRequest and registers its
	// plan version; the reply is the api.PlanVersion.
	PlanPushSubject = "weft.plans.push"
	// PlanGetSubject takes projectId, planId and an optional
	// planVersion; the reply is the api.Plan, or the api.PlanVersion with
	// its plan when planVersion is given.
	PlanGetSubject = "weft.plans.get"
)

// Event classes: the token of an event's subject before its run id
// (EventSubject). The engine is delivered the inputs alone, the events
// that ask it for a round; a consumer of the whole log, the projector's,
// takes both. A run's events of both classes are still one sequence in
// WEFT_EVENTS, in runSeq order.
const (
	// EventClassInput is the class of the event types EngineInput names.
	EventClassInput = "in"
	// EventClassOutcome is the class of every other event: what the
	// engine's rounds decided, which no engine reacts to.
	EventClassOutcome = "out"
)

// EngineInput reports whether the engine reacts to events of type t:
// RunApproved starts a run, SignalAccepted applies a signal,
// ChildRunEnded ends the subPlan step of a parent run. The engine reads
// nothing else of the bus's events; its own rounds wrote the rest.
func EngineInput(t events.Type) bool {
	return t == events.RunApproved || t == events.SignalAccepted || t == events.ChildRunEnded
}

// EventSubject returns weft.events.<class>.<runID>, the subject an event
// of type t of the run is published on: class EventClassInput when the
// engine reacts to t (EngineInput), else EventClassOutcome, so that the
// server delivers the engine only the events of a run it acts on. It
// fails with an error wrapping ErrInvalidToken when runID is not a valid subject token (see
// ValidToken).
func EventSubject(runID string, t events.Type) (string, error) {
	class := EventClassOutcome
	if EngineInput(t) {
		class = EventClassInput
	}
	return subject(EventsSubjectPrefix+"."+class, "run id", runID)
}

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

// RunOfEventSubject returns the run id of an event subject as WEFT_EVENTS
// stores it (partition.go): the last token of
// weft.events.<p>.<class>.<runId>, and of the subjects stored before
// classes, weft.events.<p>.<runId>, and before partitions,
// weft.events.<runId>. It fails for any other subject.
func RunOfEventSubject(subject string) (string, error) {
	rest, ok := strings.CutPrefix(subject, EventsSubjectPrefix+".")
	if !ok {
		return "", fmt.Errorf("streams: %q is not an event subject", subject)
	}
	tokens := strings.Split(rest, ".")
	runID := tokens[len(tokens)-1]
	switch len(tokens) {
	case 1:
	case 2, 3:
		if _, err := strconv.ParseUint(tokens[0], 10, 16); err != nil {
			return "", fmt.Errorf("streams: event subject %q: partition %q is not a number", subject, tokens[0])
		}
		if len(tokens) == 3 && tokens[1] != EventClassInput && tokens[1] != EventClassOutcome {
			return "", fmt.Errorf("streams: event subject %q: %q is not an event class", subject, tokens[1])
		}
	default:
		return "", fmt.Errorf("streams: %q is not an event subject", subject)
	}
	if err := ValidToken(runID); err != nil {
		return "", fmt.Errorf("streams: event subject %q: %w", subject, err)
	}
	return runID, nil
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

// maxPlainLaneToken is the longest tenant id LaneToken uses as it is;
// a longer one is hashed, so a lane's consumer name stays short.
const maxPlainLaneToken = 64

// hashedLaneTokenHex is how many hex digits of a tenant id's SHA-256 a
// hashed lane token keeps (80 bits).
const hashedLaneTokenHex = 20

// LaneToken returns the subject token of a tenant's lane, or "" for the
// empty tenant (no lane: the queue's own subject). A tenant id of 1 to 64
// ASCII letters, digits, '-' and '_' that does not start with '_' is its
// own token; any other id becomes '_' and 20 hex digits of its SHA-256,
// so two tenants never share a lane (but for a hash collision) and the
// token is always a valid subject token and consumer name part.
func LaneToken(tenant string) string {
	if tenant == "" {
		return ""
	}
	if plainLaneToken(tenant) {
		return tenant
	}
	sum := sha256.Sum256([]byte(tenant))
	return "_" + hex.EncodeToString(sum[:])[:hashedLaneTokenHex]
}

// plainLaneToken reports whether s may be a lane token as it is.
func plainLaneToken(s string) bool {
	if s == "" || len(s) > maxPlainLaneToken || s[0] == '_' {
		return false
	}
	return validLaneChars(s)
}

// validLaneChars reports whether s is only ASCII letters, digits, '-' and
// '_'.
func validLaneChars(s string) bool {
	for i := range len(s) {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

// ValidLaneToken reports whether s is a token LaneToken can return, the
// check a worker applies to a lane token it finds on the bus.
func ValidLaneToken(s string) error {
	if s == "" || len(s) > maxPlainLaneToken+1 || !validLaneChars(s) {
		return fmt.Errorf("%w: %q is not a lane token", ErrInvalidToken, s)
	}
	return nil
}

// TenantTaskSubject returns the subject of a task of tenant on queue:
// weft.tasks.<queue>.<LaneToken(tenant)>, or weft.tasks.<queue> when
// tenant is empty (a task of no tenant, as an engine before lanes
// published every task).
func TenantTaskSubject(queue, tenant string) (string, error) {
	subject, err := TaskSubject(queue)
	if err != nil || tenant == "" {
		return subject, err
	}
	return subject + "." + LaneToken(tenant), nil
}

// TaskLanesFilter returns weft.tasks.<queue>.*, the subjects of every
// tenant lane of queue.
func TaskLanesFilter(queue string) (string, error) {
	subject, err := TaskSubject(queue)
	if err != nil {
		return "", err
	}
	return subject + ".*", nil
}

// InboxReply reports whether reply is an inbox-style reply subject: one
// that starts with one of prefixes and is longer than it. A service that
// answers requests on the requester's behalf answers only such subjects,
// since any other may be a stream's (weft.results.<runId>,
// weft.cancel.<runId>, weft.events.…) or the JetStream API's, and an
// answer there would be a message published with the service's rights.
func InboxReply(reply string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(reply, p) && len(reply) > len(p) {
			return true
		}
	}
	return false
}

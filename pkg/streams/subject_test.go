package streams_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/streams"
)

func TestValidToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		token   string
		wantErr string // substring of the error; empty means valid
	}{
		{name: "uuid", token: "0190c7d2-8f3a-7b1e-9c4d-5e6f7a8b9c0d"},
		{name: "plain", token: "run_42"},
		{name: "dollar inside", token: "a$b"},
		{name: "unicode letters", token: "läuft"},
		{name: "empty", token: "", wantErr: "empty"},
		{name: "dot", token: "a.b", wantErr: "contains '.'"},
		{name: "star", token: "a*", wantErr: "wildcard '*'"},
		{name: "gt", token: ">", wantErr: "wildcard '>'"},
		{name: "space", token: "a b", wantErr: "whitespace"},
		{name: "tab", token: "a\tb", wantErr: "whitespace"},
		{name: "newline", token: "a\n", wantErr: "whitespace"},
		{name: "non-breaking space", token: "a\u00a0b", wantErr: "whitespace"},
		{name: "nul", token: "a\x00b", wantErr: "control character"},
		{name: "escape", token: "\x1b[0m", wantErr: "control character"},
		{name: "delete", token: "a\x7f", wantErr: "control character"},
		{name: "leading dollar", token: "$JS", wantErr: "starts with '$'"},
		{name: "invalid utf8", token: "a\xffb", wantErr: "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := streams.ValidToken(tt.token)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, streams.ErrInvalidToken)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestSubjectBuilders(t *testing.T) {
	t.Parallel()
	builders := map[string]func(string) (string, error){
		"weft.tasks":    streams.TaskSubject,
		"weft.results":  streams.ResultSubject,
		"weft.cancel":   streams.CancelSubject,
		"weft.signals":  streams.SignalSubject,
		"weft.triggers": streams.TriggerSubject,
	}
	for prefix, build := range builders {
		subject, err := build("tok-1")
		require.NoError(t, err)
		require.Equal(t, prefix+".tok-1", subject)
		for _, bad := range []string{"", "a.b", "*", ">", "a b", "$x"} {
			_, err := build(bad)
			require.ErrorIs(t, err, streams.ErrInvalidToken, "%s token %q", prefix, bad)
		}
	}
}

func TestValidSubject(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"weft.events.r1", "weft.nowhere.x", "single"} {
		require.NoError(t, streams.ValidSubject(ok), ok)
	}
	for _, bad := range []string{"", ".", "weft..x", "weft.events.", ".weft", "weft.*", "weft.>", "weft.a b", "$JS.API.x", "weft.$x"} {
		require.ErrorIs(t, streams.ValidSubject(bad), streams.ErrInvalidToken, "subject %q", bad)
	}
}

// An event's class is the engine's inputs or the rest (EngineInput).
func TestEventSubject(t *testing.T) {
	t.Parallel()
	for typ, want := range map[events.Type]string{
		events.RunApproved: "weft.events.in.r1", events.SignalAccepted: "weft.events.in.r1",
		events.StepScheduled: "weft.events.out.r1", events.SignalApplied: "weft.events.out.r1", events.RunCompleted: "weft.events.out.r1",
	} {
		subject, err := streams.EventSubject("r1", typ)
		require.NoError(t, err)
		require.Equal(t, want, subject, typ)
	}
	for _, bad := range []string{"", "a.b", "*", ">", "a b", "$x"} {
		_, err := streams.EventSubject(bad, events.RunApproved)
		require.ErrorIs(t, err, streams.ErrInvalidToken, "token %q", bad)
	}
}

func TestRunOfEventSubject(t *testing.T) {
	t.Parallel()
	for subject, what := range map[string]string{
		"weft.events.7.in.r1": "the stored form", "weft.events.0.out.r1": "the stored form",
		"weft.events.7.r1": "stored before classes", "weft.events.r1": "stored before partitions",
	} {
		runID, err := streams.RunOfEventSubject(subject)
		require.NoError(t, err, what)
		require.Equal(t, "r1", runID, what)
	}
	for _, bad := range []string{"weft.results.r1", "weft.events.", "weft.events", "weft.events.a.b", "weft.events.*",
		"weft.events.3.", "weft.events.3.a.b", "weft.events.-1.r1", "weft.events.in.r1", "weft.events.3.in.r1.x"} {
		_, err := streams.RunOfEventSubject(bad)
		require.Error(t, err, bad)
	}
}

func TestInboxReply(t *testing.T) {
	prefixes := []string{"_INBOX.", "_INBOX_worker."}
	for reply, want := range map[string]bool{
		"_INBOX.abc": true, "_INBOX_worker.x.y": true,
		"_INBOX.": false, "_INBOX_worker": false, "_INBOX_workerX.y": false,
		"weft.cancel.r1": false, "$JS.API.STREAM.PURGE.WEFT_RESULTS": false, "": false,
	} {
		require.Equal(t, want, streams.InboxReply(reply, prefixes), reply)
	}
}

// TestIngressSubjects: the gateway's fixed ingress subjects are concrete
// subjects, distinct, and outside every stream's subjects and prefix, so
// no stream captures a request and no ingress wildcard takes another's.
func TestIngressSubjects(t *testing.T) {
	t.Parallel()
	subjects := []string{streams.RunStartSubject, streams.PlanPushSubject, streams.PlanGetSubject, streams.ReconcileSubject}
	seen := map[string]bool{}
	for _, s := range subjects {
		require.NoError(t, streams.ValidSubject(s), s)
		require.False(t, seen[s], "%s is named twice", s)
		seen[s] = true
		for _, prefix := range []string{streams.EventsSubjectPrefix, streams.TasksSubjectPrefix, streams.ResultsSubjectPrefix,
			streams.CancelSubjectPrefix, streams.SignalSubjectPrefix, streams.TriggerSubjectPrefix} {
			require.False(t, strings.HasPrefix(s, prefix+"."), "%s is under %s", s, prefix)
		}
	}
}

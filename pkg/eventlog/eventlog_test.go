package eventlog_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/eventlog/eventlogtest"
	"github.com/weftrun/weft/pkg/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

func TestConformance(t *testing.T) {
	t.Parallel()
	eventlogtest.RunConformance(t, func(t *testing.T) eventlogtest.Log {
		db := weftest.NewDB(t)
		return eventlogtest.Log{Store: eventlog.New(db.Pool), Pool: db.Pool, Limited: func(n int) eventlog.Log {
			return eventlog.New(db.Pool, eventlog.WithMaxEventDataBytes(n))
		}}
	})
}

func TestAppendResultJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	b, err := json.Marshal(eventlog.AppendResult{RunSeq: 7, Idempotent: true, PersistedAt: at})
	require.NoError(t, err)
	require.JSONEq(t, `{"runSeq":7,"idempotent":true,"persisted":false,"persistedAt":"2026-01-02T03:04:05.000006Z"}`, string(b))
}

func TestConflictError(t *testing.T) {
	t.Parallel()
	var err error = &eventlog.ConflictError{RunID: "r", Expected: 1, Head: 2}
	require.ErrorIs(t, err, eventlog.ErrConflict)
	require.NotErrorIs(t, err, eventlog.ErrInvalidEvent)
	require.Contains(t, err.Error(), "head is 2, expected 1")
}

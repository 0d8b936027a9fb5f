package plan

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest/goldentest"
)

func TestTimeoutsMakeVersion2(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(`{"planId":"p","planVersion":"1","runTimeout":"1h","steps":[
		{"id":"a","activity":"echo","scheduleToStartTimeout":"30s","heartbeatTimeout":"10s"}]}`), Limits{})
	require.NoError(t, err)
	require.Equal(t, SchemaVersionExpressions, p.SchemaVersion)
	require.Equal(t, time.Hour, p.RunTimeout.Std())
	a, _ := p.Step("a")
	require.Equal(t, 30*time.Second, a.ScheduleToStartTimeout.Std())
	require.Equal(t, 10*time.Second, a.HeartbeatTimeout.Std())
	requireRoundTrip(t, p)

	plain := planWith(step("a"))
	plain.ApplyDefaults()
	require.Equal(t, 1, plain.SchemaVersion)
	for _, s := range []Step{{ID: "a", Activity: "echo", HeartbeatTimeout: Duration(time.Second)},
		{ID: "a", Activity: "echo", ScheduleToStartTimeout: Duration(time.Second)}} {
		q := planWith(s)
		q.ApplyDefaults()
		require.Equal(t, SchemaVersionExpressions, q.SchemaVersion)
	}
}

func TestTimeoutsRejected(t *testing.T) {
	t.Parallel()
	doc := func(version, planExtra, stepExtra string) []byte {
		return []byte(`{` + version + planExtra + `"planId":"p","planVersion":"1","steps":[
			{"id":"a","activity":"echo"` + stepExtra + `},{"id":"w","kind":"waitSignal","signal":"go"}]}`)
	}
	v1 := `"schemaVersion":1,`
	for name, c := range map[string]struct {
		doc         []byte
		code, field string
	}{
		"v1 runTimeout":       {doc(v1, `"runTimeout":"1m",`, ``), CodeFieldNotAllowed, "runTimeout"},
		"v1 heartbeat":        {doc(v1, ``, `,"heartbeatTimeout":"1s"`), CodeFieldNotAllowed, "heartbeatTimeout"},
		"v1 schedule-start":   {doc(v1, ``, `,"scheduleToStartTimeout":"1s"`), CodeFieldNotAllowed, "scheduleToStartTimeout"},
		"negative heartbeat":  {doc(``, ``, `,"heartbeatTimeout":"-1s"`), CodeMalformed, ""},
		"negative runTimeout": {doc(``, `"runTimeout":"-1s",`, ``), CodeMalformed, ""},
	} {
		_, err := Parse(c.doc, Limits{})
		pr := requireOnly(t, err, c.code)
		if c.field != "" {
			require.Contains(t, pr.Field, c.field, name)
		}
	}
	wait := planWith(step("a"), Step{ID: "w", Kind: KindWaitSignal, Signal: "go", HeartbeatTimeout: Duration(time.Second)})
	requireOnly(t, wait.Validate(Limits{}), CodeFieldNotAllowed)
	neg := planWith(Step{ID: "a", Activity: "echo", ScheduleToStartTimeout: Duration(-time.Second)})
	requireOnly(t, neg.Validate(Limits{}), CodeInvalidTimeout)
	negRun := planWith(step("a"))
	negRun.RunTimeout = Duration(-time.Second)
	requireOnly(t, negRun.Validate(Limits{}), CodeInvalidTimeout)
}

// TestPersistedGoldenPlanTimeouts: a plan with the timeouts, stored in
// RunApproved for the life of the run, is written byte for byte as
// testdata/persisted/Plan_timeouts.json holds it and read back to every
// field (docs/persisted-format.md). WEFT_UPDATE_GOLDEN=1 rewrites it.
func TestPersistedGoldenPlanTimeouts(t *testing.T) {
	t.Parallel()
	p := planWith(Step{ID: "fetch", Activity: "crawl", Timeout: Duration(30 * time.Minute),
		ScheduleToStartTimeout: Duration(5 * time.Minute), HeartbeatTimeout: Duration(time.Minute)})
	p.RunTimeout = Duration(2 * time.Hour)
	p.ApplyDefaults()
	goldentest.CheckAll(t, filepath.Join("testdata", "persisted"), []goldentest.Record{
		goldentest.JSON("Plan_timeouts", func(testing.TB) Plan { return *p }, *p, nil),
	})
}

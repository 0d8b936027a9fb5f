package admission_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/internal/testkit/metrictest"
	"github.com/weftrun/weft/pkg/weftest"
)

// An admission file in YAML, or the same in JSON, sets the default and
// each named environment's limit; {} sets none.
func TestParseFile(t *testing.T) {
	t.Parallel()
	want := admission.Limits{
		Default: admission.Limit{MaxConcurrentRuns: 50},
		PerEnvironment: map[string]admission.Limit{
			"prod":    {MaxConcurrentRuns: 2, Policy: admission.Reject, RetryAfter: 30 * time.Second},
			"staging": {MaxConcurrentRuns: 1, Policy: admission.Delay, DelayBy: 90 * time.Second},
			"dev":     {},
		},
	}
	yamlDoc := `
default:
  maxConcurrentRuns: 50
environments:
  prod: {maxConcurrentRuns: 2, policy: REJECT, retryAfter: 30s}
  staging:
    maxConcurrentRuns: 1
    policy: DELAY
    delayBy: 1m30s
  dev: {}
`
	jsonDoc := `{"default": {"maxConcurrentRuns": 50}, "environments": {
	  "prod": {"maxConcurrentRuns": 2, "policy": "REJECT", "retryAfter": "30s"},
	  "staging": {"maxConcurrentRuns": 1, "policy": "DELAY", "delayBy": "1m30s"}, "dev": {}}}`
	for _, doc := range []string{yamlDoc, jsonDoc} {
		got, err := admission.ParseFile([]byte(doc))
		require.NoError(t, err, doc)
		require.Equal(t, want, got)
	}
	for _, none := range []string{"{}", "# no limits yet\n{}\n", "environments: {}"} {
		got, err := admission.ParseFile([]byte(none))
		require.NoError(t, err)
		require.Equal(t, admission.Limits{}.For("x"), got.For("x"))
	}
}

// ParseFile refuses what it cannot apply exactly, naming the field and
// its line.
func TestParseFileRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, field, msg string }{
		{"defaults: {}", "defaults", "unknown field"},
		{"environments:\n  prod:\n    maxConcurentRuns: 2", "environments.prod.maxConcurentRuns (line 3)", "unknown field"},
		{"environments:\n  prod: {policy: REJCT}", "environments.prod.policy (line 2)", `"REJCT" is not REJECT, QUEUE or DELAY`},
		{"environments:\n  prod: {policy: reject}", "environments.prod.policy", "is not REJECT, QUEUE or DELAY"},
		{"default: {maxConcurrentRuns: -1}", "default.maxConcurrentRuns", "0 or more"},
		{"default: {maxConcurrentRuns: 2.5}", "default.maxConcurrentRuns", "whole number"},
		{`default: {maxConcurrentRuns: "2"}`, "default.maxConcurrentRuns", "whole number"},
		{"default: {retryAfter: 30}", "default.retryAfter", "not a duration"},
		{"default: {delayBy: -1s}", "default.delayBy", "not a duration"},
		{"default: {policy: }", "default.policy", "needs a value"},
		{"default: {policy: [REJECT]}", "default.policy", "needs a value"},
		{"default: 3", "default (line 1)", "must be a mapping"},
		{"environments: [prod]", "environments", "must be a mapping"},
		{"environments:\n  prod: {}\n  prod: {}", "environments.prod (line 3)", "set twice"},
		{`environments: {"": {}}`, "environments.", "name is empty"},
		{"- 1", "the document", "must be a mapping"},
		{"default: {}\n---\ndefault: {}", "the document", "more than one document"},
		{"default: {", "the document", "invalid YAML or JSON"},
		{"", "the document", "the file is empty"},
		{"# nothing\n", "the document", "the file is empty"},
	} {
		_, err := admission.ParseFile([]byte(c.doc))
		var fe *admission.FileError
		require.ErrorAs(t, err, &fe, c.doc)
		require.ErrorContains(t, err, "admission file: "+c.field, c.doc)
		require.ErrorContains(t, err, c.msg, c.doc)
	}
}

// A Limits with Live reads the limits of the moment, whatever copy of it
// a service holds.
func TestLiveLimits(t *testing.T) {
	t.Parallel()
	live := admission.NewLive(admission.Limits{Default: admission.Limit{MaxConcurrentRuns: 1}})
	held := admission.Limits{Default: admission.Limit{MaxConcurrentRuns: 9}, Live: live}
	require.Equal(t, 1, held.For("any").MaxConcurrentRuns, "Live wins over the value's own fields")
	live.Store(admission.Limits{PerEnvironment: map[string]admission.Limit{"any": {MaxConcurrentRuns: 3, Policy: admission.Reject}}})
	require.Equal(t, admission.Limit{MaxConcurrentRuns: 3, Policy: admission.Reject, RetryAfter: 5 * time.Second, DelayBy: 10 * time.Second}, held.For("any"))
	live.Store(admission.Limits{Default: admission.Limit{MaxConcurrentRuns: -1}})
	require.Error(t, held.Validate(), "Validate checks the live limits")
}

// A Watcher applies a changed file, keeps the last good limits when the
// file goes bad or away (logging and counting the failure), reloads on a
// hangup, and refuses to start from an invalid file.
func TestWatcherReloads(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "admission.yaml")
	write := func(doc string) { writeAtomically(t, path, doc) }
	write("default: {maxConcurrentRuns: 1}")
	logs := &weftest.Buffer{}
	w, err := admission.Watch(path, time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	lim := w.Limits()
	require.Equal(t, 1, lim.For("x").MaxConcurrentRuns)

	reader := sdkmetric.NewManualReader()
	ctx, cancel := context.WithCancel(t.Context())
	hangups := make(chan os.Signal)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), hangups) }()

	write("default: {maxConcurrentRuns: 2}")
	require.Eventually(t, func() bool { return lim.For("x").MaxConcurrentRuns == 2 }, time.Minute, time.Millisecond, "a changed file applies")

	write("default: {maxConcurrentRuns: 3, policy: DROP}")
	require.Eventually(t, func() bool { return reloadCount(t, reader, "failed") == 1 }, time.Minute, time.Millisecond)
	require.Equal(t, 2, lim.For("x").MaxConcurrentRuns, "a bad file keeps the last good limits")
	require.Contains(t, logs.String(), "default.policy")

	require.NoError(t, os.Remove(path))
	require.Eventually(t, func() bool { return reloadCount(t, reader, "failed") == 2 }, time.Minute, time.Millisecond)
	require.Equal(t, 2, lim.For("x").MaxConcurrentRuns, "a missing file keeps the last good limits")

	w2, err := admission.Watch(filepath.Join(t.TempDir(), "none.yaml"), -1, nil)
	require.Error(t, err)
	require.Nil(t, w2)
	write("default: {maxConcurrentRuns: 4}")
	hangups <- os.Interrupt // any value is a hangup
	require.Eventually(t, func() bool { return lim.For("x").MaxConcurrentRuns == 4 }, time.Minute, time.Millisecond)
	require.GreaterOrEqual(t, reloadCount(t, reader, "applied"), int64(2))

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	write("default: {delayBy: soon}")
	_, err = admission.Watch(path, 0, nil)
	require.ErrorContains(t, err, "default.delayBy")
	require.ErrorContains(t, err, path)
}

// A Watcher that does not poll reloads only when told to.
func TestWatcherReloadOnDemand(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "admission.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"environments": {"prod": {"maxConcurrentRuns": 1}}}`), 0o600))
	w, err := admission.Watch(path, -1, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(`{"environments": {"prod": {"maxConcurrentRuns": 5}}}`), 0o600))
	require.Equal(t, 1, w.Limits().For("prod").MaxConcurrentRuns)
	require.NoError(t, w.Reload(t.Context()))
	require.Equal(t, 5, w.Limits().For("prod").MaxConcurrentRuns)
	require.NoError(t, os.WriteFile(path, []byte(`{"environments": {"prod": {"maxConcurrentRuns": "many"}}}`), 0o600))
	require.ErrorContains(t, w.Reload(t.Context()), "environments.prod.maxConcurrentRuns")
	require.Equal(t, 5, w.Limits().For("prod").MaxConcurrentRuns)
}

// writeAtomically replaces the file at path with doc, as the docs advise:
// a watcher never reads it half written.
func writeAtomically(t *testing.T, path, doc string) {
	t.Helper()
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, []byte(doc), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// reloadCount is weft.admission.reloads{outcome} as reader sees it.
func reloadCount(t *testing.T, reader *sdkmetric.ManualReader, outcome string) int64 {
	t.Helper()
	return metrictest.Sum(t, reader, "weft.admission.reloads", "outcome", outcome)
}

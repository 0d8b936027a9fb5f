package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine"
)

// The reply subjects `weft engine` answers lookups on come from
// --reconcile-reply-prefixes or its variable, the engine's own by default;
// an empty entry or one with white space is refused before anything
// connects, naming the flag.
func TestEngineReconcileReplyPrefixesFlag(t *testing.T) {
	t.Parallel()
	const name = "weft engine --reconcile-reply-prefixes"
	env := &environment{stdout: &weftest.Buffer{}, stderr: &weftest.Buffer{}, getenv: envOf(nil)}
	f, opt := engineFlags(env)
	require.NoError(t, f.parse(nil))
	got, err := parseReplyPrefixes(*opt.replyPrefixes)
	require.NoError(t, err)
	require.Equal(t, engine.DefaultReconcileReplyPrefixes, got, "the default is the engine's")

	f, opt = engineFlags(env)
	require.NoError(t, f.parse([]string{"--reconcile-reply-prefixes", "_INBOX_worker., _INBOX_worker-gpu."}))
	got, err = parseReplyPrefixes(*opt.replyPrefixes)
	require.NoError(t, err)
	require.Equal(t, []string{"_INBOX_worker.", "_INBOX_worker-gpu."}, got)

	env.getenv = envOf(map[string]string{"WEFT_ENGINE_RECONCILE_REPLY_PREFIXES": "_INBOX_w."})
	f, opt = engineFlags(env)
	require.NoError(t, f.parse(nil))
	got, err = parseReplyPrefixes(*opt.replyPrefixes)
	require.NoError(t, err)
	require.Equal(t, []string{"_INBOX_w."}, got, "the variable sets it")

	for value, want := range map[string]string{
		"":                        name + ": entry 1 is empty",
		"_INBOX_worker.,,_INBOX.": name + ": entry 2 is empty",
		"_INBOX_worker.,":         name + ": entry 2 is empty",
		"_INBOX_ worker.":         name + `: "_INBOX_ worker." is not a subject prefix: it contains white space`,
	} {
		var out, errOut weftest.Buffer
		err := run(t.Context(), []string{"engine", "--reconcile-reply-prefixes", value}, &out, &errOut, envOf(nil))
		require.EqualError(t, err, want, "--reconcile-reply-prefixes %q", value)
	}
}

// A worker of queue Q connects as the NATS service worker-Q, so its inbox
// is _INBOX_worker-Q.>, the one deploy/nats.conf lets its user read and the
// engine answer on; the default queue's worker stays "worker".
func TestWorkerServiceFollowsItsQueue(t *testing.T) {
	t.Parallel()
	for queue, want := range map[string]string{"": "worker", "default": "worker", "batch": "worker-batch"} {
		require.Equal(t, want, workerService(queue), queue)
	}
	srv := weftest.NewNATS(t)
	nc, err := connectNATS(srv.URL(), workerService("batch"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	require.True(t, strings.HasPrefix(nc.NewRespInbox(), "_INBOX_worker-batch."), nc.NewRespInbox())
}

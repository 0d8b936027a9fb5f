package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/internal/boot/metrics"
	"github.com/weftrun/weft/internal/boot/metrics/metricstest"
	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/streams"
	gateway "github.com/weftrun/weft/services/signal-gateway"
)

// Issue 17, item 4: a request naming a stream's subject as its reply
// (`pub weft.signals.<id> --reply weft.results.<id>`) is dropped: it is
// not handled, nothing is published on the named subject, and the drop is
// counted. A request replying on an inbox is answered as before.
func TestIngressAnswersOnlyInboxes(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := setup(t, gateway.Config{MeterProvider: mp})
	runID := s.run(t)
	subject, err := streams.SignalSubject(runID)
	require.NoError(t, err)

	forged, err := s.nc.SubscribeSync("weft.>")
	require.NoError(t, err)
	for _, reply := range []string{"weft.results." + runID, "weft.events." + runID, "_INBOX", "INBOX.x"} {
		m := nats.NewMsg(subject)
		m.Reply = reply
		m.Header.Set("Authorization", "Bearer "+operatorToken)
		m.Data = []byte(`{"signalName":"go","signalId":"forged"}`)
		require.NoError(t, s.nc.PublishMsg(m))
	}
	require.NoError(t, s.nc.Flush())
	require.Eventually(t, func() bool {
		v, _ := metricstest.Get(t, h).Sum("weft_gateway_ingress_dropped_total", nil)
		return v == 4
	}, 10*time.Second, 10*time.Millisecond, "the four requests are dropped")

	// An inbox is answered; the dropped request was never accepted.
	status, body, hdr := s.request(t, subject, operatorToken, []byte(`{"signalName":"go","signalId":"forged"}`))
	require.Equal(t, http.StatusAccepted, status, "%s", body)
	require.Equal(t, "false", hdr.Get(gateway.HeaderDuplicate), "the dropped requests were not handled")
	for {
		msg, err := forged.NextMsg(0)
		if err != nil {
			break
		}
		require.NotEqual(t, "weft.results."+runID, msg.Subject, "no answer on a stream's subject")
		require.NotEqual(t, "weft.events."+runID, msg.Subject, "no answer on a stream's subject")
	}

	// The services' own inbox prefix is answered too.
	m := nats.NewMsg(subject)
	inbox := "_INBOX_client." + nats.NewInbox()[len("_INBOX."):]
	sub, err := s.nc.SubscribeSync(inbox)
	require.NoError(t, err)
	m.Reply = inbox
	m.Header.Set("Authorization", "Bearer "+operatorToken)
	m.Data = []byte(`{"signalName":"go","signalId":"service-inbox"}`)
	require.NoError(t, s.nc.PublishMsg(m))
	answer, err := sub.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "202", answer.Header.Get(gateway.HeaderStatus), "%s", answer.Data)
}

// A configured ReplyPrefixes replaces the defaults.
func TestIngressReplyPrefixesConfigured(t *testing.T) {
	t.Parallel()
	mp, h, err := metrics.New()
	require.NoError(t, err)
	s := setup(t, gateway.Config{MeterProvider: mp, ReplyPrefixes: []string{"replies.acme."}})
	start, err := json.Marshal(startBody("prefix-1"))
	require.NoError(t, err)

	sub, err := s.nc.SubscribeSync("replies.acme.1")
	require.NoError(t, err)
	m := nats.NewMsg(streams.RunStartSubject)
	m.Reply, m.Data = "replies.acme.1", start
	m.Header.Set("Authorization", "Bearer "+operatorToken)
	require.NoError(t, s.nc.PublishMsg(m))
	answer, err := sub.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "201", answer.Header.Get(gateway.HeaderStatus), "%s", answer.Data)

	m.Reply = nats.NewInbox() // _INBOX. is no longer a default
	require.NoError(t, s.nc.PublishMsg(m))
	require.Eventually(t, func() bool {
		v, _ := metricstest.Get(t, h).Sum("weft_gateway_ingress_dropped_total", nil)
		return v == 1
	}, 10*time.Second, 10*time.Millisecond)

	_, err = gateway.New(s.db.Pool, nil, gateway.Config{Keys: testKeys(t), ReplyPrefixes: []string{"weft.>"}})
	require.Error(t, err, "a wildcard is not a prefix")
	_, err = gateway.New(s.db.Pool, nil, gateway.Config{Keys: testKeys(t), MaxErrorMessageBytes: 15})
	require.Error(t, err, "an error cap below 16 bytes")
}

// A refusal echoes at most MaxErrorMessageBytes of its message and of
// each string detail, on NATS and REST, cut on a rune boundary.
func TestRefusalMessagesAreCapped(t *testing.T) {
	t.Parallel()
	const limit = 64
	s := setup(t, gateway.Config{MaxErrorMessageBytes: limit})

	long := strings.Repeat("é", 300) // a subject token of 600 bytes
	status, body, _ := s.request(t, streams.SignalSubjectPrefix+"."+long+".x", operatorToken, []byte(`{}`))
	require.Equal(t, http.StatusBadRequest, status)
	var e api.ErrorBody
	require.NoError(t, json.Unmarshal(body, &e))
	require.LessOrEqual(t, len(e.Error.Message), limit, e.Error.Message)
	require.True(t, utf8.ValidString(e.Error.Message))
	require.True(t, strings.HasSuffix(e.Error.Message, "…"), e.Error.Message)

	wide := setup(t, gateway.Config{})
	status, body, _ = wide.request(t, streams.SignalSubjectPrefix+"."+long+".x", operatorToken, []byte(`{}`))
	require.Equal(t, http.StatusBadRequest, status)
	require.NoError(t, json.Unmarshal(body, &e))
	require.LessOrEqual(t, len(e.Error.Message), gateway.DefaultMaxErrorMessageBytes, "the default cap")
	require.Greater(t, len(e.Error.Message), gateway.DefaultMaxErrorMessageBytes-len("é")-len("…"), "cut at the cap, not before")
	require.True(t, strings.HasSuffix(e.Error.Message, "…"), e.Error.Message)
}

package deploy

import (
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/streams"
)

// natsUsers are the users of nats.conf: the services, migrate and client.
var natsUsers = []string{"migrate", "relay", "engine", "worker", "projector", "gateway", "client"}

// loadNATSConf parses nats.conf as nats-server does, with each user's
// password variable set, and returns its users by name.
func loadNATSConf(t *testing.T) map[string]*server.User {
	t.Helper()
	for _, u := range natsUsers {
		t.Setenv("WEFT_NATS_"+strings.ToUpper(u)+"_PASSWORD", "pw-"+u)
	}
	opts, err := server.ProcessConfigFile("nats.conf")
	require.NoError(t, err)
	require.True(t, opts.JetStream)
	require.Equal(t, 4222, opts.Port)
	// Clients on the container's interfaces (compose reaches it as
	// nats:4222; compose.yaml publishes it on the host's loopback only);
	// monitoring on the container's loopback, for its healthcheck only.
	require.Equal(t, "0.0.0.0", opts.Host)
	require.Equal(t, "127.0.0.1", opts.HTTPHost)
	require.Equal(t, 8222, opts.HTTPPort)
	// JetStream reserves every stream's MaxBytes: Weft's streams and the
	// lanes streams of three task queues.
	var reserved int64
	for _, sc := range streams.All(streams.Config{}) {
		reserved += sc.MaxBytes
	}
	lanes, err := streams.TaskLanes(streams.Config{}, "default")
	require.NoError(t, err)
	reserved += 3 * lanes.MaxBytes
	require.GreaterOrEqual(t, opts.JetStreamMaxStore, reserved, "max_file_store holds Weft's streams and three queues' lanes")
	users := map[string]*server.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	return users
}

// match reports whether subject matches pattern with NATS wildcards: '*'
// is one token, '>' one or more to the end. A pattern may name a queue
// group after a space ("weft.runs.start weft-gateway").
func match(pattern, subject string) bool {
	pattern, _, _ = strings.Cut(pattern, " ")
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}

// allowed applies a permission as nats-server does: nil allows all; an
// allow list must match, a deny list must not.
func allowed(perm *server.SubjectPermission, subject string) bool {
	if perm == nil {
		return true
	}
	ok := perm.Allow == nil
	for _, p := range perm.Allow {
		ok = ok || match(p, subject)
	}
	for _, p := range perm.Deny {
		ok = ok && !match(p, subject)
	}
	return ok
}

func TestMatch(t *testing.T) {
	t.Parallel()
	require.True(t, match("weft.events.*", "weft.events.r1"))
	require.False(t, match("weft.events.*", "weft.events.r1.x"))
	require.False(t, match("weft.events.*", "weft.events"))
	require.True(t, match("$JS.ACK.S.C.>", "$JS.ACK.S.C.1.2.3"))
	require.False(t, match("$JS.ACK.S.C.>", "$JS.ACK.S.C"))
	require.True(t, match("weft.runs.start weft-gateway", "weft.runs.start"))
}

// nats.conf parses, every user has a password from its variable and
// permissions, and each may do what its service does and nothing more.
// topology_test.go runs the services with these users for real.
func TestNATSConfLeastPrivilege(t *testing.T) { // not parallel: t.Setenv, nats.conf reads the passwords from the environment
	users := loadNATSConf(t)
	require.Len(t, users, len(natsUsers))
	for _, name := range natsUsers {
		u := users[name]
		require.NotNil(t, u, name)
		require.Equal(t, "pw-"+name, u.Password, name)
		require.NotNil(t, u.Permissions, "%s has permissions", name)
		require.NotNil(t, u.Permissions.Publish, "%s: publish is restricted", name)
		require.NotNil(t, u.Permissions.Subscribe, "%s: subscribe is restricted", name)
		require.NotNil(t, u.Account, name)
		require.Equal(t, "WEFT", u.Account.Name, name)
	}

	type rule struct {
		user, subject string
		pub, sub      bool
	}
	rules := []rule{
		// Only migrate creates or changes streams; nobody deletes or purges.
		{"migrate", "$JS.API.STREAM.CREATE.WEFT_EVENTS", true, false},
		{"migrate", "$JS.API.STREAM.UPDATE.WEFT_RESULTS", true, false},
		{"migrate", "$JS.API.STREAM.DELETE.WEFT_EVENTS", false, false},
		{"migrate", "$JS.API.STREAM.CREATE.WEFT_CANCELS", true, false},
		// It lists the stream names, reads and updates any stream, to give
		// the engine's lanes streams and heartbeat bucket their replicas
		// (streams.Replicate).
		{"migrate", "$JS.API.STREAM.NAMES", true, false},
		{"migrate", "$JS.API.STREAM.LIST", false, false},
		{"migrate", "$JS.API.STREAM.INFO.WEFT_TASKS_default", true, false},
		{"migrate", "$JS.API.STREAM.INFO.KV_WEFT_HEARTBEATS", true, false},
		{"migrate", "$JS.API.STREAM.UPDATE.WEFT_TASKS_default", true, false},
		{"migrate", "$JS.API.STREAM.UPDATE.KV_WEFT_HEARTBEATS", true, false},
		{"migrate", "$JS.API.STREAM.CREATE.WEFT_TASKS_default", false, false}, // the engine makes it
		{"migrate", "$JS.API.STREAM.CREATE.KV_WEFT_HEARTBEATS", false, false},
		{"migrate", "$JS.API.STREAM.PURGE.WEFT_TASKS_default", false, false},
		{"migrate", "$JS.API.STREAM.DELETE.KV_WEFT_HEARTBEATS", false, false},
		{"migrate", "$JS.API.CONSUMER.DELETE.WEFT_TASKS_default.tasks-default~acme", false, false},
		{"migrate", "$JS.API.STREAM.MSG.GET.WEFT_TASKS_default", false, false},
		{"migrate", "weft.events.r1", false, false},
		{"migrate", "_INBOX_migrate.x.y", false, true},
		// The relay publishes events and tasks, nothing else.
		{"relay", "weft.events.in.r1", true, false}, // an event, by class (streams.EventSubject)
		{"relay", "weft.events.out.r1", true, false},
		{"relay", "weft.events.r1", true, false}, // an older build's outbox row
		{"relay", "weft.events.0.in.r1", false, false},
		{"relay", "weft.tasks.default", true, false},
		{"relay", "weft.tasks.default.acme", true, false}, // a tenant lane
		{"relay", "weft.cancel.r1", true, false},
		{"relay", "weft.results.r1", false, false},
		{"relay", "$JS.API.STREAM.UPDATE.WEFT_EVENTS", false, false},
		{"relay", "$JS.API.STREAM.INFO.WEFT_TASKS", true, false},
		{"relay", "$JS.API.INFO", true, false}, // "no stream" or "JetStream down" (docs/outbox.md)
		{"relay", "$JS.API.STREAM.LIST", false, false},
		{"relay", "_INBOX_relay.abc.1", false, true},
		{"relay", "_INBOX_engine.abc", false, false},
		{"relay", streams.ReconcileSubject, false, false},
		// The engine: its two consumers and cancel notices.
		{"engine", "$JS.API.CONSUMER.CREATE.WEFT_EVENTS.engine-events-3", true, false},
		{"engine", "$JS.API.CONSUMER.MSG.NEXT.WEFT_RESULTS.engine-results-15", true, false},
		{"engine", "$JS.API.CONSUMER.UNPIN.WEFT_RESULTS.engine-results-15", true, false},
		{"engine", "$JS.ACK.WEFT_EVENTS.engine-events-0.1.2.3.4.5.6.7", true, false},
		{"engine", "$JS.API.CONSUMER.CREATE.WEFT_TASKS.tasks-default", false, false},
		{"engine", "$JS.API.CONSUMER.CREATE.WEFT_EVENTS.projector.weft.events.*", false, false},
		{"engine", "$JS.API.CONSUMER.DELETE.WEFT_EVENTS.engine-events-0", false, false},
		{"engine", "weft.cancel.r1", false, false},                          // cancel notices come from the relay
		{"engine", "$JS.API.STREAM.CREATE.WEFT_TASKS_default", true, false}, // a queue's lanes stream
		{"engine", "$JS.API.STREAM.UPDATE.WEFT_TASKS_default", true, false},
		{"engine", "weft.events.r1", false, false},
		{"engine", "weft.tasks.default", false, false},
		// and answers reconciliation lookups, in its queue group, on the
		// workers' inboxes only (issue 36, finding 1).
		{"engine", streams.ReconcileSubject, false, true},
		{"engine", "_INBOX_worker.abc.1", true, false},
		{"engine", "_INBOX_worker-batch.abc.1", false, false}, // a queue's user is added with its inbox
		{"engine", "_INBOX.abc.1", false, false},              // the ingress callers'
		{"engine", "_INBOX_relay.abc.1", false, false},
		{"engine", "$JS.API.STREAM.PURGE.WEFT_RESULTS", false, false},
		// The worker: its queue's tasks, results, cancel notices.
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS.tasks-default.weft.tasks.default", true, false},
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS.tasks-default.weft.tasks.default.acme", false, false}, // lanes are in WEFT_TASKS_default
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS.tasks-default.weft.tasks.other", false, false},
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS.tasks-default", false, false}, // unfiltered: every queue
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS.tasks-other.weft.tasks.other", false, false},
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS.tasks-other.weft.tasks.default", false, false},
		{"worker", "$JS.API.CONSUMER.DURABLE.CREATE.WEFT_TASKS.tasks-other", false, false},
		{"worker", "$JS.API.CONSUMER.INFO.WEFT_TASKS.tasks-other", false, false},
		{"worker", "$JS.API.CONSUMER.MSG.NEXT.WEFT_TASKS.tasks-other", false, false},
		{"worker", "$JS.ACK.WEFT_TASKS.tasks-other.1.2.3", false, false},
		// Its tenant lanes, on its queue's lanes stream, and no other's.
		{"worker", "$JS.API.STREAM.INFO.WEFT_TASKS_default", true, false},
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS_default.tasks-default~acme.weft.tasks.default.acme", true, false},
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS_default.tasks-default~acme.weft.tasks.other.acme", false, false},
		{"worker", "$JS.API.CONSUMER.INFO.WEFT_TASKS_default.tasks-default~acme", true, false},
		{"worker", "$JS.API.CONSUMER.MSG.NEXT.WEFT_TASKS_default.tasks-default~acme", true, false},
		{"worker", "$JS.ACK.WEFT_TASKS_default.tasks-default~acme.1.2.3", true, false},
		{"worker", "$JS.API.STREAM.INFO.WEFT_TASKS_other", false, false},
		{"worker", "$JS.API.CONSUMER.CREATE.WEFT_TASKS_other.tasks-other~acme.weft.tasks.other.acme", false, false},
		{"worker", "$JS.API.CONSUMER.MSG.NEXT.WEFT_TASKS_other.tasks-other~acme", false, false},
		{"worker", "$JS.ACK.WEFT_TASKS_other.tasks-other~acme.1.2.3", false, false},
		{"worker", "$JS.API.STREAM.CREATE.WEFT_TASKS_default", false, false}, // the engine makes it
		{"worker", "$JS.API.CONSUMER.DELETE.WEFT_TASKS.tasks-default", false, false},
		{"worker", "$JS.API.STREAM.MSG.GET.WEFT_TASKS", false, false},
		{"worker", "$JS.ACK.WEFT_TASKS.tasks-default.1.2.3", true, false},
		{"worker", "weft.results.r1", true, false},
		{"worker", "weft.cancel.r1", false, true},
		{"worker", "$JS.API.DIRECT.GET.WEFT_CANCELS.weft.cancel.r1", true, false},
		{"worker", "$JS.API.DIRECT.GET.WEFT_EVENTS.weft.events.r1", false, false},
		{"worker", "weft.tasks.default", false, true}, // it watches its queue
		{"worker", "weft.tasks.default.acme", false, true},
		{"worker", "weft.tasks.other", false, false},
		{"worker", "weft.tasks.other.acme", false, false},
		{"worker", "weft.events.r1", false, false},
		{"worker", streams.ReconcileSubject, true, false},
		{"worker", "_INBOX_worker.abc.1", false, true},
		{"worker", "_INBOX_worker-batch.abc.1", false, false}, // another queue's worker's replies
		// The projector: its consumer of events.
		{"projector", "$JS.API.CONSUMER.CREATE.WEFT_EVENTS.projector.weft.events.*", true, false},
		{"projector", "$JS.ACK.WEFT_EVENTS.projector.1.2", true, false},
		{"projector", "$JS.ACK.WEFT_EVENTS.engine-events-0.1.2", false, false},
		{"projector", "weft.events.r1", false, false},
		// The gateway: its ingress, in its queue group; its answers on the
		// client's inboxes, never on a stream's subject (issue 17, item 4).
		{"gateway", "weft.runs.start", false, true},
		{"gateway", "weft.signals.r1", false, true},
		{"gateway", "weft.triggers.orders", false, true},
		{"gateway", streams.PlanPushSubject, false, true},
		{"gateway", streams.PlanGetSubject, false, true},
		{"gateway", "weft.events.r1", false, false},
		{"gateway", "weft.tasks.default", false, false},
		{"gateway", "weft.results.r1", false, false},
		{"gateway", "$JS.API.STREAM.INFO.WEFT_RESULTS", false, false},
		{"gateway", "_INBOX.x", true, false},
		{"gateway", "_INBOX_worker.x", false, false},
		// A caller of the ingress.
		{"client", "weft.runs.start", true, false},
		{"client", "weft.signals.r1", true, false},
		{"client", "weft.triggers.orders", true, false},
		{"client", "weft.triggers.orders.x", false, false},
		{"client", streams.PlanPushSubject, true, false},
		{"client", streams.PlanGetSubject, true, false},
		{"worker", streams.PlanPushSubject, false, false},
		{"engine", streams.PlanPushSubject, false, false},
		{"client", "weft.events.r1", false, false},
		{"client", "_INBOX.abc.1", false, true},
		{"client", "_INBOX_engine.abc.1", false, false},
		{"client", streams.ReconcileSubject, false, false},
		{"projector", streams.ReconcileSubject, false, false},
		// Only the relay and the engine read the account's info (the
		// engine as it creates the heartbeat bucket: nats.go's key-value
		// create reads it).
		{"engine", "$JS.API.INFO", true, false},
		{"engine", "$JS.API.DIRECT.GET.KV_WEFT_HEARTBEATS.$KV.WEFT_HEARTBEATS.r1.c3RlcA", true, false},
		{"worker", "$KV.WEFT_HEARTBEATS.r1.c3RlcA", true, false},
		{"worker", "$JS.API.DIRECT.GET.KV_WEFT_HEARTBEATS.$KV.WEFT_HEARTBEATS.r1.c3RlcA", true, false},
		{"worker", "$JS.API.STREAM.CREATE.KV_WEFT_HEARTBEATS", false, false},
		{"worker", "$JS.API.STREAM.DELETE.KV_WEFT_HEARTBEATS", false, false},
		{"worker", "$JS.API.INFO", false, false},
		{"projector", "$JS.API.INFO", false, false},
		{"gateway", "$JS.API.INFO", false, false},
		{"client", "$JS.API.INFO", false, false},
	}
	for _, r := range rules {
		p := users[r.user].Permissions
		require.Equal(t, r.pub, allowed(p.Publish, r.subject), "%s may publish %s", r.user, r.subject)
		require.Equal(t, r.sub, allowed(p.Subscribe, r.subject), "%s may subscribe to %s", r.user, r.subject)
	}
	// allow_responses would let the gateway answer on any reply subject,
	// past its deny list: it publishes its answers by its allow list.
	// The engine's likewise: it answers lookups by its allow list, on the
	// workers' inboxes.
	require.True(t, slices.Contains(users["engine"].Permissions.Subscribe.Allow,
		streams.ReconcileSubject+" "+streams.ReconcileQueue), "the engine serves lookups in its queue group")
	for _, name := range natsUsers {
		require.Nil(t, users[name].Permissions.Response, "%s answers by its allow list, not allow_responses", name)
	}
}

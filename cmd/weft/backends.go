package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/weftrun/weft/internal/boot/health"
	"github.com/weftrun/weft/pkg/periodic"
	"github.com/weftrun/weft/pkg/streams"
)

// streamsRetry is how often a service that does not create the streams
// looks for them again.
const streamsRetry = time.Second

// backendURLs are the --database-url and --nats-url of a service command.
type backendURLs struct{ db, nats *string }

// backendFlags adds --database-url and --nats-url to f.
func backendFlags(f *flags) backendURLs {
	return backendURLs{
		db:   f.string("database-url", "WEFT_DATABASE_URL", "Postgres connection URL"),
		nats: natsFlag(f),
	}
}

// natsFlag adds --nats-url and --nats-password-file to f. It returns the
// URL the service dials: --nats-url with the password of the file, when
// one is named, in each of its URLs.
func natsFlag(f *flags) *string {
	return natsFlagUsage(f, "NATS server URL; credentials may be given in it (nats://user:password@host:4222)")
}

// natsFlagUsage is natsFlag with usage as --nats-url's help.
func natsFlagUsage(f *flags, usage string) *string {
	t := &natsTarget{out: new(string)}
	f.Var(natsURLValue{t}, "nats-url", usage+envNote("WEFT_NATS_URL"))
	f.fromEnv("nats-url", "WEFT_NATS_URL")
	f.Var(natsPasswordFileValue{t}, "nats-password-file",
		"file holding the NATS password of the user --nats-url names (nats://user@host:4222), read once at start, "+
			"in place of a password in the URL; for secrets kept in files, not in the environment"+envNote("WEFT_NATS_PASSWORD_FILE"))
	f.fromEnv("nats-password-file", "WEFT_NATS_PASSWORD_FILE")
	return t.out
}

// streamOptions are the flags of a service that uses Weft's streams.
type streamOptions struct {
	// ensure creates or updates every stream at start; false waits for them.
	ensure bool
	// replicas is each stream's replica count (streams.Config.Replicas).
	replicas int
}

// streamFlags adds --ensure-streams and --stream-replicas to f.
func streamFlags(f *flags) *streamOptions {
	o := &streamOptions{}
	f.boolVar(&o.ensure, "ensure-streams", "WEFT_ENSURE_STREAMS", true,
		"create or update Weft's JetStream streams at start; false waits for them instead (created by `weft migrate --nats-url`), for a NATS user without stream admin rights")
	replicasFlag(f, &o.replicas)
	return o
}

// replicasFlag adds --stream-replicas to f. A count out of 1 to 5 fails
// the parse, before the command touches anything.
func replicasFlag(f *flags, p *int) {
	*p = streams.DefaultReplicas
	f.Var(replicasValue{p}, "stream-replicas",
		"copies of each JetStream stream, 1 to 5: 1 on one server, 3 on a 3-node cluster (docs/scaling.md)"+envNote("WEFT_STREAM_REPLICAS"))
	f.fromEnv("stream-replicas", "WEFT_STREAM_REPLICAS")
}

// replicasValue is --stream-replicas: an int that streams.Config accepts.
type replicasValue struct{ p *int }

func (v replicasValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}

func (v replicasValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not a number")
	}
	if n < 1 || n > 5 { // streams.Config takes 0 for its default
		return fmt.Errorf("%d replicas: a stream has 1 to 5", n)
	}
	*v.p = n
	return nil
}

// eventFormFlag adds --event-form to f, for a service that writes events
// (gateway, engine, dev). A form streams.ParseEventForm refuses fails the
// parse, before the command touches anything.
func eventFormFlag(f *flags, p *streams.EventForm) {
	*p = streams.EventFormBatch
	f.Var(eventFormValue{p}, "event-form",
		"bus messages of the events written: batch (a round's events of a run in one message) or event (one message per event, for subscribers that read no batch; docs/api.md, \"Subscribing to a run's events\")"+envNote("WEFT_EVENT_FORM"))
	f.fromEnv("event-form", "WEFT_EVENT_FORM")
}

// eventFormValue is --event-form: a streams.EventForm.
type eventFormValue struct{ p *streams.EventForm }

func (v eventFormValue) String() string {
	if v.p == nil {
		return ""
	}
	return string(*v.p)
}

func (v eventFormValue) Set(s string) error {
	form, err := streams.ParseEventForm(s)
	if err != nil {
		return err
	}
	*v.p = form
	return nil
}

// config is the streams' configuration the flags ask for.
func (o *streamOptions) config() streams.Config { return streams.Config{Replicas: o.replicas} }

// backends are a service's connections: Postgres (nil for a service that
// needs none) and NATS with its JetStream context.
type backends struct {
	pool *pgxpool.Pool
	nc   *nats.Conn
	js   jetstream.JetStream
}

// open dials NATS as service and opens the Postgres pool.
func (u backendURLs) open(ctx context.Context, service string) (*backends, error) {
	b, err := openNATS(*u.nats, service)
	if err != nil {
		return nil, err
	}
	if b.pool, err = openPool(ctx, *u.db); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// openNATS dials NATS as service, for a service that needs no Postgres.
func openNATS(url, service string) (*backends, error) {
	nc, err := connectNATS(url, service)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &backends{nc: nc, js: js}, nil
}

// close closes the pool and the NATS connection.
func (b *backends) close() {
	if b.pool != nil {
		b.pool.Close()
	}
	b.nc.Close()
}

// checks returns the readiness checks of b: Postgres when b has a pool,
// NATS, and each named stream.
func (b *backends) checks(streamNames ...string) []health.Check {
	var cs []health.Check
	if b.pool != nil {
		cs = append(cs, health.Postgres(b.pool))
	}
	cs = append(cs, health.NATS(b.nc))
	for _, name := range streamNames {
		cs = append(cs, health.Stream(b.js, name))
	}
	return cs
}

// streams makes sure the named streams exist before the service uses them:
// with o.ensure, it creates or updates all of Weft's streams; without, it
// waits until the named ones exist, or ctx ends.
func (b *backends) streams(ctx context.Context, o *streamOptions, logger *slog.Logger, names ...string) error {
	if o.ensure {
		if err := streams.Ensure(ctx, b.js, o.config()); err != nil {
			return fmt.Errorf("jetstream: %w (a NATS user without stream admin rights needs --ensure-streams=false)", err)
		}
		return nil
	}
	return awaitStreams(ctx, b.js, logger, names)
}

// awaitStreams returns once every named stream exists, looking again every
// streamsRetry; it returns ctx's error if ctx ends first. The first miss
// is logged with what creates the streams.
func awaitStreams(ctx context.Context, js jetstream.JetStream, logger *slog.Logger, names []string) error {
	logged := false
	for {
		missing, err := firstMissing(ctx, js, names)
		if err == nil && missing == "" {
			return nil
		}
		if !logged {
			logger.WarnContext(ctx, "waiting for Weft's JetStream streams: `weft migrate --nats-url` (or a service run with --ensure-streams) creates them",
				"stream", missing, "err", err)
			logged = true
		}
		if err := periodic.Sleep(ctx, streamsRetry); err != nil {
			return fmt.Errorf("waiting for stream %s: %w", missing, err)
		}
	}
}

// firstMissing returns the first of names that does not exist, or "".
func firstMissing(ctx context.Context, js jetstream.JetStream, names []string) (string, error) {
	for _, name := range names {
		_, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return name, nil
		}
		if err != nil {
			return name, err
		}
	}
	return "", nil
}

// connectNATS dials a connection named weft-<service> that reconnects
// forever and buffers no publish while disconnected, as the outbox relay
// requires. Its reply subjects start with _INBOX_<service>, so a NATS user
// may be allowed its own replies only (deploy/nats.conf). An empty url is
// an error that says how to set one.
func connectNATS(url, service string) (*nats.Conn, error) {
	if url == "" {
		return nil, errors.New("no NATS server: set WEFT_NATS_URL or --nats-url")
	}
	nc, err := nats.Connect(url,
		nats.Name("weft-"+service),
		nats.CustomInboxPrefix("_INBOX_"+service),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.ReconnectBufSize(-1),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s as %s: %w", redactNATS(url), service, err)
	}
	return nc, nil
}

// redactNATS hides the passwords in a NATS URL list before it is printed.
func redactNATS(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
			parts[i] = u.Redacted()
		} else {
			parts[i] = "<unparsable url>"
		}
	}
	return strings.Join(parts, ",")
}

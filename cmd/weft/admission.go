package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/weftrun/weft/internal/policy/admission"
	"github.com/weftrun/weft/pkg/startstop"
)

// admissionOptions are the admission file's flags, in `weft gateway`,
// `weft engine` and `weft dev`: each environment's limit of concurrent
// runs and its policy (docs/configuration.md, "Admission limits").
type admissionOptions struct {
	file     *string
	interval time.Duration
	// watcher keeps the file's limits; nil without a file. Set by open.
	watcher *admission.Watcher
}

// admissionFlags defines the admission flags on f.
func admissionFlags(f *flags) *admissionOptions {
	o := &admissionOptions{
		file: f.string("admission-file", "WEFT_ADMISSION_FILE",
			"YAML or JSON file of each environment's limit of concurrent runs and its policy, REJECT, QUEUE or DELAY (see \"Admission limits\" below); reloaded on SIGHUP and when its content changes; empty: no limits"),
	}
	f.durationVar(&o.interval, "admission-reload-interval", "WEFT_ADMISSION_RELOAD_INTERVAL", admission.DefaultWatchInterval,
		"how often the admission file is read for changes (negative: on SIGHUP only)")
	f.addSection(admissionHelp)
	return o
}

// admissionHelp is the section of the help that --admission-file's usage
// refers to; docs/configuration.md, "Admission limits", has every field.
const admissionHelp = `Admission limits:
  --admission-file names a YAML or JSON file of each environment's limit of
  concurrent runs, and what becomes of a run started into a full one:

    default:                  # every environment not under environments
      maxConcurrentRuns: 100  # 0: no limit
    environments:
      prod:
        maxConcurrentRuns: 20
        policy: REJECT        # refused with 429 Overloaded, nothing written
        retryAfter: 30s       # the Retry-After it answers (default 5s)
      batch:
        maxConcurrentRuns: 4  # policy QUEUE, the default: waits for a place
      staging:
        maxConcurrentRuns: 2
        policy: DELAY         # starts, but dispatches nothing for delayBy
        delayBy: 1m           # (default 10s)

  An unknown field, a bad value or an unreadable file stops the command
  from starting; a reload that fails keeps the last good limits. The gateway
  and the engine should read the same file. docs/configuration.md,
  "Admission limits", has every field.
`

// open loads the admission file, if one is named; an invalid file is an
// error naming the flag and the field at fault, so that a command refuses
// to start with it.
func (o *admissionOptions) open(logger *slog.Logger) error {
	if *o.file == "" {
		return nil
	}
	w, err := admission.Watch(*o.file, o.interval, logger)
	if err != nil {
		return fmt.Errorf("--admission-file: %w", err)
	}
	o.watcher = w
	return nil
}

// limits returns the limits to give the gateway's intake and the engine:
// the file's, following its reloads, or none without a file.
func (o *admissionOptions) limits() admission.Limits {
	if o.watcher == nil {
		return admission.Limits{}
	}
	return o.watcher.Limits()
}

// watch reloads the admission file on SIGHUP and when its content changes,
// counting reloads on mp, until ctx ends; without a file it returns nil
// at once.
func (o *admissionOptions) watch(ctx context.Context, mp metric.MeterProvider) error {
	if o.watcher == nil {
		return nil
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return o.watcher.Run(ctx, mp, hup)
}

// watchLoop is the watch of the admission file (watch) as a part of a
// stack, counting reloads on mp.
func (o *admissionOptions) watchLoop(mp metric.MeterProvider) *startstop.Loop {
	return &startstop.Loop{Run: func(ctx context.Context) error { return o.watch(ctx, mp) }}
}

// withAdmissionWatch runs service until it returns, with the admission
// file watched beside it.
func withAdmissionWatch(ctx context.Context, o *admissionOptions, mp metric.MeterProvider, service func(context.Context) error) error {
	watcher := o.watchLoop(mp)
	if err := watcher.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	err := service(ctx)
	if stopErr := watcher.Stop(context.WithoutCancel(ctx)); err == nil {
		err = stopErr
	}
	return err
}

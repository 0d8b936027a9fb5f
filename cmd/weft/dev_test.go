package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine"
)

// `weft dev` takes the engine's sweep flags, so that a developer can
// shorten lost-task recovery: they reach the dev engine's Config, and one
// out of its limits is refused before anything starts, naming `weft dev`'s
// flag.
func TestDevSweepFlags(t *testing.T) {
	t.Parallel()
	env := &environment{stdout: &weftest.Buffer{}, stderr: &weftest.Buffer{},
		getenv: envOf(map[string]string{"WEFT_ENGINE_TASK_GRACE": "5s"})}
	f, cfg := devFlags(env)
	require.NoError(t, f.parse([]string{"--sweep-interval", "2s", "--stall-after=7s", "--checkpoint-steps", "9"}))
	got, err := cfg.sweep.apply(cfg.checkpoints.apply(engine.Config{}))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{2 * time.Second, 7 * time.Second, 5 * time.Second},
		[]time.Duration{got.SweepInterval, got.StallAfter, got.TaskGrace})
	require.Equal(t, 9, got.CheckpointEverySteps, "the checkpoint flags still apply")

	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"dev", "--stall-after", "1ms"}, nil, "weft dev --stall-after: engine: StallAfter 1ms is outside its limits: at least 100ms"},
		{[]string{"dev"}, map[string]string{"WEFT_ENGINE_SWEEP_INTERVAL": "2h"}, "weft dev --sweep-interval: engine: SweepInterval 2h0m0s is outside its limits"},
	} {
		// Unreachable database and a taken-nothing setup: the refusal
		// must come before anything starts.
		vars := map[string]string{"WEFT_DEV_DIR": t.TempDir(), "WEFT_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
		for k, v := range c.env {
			vars[k] = v
		}
		var out, errOut weftest.Buffer
		err := run(t.Context(), c.args, &out, &errOut, envOf(vars))
		require.ErrorContains(t, err, c.want, "weft %v %v", c.args, c.env)
	}
}

// `weft dev --partitions` sets the partitions of the streams it creates,
// one by default (its one engine); one out of its limits is refused before
// anything starts.
func TestDevPartitionsFlag(t *testing.T) {
	t.Parallel()
	env := &environment{stdout: &weftest.Buffer{}, stderr: &weftest.Buffer{}, getenv: envOf(nil)}
	f, cfg := devFlags(env)
	require.NoError(t, f.parse(nil))
	require.Equal(t, 1, cfg.partitions)
	vars := map[string]string{"WEFT_DEV_DIR": t.TempDir(), "WEFT_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
	var out, errOut weftest.Buffer
	err := run(t.Context(), []string{"dev", "--partitions", "300"}, &out, &errOut, envOf(vars))
	require.ErrorContains(t, err, "weft dev --partitions: ")
	require.ErrorContains(t, err, "300")
}

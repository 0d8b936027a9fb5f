package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine"
)

// The sweep timings of `weft engine` come from flags or variables and
// reach the engine's Config; one out of its limits is refused before
// anything connects, naming its flag and its limits.
func TestEngineSweepFlags(t *testing.T) {
	t.Parallel()
	env := &environment{stdout: &weftest.Buffer{}, stderr: &weftest.Buffer{},
		getenv: envOf(map[string]string{"WEFT_ENGINE_TASK_GRACE": "5s"})}
	f, opt := engineFlags(env)
	require.NoError(t, f.parse([]string{"--sweep-interval", "2s", "--stall-after=7s"}))
	cfg, err := opt.sweep.apply(engine.Config{})
	require.NoError(t, err)
	require.Equal(t, []time.Duration{2 * time.Second, 7 * time.Second, 5 * time.Second},
		[]time.Duration{cfg.SweepInterval, cfg.StallAfter, cfg.TaskGrace})

	f, opt = engineFlags(env)
	require.NoError(t, f.parse(nil))
	cfg, err = opt.sweep.apply(engine.Config{})
	require.NoError(t, err)
	require.Equal(t, engine.DefaultSweepInterval, cfg.SweepInterval, "the default is the engine's")

	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"engine", "--stall-after", "1ms"}, nil, "weft engine --stall-after: engine: StallAfter 1ms is outside its limits: at least 100ms"},
		{[]string{"engine", "--sweep-interval", "2h"}, nil, "--sweep-interval: engine: SweepInterval 2h0m0s is outside its limits"},
		{[]string{"engine"}, map[string]string{"WEFT_ENGINE_TASK_GRACE": "-1s"}, "--task-grace: engine: TaskGrace -1s"},
		{[]string{"engine", "--round-linger", "51ms"}, nil, "weft engine --round-linger: engine: RoundLinger 51ms is outside its limits"},
		{[]string{"engine"}, map[string]string{"WEFT_ENGINE_STALL_AFTER": "soon"}, `WEFT_ENGINE_STALL_AFTER="soon"`},
	} {
		var out, errOut weftest.Buffer
		err := run(t.Context(), c.args, &out, &errOut, envOf(c.env))
		require.ErrorContains(t, err, c.want, "weft %v %v", c.args, c.env)
	}
}

package round_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/weftrun/weft/pkg/eventlog"
	"github.com/weftrun/weft/pkg/journal"
	"github.com/weftrun/weft/pkg/weftest"
	"github.com/weftrun/weft/services/engine/internal/round"
)

func TestMain(m *testing.M) { weftest.Main(m) }

// newRunner returns a Runner over pool with cfg, its event log and
// journal built as the engine builds them.
func newRunner(pool *pgxpool.Pool, cfg round.Config) *round.Runner {
	log := eventlog.New(pool)
	return round.New(pool, log, journal.New(log), cfg)
}

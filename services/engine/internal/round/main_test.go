package round_test

import (
	"testing"

	"github.com/weftrun/weft/internal/testkit/weftest"
)

func TestMain(m *testing.M) { weftest.Main(m) }

package expr_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftrun/weft/pkg/plan/expr"
)

// Plans compile at once in the gateway and the engine. cel-go's checker
// initialises its symbol catalog lazily, on the first reference to an
// undeclared name, while a comprehension's check reads it: the first such
// pair of compilations in a fresh environment must not race (run under
// -race). Each round takes an environment of its own (a new variable
// name) and starts both compilations together.
func TestConcurrentCompiles(t *testing.T) {
	t.Parallel()
	for round := range 30 {
		name := fmt.Sprintf("event%d", round)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			_, problems := expr.CompileVarValue(name, "nope + 1", "input", expr.Limits{})
			require.Len(t, problems, 1)
		})
		wg.Go(func() {
			<-start
			_, problems := expr.CompileVarValue(name, name+".items.exists(x, x > 1)", "input", expr.Limits{})
			require.Empty(t, problems)
		})
		close(start)
		wg.Wait()
	}
}

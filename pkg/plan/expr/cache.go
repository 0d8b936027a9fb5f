package expr

import (
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
)

// maxCachedPrograms bounds the compiled expressions kept; the cache is
// emptied when it is full.
const maxCachedPrograms = 4096

// programs caches the compiled expressions that compiled without a
// problem, by everything their compilation depends on: the source, the
// scope, the cost budget and the type check. Runs of one plan evaluate
// the same expressions, and compiling one (parse, type-check, plan) costs
// far more than evaluating it. A cel.Program is safe for concurrent use.
var programs = struct {
	sync.Mutex
	m map[string]cel.Program
}{m: map[string]cel.Program{}}

// programKey is the cache key of src compiled by c with the check named
// check.
func (c *compiler) programKey(src, check string) string {
	var b strings.Builder
	b.WriteString(check)
	b.WriteByte(0)
	b.WriteString(strconv.FormatBool(c.scope.ForEach))
	b.WriteByte(0)
	b.WriteString(strconv.FormatUint(c.lim.CostBudget, 10))
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(c.lim.MaxExpressionBytes))
	b.WriteByte(0)
	b.WriteString(typedKey(c.scope))
	for _, a := range c.scope.Ancestors {
		b.WriteByte(0)
		b.WriteString(a)
	}
	b.WriteByte(1)
	b.WriteString(src)
	return b.String()
}

func cachedProgram(key string) (cel.Program, bool) {
	programs.Lock()
	defer programs.Unlock()
	p, ok := programs.m[key]
	return p, ok
}

func cacheProgram(key string, p cel.Program) {
	programs.Lock()
	defer programs.Unlock()
	if len(programs.m) >= maxCachedPrograms {
		programs.m = map[string]cel.Program{}
	}
	programs.m[key] = p
}

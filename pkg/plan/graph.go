package plan

import (
	"container/heap"
	"slices"
	"strings"
)

// graph is the dependency graph of a plan over step indices. An id used by
// several steps resolves to its first step; unknown dependencies, self
// dependencies and repeats are left out (Validate reports them).
type graph struct {
	ids   []string
	index map[string]int
	deps  [][]int // deps[i]: what step i depends on, in declared order
	rdeps [][]int // rdeps[i]: the steps that depend on step i, ascending
}

func newGraph(p *Plan) *graph {
	n := len(p.Steps)
	g := &graph{
		ids:   make([]string, n),
		index: make(map[string]int, n),
		deps:  make([][]int, n),
		rdeps: make([][]int, n),
	}
	for i := range p.Steps {
		g.ids[i] = p.Steps[i].ID
		if _, dup := g.index[g.ids[i]]; !dup {
			g.index[g.ids[i]] = i
		}
	}
	for i := range p.Steps {
		for _, dep := range p.Steps[i].DependsOn {
			j, ok := g.index[dep]
			if !ok || j == i || slices.Contains(g.deps[i], j) {
				continue
			}
			g.deps[i] = append(g.deps[i], j)
			g.rdeps[j] = append(g.rdeps[j], i)
		}
	}
	return g
}

// TopoOrder returns the step ids in an order where every step comes after
// the steps it depends on: Kahn's algorithm, taking among the steps that
// are ready the one declared first. The order is deterministic.
//
// For a valid plan it lists every step. For an invalid one it never panics
// and lists only the steps that can be ordered: steps on a dependency cycle,
// and steps after one, are left out.
func (p *Plan) TopoOrder() []string {
	g := newGraph(p)
	return g.names(g.topo())
}

// topo returns Kahn's order of the step indices, smallest ready index first.
func (g *graph) topo() []int {
	waiting := make([]int, len(g.ids))
	ready := &intHeap{}
	for i, deps := range g.deps {
		waiting[i] = len(deps)
		if waiting[i] == 0 {
			ready.items = append(ready.items, i) // ascending, so a valid heap
		}
	}
	order := make([]int, 0, len(g.ids))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, j := range g.rdeps[i] {
			if waiting[j]--; waiting[j] == 0 {
				heap.Push(ready, j)
			}
		}
	}
	return order
}

// Dependants returns the ids of every step that depends on step id,
// directly or transitively, in TopoOrder's order: the steps to skip when
// id fails for good. It returns nil for an unknown id or a step nothing
// depends on. On an invalid plan, steps that TopoOrder leaves out follow in
// declaration order.
func (p *Plan) Dependants(id string) []string {
	g := newGraph(p)
	return g.reach(id, g.rdeps)
}

// Ancestors returns the ids of every step that step id depends on,
// directly or transitively, in TopoOrder's order: the steps whose results
// its expressions may read. It returns nil for an unknown id or a step
// with no dependencies.
func (p *Plan) Ancestors(id string) []string {
	g := newGraph(p)
	return g.reach(id, g.deps)
}

// reach returns the steps reached from step id along edges, id itself
// left out, in topological order, then those topo leaves out in
// declaration order.
func (g *graph) reach(id string, edges [][]int) []string {
	start, ok := g.index[id]
	if !ok {
		return nil
	}
	reached := make([]bool, len(g.ids))
	stack := []int{start}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, j := range edges[i] {
			if !reached[j] {
				reached[j] = true
				stack = append(stack, j)
			}
		}
	}
	reached[start] = false
	var out []int
	for _, i := range g.topo() {
		if reached[i] {
			out = append(out, i)
			reached[i] = false
		}
	}
	for i, r := range reached {
		if r {
			out = append(out, i)
		}
	}
	return g.names(out)
}

func (g *graph) names(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = g.ids[i]
	}
	return out
}

// cycles returns one cycle per strongly connected component of more than
// one step, as the ids along dependsOn edges from the component's
// first-declared step back to it ("a", "b", "a"), ordered by that step.
func (g *graph) cycles() [][]string {
	t := tarjan{g: g, num: make([]int, len(g.ids)), low: make([]int, len(g.ids)), on: make([]bool, len(g.ids))}
	for i := range g.ids {
		if t.num[i] == 0 {
			t.connect(i)
		}
	}
	var starts []int
	for _, scc := range t.sccs {
		if len(scc) > 1 {
			starts = append(starts, slices.Min(scc))
		}
	}
	slices.Sort(starts)
	out := make([][]string, 0, len(starts))
	for _, s := range starts {
		out = append(out, g.names(g.cycleFrom(s, t.comp)))
	}
	return out
}

// cycleFrom returns a simple cycle through start within start's component,
// found by depth-first search along dependsOn edges in declared order, with
// start repeated at the end.
func (g *graph) cycleFrom(start int, comp []int) []int {
	visited := map[int]bool{start: true}
	path := []int{start}
	var dfs func(i int) bool
	dfs = func(i int) bool {
		for _, j := range g.deps[i] {
			if j == start {
				return true
			}
			if comp[j] != comp[start] || visited[j] {
				continue
			}
			visited[j] = true
			path = append(path, j)
			if dfs(j) {
				return true
			}
			path = path[:len(path)-1]
		}
		return false
	}
	dfs(start)
	return append(path, start)
}

// tarjan finds strongly connected components (Tarjan, 1972). num[i] is the
// 1-based visit number of step i (0: not yet visited).
type tarjan struct {
	g     *graph
	next  int
	num   []int
	low   []int
	on    []bool
	stack []int
	sccs  [][]int
	comp  []int // comp[i]: index into sccs of step i's component
}

func (t *tarjan) connect(i int) {
	t.next++
	t.num[i], t.low[i] = t.next, t.next
	t.stack = append(t.stack, i)
	t.on[i] = true
	for _, j := range t.g.deps[i] {
		switch {
		case t.num[j] == 0:
			t.connect(j)
			t.low[i] = min(t.low[i], t.low[j])
		case t.on[j]:
			t.low[i] = min(t.low[i], t.num[j])
		}
	}
	if t.low[i] != t.num[i] {
		return
	}
	if t.comp == nil {
		t.comp = make([]int, len(t.g.ids))
	}
	var scc []int
	for {
		j := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.on[j] = false
		t.comp[j] = len(t.sccs)
		scc = append(scc, j)
		if j == i {
			break
		}
	}
	t.sccs = append(t.sccs, scc)
}

// formatCycle renders a cycle as a → b → c → a, quoting ids that break the
// id rules.
func formatCycle(ids []string) string {
	parts := make([]string, len(ids))
	for k, id := range ids {
		parts[k] = id
		if id == "" || idProblem(id, len(id)) != "" {
			parts[k] = quote(id)
		}
	}
	return strings.Join(parts, " → ")
}

// intHeap is a min-heap of step indices.
type intHeap struct{ items []int }

func (h *intHeap) Len() int           { return len(h.items) }
func (h *intHeap) Less(a, b int) bool { return h.items[a] < h.items[b] }
func (h *intHeap) Swap(a, b int)      { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *intHeap) Push(x any)         { h.items = append(h.items, x.(int)) }
func (h *intHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

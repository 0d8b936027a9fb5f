package plan

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCycles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		steps  []Step
		cycles map[string]string // start step → message
	}{
		{
			name:   "two-cycle",
			steps:  []Step{step("a", "b"), step("b", "a")},
			cycles: map[string]string{"a": "dependency cycle: a → b → a (each step depends on the next)"},
		},
		{
			name:   "long cycle",
			steps:  []Step{step("root"), step("a", "root", "e"), step("b", "a"), step("c", "b"), step("d", "c"), step("e", "d")},
			cycles: map[string]string{"a": "dependency cycle: a → e → d → c → b → a (each step depends on the next)"},
		},
		{
			name:   "cycle not reachable from a root",
			steps:  []Step{step("root"), step("next", "root"), step("x", "z"), step("y", "x"), step("z", "y")},
			cycles: map[string]string{"x": "dependency cycle: x → z → y → x (each step depends on the next)"},
		},
		{
			name:   "two separate cycles",
			steps:  []Step{step("a", "b"), step("b", "a"), step("c", "d"), step("d", "c")},
			cycles: map[string]string{"a": "dependency cycle: a → b → a (each step depends on the next)", "c": "dependency cycle: c → d → c (each step depends on the next)"},
		},
		{
			name:   "figure eight is one component, reported once",
			steps:  []Step{step("a", "b", "c"), step("b", "a"), step("c", "a")},
			cycles: map[string]string{"a": "dependency cycle: a → b → a (each step depends on the next)"},
		},
		{
			name:   "downstream of a cycle is not itself a cycle",
			steps:  []Step{step("a", "b"), step("b", "a"), step("after", "a")},
			cycles: map[string]string{"a": "dependency cycle: a → b → a (each step depends on the next)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := planWith(tt.steps...).Validate(Limits{})
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			got := map[string]string{}
			for _, p := range ve.Problems {
				require.Equal(t, CodeCycle, p.Code, "only cycles: %v", p)
				require.Equal(t, "dependsOn", p.Field)
				got[p.StepID] = p.Message
			}
			require.Equal(t, tt.cycles, got)
			for id := range tt.cycles {
				requireProblem(t, err, CodeCycle, id)
			}
		})
	}
}

func TestSelfDependencyIsNotACycle(t *testing.T) {
	t.Parallel()
	err := planWith(step("a", "a")).Validate(Limits{})
	requireOnly(t, err, CodeSelfDependency)
}

func TestTopoOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps []Step
		want  []string
	}{
		{"declaration order when independent", []Step{step("c"), step("a"), step("b")}, []string{"c", "a", "b"}},
		{"dependencies first", []Step{step("c", "b"), step("b", "a"), step("a")}, []string{"a", "b", "c"}},
		{"ready ties by declaration order", []Step{step("z"), step("y", "z"), step("x"), step("w", "x", "y")}, []string{"z", "y", "x", "w"}},
		{"diamond", []Step{step("d", "b", "c"), step("c", "a"), step("b", "a"), step("a")}, []string{"a", "c", "b", "d"}},
		{"a step freed late goes by its index", []Step{step("slow"), step("late", "slow"), step("early")}, []string{"slow", "late", "early"}},
		{"cycle left out", []Step{step("a"), step("b", "c"), step("c", "b"), step("d", "b")}, []string{"a"}},
		{"unknown dependency ignored", []Step{step("a", "zz"), step("b", "a")}, []string{"a", "b"}},
		{"empty", nil, []string(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := planWith(tt.steps...)
			require.Equal(t, tt.want, p.TopoOrder())
			for range 5 {
				require.Equal(t, tt.want, p.TopoOrder(), "deterministic")
			}
		})
	}
}

func TestTopoOrderRespectsEveryEdge(t *testing.T) {
	t.Parallel()
	// A layered DAG where every step depends on up to three earlier ones,
	// declared in reverse so declaration order alone would be wrong.
	var steps []Step
	for i := 199; i >= 0; i-- {
		var deps []string
		for _, d := range []int{i - 1, i - 7, i - 31} {
			if d >= 0 {
				deps = append(deps, fmt.Sprint("s", d))
			}
		}
		steps = append(steps, step(fmt.Sprint("s", i), deps...))
	}
	p := planWith(steps...)
	require.NoError(t, p.Validate(Limits{}))
	order := p.TopoOrder()
	require.Len(t, order, len(steps))
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	for _, s := range steps {
		for _, d := range s.DependsOn {
			require.Less(t, pos[d], pos[s.ID], "%s depends on %s", s.ID, d)
		}
	}
}

func TestDependants(t *testing.T) {
	t.Parallel()
	p := planWith(
		step("a"), step("b", "a"), step("c", "a"), step("d", "c"), step("e", "b", "d"), step("f"),
	)
	tests := []struct {
		id   string
		want []string
	}{
		{"a", []string{"b", "c", "d", "e"}},
		{"c", []string{"d", "e"}},
		{"b", []string{"e"}},
		{"e", nil},
		{"f", nil},
		{"unknown", nil},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, p.Dependants(tt.id), tt.id)
	}

	cyclic := planWith(step("a"), step("b", "a", "c"), step("c", "b"), step("d", "a"))
	require.Equal(t, []string{"d", "b", "c"}, cyclic.Dependants("a"), "ordered steps first, then the rest by declaration")
	require.Equal(t, []string{"c"}, cyclic.Dependants("b"), "a step on a cycle is not its own dependant")
}

func TestRootsAndStep(t *testing.T) {
	t.Parallel()
	p := planWith(step("a"), step("b", "a"), step("c"))
	require.Equal(t, []string{"a", "c"}, p.Roots())
	s, ok := p.Step("b")
	require.True(t, ok)
	require.Same(t, &p.Steps[1], s)
	_, ok = p.Step("zz")
	require.False(t, ok)
	require.Nil(t, planWith().Roots())
}

package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// ParseValidated holds the plan Parse returns, in the encoding
// json.Marshal gives it: the bytes RunApproved persists, the same as when
// the approval applied the defaults again and encoded the plan itself.
func TestParseValidatedHoldsTheParsedPlansEncoding(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"hello.yaml", "fanout.json", "gate.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		p, err := Parse(data, Limits{})
		require.NoError(t, err)
		p.ApplyDefaults()
		want, err := json.Marshal(p)
		require.NoError(t, err)

		v, err := ParseValidated(data, Limits{})
		require.NoError(t, err, file)
		require.False(t, v.IsZero())
		require.Equal(t, string(want), string(v.JSON()), file)
		require.Equal(t, p.PlanID, v.PlanID())
		require.Equal(t, p.PlanVersion, v.PlanVersion())
	}
}

// Plan.Validated gives a plan built in Go its defaults, as Parse would,
// and the Validated does not follow later changes to the plan.
func TestPlanValidatedAppliesDefaultsAndIsFixed(t *testing.T) {
	t.Parallel()
	p := &Plan{PlanID: "p", PlanVersion: "1", Steps: []Step{{ID: "a", Activity: "echo"}}}
	v, err := p.Validated(Limits{})
	require.NoError(t, err)
	require.Equal(t, DefaultQueue, p.Steps[0].Queue, "defaults are applied in place")
	want, err := json.Marshal(p)
	require.NoError(t, err)
	require.Equal(t, string(want), string(v.JSON()))

	p.PlanID, p.Steps[0].Activity = "other", "changed"
	require.Equal(t, "p", v.PlanID())
	require.Equal(t, string(want), string(v.JSON()))
	parsed, err := Parse(v.JSON(), Limits{})
	require.NoError(t, err)
	require.Equal(t, "echo", parsed.Steps[0].Activity)
}

// An invalid plan, or one over the limits, is no Validated.
func TestValidatedRefusesInvalidPlans(t *testing.T) {
	t.Parallel()
	v, err := (&Plan{PlanID: "p", PlanVersion: "1"}).Validated(Limits{})
	requireOnly(t, err, CodeEmptyPlan)
	require.True(t, v.IsZero())

	two := &Plan{PlanID: "p", PlanVersion: "1", Steps: []Step{{ID: "a", Activity: "echo"}, {ID: "b", Activity: "echo"}}}
	v, err = two.Validated(Limits{MaxSteps: 1})
	requireOnly(t, err, CodeTooManySteps)
	require.True(t, v.IsZero())

	v, err = ParseValidated([]byte(`{"planId":"p"}`), Limits{})
	requireProblem(t, err, CodeMissingField, "")
	require.True(t, v.IsZero())
	require.True(t, Validated{}.IsZero())
}

// Holding a Validated proves its plan was validated because no code
// outside this package can fill one in: every field is unexported, so a
// composite literal elsewhere can make only the zero value, which holds no
// plan. This pins that structure; a field made exported fails here.
func TestValidatedHasNoExportedFields(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[Validated]()
	require.Positive(t, typ.NumField())
	for f := range typ.Fields() {
		require.False(t, f.IsExported(), "Validated.%s is exported: code outside pkg/plan could fill in a plan nobody validated", f.Name)
	}
}

package intake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/events"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/strictjson"
)

// startProblems checks every field of a start and its plan, and returns
// the plan when it parsed, validated (plan.ParseValidated) and fits the
// start's input (plan.Validated.CheckInput), and the
// problems of every field at fault, in the order of the request's fields:
// a request missing three fields is told of the three at once. planId and planVersion are held to the plan's own when it
// parsed, and, unless refFromPlan says they were read from the plan (a
// schedule's or trigger's start), are required when there is no plan to
// compare them with. The input is held to the plan's input schema
// (inputProblems), an absent one as JSON null, except under refFromPlan,
// where an absent input is one not known yet (a trigger's, which each
// event gives) and is not checked. The labels are held to
// api.CheckLabels, each problem at its label's path ("labels.team").
func (in *Intake) startProblems(req api.StartRunRequest, refFromPlan bool) (plan.Validated, []api.Problem) {
	var ps []api.Problem
	for _, f := range []struct{ name, value string }{
		{"tenantId", req.TenantID}, {"projectId", req.ProjectID}, {"environmentId", req.EnvironmentID},
	} {
		ps = appendField(ps, f.name, f.value, plan.CheckID(f.value, 0))
	}
	ps = appendField(ps, "runRequestId", req.RunRequestID, plan.CheckName(req.RunRequestID, 0))
	if req.PlanRef != nil { // the gateway resolves it (registry) before intake
		ps = append(ps, problem("planRef", api.ProblemInvalid, "is not taken here: this start must carry its plan"))
	}
	hasPlan := len(bytes.TrimSpace(req.Plan)) > 0 && !bytes.Equal(bytes.TrimSpace(req.Plan), []byte("null"))
	if !hasPlan && !refFromPlan {
		ps = appendField(ps, "planId", req.PlanID, nil)
		ps = appendField(ps, "planVersion", req.PlanVersion, nil)
	}
	for _, f := range []struct {
		name string
		doc  []byte
	}{{"input", req.Input}, {"plan", req.Plan}} {
		if strictjson.HasNULEscape(f.doc) {
			ps = append(ps, problem(f.name, api.ProblemInvalid, `must not contain the escape \u0000 (Postgres jsonb cannot hold it)`))
		}
	}
	ps = append(ps, api.CheckLabels(req.Labels)...)
	pl, pps := in.planProblems(req.Plan, hasPlan, req.Input)
	if len(pps) > 0 {
		return plan.Validated{}, append(ps, pps...)
	}
	ps = appendPlanRef(ps, "planId", req.PlanID, pl.PlanID())
	ps = appendPlanRef(ps, "planVersion", req.PlanVersion, pl.PlanVersion())
	ps = append(ps, priorityProblems(req.Priority)...)
	if len(req.Input) > 0 || !refFromPlan {
		ps = append(ps, inputProblems(pl, req.Input)...)
		if len(ps) == 0 {
			ps = runKeyProblems(pl, req)
		}
	}
	return pl, ps
}

// inputProblems returns the problems of input against pl's input schema
// (plan.Validated.CheckInputSchema), each at the path of the value at
// fault from the request's input ("input.lines[0].sku", inputPath), with
// code plan.CodeInputMismatch, the schema keyword it breaks, and a
// message led by that keyword ("minimum: …").
func inputProblems(pl plan.Validated, input []byte) []api.Problem {
	found := pl.CheckInputSchema(input)
	if len(found) == 0 {
		return nil
	}
	var doc any
	_ = json.Unmarshal(input, &doc) // a start's input is valid JSON by now; nil reads as no arrays
	out := make([]api.Problem, len(found))
	for i, f := range found {
		out[i] = api.Problem{Path: inputPath(doc, f.Pointer), Code: plan.CodeInputMismatch, Keyword: f.Keyword,
			Message: f.Keyword + ": " + f.Message}
	}
	return out
}

// inputPath renders pointer, a JSON pointer (RFC 6901) into the input
// doc, as a problem's path from the request's "input": a token is an
// index ("[0]") where doc holds an array, a member (".sku", `["a b"]`)
// everywhere else, including the would-be place of a missing property.
func inputPath(doc any, pointer string) string {
	path := "input"
	if pointer == "" {
		return path
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := doc.(type) {
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 {
				path, doc = strictjson.MemberPath(path, tok, nil), nil
				continue
			}
			path, doc = strictjson.IndexPath(path, i), nil
			if i < len(v) {
				doc = v[i]
			}
		case map[string]any:
			path, doc = strictjson.MemberPath(path, tok, nil), v[tok]
		default:
			path, doc = strictjson.MemberPath(path, tok, nil), nil
		}
	}
	return path
}

// planProblems checks doc, a request's plan field, and returns it parsed
// and validated (plan.ParseValidated) when it fits input
// (plan.Validated.CheckInput), or the problems found, with paths from
// the request body (plan.steps[id=b].input.v). hasPlan says whether the
// field holds a value other than null.
func (in *Intake) planProblems(doc []byte, hasPlan bool, input []byte) (plan.Validated, []api.Problem) {
	switch {
	case !hasPlan:
		return plan.Validated{}, []api.Problem{problem("plan", api.ProblemMissing, "must be a plan document, a JSON object")}
	case !bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{")):
		return plan.Validated{}, []api.Problem{problem("plan", api.ProblemInvalid, "must be a plan document, a JSON object")}
	}
	pl, err := in.plans.ParseValidated(doc)
	if err == nil {
		err = pl.CheckInput(input)
	}
	if verr, ok := errors.AsType[*plan.ValidationError](err); ok {
		return plan.Validated{}, planDocProblems(verr.Problems)
	}
	if err != nil {
		return plan.Validated{}, []api.Problem{problem("plan", api.ProblemInvalid, err.Error())}
	}
	return pl, nil
}

// CheckPlan checks doc, the plan field of a request other than a start
// (a push to the plan registry), exactly as a start's plan is checked,
// and returns it validated, or refuses it with the InvalidArgument a
// start carrying it would get for its plan field.
func (in *Intake) CheckPlan(doc json.RawMessage) (plan.Validated, error) {
	var ps []api.Problem
	if strictjson.HasNULEscape(doc) {
		ps = append(ps, problem("plan", api.ProblemInvalid, `must not contain the escape \u0000 (Postgres jsonb cannot hold it)`))
	}
	trimmed := bytes.TrimSpace(doc)
	pl, pps := in.planProblems(doc, len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")), nil)
	if ps = append(ps, pps...); len(ps) > 0 {
		return plan.Validated{}, Problems(ps)
	}
	return pl, nil
}

// signalProblems checks every field of a signal and returns the
// problems of those at fault, in the order of the request's fields.
func signalProblems(sig Signal) []api.Problem {
	var ps []api.Problem
	if _, err := events.ParseRunID(sig.RunID); err != nil {
		ps = append(ps, problem(cmp.Or(sig.RunField, "workflowId"), orMissing(sig.RunID, api.ProblemInvalid),
			fmt.Sprintf("must be a run id (a UUID in canonical, lowercase form), not %q", sig.RunID)))
	}
	ps = appendField(ps, "signalName", sig.Name, plan.CheckID(sig.Name, api.MaxSignalNameBytes))
	if sig.ID != nil {
		switch id := *sig.ID; {
		case id == "":
			ps = append(ps, problem("signalId", api.ProblemInvalid, "must not be empty; leave it out to have one generated"))
		case len(id) > api.MaxSignalIDBytes:
			ps = append(ps, problem("signalId", api.ProblemInvalid,
				fmt.Sprintf("is %d UTF-8 bytes, more than the limit of %d", len(id), api.MaxSignalIDBytes)))
		case containsNUL(id):
			ps = append(ps, problem("signalId", api.ProblemInvalid, "must not contain U+0000"))
		}
	}
	if strictjson.HasNULEscape(sig.Payload) {
		ps = append(ps, problem("payload", api.ProblemInvalid, `must not contain the escape \u0000 (Postgres jsonb cannot hold it)`))
	}
	return ps
}

// orMissing is api.ProblemMissing for an empty value, else code.
func orMissing(value, code string) string {
	if value == "" {
		return api.ProblemMissing
	}
	return code
}

// appendField appends the problem of field, whose value is value and
// whose rule's verdict is err: missing when value is empty, invalid when
// err is not nil.
func appendField(ps []api.Problem, field, value string, err error) []api.Problem {
	switch {
	case value == "":
		return append(ps, problem(field, api.ProblemMissing, "must not be empty"))
	case err != nil:
		return append(ps, problem(field, api.ProblemInvalid, err.Error()))
	default:
		return ps
	}
}

// appendPlanRef appends the problem of field (planId or planVersion),
// which must equal the plan's own value.
func appendPlanRef(ps []api.Problem, field, value, own string) []api.Problem {
	switch value {
	case own:
		return ps
	case "":
		return append(ps, problem(field, api.ProblemMissing, fmt.Sprintf("must not be empty: it is the plan's own, %q", own)))
	default:
		return append(ps, problem(field, api.ProblemInvalid, fmt.Sprintf("must equal the plan's own, %q, not %q", own, value)))
	}
}

func problem(path, code, message string) api.Problem {
	return api.Problem{Path: path, Code: code, Message: message}
}

// planDocProblems renders a plan's problems as the problems of a start's
// plan field: paths from the request body (plan.steps[id=b].input.v).
func planDocProblems(ps []plan.Problem) []api.Problem {
	out := make([]api.Problem, len(ps))
	for i, p := range ps {
		path := "plan"
		if p.StepID != "" {
			path += ".steps[id=" + p.StepID + "]"
		}
		if p.Field != "" {
			path += "." + p.Field
		}
		out[i] = api.Problem{Path: path, Code: p.Code, Message: p.Message, StepID: p.StepID}
	}
	return out
}

// Join returns the one refusal of a request whose checks answered errs
// (nil for a check passed), so that a request with several fields at
// fault is told of all of them: nil when every check passed; the first
// error that is not a CodeInvalidArgument *Error (a fault, or a refusal of
// another code, which is answered alone) when there is one; otherwise one
// CodeInvalidArgument listing the problems of all (Problems), in the
// order of errs.
func Join(errs ...error) error {
	var ps []api.Problem
	for _, err := range errs {
		if err == nil {
			continue
		}
		e, ok := errors.AsType[*Error](err)
		if !ok || e.Code != api.CodeInvalidArgument {
			return err
		}
		ps = append(ps, problemsOf(e)...)
	}
	if len(ps) == 0 {
		return nil
	}
	return Problems(ps)
}

// problemsOf returns the problems an InvalidArgument lists, or, for one
// that lists none, one problem of its field with its message.
func problemsOf(e *Error) []api.Problem {
	if ps, ok := e.Details["problems"].([]api.Problem); ok && len(ps) > 0 {
		return ps
	}
	field, _ := e.Details["field"].(string)
	return []api.Problem{problem(field, api.ProblemInvalid, strings.TrimPrefix(e.Message, field+" "))}
}

// Problems is the CodeInvalidArgument refusal of a request with the
// problems ps (at least one): its message names each, and
// details.problems lists them, details.field naming the first one's
// top-level field (the path up to its first '.', '[' or '/').
func Problems(ps []api.Problem) *Error {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = strings.TrimPrefix(p.Path+" "+p.Message, " ")
	}
	msg := msgs[0]
	if len(ps) > 1 {
		msg = fmt.Sprintf("%d problems: %s", len(ps), strings.Join(msgs, "; "))
	}
	field, _, _ := strings.Cut(ps[0].Path, ".")
	field, _, _ = strings.Cut(field, "[")
	field, _, _ = strings.Cut(field, "/")
	return &Error{Code: api.CodeInvalidArgument, Message: msg,
		Details: map[string]any{"field": field, "problems": ps}}
}

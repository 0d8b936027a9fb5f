package trigger

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/weftrun/weft/pkg/api"
	"github.com/weftrun/weft/pkg/plan"
	"github.com/weftrun/weft/pkg/plan/expr"
	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// eventVar is the variable a trigger's input expression reads: an
// api.TriggerInputEvent.
const eventVar = "event"

// inputField is the request field, and the JSON path in problems, of a
// trigger's input expression.
const inputField = "input"

// compileInput compiles a trigger's input expression, or refuses it with
// an InvalidArgument about field input whose details list the problems as
// a plan's expression problems are listed: path, code
// INVALID_EXPRESSION, and a message led by the column. Compiled
// expressions are cached (expr.CompileVarValue), so compiling one again
// for each event costs a lookup.
func compileInput(src string) (*expr.VarValue, error) {
	v, problems := expr.CompileVarValue(eventVar, src, inputField, expr.Limits{})
	if len(problems) == 0 {
		return v, nil
	}
	list := make([]api.Problem, len(problems))
	for i, p := range problems {
		msg := p.Message
		if p.Column > 0 {
			msg = fmt.Sprintf("column %d: %s", p.Column, p.Message)
		}
		list[i] = api.Problem{Path: p.Path, Code: plan.CodeInvalidExpression, Message: msg}
	}
	return nil, &intake.Error{Code: api.CodeInvalidArgument,
		Message: fmt.Sprintf("input is not a valid expression over event: %s", problems[0]),
		Details: map[string]any{"field": inputField, "problems": list}}
}

// runInput is the input of the run an event starts: the payload itself,
// or, when the trigger has an input expression, its value over the event.
// An expression that fails on the event refuses the event with an
// InvalidArgument about its payload, code EXPRESSION_ERROR in the
// details.
func runInput(tr *api.Trigger, eventID string, payload json.RawMessage) (json.RawMessage, error) {
	if tr.Input == "" {
		return payload, nil
	}
	v, err := compileInput(tr.Input)
	if err != nil {
		return nil, err
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	ev, err := json.Marshal(api.TriggerInputEvent{ID: eventID, TriggerID: tr.TriggerID, Payload: payload})
	if err != nil {
		return nil, intake.Invalid("payload", "is not a JSON document")
	}
	input, err := v.Eval(ev)
	if ee, ok := errors.AsType[*expr.EvalError](err); ok {
		return nil, &intake.Error{Code: api.CodeInvalidArgument,
			Message: fmt.Sprintf("trigger %s's input expression failed on this event, which started nothing: %s", tr.TriggerID, ee.Message),
			Details: map[string]any{"field": "payload", "code": CodeExpressionError, "triggerId": tr.TriggerID, "message": ee.Message}}
	}
	return input, err
}

// CodeExpressionError is the details code of an event refused because
// the trigger's input expression failed on it: the code a step whose
// expression fails ends with.
const CodeExpressionError = "EXPRESSION_ERROR"

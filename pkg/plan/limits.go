package plan

import (
	"cmp"

	"github.com/weftrun/weft/pkg/plan/expr"
)

// Default limits; see Limits.
const (
	DefaultMaxPlanBytes      = 1 << 20 // 1 MiB
	DefaultMaxSteps          = 1000
	DefaultMaxStepInputBytes = 64 << 10 // 64 KiB
	DefaultMaxDepth          = 64
	DefaultMaxIDBytes        = 128
	// DefaultMaxRunOutputBytes bounds a run's output (Plan.Output) as the
	// engine evaluates it; a larger one fails the run (EXPRESSION_ERROR).
	DefaultMaxRunOutputBytes = 64 << 10 // 64 KiB
	// DefaultMaxInputSchemaBytes bounds a plan's InputSchema.
	DefaultMaxInputSchemaBytes = 64 << 10 // 64 KiB
)

// Limits bounds what Parse and Validate accept. The zero value of each field
// means its default, and so does a negative value; DefaultLimits spells the
// defaults out. Every bound is inclusive: a plan exactly at a limit passes.
type Limits struct {
	// MaxPlanBytes bounds the document Parse reads, checked before any
	// parsing, and the plan's JSON encoding (its persisted form), checked by
	// Validate. Default 1 MiB.
	MaxPlanBytes int
	// MaxSteps bounds the number of steps. Default 1000.
	MaxSteps int
	// MaxStepInputBytes bounds each step's input in its compact JSON form.
	// Default 64 KiB.
	MaxStepInputBytes int
	// MaxDepth bounds the nesting of objects and arrays in the document;
	// the top-level object is depth 1, so a step's input object is depth 4.
	// Default 64.
	MaxDepth int
	// MaxIDBytes bounds planId, planVersion, step ids, queue and signal
	// names, activity names, secret names and idempotency keys. Default 128.
	MaxIDBytes int
	// MaxExpressionBytes bounds the source of each expression in a step's
	// input. Default expr.DefaultMaxExpressionBytes (4 KiB).
	MaxExpressionBytes int
	// MaxInputSchemaBytes bounds the plan's InputSchema in its compact
	// JSON form. Default 64 KiB.
	MaxInputSchemaBytes int
	// MaxRunDepth bounds how deep a plan's inline subPlan plans nest: a
	// child run deeper than this is refused at submission. Default
	// DefaultMaxRunDepth (8).
	MaxRunDepth int
}

// DefaultLimits returns the limits the zero Limits stands for.
func DefaultLimits() Limits {
	return Limits{
		MaxPlanBytes:        DefaultMaxPlanBytes,
		MaxSteps:            DefaultMaxSteps,
		MaxStepInputBytes:   DefaultMaxStepInputBytes,
		MaxDepth:            DefaultMaxDepth,
		MaxIDBytes:          DefaultMaxIDBytes,
		MaxExpressionBytes:  expr.DefaultMaxExpressionBytes,
		MaxInputSchemaBytes: DefaultMaxInputSchemaBytes,
		MaxRunDepth:         DefaultMaxRunDepth,
	}
}

// withDefaults returns l with every zero or negative field set to its
// default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	return Limits{
		MaxPlanBytes:        cmp.Or(max(l.MaxPlanBytes, 0), d.MaxPlanBytes),
		MaxSteps:            cmp.Or(max(l.MaxSteps, 0), d.MaxSteps),
		MaxStepInputBytes:   cmp.Or(max(l.MaxStepInputBytes, 0), d.MaxStepInputBytes),
		MaxDepth:            cmp.Or(max(l.MaxDepth, 0), d.MaxDepth),
		MaxIDBytes:          cmp.Or(max(l.MaxIDBytes, 0), d.MaxIDBytes),
		MaxExpressionBytes:  cmp.Or(max(l.MaxExpressionBytes, 0), d.MaxExpressionBytes),
		MaxInputSchemaBytes: cmp.Or(max(l.MaxInputSchemaBytes, 0), d.MaxInputSchemaBytes),
		MaxRunDepth:         cmp.Or(max(l.MaxRunDepth, 0), d.MaxRunDepth),
	}
}

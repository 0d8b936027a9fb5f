package plan

import "errors"

// CheckID returns an error saying why s cannot be an id, or nil. The id
// rules are those of step ids, queues and waitSignal signal names: at most
// maxBytes UTF-8 bytes, no whitespace, control or format characters, none
// of '.', '*' and '>', no leading '$' (ids may become NATS subject
// tokens). The signal gateway checks signal names and the ids of a run
// request with it, so any signal a plan can wait for can be sent. A
// maxBytes of zero or less means DefaultMaxIDBytes.
func CheckID(s string, maxBytes int) error {
	return problemErr(idProblem(s, positiveOr(maxBytes, DefaultMaxIDBytes)))
}

// CheckName returns an error saying why s cannot be a name, or nil. The
// name rules are the id rules without the NATS-specific ones: non-empty,
// at most maxBytes UTF-8 bytes, no whitespace, control or format
// characters. A maxBytes of zero or less means DefaultMaxIDBytes.
func CheckName(s string, maxBytes int) error {
	return problemErr(nameProblem(s, positiveOr(maxBytes, DefaultMaxIDBytes)))
}

func problemErr(why string) error {
	if why == "" {
		return nil
	}
	return errors.New(why)
}

func positiveOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

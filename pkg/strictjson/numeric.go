package strictjson

import (
	"strconv"
	"strings"
)

// Bounds of a number Postgres numeric (and so jsonb) can hold, as
// PostgreSQL 15 checks them: its leading digit at most 10^131071 (numeric's
// weight limit of 32767 base-10000 digits), at most 16383 digits after the
// point (its scale limit, trailing zeros included: 1.0e-16383 is refused),
// and an exponent whose magnitude is below 2^30-1 even for zero.
const (
	NumericMaxLeadingExponent = 131071
	NumericMaxScale           = 16383
	numericMaxExponent        = 1<<30 - 2
)

// numericFits reports whether the JSON number n, valid JSON number syntax,
// is one Postgres numeric can hold (see NumericMaxLeadingExponent).
func numericFits(n string) bool {
	mant, expPart, hasExp := strings.Cut(strings.TrimPrefix(strings.ToLower(n), "-"), "e")
	exp := int64(0)
	if hasExp {
		var err error
		if exp, err = strconv.ParseInt(expPart, 10, 64); err != nil || exp > numericMaxExponent || exp < -numericMaxExponent {
			return false
		}
	}
	intDigits, fracDigits, _ := strings.Cut(mant, ".")
	if max(0, int64(len(fracDigits))-exp) > NumericMaxScale {
		return false
	}
	digits := intDigits + fracDigits
	first := strings.IndexFunc(digits, func(r rune) bool { return r != '0' })
	if first < 0 {
		return true // zero: no weight to overflow
	}
	leading := int64(len(intDigits)-1-first) + exp
	return leading <= NumericMaxLeadingExponent
}

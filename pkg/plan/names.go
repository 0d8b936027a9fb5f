package plan

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// idProblem returns why s breaks the id rules, or "" when it obeys them.
//
// The id rules: non-empty, at most maxBytes bytes, valid UTF-8, no
// whitespace, control or format characters, none of '.', '*' and '>', and
// no leading '$'. Ids become NATS subject tokens (weft.tasks.<queue>) and
// components of idempotency keys, so they must be single, printable
// subject tokens outside NATS's reserved $-namespace.
func idProblem(s string, maxBytes int) string {
	if why := nameProblem(s, maxBytes); why != "" {
		return why
	}
	if s[0] == '$' {
		return "must not start with '$'"
	}
	for _, r := range s {
		switch r {
		case '.', '*', '>':
			return fmt.Sprintf("must not contain %q (it would split or wildcard a NATS subject)", r)
		}
	}
	return ""
}

// nameProblem returns why s breaks the name rules, or "" when it obeys
// them. The name rules are the id rules without the NATS-specific ones:
// non-empty, at most maxBytes bytes, valid UTF-8, and no whitespace,
// control or format characters.
func nameProblem(s string, maxBytes int) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > maxBytes:
		return fmt.Sprintf("is %d bytes, more than the limit of %d", len(s), maxBytes)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Sprintf("must not contain whitespace, control or format characters (found %U)", r)
		}
	}
	return ""
}

// secretKeyProblem returns why a secret's key is unacceptable, or "". A
// key may be a file path, so it may hold spaces and be up to
// maxSecretKeyBytes long, but it must be valid UTF-8 without control or
// format characters.
func secretKeyProblem(key string) string {
	switch {
	case len(key) > maxSecretKeyBytes:
		return fmt.Sprintf("is %d bytes, more than the limit of %d", len(key), maxSecretKeyBytes)
	case !utf8.ValidString(key):
		return "is not valid UTF-8"
	}
	for _, r := range key {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Sprintf("must not contain control or format characters (found %U)", r)
		}
	}
	return ""
}

package api

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weftrun/weft/pkg/strictjson"
)

// The limits of a run's labels: the labels of a start, a schedule or a
// trigger (docs/api.md, "Labels"). CheckLabels holds a request to them.
const (
	// MaxLabels is how many labels one run may carry.
	MaxLabels = 32
	// MaxLabelKeyBytes is the longest label key, in bytes; a key is at
	// least one byte.
	MaxLabelKeyBytes = 63
	// MaxLabelValueBytes is the longest label value, in UTF-8 bytes; a
	// value may be empty.
	MaxLabelValueBytes = 255
)

// labelKey is the form of a label key: lowercase ASCII letters and
// digits, with '.', '_', '/' and '-' inside (neither first nor last).
var labelKey = regexp.MustCompile(`^[a-z0-9]([a-z0-9._/-]*[a-z0-9])?$`)

// CheckLabels returns the problems of labels, the labels member of a
// request (a start, a schedule, a trigger), or none when they keep the
// rules: at most MaxLabels of them; each key 1 to MaxLabelKeyBytes bytes
// matching [a-z0-9]([a-z0-9._/-]*[a-z0-9])?; each value at most
// MaxLabelValueBytes bytes of valid UTF-8 without control characters
// (Unicode category Cc). A key's problem is at the path of its member
// ("labels.team", `labels["app/tier"]`), a count over the limit at
// "labels"; keys are checked in sorted order, so the problems come in a
// stable order. Nil and empty labels are none.
func CheckLabels(labels map[string]string) []Problem {
	var ps []Problem
	if len(labels) > MaxLabels {
		ps = append(ps, Problem{Path: "labels", Code: ProblemInvalid,
			Message: fmt.Sprintf("has %d labels, more than the limit of %d", len(labels), MaxLabels)})
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		path := strictjson.MemberPath("labels", k, nil)
		if msg := labelKeyProblem(k); msg != "" {
			ps = append(ps, Problem{Path: path, Code: ProblemInvalid, Message: msg})
		}
		if msg := labelValueProblem(labels[k]); msg != "" {
			ps = append(ps, Problem{Path: path, Code: ProblemInvalid, Message: msg})
		}
	}
	return ps
}

// labelKeyProblem says what is wrong with the label key k; "" when
// nothing is.
func labelKeyProblem(k string) string {
	switch {
	case k == "":
		return "the key must not be empty"
	case len(k) > MaxLabelKeyBytes:
		return fmt.Sprintf("the key is %d bytes, more than the limit of %d", len(k), MaxLabelKeyBytes)
	case !labelKey.MatchString(k):
		return fmt.Sprintf("the key %s must be lowercase letters a-z, digits and '.', '_', '/', '-' inside, "+
			"starting and ending with a letter or digit", strictjson.Quote(k))
	}
	return ""
}

// labelValueProblem says what is wrong with a label value v; "" when
// nothing is.
func labelValueProblem(v string) string {
	switch {
	case len(v) > MaxLabelValueBytes:
		return fmt.Sprintf("the value is %d bytes, more than the limit of %d", len(v), MaxLabelValueBytes)
	case !utf8.ValidString(v):
		return "the value must be valid UTF-8"
	case strings.ContainsFunc(v, unicode.IsControl):
		return "the value must not hold control characters"
	}
	return ""
}

// ParseLabel reads a label written KEY=VALUE (the CLI's --label, the read
// API's label filter): the key is what precedes the first '=', the value
// all that follows it, possibly empty. It refuses text without '=' and a
// label CheckLabels refuses.
func ParseLabel(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("label %s: want KEY=VALUE", strictjson.Quote(s))
	}
	if ps := CheckLabels(map[string]string{key: value}); len(ps) > 0 {
		return "", "", fmt.Errorf("label %s: %s", strictjson.Quote(s), ps[0].Message)
	}
	return key, value, nil
}

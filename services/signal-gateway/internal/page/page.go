// Package page is the keyset pagination of the gateway's lists (schedules,
// triggers): a page holds the items after the id its cursor names, in id
// order, and its cursor is opaque to callers.
package page

import (
	"encoding/base64"

	"github.com/weftrun/weft/services/signal-gateway/internal/intake"
)

// Page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Cursor is the opaque cursor of the page after the id last.
func Cursor(last string) string { return base64.RawURLEncoding.EncodeToString([]byte(last)) }

// Args checks a page request: it returns the id the page starts after
// ("" for the first page) and the page size (0 means DefaultLimit), or an
// InvalidArgument *intake.Error naming limit or cursor.
func Args(cursor string, limit int) (string, int, error) {
	if limit < 0 || limit > MaxLimit {
		return "", 0, intake.Invalid("limit", "must be between 1 and %d, not %d", MaxLimit, limit)
	}
	if limit == 0 {
		limit = DefaultLimit
	}
	after, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", 0, intake.Invalid("cursor", "is not a cursor this API gave out")
	}
	return string(after), limit, nil
}

package strictjson

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// redacted stands for a key that Options.Redact flags.
const redacted = `"<redacted>"`

// maxQuotedBytes bounds how much of a user-supplied string Quote repeats.
const maxQuotedBytes = 64

// Quote renders a user-supplied string for a message: Go-quoted, so that
// control characters and invalid UTF-8 show as escapes, and cut to 64
// bytes, at a character boundary, with "…" after the closing quote.
func Quote(s string) string {
	if len(s) <= maxQuotedBytes {
		return strconv.Quote(s)
	}
	cut := maxQuotedBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// MemberPath returns the path of key inside the object at path:
// "path.key" for a key that is a letter or underscore followed by ASCII
// letters, digits and underscores, `path["key"]` (the key as Quote
// renders it) for any other, and `path["<redacted>"]` when redact, if not
// nil, reports true for the key. The top level's path is "".
func MemberPath(path, key string, redact func(key string) bool) string {
	switch {
	case redact != nil && redact(key):
		return path + "[" + redacted + "]"
	case !isIdentifier(key):
		return path + "[" + Quote(key) + "]"
	case path == "":
		return key
	default:
		return path + "." + key
	}
}

// IndexPath returns the path of element i of the array at path: "path[i]".
func IndexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// KeyName renders an object key for a message as Quote does, or as
// "<redacted>" when redact, if not nil, reports true for it.
func KeyName(key string, redact func(key string) bool) string {
	if redact != nil && redact(key) {
		return redacted
	}
	return Quote(key)
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		letter := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		digit := i > 0 && '0' <= c && c <= '9'
		if !letter && !digit {
			return false
		}
	}
	return true
}

// invalidUTF8 returns the offset of the first invalid UTF-8 byte, or -1.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// utf8Problem describes an invalid UTF-8 byte at offset off.
func utf8Problem(off int) Problem {
	return Problem{Code: CodeInvalidUTF8, Message: fmt.Sprintf("invalid UTF-8 at byte offset %d", off)}
}

// surrogateProblem describes a lone surrogate escape at offset off.
func surrogateProblem(off int) Problem {
	return Problem{Code: CodeInvalidUTF8, Message: fmt.Sprintf(
		`the \u escape at byte offset %d is half of a UTF-16 surrogate pair, not a character`, off)}
}

// loneSurrogate returns the offset of the first \u escape in the strings of
// JSON text data that encodes half of a UTF-16 surrogate pair without the
// other half, or -1. Text that is not valid JSON is left to the scan.
func loneSurrogate(data []byte) int {
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(data) && data[i+1] == 'u':
			r, ok := hex4(data, i+2)
			switch {
			case !ok || r < 0xD800 || r > 0xDFFF:
				i++
			case r < 0xDC00 && i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u':
				if lo, ok := hex4(data, i+8); !ok || lo < 0xDC00 || lo > 0xDFFF {
					return i
				}
				i += 11
			default:
				return i
			}
		case c == '\\':
			i++
		}
	}
	return -1
}

// hex4 parses the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(data[i:i+4]), 16, 32)
	return rune(v), err == nil
}

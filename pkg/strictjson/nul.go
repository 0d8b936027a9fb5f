package strictjson

// HasNULEscape reports whether JSON text holds the escape \u0000, which
// jsonb and Postgres text refuse. Outside strings valid JSON has no
// backslash, and inside one every backslash starts an escape, so a linear
// scan is exact for valid JSON.
func HasNULEscape(doc []byte) bool { return nextNULEscape(doc, 0) >= 0 }

// ReplaceNULEscapes returns doc with every escape \u0000 replaced by
// \ufffd (the replacement character), or doc itself when it has none: a
// document that decodes as before except that no string holds U+0000.
func ReplaceNULEscapes(doc []byte) []byte {
	i := nextNULEscape(doc, 0)
	if i < 0 {
		return doc
	}
	out := append([]byte(nil), doc...)
	for ; i >= 0; i = nextNULEscape(out, i+len(`\u0000`)) {
		copy(out[i+2:], "fffd")
	}
	return out
}

// nextNULEscape returns the offset of the first escape \u0000 in doc at or
// after from, which must not be inside an escape, or -1.
func nextNULEscape(doc []byte, from int) int {
	for i := from; i < len(doc); i++ {
		if doc[i] != '\\' {
			continue
		}
		if i+5 < len(doc) && doc[i+1] == 'u' && string(doc[i+2:i+6]) == "0000" {
			return i
		}
		i++ // skip the escaped character
	}
	return -1
}

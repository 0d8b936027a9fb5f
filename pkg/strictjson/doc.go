// Package strictjson checks JSON strictly before it is decoded. It is for
// input that comes from callers over the network and is acted upon or
// persisted: plans (pkg/plan) and the signal gateway's request bodies and
// signal payloads.
//
// encoding/json alone is lenient in ways such input cannot be: it matches
// field names case-insensitively, keeps the last of duplicate keys,
// silently turns invalid UTF-8 and lone surrogate escapes into U+FFFD,
// ignores unknown fields, and names a badly typed value without its array
// indexes. Two readers of the same document may therefore see different
// values, and a caller's typo goes unnoticed.
//
// Decode and Valid walk the token stream once and reject:
//
//   - invalid UTF-8, and \u escapes that encode half of a UTF-16 surrogate
//     pair (CodeInvalidUTF8);
//   - syntax errors, anything after the value but white space, and a top
//     level that is not an object where the type is a struct or a map
//     (CodeMalformed);
//   - objects and arrays nested deeper than Options.MaxDepth; the top level
//     is depth 1 (CodeTooDeep);
//   - the same key twice in one object, at any depth, inside values of any
//     shape too (CodeDuplicateKey);
//   - object keys that are not a field of the struct, compared
//     case-sensitively; a key that differs from a field only in case gets a
//     "did you mean" hint (CodeUnknownField);
//   - values of the wrong type (CodeWrongType): see Decode for the shape
//     each Go type takes. JSON null is accepted for an object member,
//     meaning the member is absent, but not as an array element or as the
//     whole document unless any value is allowed there.
//
// Syntax, UTF-8, depth and trailing-data problems stop the scan; the others
// are collected, up to Options.MaxProblems, each with the JSON path of its
// place in the document ("steps[2].retry.maxAttempts"; see MemberPath).
// The package's own messages never repeat a value from the document, and
// repeat a key only quoted, cut to 64 bytes, and never one that
// Options.Redact flags; an error from a type's UnmarshalJSON or
// UnmarshalText method is passed on as the type words it.
package strictjson

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
//
// # strictjson and encoding/json/v2
//
// json/v2 exists twice with Go 1.26: as encoding/json/v2 and
// encoding/json/jsontext in the standard library, but only when built with
// GOEXPERIMENT=jsonv2, and as the module github.com/go-json-experiment/json,
// a pseudo-version with no release, which this module reaches only through
// a test dependency (chromedp's cdproto). Checked by running both forms
// (go1.26.8, module at 44df1a37e875; they behave alike):
//
//	property                     strictjson               encoding/json (v1)         json/v2
//	names case-sensitive         yes, "did you mean" hint no                         yes
//	duplicate names refused      yes, at any depth        no: the last wins          yes, at any depth
//	invalid UTF-8 refused        yes                      no: U+FFFD                 yes
//	lone \ud800 escapes refused  yes                      no: U+FFFD                 yes
//	unknown members refused      yes                      opt-in, case-insensitive   opt-in (RejectUnknownMembers)
//	where an error is            steps[1].retry.max       steps.retry.max, no index  /steps/1/retry/max
//	problems per document        all, to MaxProblems      the first                  the first
//	nesting limit                MaxDepth (default 32)    10000, fixed               10000, fixed
//	number out of range, 2.5     refused                  refused                    refused
//	null element, null document  refused                  accepted                   accepted
//	[2]int given 3 elements      refused                  extra ones dropped         refused
//	data after the value         refused                  refused (Unmarshal)        refused
//	values in messages           never; keys cut, Redact  yes                        yes: numbers, whole keys
//	Visit before validity known  yes                      by hand (Decoder.Token)    by hand (jsontext)
//	decoded values               encoding/json's          -                          differ from v1
//	speed, 30 KB (bench_test.go) 3.3 ms Decode            0.9 ms Unmarshal           0.5 ms Unmarshal
//
// json/v2 decodes differently from v1 where callers would notice: null
// zeroes a field that v1 leaves alone, a []byte may not be an array of
// numbers, time.Duration has no default format. Its v1 options restore
// v1's decoding but not the rest of the table.
//
// Decision: strictjson stays, on encoding/json alone. json/v2 is not in
// the standard library without an experiment flag, and the module's
// README says "Do not depend on this in publicly available modules",
// which pkg/ is. Even in the standard library it would take over only the
// first five rows and the range, length and trailing-data checks, one
// problem at a time; the rest of the contract (every problem, in the path
// syntax callers print, MaxDepth, Redact, Visit, refused nulls, no
// document values in messages) would still need this scan, and its
// decoding would have to stay v1's. The scan repeats encoding/json's rules
// (field resolution, number ranges) only to report each problem with its
// path; the decode itself is json.Unmarshal. Once json/v2 ships without
// the flag, a scan on jsontext.Decoder is worth measuring: about 60 % of
// Decode's time is encoding/json's Decoder.Token, which allocates a
// syntax error for every key and scalar it reads.
package strictjson

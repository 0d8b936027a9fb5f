package plan

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weftrun/weft/pkg/strictjson"
)

// This file holds the secret-value detector. A plan is persisted in the
// event log for the life of the run and shown to operators, so it must
// carry references to secrets, never values (execution-semantics §2). The
// detector is a heuristic safety net, not a proof: it catches the common
// mistakes (a password pasted into an input, a token in a header) and keeps
// false positives low enough that plans rarely need rewording.

// secretWords are the key words that name a secret value when they end a
// key ("dbPassword", "api_key", "X-Auth-Token").
var secretWords = map[string]bool{
	"password": true, "passwd": true, "passphrase": true, "secret": true,
	"token": true, "credential": true, "credentials": true, "auth": true,
	"authorization": true,
	// camel or snake case lost to lower case ("apikey", "APIKEY")
	"apikey": true, "accesskey": true, "privatekey": true, "secretkey": true,
	"accesstoken": true, "authtoken": true, "refreshtoken": true, "clientsecret": true,
}

// secretPairs are two-word endings that name a secret value where neither
// word alone does ("apiKey", "private_key").
var secretPairs = map[string]bool{
	"apikey": true, "accesskey": true, "privatekey": true, "secretkey": true,
	"signingkey": true, "encryptionkey": true,
}

// genericSuffixes are trailing key words that say how a value is written,
// not what it is ("tokenValue", "password_b64"); they are skipped.
var genericSuffixes = map[string]bool{
	"value": true, "val": true, "str": true, "string": true, "text": true, "raw": true,
	"plain": true, "plaintext": true, "data": true, "b64": true, "base64": true,
	"hex": true, "encoded": true, "literal": true,
}

// IsSecretKey reports whether an object key names a secret value, so that
// a string under it must be a secret reference. The key is split into
// words at camelCase humps and at any character that is not a letter or
// digit; trailing words that only say how a value is written ("value",
// "b64", …) are dropped; the key names a secret when its last word is one
// of password, passwd, passphrase, secret, token, credential(s), auth,
// authorization, or its last two words are api key, access key, private
// key, secret key, signing key or encryption key. Matching is
// case-insensitive.
//
// Only the last words count, because they say what the value is:
// "dbPassword" and "githubToken" are secrets, while "passwordPolicy",
// "tokenUrl", "secretName" and "authMethod" describe one.
func IsSecretKey(key string) bool {
	words := splitWords(key)
	for len(words) > 1 && genericSuffixes[words[len(words)-1]] {
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return false
	}
	last := words[len(words)-1]
	return secretWords[last] || len(words) > 1 && secretPairs[words[len(words)-2]+last]
}

// splitWords splits a key into lower-case words at camelCase humps
// ("APIKey" → api, key) and at every rune that is not a letter or digit.
func splitWords(key string) []string {
	rs := []rune(key)
	var words []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			words = append(words, strings.ToLower(string(rs[start:end])))
			start = -1
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start >= 0 && unicode.IsUpper(r) {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && nextLower {
				flush(i)
			}
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(rs))
	return words
}

// shapes are well-known credential formats, each named for messages. A
// shape's regexp runs only on strings that contain one of its hints (ASCII
// case-insensitively), which keeps the detector cheap on large inputs.
var shapes = []struct {
	kind  string
	hints []string // lower case
	re    *regexp.Regexp
}{
	{"a PEM private key", []string{"private key"}, regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`)},
	{"an AWS access key id", []string{"akia", "asia"}, regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"a GitHub token", []string{"gh"}, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`)},
	{"a Slack token", []string{"xox"}, regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
	{"a Stripe secret key", []string{"k_live_"}, regexp.MustCompile(`\b[rs]k_live_[A-Za-z0-9]{16,}`)},
	{"a Google API key", []string{"aiza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{"a JSON Web Token", []string{"eyj"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`)},
	{"a bearer token", []string{"bearer"}, regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}`)},
	{"a URL with a password", []string{"://"}, regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@`)},
}

// basicAuth matches an HTTP Basic credential; it counts only when the
// base64 decodes to printable "user:password".
var basicAuth = regexp.MustCompile(`(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})`)

// SecretShape reports whether s contains a well-known credential format and
// names it ("an AWS access key id"): a PEM private key, an AWS access key
// id, a GitHub, Slack or Stripe token, a Google API key, a JSON Web Token,
// a bearer token of 20 characters or more, HTTP Basic credentials, or a URL
// with a password in it. The name never includes s.
func SecretShape(s string) (kind string, found bool) {
	for _, sh := range shapes {
		if containsAnyFold(s, sh.hints) && sh.re.MatchString(s) {
			return sh.kind, true
		}
	}
	if containsAnyFold(s, []string{"basic"}) {
		for _, m := range basicAuth.FindAllStringSubmatch(s, -1) {
			if isBasicCredential(m[1]) {
				return "HTTP Basic credentials", true
			}
		}
	}
	return "", false
}

// containsAnyFold reports whether s contains one of the lower-case ASCII
// needles, ignoring ASCII case.
func containsAnyFold(s string, needles []string) bool {
	for _, n := range needles {
		first := n[0]
		upper := first - ('a' - 'A')
		for i := 0; i+len(n) <= len(s); i++ {
			if c := s[i]; (c == first || c == upper && first >= 'a' && first <= 'z') && strings.EqualFold(s[i:i+len(n)], n) {
				return true
			}
		}
	}
	return false
}

func isBasicCredential(b64 string) bool {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(b64); err != nil {
			return false
		}
	}
	if !utf8.Valid(raw) || !bytes.ContainsRune(raw, ':') {
		return false
	}
	return !bytes.ContainsFunc(raw, func(r rune) bool { return !unicode.IsPrint(r) })
}

// finding is a secret problem in a step's input.
type finding struct {
	path, code, message string
}

// scanInput walks a step's input (valid JSON) and returns its secret
// problems in a stable order: document order for arrays, sorted keys for
// objects. declared holds the names of the step's secrets.
func scanInput(in json.RawMessage, declared map[string]bool) []finding {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	w := inputWalker{declared: declared}
	w.value("input", v, false)
	return w.found
}

type inputWalker struct {
	declared map[string]bool
	found    []finding
}

const refHint = `use {"secretRef": "<name>"} naming one of the step's secrets`

func (w *inputWalker) add(path, code, message string) {
	w.found = append(w.found, finding{path: path, code: code, message: message})
}

// value checks v found at path; underSecretKey says the nearest enclosing
// key (looking through arrays) names a secret.
func (w *inputWalker) value(path string, v any, underSecretKey bool) {
	switch t := v.(type) {
	case string:
		if kind, ok := SecretShape(t); ok {
			w.add(path, CodeSecretValue, "looks like "+kind+"; "+refHint)
		} else if underSecretKey && t != "" {
			w.add(path, CodeSecretValue, "a string under a key that names a secret; "+refHint)
		}
	case []any:
		for i, e := range t {
			w.value(indexPath(path, i), e, underSecretKey)
		}
	case map[string]any:
		if _, ok := t["secretRef"]; ok {
			w.ref(path, t)
			return
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if kind, ok := SecretShape(k); ok {
				w.add(path, CodeSecretValue, "an object key looks like "+kind+"; "+refHint)
			}
			w.value(childPath(path, k), t[k], IsSecretKey(k))
		}
	}
}

// ref checks an object with a "secretRef" key.
func (w *inputWalker) ref(path string, obj map[string]any) {
	name, ok := obj["secretRef"].(string)
	switch {
	case !ok || len(obj) != 1:
		w.add(path, CodeInvalidSecretRef, `a secret reference must be exactly {"secretRef": "<name>"}`)
	case !w.declared[name]:
		w.add(path, CodeUnknownSecretRef, "secret "+quote(name)+" is not declared in the step's secrets")
	}
}

// childPath returns the path of key inside the object at path: path.key
// for identifier-like keys, path["key"] otherwise, and path["<redacted>"]
// for a key that itself looks like a credential.
func childPath(path, key string) string {
	return strictjson.MemberPath(path, key, secretShaped)
}

// indexPath returns the path of element i of the array at path.
func indexPath(path string, i int) string {
	return strictjson.IndexPath(path, i)
}

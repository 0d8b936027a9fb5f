package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
)

const (
	// maxTokenLen bounds a presented token; longer ones are rejected unhashed.
	maxTokenLen = 4 << 10
	// maxTenantLen bounds a tenant id, which becomes part of keys elsewhere.
	maxTenantLen = 128
	// maxNameLen bounds a key name.
	maxNameLen = 64
	// hashPrefix starts every configured key hash.
	hashPrefix = "sha256:"
)

// ErrUnauthenticated is returned, wrapped with a reason, by Keys.Authenticate
// when the request carries no usable bearer token or an unknown one. The
// gateway answers it with 401. The reason never contains the token.
var ErrUnauthenticated = errors.New("auth: unauthenticated")

// ErrMultipleCredentials is returned by Keys.AuthenticateValues when a
// request carries more than one Authorization value. It is a malformed
// request (400), not a failed authentication: no value is tried, so which
// copy a proxy or a client library would pick never matters.
var ErrMultipleCredentials = errors.New("auth: more than one Authorization header")

var (
	errFieldCount = errors.New("want 4 fields: <name> <tenant> <role> sha256:<hex>")
	errName       = errors.New("invalid name: want 1 to 64 characters of [A-Za-z0-9._-]")
	errNoTenant   = errors.New("empty tenant")
	// A tenant follows the gateway's id rules (plan.CheckID), so no '.'.
	errTenant = errors.New("invalid tenant: want at most 128 characters of [A-Za-z0-9_-]")
	errRole   = errors.New("unknown role: want viewer, operator or admin")
	errHash   = errors.New("invalid hash: want sha256:<64 lowercase hex digits>")
)

// Key is one configured API key: who it belongs to and the SHA-256 digest of
// its token, never the token itself.
type Key struct {
	// Name identifies the key in logs (Principal.KeyID): 1 to 64 characters
	// of [A-Za-z0-9._-]. If empty, the first 8 hex digits of Hash are used.
	Name string
	// TenantID is the tenant the key acts for: 1 to 128 characters of
	// [A-Za-z0-9_-] (the gateway's id rules refuse '.').
	TenantID string
	// Role bounds what the key may do.
	Role Role
	// Hash is "sha256:" and 64 lowercase hex digits, as HashKey returns.
	Hash string
}

// Keys is an immutable set of API keys, indexed by token digest. A nil or
// empty *Keys authenticates nobody. It is safe for concurrent use.
type Keys struct {
	byHash map[[sha256.Size]byte]Principal
}

// HashKey returns the configured form of token: "sha256:" followed by the
// lowercase hex SHA-256 digest of token. Operators and dev tooling use it to
// produce key configuration lines.
func HashKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hashPrefix + hex.EncodeToString(sum[:])
}

// NewKeys returns the set of entries. It rejects an entry with an invalid
// field and two entries with the same hash or name; the error names the
// entry by its 1-based position ("key 2").
func NewKeys(entries ...Key) (*Keys, error) {
	b := newKeysBuilder()
	for i, k := range entries {
		where := fmt.Sprintf("key %d", i+1)
		if err := b.add(k, where); err != nil {
			return nil, fmt.Errorf("auth: keys: %s: %w", where, err)
		}
	}
	return b.keys, nil
}

// ParseKeys parses key configuration, as found in WEFT_API_KEYS or a keys
// file. Entries are separated by newlines or commas; each is
//
//	<name> <tenant> <role> sha256:<64 lowercase hex>
//
// with fields separated by spaces or tabs, e.g.
// "ci acme operator sha256:9f86d0…". A '#' starts a comment that runs to the
// end of the line; blank entries are ignored. ParseKeys rejects what NewKeys
// rejects; the error names the line ("line 3", or "line 3 entry 2" on a line
// with several entries) and never quotes the hash or a malformed field, in
// case a token was pasted by mistake. No entries at all is not an error.
func ParseKeys(text string) (*Keys, error) {
	keys, err := parseKeys(text)
	if err != nil {
		return nil, fmt.Errorf("auth: keys: %w", err)
	}
	return keys, nil
}

// LoadKeysFile reads and parses the key file at path, in ParseKeys' format.
// A parse error names the file and the line.
func LoadKeysFile(path string) (*Keys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: keys: %w", err)
	}
	keys, err := parseKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("auth: keys file %s: %w", path, err)
	}
	return keys, nil
}

// Len returns the number of keys in k.
func (k *Keys) Len() int {
	if k == nil {
		return 0
	}
	return len(k.byHash)
}

// Authenticate returns the Principal of the key presented in an HTTP
// Authorization header value. The header must be "Bearer <token>": the scheme
// in any letter case (RFC 7235), then one or more spaces, then a non-empty
// token of at most 4 KiB without whitespace; spaces and tabs around the whole
// value are ignored. Any other scheme, a malformed value or an unknown token
// yields an error wrapping ErrUnauthenticated, whose reason never contains
// the token.
//
// The token's SHA-256 digest is looked up in a map rather than compared with
// crypto/subtle. That is safe: whatever the lookup's timing reveals is about
// the digest of the presented token, not about any configured token, and
// steering a digest toward a configured one would take SHA-256 preimages.
func (k *Keys) Authenticate(authorizationHeader string) (Principal, error) {
	token, err := bearerToken(authorizationHeader)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if k != nil {
		if p, ok := k.byHash[sha256.Sum256([]byte(token))]; ok {
			return p, nil
		}
	}
	return Principal{}, fmt.Errorf("%w: unknown key", ErrUnauthenticated)
}

// AuthenticateValues returns the Principal of the one Authorization value
// of a request: values are all of the header's values, as http.Header.Values
// or nats.Header.Values return them. No value is Authenticate(""); more than
// one yields ErrMultipleCredentials, whatever they hold; one is
// Authenticate(values[0]). Every transport authenticates through it, so the
// rule holds in one place.
func (k *Keys) AuthenticateValues(values []string) (Principal, error) {
	switch len(values) {
	case 0:
		return k.Authenticate("")
	case 1:
		return k.Authenticate(values[0])
	default:
		return Principal{}, fmt.Errorf("%w (%d values): send exactly one", ErrMultipleCredentials, len(values))
	}
}

// bearerToken returns the token of a "Bearer <token>" header value.
func bearerToken(header string) (string, error) {
	header = strings.Trim(header, " \t")
	if header == "" {
		return "", errors.New("no credentials")
	}
	scheme, token, _ := strings.Cut(header, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", errors.New("unsupported authorization scheme (want Bearer)")
	}
	token = strings.TrimLeft(token, " ")
	if err := checkToken(token); err != nil {
		return "", err
	}
	return token, nil
}

// checkToken rejects a token that no key could match or that is too long to
// be worth hashing.
func checkToken(token string) error {
	switch {
	case token == "":
		return errors.New("empty token")
	case len(token) > maxTokenLen:
		return fmt.Errorf("token longer than %d bytes", maxTokenLen)
	case strings.ContainsFunc(token, unicode.IsSpace):
		return errors.New("token contains whitespace")
	default:
		return nil
	}
}

func parseKeys(text string) (*Keys, error) {
	b := newKeysBuilder()
	for n, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		entries := strings.Split(line, ",")
		for i, entry := range entries {
			if strings.TrimSpace(entry) == "" {
				continue
			}
			where := fmt.Sprintf("line %d", n+1)
			if len(entries) > 1 {
				where += fmt.Sprintf(" entry %d", i+1)
			}
			k, err := parseEntry(entry)
			if err == nil {
				err = b.add(k, where)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
	}
	return b.keys, nil
}

// parseEntry splits one configuration entry into a Key, unchecked.
func parseEntry(entry string) (Key, error) {
	f := strings.Fields(entry)
	if len(f) != 4 {
		return Key{}, fmt.Errorf("%w, got %d", errFieldCount, len(f))
	}
	return Key{Name: f[0], TenantID: f[1], Role: Role(f[2]), Hash: f[3]}, nil
}

// keysBuilder collects checked keys and remembers where each hash and name
// came from, to name both places in a duplicate error.
type keysBuilder struct {
	keys   *Keys
	hashAt map[[sha256.Size]byte]string
	nameAt map[string]string
}

func newKeysBuilder() *keysBuilder {
	return &keysBuilder{
		keys:   &Keys{byHash: make(map[[sha256.Size]byte]Principal)},
		hashAt: make(map[[sha256.Size]byte]string),
		nameAt: make(map[string]string),
	}
}

// add checks k, found at where, and adds it.
func (b *keysBuilder) add(k Key, where string) error {
	p, sum, err := k.check()
	if err != nil {
		return err
	}
	if prev, ok := b.hashAt[sum]; ok {
		return fmt.Errorf("duplicate key hash (same key as %s)", prev)
	}
	if prev, ok := b.nameAt[p.KeyID]; ok {
		return fmt.Errorf("duplicate key name %q (also %s)", p.KeyID, prev)
	}
	b.hashAt[sum], b.nameAt[p.KeyID] = where, where
	b.keys.byHash[sum] = p
	return nil
}

// check validates k and returns its Principal and digest.
func (k Key) check() (Principal, [sha256.Size]byte, error) {
	sum, err := parseHash(k.Hash)
	if err != nil {
		return Principal{}, sum, err
	}
	name := k.Name
	if name == "" {
		name = hex.EncodeToString(sum[:4])
	}
	switch {
	case len(name) > maxNameLen || !isIdent(name):
		return Principal{}, sum, errName
	case k.TenantID == "":
		return Principal{}, sum, errNoTenant
	case len(k.TenantID) > maxTenantLen || !isIdent(k.TenantID) || strings.Contains(k.TenantID, "."):
		return Principal{}, sum, errTenant
	case !k.Role.valid():
		return Principal{}, sum, errRole
	}
	return Principal{KeyID: name, TenantID: k.TenantID, Role: k.Role}, sum, nil
}

// parseHash decodes "sha256:<64 lowercase hex>".
func parseHash(s string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	digits, ok := strings.CutPrefix(s, hashPrefix)
	if !ok || len(digits) != hex.EncodedLen(sha256.Size) || strings.ToLower(digits) != digits {
		return sum, errHash
	}
	if _, err := hex.Decode(sum[:], []byte(digits)); err != nil {
		return sum, errHash
	}
	return sum, nil
}

// isIdent reports whether s consists only of [A-Za-z0-9._-].
func isIdent(s string) bool {
	for i := range len(s) {
		c := s[i]
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

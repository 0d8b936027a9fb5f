package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tokenPrefix starts every generated token, so that a leaked one is
// recognisable as Weft's.
const tokenPrefix = "weft_"

// GenerateToken returns a new random API token: "weft_" followed by 32 bytes
// from crypto/rand, base64url-encoded without padding.
func GenerateToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: generate token: %w", err)
	}
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// LoadOrCreateDevToken returns the API token for `weft dev` and whether it
// was created now.
//
// If override is non-empty it is returned, trimmed of surrounding whitespace,
// and nothing is read or written. Otherwise the token is read from the file at
// path, trimmed; an empty file is an error. If the file does not exist, a
// token from GenerateToken is written to it: parent directories are created
// with mode 0o700, and the file with mode 0o600, atomically (a temporary file
// in the same directory renamed into place), so a reader never sees a partial
// token. Two processes creating the file at once each succeed; the last
// rename wins. Every returned token passes the checks Keys.Authenticate
// applies, and no error quotes the token.
func LoadOrCreateDevToken(path string, override string) (token string, created bool, err error) {
	if override != "" {
		token = strings.TrimSpace(override)
		if err := checkToken(token); err != nil {
			return "", false, fmt.Errorf("auth: dev token override: %w", err)
		}
		return token, false, nil
	}
	data, err := os.ReadFile(path)
	if err == nil {
		token = strings.TrimSpace(string(data))
		if err := checkToken(token); err != nil {
			return "", false, fmt.Errorf("auth: dev token file %s: %w", path, err)
		}
		return token, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("auth: dev token: %w", err)
	}
	if token, err = GenerateToken(); err != nil {
		return "", false, err
	}
	if err := writeFileAtomic(path, []byte(token+"\n")); err != nil {
		return "", false, fmt.Errorf("auth: dev token: %w", err)
	}
	return token, true, nil
}

// writeFileAtomic writes data to path with mode 0o600 by renaming a
// temporary file in the same directory into place, creating missing parent
// directories with mode 0o700. On failure it removes the temporary file.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err = os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Package devfile is weft dev's endpoints file, .weft/dev/endpoints.json:
// `weft dev` writes it, the CLI reads it to find the stack when no flag or
// variable names a URL (docs/cli.md, "Finding the dev stack").
package devfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Name is the endpoints file's name in the dev data folder. It says where
// the running (or last) `weft dev` listens, so that a stack on other ports
// than the defaults is still found.
const Name = "endpoints.json"

// Endpoints is the content of the endpoints file. Paths are absolute,
// URLs carry no secret: the NATS password and the token stay in their own
// files. Its JSON names are a contract with the CLI and with programs
// beside the dev stack (docs/cli.md).
type Endpoints struct {
	// Gateway is the gateway's URL (the API: runs, signals, schedules).
	Gateway string `json:"gateway"`
	// ReadAPI is the read API's URL, which also serves the UI.
	ReadAPI string `json:"readApi"`
	// NATS is the embedded NATS server's URL, without credentials; its
	// user is NATSUser, whose password is in NATSPasswordFile.
	NATS             string `json:"nats"`
	NATSUser         string `json:"natsUser"`
	NATSPasswordFile string `json:"natsPasswordFile"`
	// Ops serves /healthz, /readyz and /metrics; empty when turned off.
	Ops string `json:"ops,omitempty"`
	// TokenFile holds the API token; empty when the stack took its token
	// from WEFT_DEV_TOKEN, which is not written anywhere.
	TokenFile string `json:"tokenFile,omitempty"`
}

// Write writes e to dir's endpoints file, mode 0600, by renaming a
// temporary file into place: a reader sees the old content or the new,
// never a part.
func Write(dir string, e Endpoints) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("dev endpoints: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+Name+".tmp-*")
	if err != nil {
		return fmt.Errorf("dev endpoints: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("dev endpoints: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, Name)); err != nil { // CreateTemp made it 0600
		_ = os.Remove(f.Name())
		return fmt.Errorf("dev endpoints: %w", err)
	}
	return nil
}

// Read reads dir's endpoints file; a missing file is (nil, nil).
func Read(dir string) (*Endpoints, error) {
	path := filepath.Join(dir, Name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read weft dev's endpoints: %w", err)
	}
	var e Endpoints
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("weft dev's endpoints file %s: %w (remove it, or restart weft dev to write it again)", path, err)
	}
	return &e, nil
}

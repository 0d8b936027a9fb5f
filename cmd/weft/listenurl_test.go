package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The dev gateway names the read API by the UI's listen address, unless
// the port is picked at listen time.
func TestListenURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8081": "http://127.0.0.1:8081",
		":8081":          "http://localhost:8081",
		"[::1]:9000":     "http://[::1]:9000",
		"127.0.0.1:0":    "",
		"nonsense":       "",
	} {
		require.Equal(t, want, listenURL(addr), addr)
	}
}

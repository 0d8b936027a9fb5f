package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A command's pool has DefaultMaxConns connections unless its URL says
// otherwise, in either form pgx reads.
func TestPoolConfigMaxConns(t *testing.T) {
	for url, want := range map[string]int32{
		"postgres://weft@127.0.0.1:5432/weft":                    DefaultMaxConns,
		"postgres://weft@127.0.0.1:5432/weft?pool_max_conns=5":   5,
		"host=127.0.0.1 user=weft dbname=weft":                   DefaultMaxConns,
		"host=127.0.0.1 user=weft dbname=weft pool_max_conns=40": 40,
	} {
		cfg, err := poolConfig(url)
		require.NoError(t, err, url)
		require.Equal(t, want, cfg.MaxConns, url)
	}
	_, err := poolConfig("postgres://weft@127.0.0.1:5432/weft?pool_max_conns=none")
	require.Error(t, err)
}

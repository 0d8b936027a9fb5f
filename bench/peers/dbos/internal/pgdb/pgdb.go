// Package pgdb makes a fresh database on a shared Postgres server for one
// run of the peer, and drops it afterwards.
package pgdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
)

// DefaultServer is the shared server the peer runs on: local, trust auth.
const DefaultServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// DB is a database created for one run.
type DB struct {
	// Name is the database's name, prefix_<random hex>.
	Name string
	// URL connects to it.
	URL    string
	server string
}

// Create makes a database named prefix_<random hex> on the server that
// serverURL connects to (any database of it).
func Create(ctx context.Context, serverURL, prefix string) (*DB, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("random name: %w", err)
	}
	name := prefix + "_" + hex.EncodeToString(b[:])
	if err := exec(ctx, serverURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, fmt.Errorf("parse server url: %w", err)
	}
	u.Path = "/" + name
	return &DB{Name: name, URL: u.String(), server: serverURL}, nil
}

// Drop drops the database, closing the connections still open to it.
func (d *DB) Drop(ctx context.Context) error {
	if err := exec(ctx, d.server, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.Name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", d.Name, err)
	}
	return nil
}

func exec(ctx context.Context, serverURL, sql string) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, sql)
	return err
}

package verify

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgverify"
)

// LockHint adds what to do to err when it is a lock timeout: a table verify
// could not read because another session kept it locked.
func LockHint(err error) error { return pgverify.LockHint(err) }

// PostgresSource is a PostgreSQL source, read by package internal/pgverify.
type PostgresSource struct {
	readerSide
	r *pgverify.Reader
}

var _ Source = (*PostgresSource)(nil)

// NewPostgresSource prepares conn, a session of its own, for reading the
// source. Its position is the WAL insert position (the replay position on a
// standby).
func NewPostgresSource(ctx context.Context, conn *pgx.Conn) (*PostgresSource, error) {
	r, err := pgverify.NewReader(ctx, conn, "source")
	if err != nil {
		return nil, err
	}
	r.SetPosition(`(CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_insert_lsn() END)::text`, "")
	return &PostgresSource{readerSide: newReaderSide(r), r: r}, nil
}

// Major is the server's major version.
func (s *PostgresSource) Major() int { return s.r.Major() }

// Boundary implements Source.
func (s *PostgresSource) Boundary(ctx context.Context, t *SideTable, after Key, n int64) (Key, error) {
	k, err := s.r.Boundary(ctx, t, after, n)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	return k, nil
}

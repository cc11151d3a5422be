package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PostgresLockKey is the pg_advisory_xact_lock key every migration transaction
// takes on a PostgreSQL target ("pgrelay" in ASCII).
const PostgresLockKey int64 = 0x7067_7265_6c61_79

// postgresBootstrap creates the versions table. It runs under the advisory lock,
// so IF NOT EXISTS cannot race with another instance.
const postgresBootstrap = `CREATE SCHEMA IF NOT EXISTS pgrelay;
CREATE TABLE IF NOT EXISTS pgrelay.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// ApplyPostgres brings the pgrelay metadata schema on a PostgreSQL target up to
// date and returns the migrations it applied (none when already current). conn
// must not be inside a transaction. Each version runs in its own transaction
// together with its row in pgrelay.schema_migrations.
func ApplyPostgres(ctx context.Context, conn *pgx.Conn) ([]Migration, error) {
	ms, err := Postgres()
	if err != nil {
		return nil, err
	}
	var applied []Migration
	for {
		m, done, err := applyNextPostgres(ctx, conn, ms)
		if err != nil {
			return applied, err
		}
		if done {
			return applied, nil
		}
		applied = append(applied, m)
	}
}

// PostgresVersion returns the highest migration version applied on the target, 0
// when pgrelay's metadata schema does not exist yet.
func PostgresVersion(ctx context.Context, conn *pgx.Conn) (int, error) {
	var v int
	err := conn.QueryRow(ctx, `SELECT CASE WHEN to_regclass('pgrelay.schema_migrations') IS NULL THEN 0
		ELSE (SELECT coalesce(max(version), 0) FROM pgrelay.schema_migrations) END`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("migrations: read applied version: %w", err)
	}
	return v, nil
}

// applyNextPostgres applies the first pending migration in one transaction.
func applyNextPostgres(ctx context.Context, conn *pgx.Conn, ms []Migration) (m Migration, done bool, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return m, false, fmt.Errorf("migrations: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
		}
	}()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", PostgresLockKey); err != nil {
		return m, false, fmt.Errorf("migrations: take advisory lock: %w", err)
	}
	if err := execScript(ctx, tx, postgresBootstrap); err != nil {
		return m, false, fmt.Errorf("migrations: create pgrelay.schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM pgrelay.schema_migrations").Scan(&current); err != nil {
		return m, false, fmt.Errorf("migrations: read applied version: %w", err)
	}
	if current > len(ms) {
		return m, false, fmt.Errorf("migrations: target metadata is at version %d but this pgrelay knows only %d: upgrade pgrelay", current, len(ms))
	}
	if current == len(ms) {
		if err := tx.Commit(ctx); err != nil {
			return m, false, fmt.Errorf("migrations: commit: %w", err)
		}
		return m, true, nil
	}
	m = ms[current]
	if err := execScript(ctx, tx, m.SQL); err != nil {
		return m, false, fmt.Errorf("migrations: apply postgres/%04d_%s.sql: %w", m.Version, m.Name, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO pgrelay.schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
		return m, false, fmt.Errorf("migrations: record version %d: %w", m.Version, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return m, false, fmt.Errorf("migrations: commit version %d: %w", m.Version, err)
	}
	return m, false, nil
}

// execScript runs a multi-statement script with the simple query protocol.
func execScript(ctx context.Context, tx pgx.Tx, script string) error {
	_, err := tx.Conn().PgConn().Exec(ctx, script).ReadAll()
	return err
}

package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
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
// must not be inside a transaction. A target already current costs one query;
// otherwise every pending version runs in one transaction, under the advisory
// lock, each with its row in pgrelay.schema_migrations: a new target is set up
// in about ten round trips and one commit instead of seven and one per version.
func ApplyPostgres(ctx context.Context, conn *pgx.Conn) ([]Migration, error) {
	ms, err := Postgres()
	if err != nil {
		return nil, err
	}
	// Unlocked: versions only grow, and the locked path below reads again. An
	// error (a role that may not read the table) is left to that path too.
	if v, err := PostgresVersion(ctx, conn); err == nil && v == len(ms) {
		return nil, nil
	}
	return applyPendingPostgres(ctx, conn, ms)
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

// applyPendingPostgres applies the pending migrations in one transaction.
func applyPendingPostgres(ctx context.Context, conn *pgx.Conn, ms []Migration) (applied []Migration, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(ctx)
		}
	}()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", PostgresLockKey); err != nil {
		return nil, fmt.Errorf("migrations: take advisory lock: %w", err)
	}
	if err := execScript(ctx, tx, postgresBootstrap); err != nil {
		return nil, fmt.Errorf("migrations: create pgrelay.schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM pgrelay.schema_migrations").Scan(&current); err != nil {
		return nil, fmt.Errorf("migrations: read applied version: %w", err)
	}
	if current > len(ms) {
		return nil, fmt.Errorf("migrations: target metadata is at version %d but this pgrelay knows only %d: upgrade pgrelay", current, len(ms))
	}
	for _, m := range ms[current:] {
		// The version's row goes in the same round trip as its script.
		script := fmt.Sprintf("%s\n;\nINSERT INTO pgrelay.schema_migrations (version, name) VALUES (%d, %s)", m.SQL, m.Version, pgquote.Literal(m.Name))
		if err := execScript(ctx, tx, script); err != nil {
			return nil, fmt.Errorf("migrations: apply postgres/%04d_%s.sql: %w", m.Version, m.Name, err)
		}
		applied = append(applied, m)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("migrations: commit: %w", err)
	}
	return applied, nil
}

// execScript runs a multi-statement script with the simple query protocol.
func execScript(ctx context.Context, tx pgx.Tx, script string) error {
	_, err := tx.Conn().PgConn().Exec(ctx, script).ReadAll()
	return err
}

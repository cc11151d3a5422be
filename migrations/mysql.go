package migrations

import (
	"context"
	"database/sql"
	"embed"

	"fmt"
	"strings"
)

//go:embed mysql/*.sql
var mysqlFiles embed.FS

// MySQL returns the MySQL/MariaDB target migrations in version order.
func MySQL() ([]Migration, error) { return load(mysqlFiles, "mysql") }

// MySQLLockName is the named lock (GET_LOCK) every migration of a MySQL
// target's database runs under, so two pgrelay instances starting together
// apply each version once; database is the target URL's.
func MySQLLockName(database string) string { return "pgrelay_migrations." + database }

// mysqlBootstrap creates the versions table in the session's database.
const mysqlBootstrap = `CREATE TABLE IF NOT EXISTS pgrelay_schema_migrations (
    version    INT NOT NULL PRIMARY KEY,
    name       VARCHAR(200) NOT NULL,
    applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// ApplyMySQL brings pgrelay's metadata tables in conn's database (the
// target URL's) up to date and returns the migrations it applied. MySQL
// commits each DDL statement on its own: a version's statements are each
// idempotent, and the version is recorded after the last of them, so a
// crash half-way runs the version again. Everything runs under a named lock.
func ApplyMySQL(ctx context.Context, conn *sql.Conn, database string) (applied []Migration, err error) {
	ms, err := MySQL()
	if err != nil {
		return nil, err
	}
	if v, err := MySQLVersion(ctx, conn); err == nil && v == len(ms) {
		return nil, nil
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 300)", MySQLLockName(database)).Scan(&got); err != nil {
		return nil, fmt.Errorf("migrations: take the named lock %s: %w", MySQLLockName(database), err)
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, fmt.Errorf("migrations: another session held the named lock %s for 5 minutes: is another pgrelay setting the target up?", MySQLLockName(database))
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", MySQLLockName(database)); rerr != nil && err == nil {
			err = fmt.Errorf("migrations: release the named lock: %w", rerr)
		}
	}()
	if _, err := conn.ExecContext(ctx, mysqlBootstrap); err != nil {
		return nil, fmt.Errorf("migrations: create pgrelay_schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM pgrelay_schema_migrations").Scan(&current); err != nil {
		return nil, fmt.Errorf("migrations: read applied version: %w", err)
	}
	if current > len(ms) {
		return nil, fmt.Errorf("migrations: target metadata is at version %d but this pgrelay knows only %d: upgrade pgrelay", current, len(ms))
	}
	for _, m := range ms[current:] {
		for _, stmt := range SplitStatements(m.SQL) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return nil, fmt.Errorf("migrations: apply mysql/%04d_%s.sql: %w", m.Version, m.Name, err)
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO pgrelay_schema_migrations (version, name) VALUES (?, ?)", m.Version, m.Name); err != nil {
			return nil, fmt.Errorf("migrations: record mysql/%04d_%s.sql: %w", m.Version, m.Name, err)
		}
		applied = append(applied, m)
	}
	return applied, nil
}

// MySQLVersion returns the highest migration version applied in conn's
// database, 0 when pgrelay's metadata tables do not exist yet.
func MySQLVersion(ctx context.Context, conn *sql.Conn) (int, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pgrelay_schema_migrations'`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("migrations: read applied version: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var v sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT MAX(version) FROM pgrelay_schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("migrations: read applied version: %w", err)
	}
	return int(v.Int64), nil
}

// SplitStatements splits a migration script into its statements: each ends
// with a semicolon at the end of a line (before a -- comment). Comment lines
// are kept with the statement they precede. Scripts hold no "--" inside a
// string.
func SplitStatements(script string) []string {
	var stmts []string
	var cur strings.Builder
	for line := range strings.SplitSeq(script, "\n") {
		cur.WriteString(line + "\n")
		code, _, _ := strings.Cut(line, "--")
		if strings.HasSuffix(strings.TrimSpace(code), ";") {
			if stmt := strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"); hasCode(stmt) {
				stmts = append(stmts, stmt)
			}
			cur.Reset()
		}
	}
	if rest := strings.TrimSpace(cur.String()); hasCode(rest) {
		stmts = append(stmts, rest)
	}
	return stmts
}

// hasCode reports whether s holds something besides comments and blanks.
func hasCode(s string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			return true
		}
	}
	return false
}

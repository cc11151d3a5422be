package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/schema"
)

// CreateIndexes builds secondary indexes on t's target table from the source's
// definitions (pg_get_indexdef, schema-qualified; a PostgreSQL target keeps the
// source's schema and table names). It runs after the snapshot copy, on a
// connection of its own (from the bulk loads' pool), so several tables'
// indexes build at once. An index
// that already exists is left alone, so a redone copy can call it again. One
// the target cannot build (an older server than the source) is left out with
// a warning: nothing replicated depends on a secondary index.
func (s *Sink) CreateIndexes(ctx context.Context, t *schema.Table, defs []string) (err error) {
	conn, err := s.bulkConn(ctx)
	if err != nil {
		return err
	}
	defer func() { s.releaseBulk(ctx, conn, err == nil) }()
	for _, def := range defs {
		sql := ifNotExists(def)
		if _, err := conn.Exec(ctx, sql); err != nil {
			if unbuildable(err) && !conn.IsClosed() {
				s.warnIndexLeftOut(quotedTable(s.dialect, t), sql, err)
				continue
			}
			return classify(fmt.Errorf("sink/postgres: build index of %s (%s): %w", t.QualifiedName(), sql, err), conn.IsClosed())
		}
	}
	return nil
}

// ifNotExists turns "CREATE [UNIQUE] INDEX name ON ..." into its IF NOT EXISTS form.
func ifNotExists(def string) string {
	for _, head := range []string{"CREATE UNIQUE INDEX ", "CREATE INDEX "} {
		if rest, ok := strings.CutPrefix(def, head); ok && !strings.HasPrefix(rest, "IF NOT EXISTS ") {
			return head + "IF NOT EXISTS " + rest
		}
	}
	return def
}

// DropPrimaryKey removes the primary key of t's target table before a bulk
// load into the emptied table, reporting whether there was one. AddPrimaryKey
// puts it back after the load. A key that cannot be dropped — a foreign key
// depends on it, a partition's key belongs to its partitioned table, the role
// does not own the table, or another session holds a lock on it for more
// than a second — stays, and the table loads with it: slower, the same rows.
func (s *Sink) DropPrimaryKey(ctx context.Context, t *schema.Table) (bool, error) {
	qname := quotedTable(s.dialect, t)
	var dropped bool
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		var name string
		err := conn.QueryRow(ctx, "SELECT conname FROM pg_catalog.pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'", qname).Scan(&name)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := execLockWait(ctx, conn, shortLockWait, "ALTER TABLE "+qname+" DROP CONSTRAINT "+s.dialect.QuoteIdent(name), false); err != nil {
			if conn.IsClosed() {
				return err
			}
			s.logger().Info("loading the table with its primary key in place: it cannot be dropped", "table", t.DisplayName(), "why", describe(err))
			return nil
		}
		dropped = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("sink/postgres: drop the primary key of %s before loading it: %w", qname, err)
	}
	return dropped, nil
}

// AddPrimaryKey gives t's target table its primary key when it has none. Like
// CreateIndexes it runs on a connection of the bulk loads' pool: a snapshot of
// thousands of small tables opened a session per table for it, whose first
// catalog query alone took 5 ms.
func (s *Sink) AddPrimaryKey(ctx context.Context, t *schema.Table) (err error) {
	pk, ok := s.dialect.(interface{ AddPrimaryKey(*schema.Table) string })
	if !ok {
		return nil
	}
	sql := pk.AddPrimaryKey(t)
	if sql == "" {
		return nil
	}
	qname := quotedTable(s.dialect, t)
	conn, err := s.bulkConn(ctx)
	if err != nil {
		return err
	}
	defer func() { s.releaseBulk(ctx, conn, err == nil) }()
	var has bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_constraint WHERE conrelid = $1::regclass AND contype = 'p')", qname).Scan(&has); err != nil {
		return classify(fmt.Errorf("sink/postgres: add the primary key of %s: %w", qname, err), conn.IsClosed())
	}
	if has {
		return nil
	}
	if err := s.execWaiting(ctx, conn, t, sql); err != nil {
		return classify(fmt.Errorf("sink/postgres: add the primary key of %s (%s): %w", qname, sql, err), conn.IsClosed())
	}
	return nil
}

// execWaiting runs sql (DDL on t that needs a lock other sessions' reads
// conflict with) and, while another session holds a lock on t, says so every
// lockWait and tries again: the key must be built, and a session left idle
// in a transaction that read the table (a dashboard, a psql) would otherwise
// make the copy wait in silence. Options.LockWait is how long it waits
// before it says so.
func (s *Sink) execWaiting(ctx context.Context, conn *pgx.Conn, t *schema.Table, sql string) error {
	qname := quotedTable(s.dialect, t)
	for {
		err := execLockWait(ctx, conn, s.opts.LockWait, sql, false)
		if err == nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55P03" || conn.IsClosed() || ctx.Err() != nil {
			return err
		}
		var holders string
		_ = conn.QueryRow(ctx, `SELECT coalesce(string_agg(DISTINCT l.pid::text, ', '), '')
			FROM pg_catalog.pg_locks l WHERE l.relation = $1::regclass AND l.granted AND l.pid <> pg_catalog.pg_backend_pid()`, qname).Scan(&holders)
		s.logger().Warn("waiting for a lock on a target table: another session holds one (see pg_locks and pg_stat_activity); pgrelay goes on once it is released",
			"table", t.DisplayName(), "pids", holders, "for", sql)
	}
}

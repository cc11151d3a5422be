package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// WithLockTimeout runs fn in a read-only transaction on conn whose waits for a
// lock end after d with a lock timeout (SQLSTATE 55P03, see IsLockTimeout).
//
// Reading pg_publication_tables on PostgreSQL 18 opens every published table,
// so it waits for a table's ACCESS EXCLUSIVE lock, which a prepared transaction
// that altered or truncated the table holds until COMMIT PREPARED: for hours,
// if nobody finishes it.
func WithLockTimeout(ctx context.Context, conn *pgx.Conn, d time.Duration, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", d.Milliseconds())); err != nil {
			return err
		}
		return fn(tx)
	})
}

// IsLockTimeout reports whether err is a lock timeout (SQLSTATE 55P03).
func IsLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// LockedHint is what to tell a user whose command waited in vain for a
// published table's lock.
const LockedHint = "a published table stayed locked (DDL in progress, or a prepared transaction that altered or truncated it: see pg_prepared_xacts on the source)"

// PublishedName is one table of a publication, as pg_publication_tables lists it.
type PublishedName struct {
	Schema, Name string
	OID          uint32
}

// ListPublication lists publication's tables, waiting at most lockWait for a
// locked one (see WithLockTimeout; IsLockTimeout tells that case).
func ListPublication(ctx context.Context, conn *pgx.Conn, publication string, lockWait time.Duration) ([]PublishedName, error) {
	var out []PublishedName
	err := WithLockTimeout(ctx, conn, lockWait, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT pt.schemaname::text, pt.tablename::text, c.oid
			FROM pg_catalog.pg_publication_tables pt
			JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname
			JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
			WHERE pt.pubname = $1 ORDER BY 1, 2`, publication)
		if err != nil {
			return err
		}
		var p PublishedName
		_, err = pgx.ForEachRow(rows, []any{&p.Schema, &p.Name, &p.OID}, func() error {
			out = append(out, p)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("source: list tables of publication %q: %w", publication, err)
	}
	return out, nil
}

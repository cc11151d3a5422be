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

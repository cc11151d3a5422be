package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/sink"
)

// changeError is ce as this sink reports it: Err worded as PostgreSQL words
// it, and the target's refusal of the row itself (a data exception or an
// integrity constraint: SQLSTATE classes 22 and 23) marked as such.
func changeError(ce sink.ChangeError) *sink.ChangeError {
	ce.Sink = "sink/postgres"
	if sqlState(ce.Err) != "" {
		ce.Reason = describe(ce.Err)
	}
	code := sqlState(ce.Err)
	ce.Refused = strings.HasPrefix(code, "22") || strings.HasPrefix(code, "23")
	return &ce
}

// refusedColumn sets the column whose value the target refused (COPY says
// which), and what to do when its input function looked up an object by
// name the target lacks: an OID alias type's (regclass, regtype, regproc, …).
func refusedColumn(ce *sink.ChangeError, column string) {
	if column == "" {
		return
	}
	ce.Column = pgquote.Ident(column)
	switch sqlState(ce.Err) {
	case "42P01", "42704", "42883", "3F000", "42P05":
		ce.Hint = "the column's values name objects (its type is one of the OID alias types, regclass, regtype, regproc, …) and the target lacks this one: create it on the target, or store the names as text"
	}
}

// describe renders a server error as PostgreSQL words it, without the
// severity, followed by its DETAIL on the same line: for constraint errors
// the detail names the row ("Key (id)=(42) already exists.", "Failing row
// contains (…)."), which matters most when one statement applied many rows.
func describe(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		s := pgErr.Message + " (SQLSTATE " + pgErr.Code + ")"
		if d := strings.Join(strings.Fields(pgErr.Detail), " "); d != "" {
			s += ": " + d
		}
		return s
	}
	return err.Error()
}

// retryableCodes are the SQLSTATEs after which a whole target transaction can be
// retried: nothing of it was committed and a new attempt can succeed.
var retryableCodes = map[string]bool{
	"40001": true, // serialization_failure
	"40P01": true, // deadlock_detected
	"55P03": true, // lock_not_available
	"57P01": true, // admin_shutdown
	"57P02": true, // crash_shutdown
	"57P03": true, // cannot_connect_now
	"53300": true, // too_many_connections
	"58030": true, // io_error
}

// isRetryable reports whether the target transaction that failed with err can be
// retried as a whole. lost tells whether the connection is gone: a transaction
// cut off before COMMIT was sent is rolled back by the server, so it may be
// retried too.
func isRetryable(err error, lost bool) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// A label added to an enum on the source reaches the target with the
		// next Relation message of a table using the type, which a new session
		// sends: retrying from the stored position adds the label first.
		if pgErr.Code == "22P02" && strings.HasPrefix(pgErr.Message, "invalid input value for enum") {
			return true
		}
		// Likewise an attribute added to a composite type: its rows do not
		// fit the target's type until the next Relation message.
		if pgErr.Code == "22P02" && strings.HasPrefix(pgErr.Message, "malformed record literal") {
			return true
		}
		return retryableCodes[pgErr.Code] || strings.HasPrefix(pgErr.Code, "08")
	}
	return lost || pgconn.SafeToRetry(err)
}

// classify wraps err with sink.Retryable when the transaction may be retried,
// the target's refusal of a change's value with sink.ValueRejected, and a
// write refused by a read-only target (read_only_sql_transaction: a standby,
// default_transaction_read_only) as a *sink.ReadOnlyError (sink.ErrReadOnly).
func classify(err error, lost bool) error {
	if err == nil {
		return nil
	}
	if readOnlyRefusal(err) && !errors.Is(err, sink.ErrReadOnly) {
		return &sink.ReadOnlyError{Cause: readOnlyUnknown, Err: err}
	}
	if isRetryable(err, lost) {
		return sink.Retryable(err)
	}
	if valueRejected(err) {
		return sink.ValueRejected(err)
	}
	return err
}

// valueRejected reports whether err is a change's value refused by the target:
// a data exception (class 22: input syntax, out of range, malformed record)
// or a check violation (23514: pgrelay creates no table CHECKs, so a domain's).
func valueRejected(err error) bool {
	var ce *sink.ChangeError
	if !errors.As(err, &ce) {
		return false
	}
	code := sqlState(err)
	return strings.HasPrefix(code, "22") || code == "23514"
}

// sqlState returns the SQLSTATE of a server error, "" for others.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

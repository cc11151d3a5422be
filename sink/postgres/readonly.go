package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/sink"
)

// ReadOnlyError says that the target database takes no writes: its sessions
// start read-only (default_transaction_read_only, set for the database, the
// role, the server or the connection), or its server is a hot standby. It is
// an operator's fix away, so the errors that carry it are retryable
// (sink.ErrRetryable).
type ReadOnlyError struct {
	// Database is the target database; "" when not known (the refusal was
	// seen where it is not).
	Database string
	// Cause is what makes it read-only and how to undo it; "" when not known.
	Cause string
	// Err is the target's refusal of a write (SQLSTATE 25006), nil when a
	// start found the database read-only before writing.
	Err error
}

func (e *ReadOnlyError) Error() string {
	db := "the target database"
	if e.Database != "" {
		db = "target database " + pgquote.Ident(e.Database)
	}
	cause := e.Cause
	if cause == "" {
		cause = "its sessions are read-only (default_transaction_read_only on, for the database, the role or the server, or the server is a hot standby): make it writable, or point PGRELAY_TARGET_URL at the primary"
	}
	msg := db + " takes no writes: " + cause
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

func (e *ReadOnlyError) Unwrap() error { return e.Err }

// readOnlyRefusal tells the target's refusal of a write in a read-only
// transaction.
func readOnlyRefusal(err error) bool { return sqlState(err) == "25006" }

// CheckWritable returns a retryable *ReadOnlyError when conn's database takes
// no writes: a new session there starts read-only, or the server is a hot
// standby. conn must be a fresh session opened as pgrelay opens its own (the
// same URL): a session takes the database's and role's settings when it
// starts. PostgreSQL 14+ reports both in the startup (no round trip).
func CheckWritable(ctx context.Context, conn *pgx.Conn) error {
	pc := conn.PgConn()
	standby, readOnly := pc.ParameterStatus("in_hot_standby"), pc.ParameterStatus("default_transaction_read_only")
	if standby == "off" && readOnly == "off" {
		return nil
	}
	ro, err := readOnlyCause(ctx, conn)
	if err != nil {
		return fmt.Errorf("target: tell whether the database takes writes: %w", err)
	}
	if ro == nil {
		return nil
	}
	return sink.Retryable(ro)
}

// readOnlyCause reads on conn what makes its database read-only, nil when
// nothing does.
func readOnlyCause(ctx context.Context, conn *pgx.Conn) (*ReadOnlyError, error) {
	var db, role, source, file string
	var standby, readOnly bool
	var line *int32
	err := conn.QueryRow(ctx, `SELECT pg_catalog.current_database()::text, current_user::text, pg_catalog.pg_is_in_recovery(),
			s.setting = 'on', s.source, coalesce(s.sourcefile, ''), s.sourceline
		FROM pg_catalog.pg_settings s WHERE s.name = 'default_transaction_read_only'`).Scan(&db, &role, &standby, &readOnly, &source, &file, &line)
	if err != nil {
		return nil, err
	}
	ro := &ReadOnlyError{Database: db}
	const reset = " RESET default_transaction_read_only"
	switch {
	case standby:
		ro.Cause = "its server is a hot standby (in recovery): point PGRELAY_TARGET_URL at the primary, or promote this server"
	case !readOnly:
		return nil, nil
	case source == "database":
		ro.Cause = "default_transaction_read_only is on for the database: run ALTER DATABASE " + pgquote.Ident(db) + reset
	case source == "user":
		ro.Cause = "default_transaction_read_only is on for role " + pgquote.Ident(role) + ": run ALTER ROLE " + pgquote.Ident(role) + reset
	case source == "database user":
		ro.Cause = "default_transaction_read_only is on for role " + pgquote.Ident(role) + " in the database: run ALTER ROLE " + pgquote.Ident(role) + " IN DATABASE " + pgquote.Ident(db) + reset
	case source == "configuration file":
		where := "in the server's configuration"
		if file != "" && line != nil {
			where = fmt.Sprintf("in the server's configuration (%s, line %d)", file, *line)
		}
		ro.Cause = "default_transaction_read_only is on " + where + ": turn it off there (ALTER SYSTEM" + reset + " if it was set so) and reload the configuration (SELECT pg_reload_conf())"
	case source == "client":
		ro.Cause = "default_transaction_read_only is on in the connection's settings: take it out of PGRELAY_TARGET_URL's options (or PGOPTIONS)"
	default:
		ro.Cause = fmt.Sprintf("default_transaction_read_only is on (set by %s): turn it off", source)
	}
	return ro, nil
}

// explainTimeout bounds ExplainReadOnly's look at the target.
const explainTimeout = 30 * time.Second

// ExplainReadOnly turns err, when it is the target's refusal of a write in a
// read-only transaction (SQLSTATE 25006), into a retryable *ReadOnlyError
// naming the database and what makes it read-only, read on a new session to
// url; any other err is returned as it is.
func ExplainReadOnly(ctx context.Context, url string, err error) error {
	var ro *ReadOnlyError
	found := errors.As(err, &ro)
	switch {
	case err == nil || !found && !readOnlyRefusal(err):
		return err
	case found && ro.Database != "":
		return err // explained already
	}
	out := &ReadOnlyError{Err: err}
	if ro != nil && ro.Err != nil {
		out.Err = ro.Err
	}
	ctx, cancel := context.WithTimeout(ctx, explainTimeout)
	defer cancel()
	if cfg, perr := pgconnstr.ParsePgx(url); perr == nil {
		if conn, cerr := pgx.ConnectConfig(ctx, cfg); cerr == nil {
			if found, qerr := readOnlyCause(ctx, conn); qerr == nil && found != nil {
				out.Database, out.Cause = found.Database, found.Cause
			} else if qerr == nil {
				out.Database, out.Cause = cfg.Database, "its sessions were read-only and are not any more"
			}
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}
	return sink.Retryable(out)
}

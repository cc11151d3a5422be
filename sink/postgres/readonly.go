package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/sink"
)

// readOnlyUnknown is the cause of a refused write while what makes the
// database read-only is not known yet (the relay asks Preflight).
const readOnlyUnknown = "its sessions are read-only (default_transaction_read_only on, for the database, the role or the server, or the server is a hot standby): make it writable, or point PGRELAY_TARGET_URL at the primary"

// readOnlyRefusal tells the target's refusal of a write in a read-only
// transaction.
func readOnlyRefusal(err error) bool { return sqlState(err) == "25006" }

// readOnlyProblem returns the problem of conn's database when it takes no
// writes: a new session there starts read-only, or the server is a hot
// standby; nil when it takes them. conn must be a session opened as pgrelay
// opens its own (the same URL): a session takes the database's and role's
// settings when it starts. PostgreSQL 14+ reports both in the startup (no
// round trip).
func readOnlyProblem(ctx context.Context, conn *pgx.Conn) (*sink.Problem, error) {
	pc := conn.PgConn()
	if pc.ParameterStatus("in_hot_standby") == "off" && pc.ParameterStatus("default_transaction_read_only") == "off" {
		return nil, nil
	}
	var db, role, source, file string
	var standby, readOnly bool
	var line *int32
	err := conn.QueryRow(ctx, `SELECT pg_catalog.current_database()::text, current_user::text, pg_catalog.pg_is_in_recovery(),
			s.setting = 'on', s.source, coalesce(s.sourcefile, ''), s.sourceline
		FROM pg_catalog.pg_settings s WHERE s.name = 'default_transaction_read_only'`).Scan(&db, &role, &standby, &readOnly, &source, &file, &line)
	if err != nil {
		return nil, fmt.Errorf("target: tell whether the database takes writes: %w", err)
	}
	p := &sink.Problem{Kind: sink.ProblemReadOnly, Object: pgquote.Ident(db)}
	const reset = " RESET default_transaction_read_only"
	switch {
	case standby:
		p.Fix = "its server is a hot standby (in recovery): point PGRELAY_TARGET_URL at the primary, or promote this server"
	case !readOnly:
		return nil, nil
	case source == "database":
		p.Fix = "default_transaction_read_only is on for the database: run ALTER DATABASE " + pgquote.Ident(db) + reset
	case source == "user":
		p.Fix = "default_transaction_read_only is on for role " + pgquote.Ident(role) + ": run ALTER ROLE " + pgquote.Ident(role) + reset
	case source == "database user":
		p.Fix = "default_transaction_read_only is on for role " + pgquote.Ident(role) + " in the database: run ALTER ROLE " + pgquote.Ident(role) + " IN DATABASE " + pgquote.Ident(db) + reset
	case source == "configuration file":
		where := "in the server's configuration"
		if file != "" && line != nil {
			where = fmt.Sprintf("in the server's configuration (%s, line %d)", file, *line)
		}
		p.Fix = "default_transaction_read_only is on " + where + ": turn it off there (ALTER SYSTEM" + reset + " if it was set so) and reload the configuration (SELECT pg_reload_conf())"
	case source == "client":
		p.Fix = "default_transaction_read_only is on in the connection's settings: take it out of PGRELAY_TARGET_URL's options (or PGOPTIONS)"
	default:
		p.Fix = fmt.Sprintf("default_transaction_read_only is on (set by %s): turn it off", source)
	}
	return p, nil
}

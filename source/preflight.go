package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/internal/redact"
)

// ErrSlotOtherDatabase: a logical slot of that name exists but decodes another
// database (slots are per database).
var ErrSlotOtherDatabase = errors.New("replication slot belongs to another database")

// PreflightResult is what Preflight learned about the source.
type PreflightResult struct {
	ServerVersion string
	ServerMajor   int
	ProtoVersion  int // highest pgoutput proto_version the server supports
	Database      string
	User          string
	Superuser     bool
	Replication   bool // the role may open replication connections
	WALLevel      string
	// MaxPreparedTransactions of the source: 0 means nobody prepares transactions
	// on it, so two-phase decoding would only add overhead.
	MaxPreparedTransactions int
	MaxReplicationSlots     int
	UsedReplicationSlots    int
	Slot                    SlotState
	PublicationExists       bool
	PublicationCreated      bool // Preflight created it just now
	// Keyless lists the published tables (schema.table, quoted) without a
	// replica identity: no primary key under REPLICA IDENTITY DEFAULT (or a
	// DEFERRABLE one, which PostgreSQL does not take for the identity), or
	// NOTHING. Once published, UPDATE and DELETE on them fail on the source.
	Keyless []string
	// KeylessUnknown: the check could not run, LockedHint.
	KeylessUnknown bool
	// Unpublished lists the kinds of change (update, delete, truncate) the
	// publication does not publish (CREATE PUBLICATION … WITH (publish = …)).
	Unpublished []string
	// Problems holds one actionable error per failed check (also returned, joined,
	// as Preflight's error).
	Problems []error
}

// PreflightError lists every failed check, one line each. errors.Is finds each
// problem's sentinel (ErrWALLevel, ErrNoReplicationRole, …).
type PreflightError struct {
	Problems []error
}

func (e *PreflightError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

func (e *PreflightError) Unwrap() []error { return e.Problems }

// Preflight checks that the source can serve cfg before anything is set up, and
// creates the publication when it is missing and the role may. A server it cannot
// reach or log in to gives (nil, error). Otherwise every check runs, the result
// is returned, and the error (a *PreflightError) lists each problem on one line:
// wal_level, the REPLICATION attribute, a free slot when ours does not exist yet,
// a slot of that name with another plugin or database or invalidated, the
// publication (with the SQL to run when the role may not create it), options
// the server is too old for, and published tables in cfg.MetadataSchema.
func Preflight(ctx context.Context, url string, cfg ConnConfig) (*PreflightResult, error) {
	cfg.URL = url
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	conn, err := ConnectPlain(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rc, replErr := Connect(ctx, url)
	if replErr == nil {
		defer rc.Close(context.WithoutCancel(ctx))
	}
	return PreflightOn(ctx, conn, replErr, cfg)
}

// ConnectPlain opens a plain (not replication) connection to the source at
// url, with the session settings of every source connection and a one-line
// error naming what to fix when it fails.
func ConnectPlain(ctx context.Context, url string) (*pgx.Conn, error) {
	pcfg, err := parseSourceURL(url)
	if err != nil {
		return nil, err
	}
	xcfg, err := ParseConnConfig(url)
	if err != nil {
		return nil, fmt.Errorf("source: cannot parse the source URL: use postgres://user:password@host:port/database or key=value form")
	}
	conn, err := pgx.ConnectConfig(ctx, xcfg)
	if err != nil {
		return nil, redact.New(url).Err(describeConnectError(pcfg, err, false))
	}
	return conn, nil
}

// PreflightOn is Preflight on connections the caller opened to the source and
// keeps: conn, a plain one, and the outcome of opening a replication
// connection (replErr, nil when it opened), which tells whether the role may
// stream. cfg must be valid (ConnConfig.Validate).
func PreflightOn(ctx context.Context, conn *pgx.Conn, replErr error, cfg ConnConfig) (*PreflightResult, error) {
	r := &PreflightResult{}
	var superuser *bool
	err := conn.QueryRow(ctx, `SELECT current_setting('server_version'), current_database(), current_user,
			current_setting('wal_level'),
			current_setting('max_prepared_transactions')::int,
			current_setting('max_replication_slots')::int,
			(SELECT count(*) FROM pg_catalog.pg_replication_slots)::int,
			(SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user)`).Scan(
		&r.ServerVersion, &r.Database, &r.User, &r.WALLevel, &r.MaxPreparedTransactions,
		&r.MaxReplicationSlots, &r.UsedReplicationSlots, &superuser)
	if err != nil {
		return nil, fmt.Errorf("source: preflight: read server settings: %w", err)
	}
	r.ServerMajor = parseMajor(r.ServerVersion)
	r.ProtoVersion = ProtoVersionFor(r.ServerMajor)
	r.Superuser = superuser != nil && *superuser
	problem := func(err error) { r.Problems = append(r.Problems, err) }

	if r.ServerMajor < 10 {
		problem(fmt.Errorf("source: PostgreSQL %s is not supported: pgrelay needs 10 or newer: %w", r.ServerVersion, ErrUnsupported))
	}
	if r.WALLevel != "logical" {
		problem(fmt.Errorf("source: %w (it is %s): run ALTER SYSTEM SET wal_level = logical; then restart the server", ErrWALLevel, r.WALLevel))
	}

	// Whether a replication connection works (the REPLICATION attribute or a
	// managed service's replication role, pg_hba.conf, max_wal_senders) only a try
	// tells.
	if err := replErr; err != nil {
		if errors.Is(err, ErrNoReplicationRole) {
			problem(fmt.Errorf("source: %w: role %q may not open replication connections: run ALTER ROLE %s REPLICATION; as a superuser",
				ErrNoReplicationRole, r.User, pgquote.Ident(r.User)))
		} else {
			problem(err)
		}
	} else {
		r.Replication = true
	}

	r.Slot, err = ReadSlot(ctx, conn, cfg.Slot)
	switch {
	case err != nil:
		problem(err)
	case !r.Slot.Exists:
		if r.UsedReplicationSlots >= r.MaxReplicationSlots {
			problem(fmt.Errorf("source: %w: all %d replication slots are taken (max_replication_slots = %d) and slot %q does not exist yet: drop an unused slot with SELECT pg_drop_replication_slot('name'); or raise max_replication_slots and restart",
				ErrNoFreeSlot, r.UsedReplicationSlots, r.MaxReplicationSlots, cfg.Slot))
		}
	default:
		switch {
		case r.Slot.Type != "logical" || r.Slot.Plugin != "pgoutput":
			plugin := r.Slot.Plugin
			if r.Slot.Type != "logical" {
				plugin = r.Slot.Type + " slot"
			}
			problem(fmt.Errorf("source: %w: slot %q decodes with %s, pgrelay needs pgoutput: choose another PGRELAY_SLOT or drop it with SELECT pg_drop_replication_slot(%s);",
				ErrSlotPlugin, cfg.Slot, plugin, pgquote.Literal(cfg.Slot)))
		case r.Slot.Database != r.Database:
			problem(fmt.Errorf("source: %w: slot %q decodes database %q, the URL names %q: choose another PGRELAY_SLOT or fix the database in the URL",
				ErrSlotOtherDatabase, cfg.Slot, r.Slot.Database, r.Database))
		}
		if r.Slot.Invalidated() && !cfg.ReplaceSlot {
			why := "wal_status = " + r.Slot.WALStatus
			if r.Slot.InvalidationReason != "" {
				why = "invalidation_reason = " + r.Slot.InvalidationReason
			}
			problem(fmt.Errorf("source: %w: slot %q cannot stream any more (%s): run with PGRELAY_SNAPSHOT=always, which drops it and copies the tables again",
				ErrSlotInvalidated, cfg.Slot, why))
		}
	}

	if _, err := cfg.StreamOptions(r.ServerMajor, true); err != nil {
		problem(err)
	}
	if cfg.MetadataSchema != "" {
		if err := checkMetadataSchema(ctx, conn, cfg); err != nil {
			problem(err)
		}
	}

	exists, existsErr := PublicationExists(ctx, conn, cfg.Publication)
	if !r.Superuser && existsErr == nil {
		if err := checkReadable(ctx, conn, r.User, cfg.Publication, exists, cfg.Tables); err != nil {
			problem(err)
		}
	}

	// Create nothing on a source that cannot serve us anyway; say what is
	// missing so that one run lists every problem.
	if existsErr != nil || len(r.Problems) > 0 {
		switch {
		case existsErr != nil:
			problem(existsErr)
		case !exists && !r.Superuser: // a superuser's run creates it once the rest is fixed
			sql, err := CreatePublicationSQL(cfg.Publication, cfg.Tables)
			if err != nil {
				problem(err)
				break
			}
			who := "the owner of the tables"
			if len(cfg.Tables) == 0 {
				who = "a superuser"
			}
			problem(fmt.Errorf("source: %w: publication %q does not exist: pgrelay creates it once the problems above are fixed, if role %q may; else run as %s: %s;",
				ErrPublicationMissing, cfg.Publication, r.User, who, sql))
		}
		r.PublicationExists = exists
		return r, &PreflightError{Problems: r.Problems}
	}
	if !exists && cfg.BeforeCreatePublication != nil {
		if err := cfg.BeforeCreatePublication(ctx); err != nil {
			return r, err
		}
	}
	r.PublicationCreated, err = EnsurePublication(ctx, conn, cfg.Publication, cfg.Tables)
	switch {
	case err != nil:
		problem(err)
	default:
		r.PublicationExists = true
		missing, err := MissingPublicationTables(ctx, conn, cfg.Publication, cfg.Tables)
		switch {
		case err != nil:
			problem(err)
		case len(missing) > 0:
			for _, p := range missingTableProblems(ctx, conn, cfg.Publication, missing) {
				problem(p)
			}
		}
	}

	if len(r.Problems) > 0 {
		return r, &PreflightError{Problems: r.Problems}
	}
	err = WithLockTimeout(ctx, conn, 3*time.Second, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
			FROM pg_catalog.pg_publication_tables pt
			JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname
			JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
			WHERE pt.pubname = $1 AND (c.relreplident = 'n' OR c.relreplident = 'd' AND NOT EXISTS (
				SELECT FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND i.indimmediate))
			ORDER BY 1`, cfg.Publication)
		if err != nil {
			return err
		}
		r.Keyless, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	switch {
	case IsLockTimeout(err):
		// Only a warning was at stake: go on without it.
		r.KeylessUnknown = true
	case err != nil:
		return r, fmt.Errorf("source: list the tables of publication %q without a replica identity: %w", cfg.Publication, err)
	}
	var update, del, truncate bool
	truncateCol := "true"
	if r.ServerMajor >= 11 {
		truncateCol = "pubtruncate"
	}
	if err := conn.QueryRow(ctx, `SELECT pubupdate, pubdelete, `+truncateCol+` FROM pg_catalog.pg_publication WHERE pubname = $1`,
		cfg.Publication).Scan(&update, &del, &truncate); err != nil {
		return r, fmt.Errorf("source: read what publication %q publishes: %w", cfg.Publication, err)
	}
	for _, k := range []struct {
		name string
		on   bool
	}{{"update", update}, {"delete", del}, {"truncate", truncate}} {
		if !k.on {
			r.Unpublished = append(r.Unpublished, k.name)
		}
	}
	return r, nil
}

// missingTableProblems explains why PGRELAY_TABLES entries are not in the
// publication: a table the source does not have, one PostgreSQL does not
// publish (not a plain or partitioned table, unlogged, temporary), or one the
// publication does not list, with the ALTER PUBLICATION that adds it.
func missingTableProblems(ctx context.Context, conn *pgx.Conn, publication string, missing []string) []error {
	var absent, unpublishable, notListed, quoted []string
	for _, t := range missing {
		s, n, _ := SplitTableName(t)
		q := pgquote.Ident(s) + "." + pgquote.Ident(n)
		var kind, persistence string
		err := conn.QueryRow(ctx, `SELECT c.relkind::text, c.relpersistence::text FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace WHERE ns.nspname = $1 AND c.relname = $2`, s, n).Scan(&kind, &persistence)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			absent = append(absent, t)
		case err == nil && (kind != "r" && kind != "p" || persistence != "p"):
			unpublishable = append(unpublishable, t)
		default:
			notListed = append(notListed, t)
			quoted = append(quoted, q)
		}
	}
	var problems []error
	if len(absent) > 0 {
		problems = append(problems, fmt.Errorf("source: %w: %s (in %s) does not exist on the source: create it, or take it out of %s",
			ErrPublicationMissing, strings.Join(absent, ", "), "PGRELAY_TABLES", "PGRELAY_TABLES"))
	}
	if len(unpublishable) > 0 {
		problems = append(problems, fmt.Errorf("source: %w: %s (in PGRELAY_TABLES) cannot be published: PostgreSQL publishes plain and partitioned tables only, not views, materialized views, foreign, unlogged or temporary tables; take it out of PGRELAY_TABLES",
			ErrPublicationMissing, strings.Join(unpublishable, ", ")))
	}
	if len(notListed) > 0 {
		problems = append(problems, fmt.Errorf("source: %w: publication %q does not publish %s: run ALTER PUBLICATION %s ADD TABLE %s;",
			ErrPublicationMissing, publication, strings.Join(notListed, ", "), pgquote.Ident(publication), strings.Join(quoted, ", ")))
	}
	return problems
}

// checkReadable returns a problem naming the GRANTs role needs to read the
// tables the publication publishes (or, when it does not exist yet, the tables
// pgrelay would publish; a FOR ALL TABLES publication is created by a
// superuser only): USAGE on their schemas and SELECT on them, without which
// the snapshot copy fails once the slot exists. A check the publication's
// locked tables hold up is skipped.
func checkReadable(ctx context.Context, conn *pgx.Conn, role, publication string, exists bool, tables []string) error {
	var err error
	const cols = `n.nspname, c.relname, pg_catalog.has_schema_privilege(n.oid, 'USAGE'), pg_catalog.has_table_privilege(c.oid, 'SELECT')`
	var sql string
	var args []any
	switch {
	case exists:
		sql = `SELECT ` + cols + ` FROM pg_catalog.pg_publication_tables pt
			JOIN pg_catalog.pg_namespace n ON n.nspname = pt.schemaname
			JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
			WHERE pt.pubname = $1 ORDER BY 1, 2`
		args = []any{publication}
	case len(tables) > 0:
		schemas, names := make([]string, len(tables)), make([]string, len(tables))
		for i, t := range tables {
			if schemas[i], names[i], err = SplitTableName(t); err != nil {
				return err
			}
		}
		sql = `SELECT ` + cols + ` FROM unnest($1::text[], $2::text[]) AS w (nsp, rel)
			JOIN pg_catalog.pg_namespace n ON n.nspname = w.nsp
			JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = w.rel
			ORDER BY 1, 2`
		args = []any{schemas, names}
	default:
		return nil
	}
	var noUsage, noSelect []string
	err = WithLockTimeout(ctx, conn, 3*time.Second, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		var nsp, rel string
		var usage, sel bool
		_, err = pgx.ForEachRow(rows, []any{&nsp, &rel, &usage, &sel}, func() error {
			if !usage && !slices.Contains(noUsage, pgquote.Ident(nsp)) {
				noUsage = append(noUsage, pgquote.Ident(nsp))
			}
			if !sel {
				noSelect = append(noSelect, pgquote.Ident(nsp)+"."+pgquote.Ident(rel))
			}
			return nil
		})
		return err
	})
	if IsLockTimeout(err) {
		return nil // the copy says it, if it comes to that
	}
	if err != nil {
		return fmt.Errorf("source: check that role %q may read the published tables: %w", role, err)
	}
	var grants []string
	if len(noUsage) > 0 {
		grants = append(grants, "GRANT USAGE ON SCHEMA "+strings.Join(noUsage, ", ")+" TO "+pgquote.Ident(role)+";")
	}
	if len(noSelect) > 0 {
		grants = append(grants, "GRANT SELECT ON "+strings.Join(noSelect, ", ")+" TO "+pgquote.Ident(role)+";")
	}
	if len(grants) == 0 {
		return nil
	}
	return fmt.Errorf("source: %w: role %q lacks privileges the snapshot copy needs: run as their owner or a superuser: %s", ErrCannotRead, role, strings.Join(grants, " "))
}

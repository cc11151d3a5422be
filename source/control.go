package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// What the relay (apply/relay) reads and marks on the source around the
// stream: whose publication it is, which schemas and columns it publishes,
// what a slot's creation waits for, a snapshot's transaction ids.

// PublicationMark is the comment pgrelay puts on a publication it created, so
// that teardown drops only what pgrelay made.
const PublicationMark = "created by pgrelay"

// MarkPublication records that pgrelay created the publication.
func MarkPublication(ctx context.Context, conn *pgx.Conn, name string) error {
	_, err := conn.Exec(ctx, "COMMENT ON PUBLICATION "+pgquote.Ident(name)+" IS '"+PublicationMark+"'")
	if err != nil {
		return fmt.Errorf("source: mark publication %q as pgrelay's: %w", name, err)
	}
	return nil
}

// PublicationMarked reports whether the publication exists and whether pgrelay
// created it (MarkPublication).
func PublicationMarked(ctx context.Context, conn *pgx.Conn, name string) (exists, marked bool, err error) {
	var comment *string
	err = conn.QueryRow(ctx, `SELECT obj_description(oid, 'pg_publication') FROM pg_catalog.pg_publication WHERE pubname = $1`, name).Scan(&comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("source: look up publication %q: %w", name, err)
	}
	return true, comment != nil && *comment == PublicationMark, nil
}

// PublicationAllTables reports whether the publication is FOR ALL TABLES
// (false when it does not exist).
func PublicationAllTables(ctx context.Context, conn *pgx.Conn, publication string) (bool, error) {
	var all bool
	if err := conn.QueryRow(ctx, "SELECT coalesce((SELECT puballtables FROM pg_catalog.pg_publication WHERE pubname = $1), false)", publication).Scan(&all); err != nil {
		return false, fmt.Errorf("source: read publication %q: %w", publication, err)
	}
	return all, nil
}

// PublicationSchemas lists the schemas of the tables publication publishes;
// when it does not exist, those it would publish once created: of tables (the
// schema.table names of PGRELAY_TABLES that exist), else of every ordinary
// table outside the system schemas.
func PublicationSchemas(ctx context.Context, conn *pgx.Conn, publication string, tables []string) ([]string, error) {
	exists, err := PublicationExists(ctx, conn, publication)
	if err != nil {
		return nil, err
	}
	var schemas []string
	if exists {
		published, err := ListPublication(ctx, conn, publication, 3*time.Second)
		for _, p := range published {
			if !slices.Contains(schemas, p.Schema) {
				schemas = append(schemas, p.Schema)
			}
		}
		return schemas, err
	}
	var rows pgx.Rows
	if len(tables) > 0 {
		rows, err = conn.Query(ctx, `SELECT DISTINCT n.nspname::text FROM unnest($1::text[]) AS t(name)
			JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass(t.name)
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace`, tables)
	} else {
		rows, err = conn.Query(ctx, `SELECT DISTINCT n.nspname::text FROM pg_catalog.pg_class c
			JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'`)
	}
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// PublishedColumns returns the columns publication publishes of each of
// tables: its column list (15+), else the table's columns but generated ones,
// which pgoutput leaves out. major is the server's major version.
func PublishedColumns(ctx context.Context, conn *pgx.Conn, publication string, major int, tables []PublishedName) (map[PublishedName][]string, error) {
	schemas, names := make([]string, len(tables)), make([]string, len(tables))
	for i, t := range tables {
		schemas[i], names[i] = t.Schema, t.Name
	}
	query := `SELECT x.s, x.n, a.attname::text
		FROM unnest($1::text[], $2::text[]) AS x(s, n)
		JOIN pg_catalog.pg_namespace ns ON ns.nspname = x.s
		JOIN pg_catalog.pg_class c ON c.relnamespace = ns.oid AND c.relname = x.n
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped`
	if major >= 12 {
		query += ` AND a.attgenerated = ''`
	}
	args := []any{schemas, names}
	if major >= 15 {
		query += `
		WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_publication_tables pt
			WHERE pt.pubname = $3 AND pt.schemaname = x.s AND pt.tablename = x.n AND NOT a.attname = ANY (pt.attnames))`
		args = append(args, publication)
	}
	rows, err := conn.Query(ctx, query+" ORDER BY x.s, x.n, a.attnum", args...)
	if err != nil {
		return nil, fmt.Errorf("source: read the published columns of the target's tables: %w", err)
	}
	published := map[PublishedName][]string{}
	var t PublishedName
	var col string
	if _, err := pgx.ForEachRow(rows, []any{&t.Schema, &t.Name, &col}, func() error {
		published[t] = append(published[t], col)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("source: read the published columns of the target's tables: %w", err)
	}
	return published, nil
}

// HasRows reports whether table p holds a row of its own now, waiting at most
// lockWait for its lock (IsLockTimeout tells that case).
func HasRows(ctx context.Context, conn *pgx.Conn, p PublishedName, lockWait time.Duration) (bool, error) {
	var has bool
	err := WithLockTimeout(ctx, conn, lockWait, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT EXISTS (SELECT FROM ONLY "+pgx.Identifier{p.Schema, p.Name}.Sanitize()+")").Scan(&has)
	})
	return has, err
}

// OpenTransactions lists what a slot's creation waits for: the prepared
// transactions ("gid (prepared time)") and the other sessions' transactions
// holding an xid ("pid n (user, since time)"), oldest first.
func OpenTransactions(ctx context.Context, conn *pgx.Conn) (prepared, running []string, err error) {
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(gid || ' (prepared ' || prepared::text || ')' ORDER BY prepared), '{}') FROM pg_catalog.pg_prepared_xacts`).Scan(&prepared); err != nil {
		return nil, nil, err
	}
	err = conn.QueryRow(ctx, `SELECT coalesce(array_agg('pid ' || pid || ' (' || coalesce(usename::text, '?') || ', since ' || xact_start::text || ')' ORDER BY xact_start), '{}')
		FROM pg_catalog.pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_catalog.pg_backend_pid()`).Scan(&running)
	return prepared, running, err
}

// SnapshotXids reads the transaction ids of the snapshot of conn's open
// transaction (txid_current_snapshot()), and its text as the server printed
// it; name names it in the error.
func SnapshotXids(ctx context.Context, conn *pgx.Conn, name string) (TxidSnapshot, string, error) {
	var text string
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.txid_current_snapshot()::text").Scan(&text); err != nil {
		return TxidSnapshot{}, "", fmt.Errorf("source: read the transaction ids of snapshot %s: %w", name, err)
	}
	snap, err := ParseTxidSnapshot(text)
	return snap, text, err
}

// SetLockTimeout bounds, for the rest of conn's open transaction, the wait for
// any lock (SET LOCAL lock_timeout); IsLockTimeout tells its error.
func SetLockTimeout(ctx context.Context, conn *pgx.Conn, d time.Duration) error {
	_, err := conn.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", d.Milliseconds()))
	return err
}

// EndTransaction rolls back conn's open transaction, whatever its state.
func EndTransaction(ctx context.Context, conn *pgx.Conn) {
	_, _ = conn.Exec(ctx, "ROLLBACK")
}

// ReadSequencesWaiting is ReadSequencesIn in a transaction that waits at most
// lockWait for a lock (IsLockTimeout tells that case).
func ReadSequencesWaiting(ctx context.Context, conn *pgx.Conn, publication string, schemas []string, lockWait time.Duration) ([]Sequence, error) {
	var seqs []Sequence
	err := WithLockTimeout(ctx, conn, lockWait, func(tx pgx.Tx) error {
		// The joins in the order written: planning them every way took
		// 14 ms of the end of a migration (4 ms on a warm session), the
		// query itself 1.
		if _, err := tx.Exec(ctx, "SET LOCAL join_collapse_limit = 1; SET LOCAL from_collapse_limit = 1"); err != nil {
			return err
		}
		var err error
		seqs, err = ReadSequencesIn(ctx, tx.Conn(), publication, schemas)
		return err
	})
	return seqs, err
}

// GrantRead is the statement that lets role read the sequence's value.
func (q Sequence) GrantRead(role string) string {
	return fmt.Sprintf("GRANT SELECT ON SEQUENCE %s TO %s", pgx.Identifier{q.Schema, q.Name}.Sanitize(), pgx.Identifier{role}.Sanitize())
}

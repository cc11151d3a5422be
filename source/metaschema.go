package source

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// MetadataSchemaError: published tables are in a source schema of the name
// the target keeps pgrelay's metadata under. A table maps to the schema of
// its name on the target, so it would be created among (or, named like one,
// on top of) pgrelay's own tables, whose rows hold every replication's
// position there.
type MetadataSchemaError struct {
	Schema string   // the metadata schema
	Tables []string // the tables in it, schema.table quoted
	// LeaveOut says how to leave them out of the replication.
	LeaveOut string
}

func (e *MetadataSchemaError) Error() string {
	what := "table " + e.Tables[0]
	if len(e.Tables) > 1 {
		what = "tables " + strings.Join(e.Tables, ", ")
	}
	// The schema is pgrelay's own name for it, which needs no quotes.
	return fmt.Sprintf("%s cannot be replicated: pgrelay keeps its metadata in schema %s on the target: rename the schema on the source (ALTER SCHEMA %s RENAME TO …), or %s",
		what, e.Schema, e.Schema, e.LeaveOut)
}

// checkMetadataSchema refuses the tables the publication publishes, or will
// when preflight creates it (FOR ALL TABLES or FOR TABLE cfg.Tables), that
// are in schema cfg.MetadataSchema. A locked table leaves the check to the
// sink, which refuses such a table when it gets to it.
func checkMetadataSchema(ctx context.Context, conn *pgx.Conn, cfg ConnConfig) error {
	metaSchema := cfg.MetadataSchema
	var exists, allTables bool
	if err := conn.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_or(puballtables), false)
		FROM pg_catalog.pg_publication WHERE pubname = $1`, cfg.Publication).Scan(&exists, &allTables); err != nil {
		return fmt.Errorf("source: look up publication %q: %w", cfg.Publication, err)
	}
	var tables []string
	var leaveOut string
	switch {
	case exists:
		err := WithLockTimeout(ctx, conn, 3*time.Second, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT pg_catalog.format('%I.%I', schemaname, tablename)
				FROM pg_catalog.pg_publication_tables WHERE pubname = $1 AND schemaname = $2 ORDER BY 1`, cfg.Publication, metaSchema)
			if err != nil {
				return err
			}
			tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if IsLockTimeout(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("source: list the tables of publication %q in schema %s: %w", cfg.Publication, metaSchema, err)
		}
		if allTables {
			leaveOut = fmt.Sprintf("replicate the other tables only: publication %s is FOR ALL TABLES, so list them in PGRELAY_TABLES and name a new publication in PGRELAY_PUBLICATION", pgquote.Ident(cfg.Publication))
		} else {
			leaveOut = fmt.Sprintf("leave them out of the publication: ALTER PUBLICATION %s DROP TABLE %s;", pgquote.Ident(cfg.Publication), strings.Join(tables, ", "))
		}
	case len(cfg.Tables) > 0:
		for _, t := range cfg.Tables {
			if s, n, err := SplitTableName(t); err == nil && s == metaSchema {
				tables = append(tables, pgquote.Ident(s)+"."+pgquote.Ident(n))
			}
		}
		leaveOut = "take them out of PGRELAY_TABLES"
	default:
		// FOR ALL TABLES publishes every permanent table.
		rows, err := conn.Query(ctx, `SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
			FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p' ORDER BY 1`, metaSchema)
		if err == nil {
			tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			return fmt.Errorf("source: list the tables in schema %s: %w", metaSchema, err)
		}
		leaveOut = "replicate the other tables only: list them in PGRELAY_TABLES"
	}
	if len(tables) == 0 {
		return nil
	}
	return fmt.Errorf("source: %w", &MetadataSchemaError{Schema: metaSchema, Tables: tables, LeaveOut: leaveOut})
}

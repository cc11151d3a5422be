package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
)

// CreateIndexes builds secondary indexes on t's target table from the source's
// definitions (pg_get_indexdef, schema-qualified; a PostgreSQL target keeps the
// source's schema and table names). It runs after the snapshot copy, on a
// connection of its own, so several tables' indexes build at once. An index
// that already exists is left alone, so a redone copy can call it again.
func (s *Sink) CreateIndexes(ctx context.Context, t *schema.Table, defs []string) error {
	conn, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SET maintenance_work_mem = '256MB'"); err != nil {
		return classify(fmt.Errorf("sink/postgres: build indexes of %s: %w", t.QualifiedName(), err), conn.IsClosed())
	}
	for _, def := range defs {
		sql := ifNotExists(def)
		if _, err := conn.Exec(ctx, sql); err != nil {
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

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

// EnsureTables is EnsureTable(t, nil) for every table of tables, in that
// order where it matters. A snapshot of thousands of tables spent most of its
// time before the first row creating them one by one: CREATE TABLE alone
// costs the server 2–3 ms. Those that are plainly new — of built-in types
// only, with no stored definition under their name or source OID, so
// nothing to move or alter — are created in parallel over the bulk-load
// connections, each in its own transaction with its stored definition, as
// EnsureTable would; the others then go through EnsureTable in order.
func (s *Sink) EnsureTables(ctx context.Context, tables []*schema.Table) error {
	if err := s.ready(); err != nil {
		return err
	}
	plain, rest, err := s.plainlyNew(ctx, tables)
	if err != nil {
		return err
	}
	if len(plain) > 0 {
		if err := s.createPlain(ctx, plain); err != nil {
			return err
		}
	}
	for _, t := range rest {
		if err := s.EnsureTable(ctx, t, nil); err != nil {
			return err
		}
	}
	return nil
}

// plainlyNew splits tables into those createPlain may create and the rest.
func (s *Sink) plainlyNew(ctx context.Context, tables []*schema.Table) (plain, rest []*schema.Table, err error) {
	if s.indexes != nil || s.copyJoined || len(tables) < 2*createWorkers {
		return nil, tables, nil
	}
	stored := map[tableName]bool{}
	oids := map[uint32]bool{}
	err = s.withMeta(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT schema, name, coalesce(slot, ''), coalesce(relation_oid::int8, 0) FROM pgrelay.relation`)
		if err != nil {
			return err
		}
		var n tableName
		var slot string
		var oid int64
		_, err = pgx.ForEachRow(rows, []any{&n.schema, &n.name, &slot, &oid}, func() error {
			stored[n] = true
			if slot == s.slot {
				oids[uint32(oid)] = true
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sink/postgres: read the stored table definitions: %w", err)
	}
	seen := map[tableName]bool{}
	for _, t := range tables {
		sch, name := s.dialect.TargetTable(t)
		at := tableName{sch, name}
		if len(t.Types) > 0 || stored[at] || oids[t.RelationID] || seen[at] || sch == MetadataSchema {
			rest = append(rest, t)
			continue
		}
		seen[at] = true
		plain = append(plain, t)
	}
	return plain, rest, nil
}

// createProgressEvery is how often createPlain logs how far it has got.
var createProgressEvery = 10 * time.Second

// createWorkers is how many bulk connections createPlain uses.
const createWorkers = 2

// createPlain creates plainlyNew tables: their schemas first, on the
// metadata connection (CREATE SCHEMA IF NOT EXISTS from two sessions at once
// can fail on the catalog's unique index), then each table in a transaction
// of its own with its stored definition, createWorkers at a time.
func (s *Sink) createPlain(ctx context.Context, tables []*schema.Table) error {
	var schemas []string
	have := map[string]bool{}
	for _, t := range tables {
		if sch, _ := s.dialect.TargetTable(t); !have[sch] {
			have[sch] = true
			schemas = append(schemas, s.dialect.CreateSchema(sch))
		}
	}
	if err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		for _, stmt := range schemas {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", sqlHead(stmt), err)
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("sink/postgres: create the target schemas: %w", err)
	}
	// Tables made on the target beforehand (pg_dump -s) get their identity
	// columns made BY DEFAULT, as EnsureTable does.
	premade := make([]bool, len(tables))
	qnames := make([]string, len(tables))
	for i, t := range tables {
		qnames[i] = quotedTable(s.dialect, t)
	}
	if err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT q.i::int FROM unnest($1::text[]) WITH ORDINALITY AS q(name, i) WHERE pg_catalog.to_regclass(q.name) IS NOT NULL`, qnames)
		if err != nil {
			return err
		}
		var i int
		_, err = pgx.ForEachRow(rows, []any{&i}, func() error {
			if i >= 1 && i <= len(premade) {
				premade[i-1] = true
			}
			return nil
		})
		return err
	}); err != nil {
		return fmt.Errorf("sink/postgres: look for target tables made beforehand: %w", err)
	}
	// Defaults an older target cannot parse are left out, as EnsureTable
	// does; the check uses the metadata connection, so it runs here.
	ddlTables := make([]*schema.Table, len(tables))
	for i, t := range tables {
		var err error
		if ddlTables[i], err = s.leaveOutDefaults(ctx, t, nil); err != nil {
			return err
		}
	}
	queue := make(chan int)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(queue)
		for i := range tables {
			select {
			case queue <- i:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	// Progress every 10 s: thousands of tables take a while.
	var created atomic.Int64
	var logMu sync.Mutex
	lastLog := time.Now()
	progress := func() {
		n := created.Add(1)
		logMu.Lock()
		defer logMu.Unlock()
		if time.Since(lastLog) >= createProgressEvery {
			lastLog = time.Now()
			s.logger().Info("preparing the copy: creating the target tables", "tables_done", n, "tables", len(tables))
		}
	}
	for range createWorkers {
		g.Go(func() (err error) {
			conn, err := s.bulkConn(gctx)
			if err != nil {
				return err
			}
			defer func() { s.releaseBulk(gctx, conn, err == nil) }()
			for i := range queue {
				if err := s.createOne(gctx, conn, tables[i], ddlTables[i], premade[i]); err != nil {
					return err
				}
				progress()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, t := range tables {
		s.forget(t)
	}
	return nil
}

// createOne creates t (from ddlTable's DDL) and stores its definition, in
// one transaction and one round trip; premade: the target table exists
// already (made beforehand), its identity columns are made BY DEFAULT.
func (s *Sink) createOne(ctx context.Context, conn *pgx.Conn, t, ddlTable *schema.Table, premade bool) error {
	qname := quotedTable(s.dialect, t)
	ddl, err := s.dialect.CreateTable(ddlTable)
	if err != nil {
		return fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err)
	}
	if premade {
		ddl = append(ddl, identityByDefault(qname))
	}
	def, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("sink/postgres: ensure table %s: encode definition: %w", qname, err)
	}
	b := &pgconn.Batch{}
	b.ExecParams("BEGIN", nil, nil, nil, nil)
	for _, stmt := range ddl {
		b.ExecParams(stmt, nil, nil, nil, nil)
	}
	b.ExecParams(storeDefinitionSQL, s.storeDefinitionArgs(t, def), nil, nil, nil)
	b.ExecParams("COMMIT", nil, nil, nil, nil)
	if _, err := conn.PgConn().ExecBatch(ctx, b).ReadAll(); err != nil {
		rollbackIfInTx(ctx, conn)
		return collationHint(classify(changeError(sink.ChangeError{Op: opDDL.String(), Table: qname, Err: err}), conn.IsClosed()))
	}
	return nil
}

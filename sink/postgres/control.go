package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

// What the relay's control plane reads and does on the target around apply:
// the metadata for status, the slot's lock, teardown, and the checks before a
// copy. Each runs on the metadata connection unless said otherwise.

// HasMetadata reports whether pgrelay's metadata exists on the target.
func (s *Sink) HasMetadata(ctx context.Context) (bool, error) {
	var has bool
	err := s.withMeta(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT pg_catalog.to_regclass('pgrelay.progress') IS NOT NULL").Scan(&has)
	})
	return has, err
}

// MetadataSchema is MetadataSchema.
func (s *Sink) MetadataSchema() string { return MetadataSchema }

// KnownRelations lists pgrelay.relation. Each row is read as JSON: status
// reads it without migrating the metadata first, and a metadata schema of an
// older pgrelay lacks the columns 0003 added.
func (s *Sink) KnownRelations(ctx context.Context) ([]sink.KnownRelation, error) {
	var known []sink.KnownRelation
	err := s.withMeta(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT coalesce(j->>'slot', ''), j->>'schema', j->>'name', coalesce((j->>'relation_oid')::oid, 0)
			FROM pgrelay.relation r, pg_catalog.to_jsonb(r) j`)
		if err != nil {
			return err
		}
		var k sink.KnownRelation
		_, err = pgx.ForEachRow(rows, []any{&k.Slot, &k.Schema, &k.Name, &k.RelationID}, func() error {
			known = append(known, k)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read pgrelay.relation: %w", err)
	}
	return known, nil
}

// LockSlot takes a session advisory lock on a connection of its own, held
// until that connection closes (release, Close, or the session dying).
func (s *Sink) LockSlot(ctx context.Context, slot string, waiting func()) (func(context.Context) error, error) {
	// The mutex guards the field, not the wait for the lock, which Close
	// does not interrupt: the caller ends it through ctx first.
	s.lockMu.Lock()
	if s.lock == nil || s.lock.IsClosed() {
		conn, err := s.connect(ctx)
		if err != nil {
			s.lockMu.Unlock()
			return nil, err
		}
		s.lock = conn
	}
	conn := s.lock
	s.lockMu.Unlock()
	key := "pgrelay:" + slot
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext($1))", key).Scan(&got); err != nil {
		return nil, classify(fmt.Errorf("target: lock slot %q: %w", slot, err), conn.IsClosed())
	}
	if !got {
		waiting()
		if _, err := conn.Exec(ctx, "SELECT pg_catalog.pg_advisory_lock(pg_catalog.hashtext($1))", key); err != nil {
			return nil, classify(fmt.Errorf("target: wait for slot %q lock: %w", slot, err), conn.IsClosed())
		}
	}
	return func(ctx context.Context) error {
		s.lockMu.Lock()
		defer s.lockMu.Unlock()
		if s.lock != conn {
			return nil
		}
		s.lock = nil
		return conn.Close(ctx)
	}, nil
}

// RollbackSlotPrepared rolls back slot's prepared transactions in the target
// database.
func (s *Sink) RollbackSlotPrepared(ctx context.Context, slot string) ([]string, error) {
	var done []string
	err := s.withMeta(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT gid FROM pg_catalog.pg_prepared_xacts
			WHERE database = pg_catalog.current_database() AND pg_catalog.left(gid, pg_catalog.length($1)) = $1`, sink.GIDPrefix(slot))
		if err != nil {
			return fmt.Errorf("target: list prepared transactions: %w", err)
		}
		gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("target: list prepared transactions: %w", err)
		}
		for _, gid := range gids {
			if !sink.OwnGID(slot, gid) {
				continue
			}
			if _, err := c.Exec(ctx, "ROLLBACK PREPARED "+pgquote.Literal(gid)); err != nil {
				if sqlState(err) == "42704" { // finished meanwhile
					continue
				}
				return fmt.Errorf("target: roll back prepared transaction %s of slot %q: %w; roll it back by hand with ROLLBACK PREPARED '%s'", gid, slot, err, gid)
			}
			done = append(done, gid)
		}
		return nil
	})
	return done, err
}

// ForeignTables finds, among tables, the target's ordinary and partitioned
// tables that pgrelay.relation does not know, and whether each holds rows of
// its own: the copy empties only those (a table that inherits from it, on the
// target only, keeps its rows); a partitioned table's are its partitions'.
func (s *Sink) ForeignTables(ctx context.Context, tables []schema.QualifiedName) ([]sink.ForeignTable, error) {
	schemas, names := splitNames(tables)
	var out []sink.ForeignTable
	err := s.withMeta(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT pg_catalog.format('%I.%I', x.s, x.n), x.s, x.n, c.relkind = 'p'
			FROM unnest($1::text[], $2::text[]) AS x(s, n)
			JOIN pg_catalog.pg_namespace ns ON ns.nspname = x.s
			JOIN pg_catalog.pg_class c ON c.relnamespace = ns.oid AND c.relname = x.n AND c.relkind IN ('r', 'p')
			WHERE NOT EXISTS (SELECT FROM pgrelay.relation r WHERE r.schema = x.s AND r.name = x.n)
			ORDER BY 1`, schemas, names)
		if err != nil {
			return err
		}
		var partitioned []bool
		var f sink.ForeignTable
		var part bool
		if _, err := pgx.ForEachRow(rows, []any{&f.Quoted, &f.Name.Schema, &f.Name.Name, &part}, func() error {
			out, partitioned = append(out, f), append(partitioned, part)
			return nil
		}); err != nil {
			return err
		}
		for i := range out {
			from := "ONLY " + out[i].Quoted
			if partitioned[i] {
				from = out[i].Quoted
			}
			if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+from+")").Scan(&out[i].HasRows); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// TableColumns reads the columns of those of tables that exist.
func (s *Sink) TableColumns(ctx context.Context, tables []schema.QualifiedName) (map[schema.QualifiedName][]string, error) {
	schemas, names := splitNames(tables)
	have := map[schema.QualifiedName][]string{}
	err := s.withMeta(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT x.s, x.n, a.attname::text
			FROM unnest($1::text[], $2::text[]) AS x(s, n)
			JOIN pg_catalog.pg_attribute a ON a.attrelid = pg_catalog.to_regclass(pg_catalog.format('%I.%I', x.s, x.n))
				AND a.attnum > 0 AND NOT a.attisdropped`, schemas, names)
		if err != nil {
			return err
		}
		var t schema.QualifiedName
		var col string
		_, err = pgx.ForEachRow(rows, []any{&t.Schema, &t.Name, &col}, func() error {
			have[t] = append(have[t], col)
			return nil
		})
		return err
	})
	return have, err
}

func splitNames(tables []schema.QualifiedName) (schemas, names []string) {
	schemas, names = make([]string, len(tables)), make([]string, len(tables))
	for i, t := range tables {
		schemas[i], names[i] = t.Schema, t.Name
	}
	return schemas, names
}

// Preflight checks that the database takes writes (readOnlyProblem), then
// that the role may create what pgrelay creates: its metadata schema and the
// schemas that do not exist yet (CREATE on the database), tables in the
// existing ones (CREATE on each; PostgreSQL 15+ no longer grants it on public
// to everyone). The metadata schema's problem comes first, then the others by
// name.
func (s *Sink) Preflight(ctx context.Context, schemas []string) ([]sink.Problem, error) {
	var problems []sink.Problem
	err := s.withMeta(ctx, func(c *pgx.Conn) error {
		ro, err := readOnlyProblem(ctx, c)
		if err != nil {
			return err
		}
		if ro != nil {
			problems = append(problems, *ro)
		}
		rows, err := c.Query(ctx, `SELECT x.s, n.oid IS NOT NULL,
				CASE WHEN n.oid IS NULL THEN pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE')
				     ELSE pg_catalog.has_schema_privilege(n.oid, 'CREATE') END,
				pg_catalog.quote_ident(current_user::text), pg_catalog.quote_ident(pg_catalog.current_database())
			FROM unnest($1::text[]) AS x(s) LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = x.s
			ORDER BY x.s <> $2, x.s`, append([]string{MetadataSchema}, schemas...), MetadataSchema)
		if err != nil {
			return err
		}
		var sch, role, db string
		var exists, may bool
		_, err = pgx.ForEachRow(rows, []any{&sch, &exists, &may, &role, &db}, func() error {
			quoted := pgx.Identifier{sch}.Sanitize()
			switch {
			case may:
			case exists:
				problems = append(problems, sink.Problem{Kind: sink.ProblemCreateTables, Object: quoted,
					Fix: fmt.Sprintf("GRANT CREATE ON SCHEMA %s TO %s", quoted, role)})
			default:
				problems = append(problems, sink.Problem{Kind: sink.ProblemCreateSchema, Object: quoted,
					Fix: fmt.Sprintf("GRANT CREATE ON DATABASE %s TO %s", db, role)})
			}
			return nil
		})
		return err
	})
	return problems, err
}

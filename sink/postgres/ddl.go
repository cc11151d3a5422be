package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// relationOID is t's source relation OID as a text parameter, NULL when unknown.
func relationOID(t *schema.Table) []byte {
	if t.RelationID == 0 {
		return nil
	}
	return []byte(strconv.FormatUint(uint64(t.RelationID), 10))
}

// nullIfEmpty is s as a text parameter, NULL when empty.
func nullIfEmpty(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// CopyJoinedTables makes EnsureTable refuse, with a retryable error, to create
// a table the target has never had: under a publication that lists its tables,
// such a table was added to it with rows that only a copy brings (pgrelay's
// start copies the published tables the target lacks). Off during the
// snapshot copy, which creates the tables it copies.
func (s *Sink) CopyJoinedTables(on bool) { s.copyJoined = on }

// IndexTablesItCreates makes EnsureTable build, with each table it creates,
// the table's secondary indexes as r reads them from the source: for tables
// that appear after the snapshot copy (which builds its tables' indexes after
// their data, so it runs without this). nil turns it off.
func (s *Sink) IndexTablesItCreates(r schema.IndexReader) { s.indexes = r }

// EnsureTable creates t's schema, types and table when missing, or evolves the
// table from prev, with schema.Postgres's DDL. Inside an open transaction the DDL
// joins it, after the changes queued before it, so a schema change commits with
// the source transaction that carried it; otherwise it runs in its own.
func (s *Sink) EnsureTable(ctx context.Context, t, prev *schema.Table) error {
	_, err := s.ensureTable(ctx, t, prev, false)
	return err
}

// ensureTable is EnsureTable; with apart, it alters the table in a
// transaction of its own when it can (EnsureTableApart), and reports whether
// it did.
func (s *Sink) ensureTable(ctx context.Context, t, prev *schema.Table, apart bool) (bool, error) {
	if t == nil {
		return false, errors.New("sink/postgres: ensure table: no table")
	}
	qname := quotedTable(s.dialect, t)
	if sch, _ := s.dialect.TargetTable(t); sch == MetadataSchema {
		// Preflight refuses such tables; one can still appear later (created
		// on the source, or moved into the schema) and must not land among
		// pgrelay's own.
		return false, fmt.Errorf("sink/postgres: %w", &source.MetadataSchemaError{Schema: MetadataSchema, Tables: []string{qname},
			LeaveOut: "leave it out of the publication (PGRELAY_TABLES)"})
	}
	if prev != nil && schema.SameDefinition(prev, t) && !s.behind[t.RelationID] {
		return false, nil
	}
	conn, err := s.applyConn(ctx)
	if err != nil {
		return false, err
	}
	// What the target was last built to is the truth to alter from: after a
	// restart the caller knows no previous version, and the stored one keeps
	// the attribute numbers that tell a renamed column from a new one even when
	// the source's catalog has moved on since.
	if err := s.ready(); err != nil {
		return false, err
	}
	pl, err := s.place(ctx, conn, t, prev)
	if err != nil {
		return false, classify(fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err), conn.IsClosed())
	}
	prev = pl.prev
	// Attribute numbers the source's catalog gave under names that moved
	// since the message was sent, and a column renamed and renamed back, are
	// set right from what the table was built to.
	if err := schema.MatchNumbers(prev, t); err != nil {
		return false, fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err)
	}
	if prev != nil && len(pl.before) == 0 && schema.SameDefinition(prev, t) && !schema.LearnsNumbers(prev, t) {
		delete(s.behind, t.RelationID)
		return false, nil
	}
	if prev == nil && s.copyJoined {
		// Added to a publication that lists its tables: its earlier rows
		// come only from a copy, which the next session's start makes.
		return false, sink.Retryable(fmt.Errorf("sink/postgres: table %s joined the publication while pgrelay ran: a new session copies its rows first", qname))
	}
	def, err := json.Marshal(t)
	if err != nil {
		return false, fmt.Errorf("sink/postgres: ensure table %s: encode definition: %w", qname, err)
	}
	// The schema and the types (enums, domains, composites) are committed on
	// their own first: PostgreSQL refuses a new enum label in the transaction
	// that added it, and the changes that follow use it. Left over after a
	// rollback, they do no harm: the statements are idempotent. A table of
	// built-in types only, as most are, has its schema created first in the
	// table's own transaction, in the same round trip: a copy of thousands
	// of tables spent three round trips a table on CREATE SCHEMA alone.
	sch, _ := s.dialect.TargetTable(t)
	var createSchema string
	if types := s.dialect.CreateTypes(t); len(types) > 0 {
		if err := s.createSchemaAndTypes(ctx, t, append([]string{s.dialect.CreateSchema(sch)}, types...)); err != nil {
			return false, fmt.Errorf("sink/postgres: create the schema and types of %s: %w", qname, err)
		}
	} else {
		createSchema = s.dialect.CreateSchema(sch)
	}
	var ddl []string
	create := prev == nil
	if !create {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", quotedTable(s.dialect, prev)).Scan(&exists); err != nil {
			return false, classify(fmt.Errorf("sink/postgres: ensure table %s: look up %s: %w", qname, quotedTable(s.dialect, prev), err), conn.IsClosed())
		}
		create = !exists
	}
	// Defaults an older target cannot create are left out; the recorded
	// definition stays the source's, so they are not tried again.
	ddlPrev := prev
	if create {
		ddlPrev = nil
	}
	ddlTable, err := s.leaveOutDefaults(ctx, t, ddlPrev)
	if err != nil {
		return false, err
	}
	// An attached partition's column changes are its partitioned table's
	// (partition.go); its locks are every partition's.
	var part *attachment
	var siblings []siblingUpdate
	locks := func(holders string) (bool, error) {
		return relationLocked(ctx, conn, quotedTable(s.dialect, prev), holders)
	}
	if !create {
		if part, err = s.partition(ctx, conn, t, prev); err != nil {
			return false, classify(fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err), conn.IsClosed())
		}
	}
	var more []string
	switch {
	case create:
		more, err = s.dialect.CreateTable(ddlTable)
	case part != nil && part.detach:
		// No longer the partitioned table's on the source: not on the
		// target either, and its change is its own.
		more, err = s.dialect.AlterTable(prev, ddlTable)
		more = append([]string{"ALTER TABLE " + part.parent.String() + " DETACH PARTITION " + quotedTable(s.dialect, prev)}, more...)
		locks = func(holders string) (bool, error) { return treeLocked(ctx, conn, part.root.String(), holders) }
	case part != nil:
		pd, _ := s.dialect.(schema.PostgresDialect)
		more, err = pd.AlterPartition(prev, ddlTable, schema.QualifiedName{Schema: part.root.schema, Name: part.root.name})
		if err == nil && !schema.SameDefinition(prev, t) {
			siblings, err = followSiblings(part, prev, t)
		}
		locks = func(holders string) (bool, error) { return treeLocked(ctx, conn, part.root.String(), holders) }
	default:
		more, err = s.dialect.AlterTable(prev, ddlTable)
	}
	if err != nil {
		return false, fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err)
	}
	ddl = append(ddl, more...)
	if !create {
		// Views and foreign keys of the target on a column the change drops
		// or retypes (dependents.go).
		columns := quotedTable(s.dialect, prev)
		if part != nil && !part.detach {
			columns = part.root.String()
		}
		w, err := s.dependents(ctx, conn, columns, quotedTable(s.dialect, prev), prev, t)
		if err != nil {
			return false, classify(fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err), conn.IsClosed())
		}
		if w != nil {
			s.logger().Info("objects of the target stood in the way of the source's change of the table: dropped before it and made again after it, from the target's definitions (one that cannot be made again is listed as left out in status until the next pgrelay migrate)",
				"table", qname, "objects", strings.Join(w.names, ", "))
			ddl = append(append(slices.Clone(w.drop), ddl...), w.block(s.slot, t.QualifiedName()))
		}
	}
	if create {
		ddl = append(ddl, identityByDefault(qname))
	}
	var indexDefs []string
	if create && s.indexes != nil {
		// A table that appeared after the snapshot copy: empty here, so its
		// indexes cost nothing to build now, with the table.
		// Those of the relation the message is of, found by its OID: the
		// message's name may be older than the source's catalog (renamed
		// since, or dropped and another table created under it).
		var defs []string
		var err error
		if rr, ok := s.indexes.(schema.RelationIndexReader); ok && t.RelationID != 0 {
			defs, err = rr.RelationIndexDefs(ctx, t.RelationID, t.Schema, t.Name)
		} else {
			defs, err = s.indexes.IndexDefs(ctx, t.Schema, t.Name)
		}
		if err != nil {
			return false, fmt.Errorf("sink/postgres: ensure table %s: read its indexes on the source: %w", qname, err)
		}
		for _, def := range defs {
			indexDefs = append(indexDefs, ifNotExists(def))
		}
	}
	keyMoved := false
	if kr, ok := s.indexes.(schema.KeyIndexReader); ok && !create && !slices.Equal(prev.TargetKey(), t.TargetKey()) {
		// The target's primary key moved off the columns it had (REPLICA
		// IDENTITY FULL or USING INDEX set on the source): the source's
		// index on them stays, as a unique index or a DEFERRABLE unique
		// constraint, the way a copy made now would have it.
		var defs []string
		var err error
		if rr, ok := s.indexes.(schema.RelationIndexReader); ok && t.RelationID != 0 {
			defs, err = rr.RelationKeyIndexDefs(ctx, t.RelationID, t.Schema, t.Name, prev.TargetKey())
		} else {
			defs, err = kr.KeyIndexDefs(ctx, t.Schema, t.Name, prev.TargetKey())
		}
		if err != nil {
			return false, fmt.Errorf("sink/postgres: ensure table %s: read the source's index on its former key: %w", qname, err)
		}
		for _, def := range defs {
			indexDefs, keyMoved = append(indexDefs, ifNotExists(def)), true
		}
	}

	beforeMoves, err := s.moveStatements(pl.before, pl.defs)
	if err != nil {
		return false, fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err)
	}
	afterMoves, err := s.moveStatements(pl.after, pl.defs)
	if err != nil {
		return false, fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err)
	}

	if !create && len(pl.before) == 0 && len(pl.after) == 0 && len(indexDefs) == 0 && schema.SameColumns(prev, t) {
		// Only what the source's catalog says now changed (a default, NOT
		// NULL, a collation), which may be ahead of the stream: a prepared
		// transaction that holds the table on the target, whose COMMIT
		// PREPARED comes later in the stream, would make the DDL wait for
		// ever. Left for the table's next Relation message, which the
		// source sends after that DDL of its own.
		held, err := locks("pid IS NULL")
		if err != nil {
			return false, classify(fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err), conn.IsClosed())
		}
		if held {
			if !s.behind[t.RelationID] {
				s.logger().Info("a prepared transaction holds the table on the target: its defaults and NOT NULL constraints follow the source at its next schema message",
					"table", qname)
			}
			s.behind[t.RelationID] = true
			return false, nil
		}
	}
	delete(s.behind, t.RelationID)

	if apart && s.cur != nil && !create && len(beforeMoves) == 0 && len(afterMoves) == 0 && len(indexDefs) == 0 {
		done, err := s.alterApart(ctx, conn, t, prev, append(nonEmpty(createSchema), ddl...), def, siblings, locks)
		if done && err == nil {
			s.located.place(t, placement{})
		}
		if err != nil || done {
			return done, err
		}
	}

	tx := s.cur
	own := tx == nil
	if own {
		if tx, err = s.begin(ctx); err != nil {
			return false, err
		}
	} else if err := tx.usable(); err != nil {
		return false, err
	}
	if err := tx.drain(ctx); err != nil {
		return false, &sink.EarlierChangeError{Err: err}
	}
	if err := tx.flushRun(ctx); err != nil {
		return false, &sink.EarlierChangeError{Err: err}
	}
	tx.queueBegin()
	if createSchema != "" {
		tx.batch.ExecParams(createSchema, nil, nil, nil, nil)
		tx.ops = append(tx.ops, op{kind: opDDL, table: qname, detail: qname})
	}
	// Another relation's table standing on t's name moves first, and, when it
	// goes to the name t's table leaves, only after t's table left it.
	tx.queueMoves(qname, beforeMoves)
	for _, stmt := range ddl {
		tx.batch.ExecParams(stmt, nil, nil, nil, nil)
		tx.ops = append(tx.ops, op{kind: opDDL, table: qname, detail: qname})
	}
	sch, name := s.dialect.TargetTable(t)
	if !create {
		// Renamed or moved: no target table is left under the old name, nor
		// may its definition be found there later.
		if ps, pn := s.dialect.TargetTable(prev); ps != sch || pn != name {
			tx.batch.ExecParams(forgetDefinitionSQL,
				[][]byte{[]byte(ps), []byte(pn)}, nil, nil, nil)
			tx.ops = append(tx.ops, op{kind: opDDL, table: qname, detail: qname})
		}
	}
	tx.batch.ExecParams(storeDefinitionSQL, s.storeDefinitionArgs(t, def), nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opDDL, table: qname, detail: qname})
	for _, u := range siblings {
		tx.batch.ExecParams(storeDefinitionSQL, u.args(), nil, nil, nil)
		tx.ops = append(tx.ops, op{kind: opDDL, table: qname, detail: qname})
	}
	tx.queueMoves(qname, afterMoves)
	if len(indexDefs) > 0 {
		// Each under a savepoint: one the target cannot build (an older
		// server) is left out without failing the transaction.
		err = tx.buildIndexes(ctx, qname, indexDefs, keyMoved)
	}
	if err == nil {
		if own {
			tx.batch.ExecParams("COMMIT", nil, nil, nil, nil)
			tx.ops = append(tx.ops, op{kind: opCommit, table: qname})
		}
		err = tx.send(ctx)
	}
	if own {
		if err != nil {
			_ = tx.Rollback(ctx)
		} else {
			tx.finish()
		}
	}
	if err != nil {
		// A change queued before the DDL (sent with it) may be what failed.
		if ce := (*sink.ChangeError)(nil); errors.As(err, &ce) && ce.Op != opDDL.String() {
			return false, &sink.EarlierChangeError{Err: err}
		}
		return false, dependentHint(collationHint(err))
	}
	s.logMoves(t, pl)
	if undo := s.located.place(t, pl); !own {
		tx.relocated = append(tx.relocated, undo...)
	}
	if prev != nil {
		s.forget(prev)
	}
	s.forget(t)
	return false, nil
}

// EnsureTableApart is EnsureTable for DDL the source committed on its own
// that reaches pgrelay inside a transaction the target holds open (a prepared
// one): there, the ALTER would hold the table's lock until that transaction
// ends, and a change to the table committed before it on the source, later
// in the stream, would wait for it for ever. So the table is altered in a
// transaction of its own on another session, committed at once, when the
// open transaction has not touched the table. It reports whether it was;
// when not (the open transaction holds the table, or the change also moves
// tables or builds indexes), the DDL joins the open transaction as in
// EnsureTable.
func (s *Sink) EnsureTableApart(ctx context.Context, t, prev *schema.Table) (bool, error) {
	return s.ensureTable(ctx, t, prev, true)
}

// apartLockWait bounds EnsureTableApart's wait for the table's lock: a lock
// another transaction holds for long (a prepared one) is left to the open
// transaction's DDL, which waits for it as before.
const apartLockWait = 5 * time.Second

// alterApart runs stmts, the DDL that brings prev's target table to t, and
// records t's definition in a transaction of its own on the metadata
// session, once everything the open transaction (s.cur, on conn) queued is
// on the server and it holds no lock on the table. It reports whether it did.
func (s *Sink) alterApart(ctx context.Context, conn *pgx.Conn, t, prev *schema.Table, stmts []string, def []byte,
	siblings []siblingUpdate, locks func(holders string) (bool, error)) (bool, error) {
	qname := quotedTable(s.dialect, t)
	tx := s.cur
	if err := tx.usable(); err != nil {
		return false, err
	}
	if err := tx.drain(ctx); err != nil {
		return false, &sink.EarlierChangeError{Err: err}
	}
	if err := tx.flushRun(ctx); err != nil {
		return false, &sink.EarlierChangeError{Err: err}
	}
	if err := tx.send(ctx); err != nil {
		return false, &sink.EarlierChangeError{Err: err}
	}
	if tx.begun {
		holds, err := locks("pid = pg_catalog.pg_backend_pid()")
		if err != nil {
			return false, classify(fmt.Errorf("sink/postgres: ensure table %s: %w", qname, err), conn.IsClosed())
		}
		if holds {
			return false, nil
		}
	}
	sch, name := s.dialect.TargetTable(t)
	ps, pn := s.dialect.TargetTable(prev)
	timedOut := false
	err := s.withMeta(ctx, func(meta *pgx.Conn) error {
		err := pgx.BeginFunc(ctx, meta, func(mtx pgx.Tx) error {
			if _, err := mtx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", apartLockWait.Milliseconds())); err != nil {
				return err
			}
			for _, stmt := range stmts {
				if _, err := mtx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("%s: %w", sqlHead(stmt), err)
				}
			}
			pg := mtx.Conn().PgConn()
			if ps != sch || pn != name {
				if _, err := pg.ExecParams(ctx, forgetDefinitionSQL,
					[][]byte{[]byte(ps), []byte(pn)}, nil, nil, nil).Close(); err != nil {
					return err
				}
			}
			if _, err := pg.ExecParams(ctx, storeDefinitionSQL, s.storeDefinitionArgs(t, def), nil, nil, nil).Close(); err != nil {
				return err
			}
			for _, u := range siblings {
				if _, err := pg.ExecParams(ctx, storeDefinitionSQL, u.args(), nil, nil, nil).Close(); err != nil {
					return err
				}
			}
			return nil
		})
		if sqlState(err) == "55P03" { // lock_not_available
			timedOut = true
			return nil
		}
		return err
	})
	if timedOut {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sink/postgres: ensure table %s: %w", qname, dependentHint(collationHint(err)))
	}
	s.forget(prev)
	s.forget(t)
	return true, nil
}

// nonEmpty is a slice of stmt, or none when it is empty.
func nonEmpty(stmt string) []string {
	if stmt == "" {
		return nil
	}
	return []string{stmt}
}

// storeDefinitionSQL records the definition (storeDefinitionArgs) a target
// table was last built to, under its name.
const storeDefinitionSQL = `INSERT INTO pgrelay.relation (schema, name, definition, slot, relation_oid, updated_at) VALUES ($1, $2, $3, $4, $5, now())
	ON CONFLICT (schema, name) DO UPDATE SET definition = excluded.definition, slot = excluded.slot,
		relation_oid = excluded.relation_oid, updated_at = now()`

// forgetDefinitionSQL removes the definition recorded under a target
// table's name ($1 schema, $2 name), which no table has any more.
const forgetDefinitionSQL = "DELETE FROM pgrelay.relation WHERE schema = $1 AND name = $2"

// storeDefinitionArgs are storeDefinitionSQL's text parameters for t's
// target table and def, t encoded.
func (s *Sink) storeDefinitionArgs(t *schema.Table, def []byte) [][]byte {
	sch, name := s.dialect.TargetTable(t)
	return [][]byte{[]byte(sch), []byte(name), def, nullIfEmpty(s.slot), relationOID(t)}
}

// identityByDefault makes every GENERATED ALWAYS identity column of table
// qname GENERATED BY DEFAULT, as pgrelay creates its own: a table made on the
// target beforehand (pg_dump -s) would refuse the source's values in every
// insert (cannot insert a non-DEFAULT value) and update. Nothing to do for a
// table pgrelay just created.
func identityByDefault(qname string) string {
	return `DO $pgrelay$ DECLARE c pg_catalog.name; BEGIN
	FOR c IN SELECT a.attname FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = ` + pgquote.Literal(qname) + `::pg_catalog.regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attidentity = 'a'
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET GENERATED BY DEFAULT', ` + pgquote.Literal(qname) + `, c);
	END LOOP;
END $pgrelay$`
}

// createSchemaAndTypes runs pre (the schema's and the types' statements) in
// a transaction of its own on the metadata connection, after the renames of
// enum labels the source made.
func (s *Sink) createSchemaAndTypes(ctx context.Context, t *schema.Table, pre []string) error {
	return s.withMeta(ctx, func(meta *pgx.Conn) error {
		return pgx.BeginFunc(ctx, meta, func(tx pgx.Tx) error {
			renames, err := s.enumRenames(ctx, tx, t)
			if err != nil {
				return err
			}
			for _, stmt := range append(renames, pre...) {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return fmt.Errorf("%s: %w", sqlHead(stmt), err)
				}
			}
			return nil
		})
	})
}

// Behind reports whether the target table of relation relationID was left at
// an older definition than the source catalog's, for its next Relation
// message to bring it up to date (apply's behindSink).
func (s *Sink) Behind(relationID uint32) bool { return s.behind[relationID] }

// heldByPrepared reports whether a prepared transaction holds a lock on the
// target table qname.
func heldByPrepared(ctx context.Context, conn *pgx.Conn, qname string) (bool, error) {
	return relationLocked(ctx, conn, qname, "pid IS NULL")
}

// relationLocked reports whether a lock on the target table qname is held by
// holders, a condition on pg_locks: "pid IS NULL" for prepared transactions,
// "pid = pg_catalog.pg_backend_pid()" for conn's own session.
func relationLocked(ctx context.Context, conn *pgx.Conn, qname, holders string) (bool, error) {
	var held bool
	err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_catalog.pg_locks
		WHERE locktype = 'relation' AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
			AND relation = pg_catalog.to_regclass($1) AND `+holders+`)`, qname).Scan(&held)
	return held, err
}

// collationHint says what to do when the target lacks a column's collation
// (an ICU or libc locale the source has and the target's server does not).
func collationHint(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42704" && strings.HasPrefix(pgErr.Message, "collation ") {
		return fmt.Errorf("%w; a column of the source uses a collation the target lacks: create it on the target (CREATE COLLATION, as the source defines it) and start pgrelay again", err)
	}
	return err
}

// enumRenames returns the statements that rename the labels of t's enums the
// source has renamed (ALTER TYPE … RENAME VALUE), read against the target's
// labels: CreateTypes, which runs after them, then adds only labels the source
// added. Enums inside composites, domains and arrays are among t.Types too.
func (s *Sink) enumRenames(ctx context.Context, tx pgx.Tx, t *schema.Table) ([]string, error) {
	pd, ok := s.dialect.(schema.PostgresDialect)
	if !ok {
		return nil, nil
	}
	var stmts []string
	for _, typ := range t.Types {
		if typ == nil || typ.Category != schema.CategoryEnum || !typ.UserDefined() {
			continue
		}
		rows, err := tx.Query(ctx, schema.EnumLabelsQuery, pd.EnumName(typ))
		if err != nil {
			return nil, fmt.Errorf("read the target's labels of enum %s: %w", pd.EnumName(typ), err)
		}
		labels, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("read the target's labels of enum %s: %w", pd.EnumName(typ), err)
		}
		if len(labels) == 0 {
			continue // created by CreateTypes
		}
		more, err := pd.RenameEnumLabels(typ, labels)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, more...)
	}
	return stmts, nil
}

// sqlHead is stmt on one line, cut to its first 120 characters, for an error
// message (a type's DO block runs to dozens of lines).
func sqlHead(stmt string) string {
	head := []rune(strings.Join(strings.Fields(stmt), " "))
	if len(head) > 120 {
		return string(head[:119]) + "…"
	}
	return string(head)
}

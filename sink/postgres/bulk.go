package postgres

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
)

// CopyFrom loads rows in COPY text format (columns in t's order) into t's
// target table on a connection of its own (kept for later loads),
// committing at the end: a failure
// leaves nothing of this call behind. Several CopyFrom calls may run at once
// (parallel copy of tables or of CTID ranges of one table).
func (s *Sink) CopyFrom(ctx context.Context, t *schema.Table, r io.Reader) (int64, error) {
	return s.copyFrom(ctx, t, r, copyOptions{})
}

// Empty removes the rows of t's target table before its copy, on the sink's
// metadata connection: a table is emptied once before its copy, which may
// load it in parallel CTID ranges (CopyFrom each), and with thousands of
// tables a connection of its own for each cost most of the time before the
// first row was copied. A table without rows, as a table just created is,
// is left as it is: TRUNCATE costs a new file and 1 ms a table. Whether it
// has rows is read under a SHARE lock, which waits for a load still running
// (an earlier pgrelay's, killed), so rows that load commits are not missed.
//
// Only the table's own rows go: a target-only table that inherits from it
// keeps its rows (TRUNCATE ONLY; a partitioned table is emptied with its
// partitions, which hold its rows). When the table cannot be truncated (a
// foreign key references it, the role lacks the TRUNCATE privilege, or
// another session holds a lock on it for more than a second), its rows are
// deleted instead, which waits for no reader.
func (s *Sink) Empty(ctx context.Context, t *schema.Table) error {
	qname := quotedTable(s.dialect, t)
	return s.withMeta(ctx, func(conn *pgx.Conn) error {
		kinds, err := relkinds(ctx, conn, []string{qname})
		if err != nil {
			return changeError(sink.ChangeError{Op: "truncate", Table: qname, Err: err})
		}
		own := ownRows(kinds[0], qname)
		results, err := conn.PgConn().Exec(ctx, "BEGIN; LOCK TABLE "+own+" IN SHARE MODE; SELECT EXISTS (SELECT FROM "+own+"); COMMIT").ReadAll()
		if err != nil {
			rollbackIfInTx(ctx, conn)
			return changeError(sink.ChangeError{Op: "truncate", Table: qname, Err: err})
		}
		if len(results) == 4 && len(results[2].Rows) == 1 && len(results[2].Rows[0]) == 1 && string(results[2].Rows[0][0]) == "f" {
			return nil
		}
		return s.emptyRows(ctx, conn, t, own)
	})
}

// emptyRows truncates own (a table's name, with ONLY when it is not
// partitioned), or deletes its rows when it cannot be truncated.
func (s *Sink) emptyRows(ctx context.Context, conn *pgx.Conn, t *schema.Table, own string) error {
	err := execLockWait(ctx, conn, shortLockWait, "TRUNCATE "+own, false)
	if err == nil {
		return nil
	}
	if conn.IsClosed() {
		return changeError(sink.ChangeError{Op: "truncate", Table: own, Err: err})
	}
	s.logger().Debug("emptying the table with DELETE: it cannot be truncated", "table", t.DisplayName(), "why", err.Error())
	if _, err := conn.Exec(ctx, "DELETE FROM "+own); err != nil {
		return changeError(sink.ChangeError{Op: "delete the rows of", Table: own, Err: err})
	}
	return nil
}

// ownRows names qname's own rows in a statement: with ONLY, so that a table
// inheriting from it (on the target only) is left out, except for a
// partitioned table (relkind p), whose rows are all in its partitions.
func ownRows(relkind byte, qname string) string {
	if relkind == 'p' {
		return qname
	}
	return "ONLY " + qname
}

// relkinds reads the pg_class.relkind of each table named (0 for one that
// does not exist), in one query.
func relkinds(ctx context.Context, conn *pgx.Conn, qnames []string) ([]byte, error) {
	rows, err := conn.Query(ctx, `SELECT q.i::int, c.relkind::text
		FROM unnest($1::text[]) WITH ORDINALITY AS q(name, i)
		JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass(q.name)`, qnames)
	if err != nil {
		return nil, err
	}
	kinds := make([]byte, len(qnames))
	var (
		i    int
		kind string
	)
	_, err = pgx.ForEachRow(rows, []any{&i, &kind}, func() error {
		if i >= 1 && i <= len(kinds) && kind != "" {
			kinds[i-1] = kind[0]
		}
		return nil
	})
	return kinds, err
}

// rollbackIfInTx ends the transaction a multi-statement Exec left open by
// failing halfway.
func rollbackIfInTx(ctx context.Context, conn *pgx.Conn) {
	if !conn.IsClosed() && conn.PgConn().TxStatus() != 'I' {
		_, _ = conn.PgConn().Exec(ctx, "ROLLBACK").ReadAll()
	}
}

// shortLockWait is how long a step that has another way to go waits for a
// lock another session holds (a reader left idle in a transaction).
const shortLockWait = time.Second

// execLockWait runs sql (one statement or several) in a transaction on conn
// that waits at most wait for any lock, in one round trip, and commits it;
// with keepOpen the transaction stays open after sql, back to the session's
// own lock wait. When sql fails, the transaction is rolled back.
func execLockWait(ctx context.Context, conn *pgx.Conn, wait time.Duration, sql string, keepOpen bool) error {
	end := "COMMIT"
	if keepOpen {
		end = "SET LOCAL lock_timeout TO DEFAULT"
	}
	_, err := conn.PgConn().Exec(ctx, fmt.Sprintf("BEGIN; SET LOCAL lock_timeout = '%dms'; %s; %s", wait.Milliseconds(), sql, end)).ReadAll()
	if err != nil {
		rollbackIfInTx(ctx, conn)
	}
	return err
}

// EmptyTables is Empty for many tables, with the look for rows of up to
// emptyBatch tables under one lock statement in one round trip; those with
// rows are then emptied one by one. A batch that fails (a table missing)
// is done again table by table, so the error names the table.
func (s *Sink) EmptyTables(ctx context.Context, tables []*schema.Table) error {
	for from := 0; from < len(tables); from += emptyBatch {
		batch := tables[from:min(from+emptyBatch, len(tables))]
		qnames := make([]string, len(batch))
		for i, t := range batch {
			qnames[i] = quotedTable(s.dialect, t)
		}
		var filled []bool
		owns := make([]string, len(batch))
		err := s.withMeta(ctx, func(conn *pgx.Conn) error {
			kinds, err := relkinds(ctx, conn, qnames)
			if err != nil {
				return err
			}
			exists := make([]string, len(batch))
			for i := range batch {
				owns[i] = ownRows(kinds[i], qnames[i])
				exists[i] = "EXISTS (SELECT FROM " + owns[i] + ")"
			}
			results, err := conn.PgConn().Exec(ctx, "BEGIN; LOCK TABLE "+strings.Join(owns, ", ")+" IN SHARE MODE; SELECT ARRAY["+strings.Join(exists, ", ")+"]::text; COMMIT").ReadAll()
			if err != nil {
				rollbackIfInTx(ctx, conn)
				return err
			}
			if len(results) != 4 || len(results[2].Rows) != 1 || len(results[2].Rows[0]) != 1 {
				return fmt.Errorf("unexpected answer to the look for rows")
			}
			arr := strings.Trim(string(results[2].Rows[0][0]), "{}")
			for _, v := range strings.Split(arr, ",") {
				filled = append(filled, v == "t")
			}
			if len(filled) != len(batch) {
				return fmt.Errorf("%d answers for %d tables", len(filled), len(batch))
			}
			return nil
		})
		for i, t := range batch {
			switch {
			case err != nil:
				if err := s.Empty(ctx, t); err != nil {
					return err
				}
			case filled[i]:
				if err := s.withMeta(ctx, func(conn *pgx.Conn) error { return s.emptyRows(ctx, conn, t, owns[i]) }); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// emptyBatch is how many tables EmptyTables locks and looks into at once.
const emptyBatch = 100

// CopyFromBinary is CopyFrom for COPY binary data, for a table TakesBinary
// accepted. The target's receive functions apply the target columns' typmods
// (char(n), numeric(p,s), varchar(n)) as text input would.
func (s *Sink) CopyFromBinary(ctx context.Context, t *schema.Table, r io.Reader) (int64, error) {
	return s.copyFrom(ctx, t, r, copyOptions{binary: true})
}

// TakesBinary reports whether t's target table takes COPY binary data of t's
// columns: each column is of a type schema.BinaryCopyBetween allows from a
// source of major sourceMajor to this target, and the target column of the
// same name is of exactly that type (pg_attribute.atttypid). A table created
// beforehand with other types gets text, which the target converts.
func (s *Sink) TakesBinary(ctx context.Context, t *schema.Table, sourceMajor int) (bool, string, error) {
	ok, why, err := s.TakesBinaryOf(ctx, []*schema.Table{t}, sourceMajor)
	if err != nil {
		return false, "", err
	}
	return ok[0], why[0], nil
}

// TakesBinaryOf is TakesBinary for many tables, with the target's column
// types read in one query per takesBinaryBatch tables.
func (s *Sink) TakesBinaryOf(ctx context.Context, tables []*schema.Table, sourceMajor int) (ok []bool, why []string, err error) {
	ok, why = make([]bool, len(tables)), make([]string, len(tables))
	var ask []int // tables of types that may go in binary
	for i, t := range tables {
		for _, c := range t.Columns {
			if _, known := schema.BinaryCopyType(c.TypeOID); !known {
				why[i] = fmt.Sprintf("column %s is of type %s", s.dialect.QuoteIdent(c.Name), c.TypeName)
				break
			}
		}
		if why[i] == "" {
			ask = append(ask, i)
		}
	}
	for from := 0; from < len(ask); from += takesBinaryBatch {
		batch := ask[from:min(from+takesBinaryBatch, len(ask))]
		qnames := make([]string, len(batch))
		for k, i := range batch {
			qnames[k] = quotedTable(s.dialect, tables[i])
		}
		var targetMajor int
		types := make([]map[string]uint32, len(batch))
		err := s.withMeta(ctx, func(conn *pgx.Conn) error {
			targetMajor = serverMajor(conn)
			rows, err := conn.Query(ctx, `SELECT q.i::int, a.attname::text, a.atttypid
				FROM unnest($1::text[]) WITH ORDINALITY AS q(name, i)
				JOIN pg_catalog.pg_attribute a ON a.attrelid = pg_catalog.to_regclass(q.name) AND a.attnum > 0 AND NOT a.attisdropped`, qnames)
			if err != nil {
				return err
			}
			var (
				k    int
				name string
				typ  uint32
			)
			_, err = pgx.ForEachRow(rows, []any{&k, &name, &typ}, func() error {
				if k < 1 || k > len(types) {
					return fmt.Errorf("column of table %d of %d", k, len(types))
				}
				if types[k-1] == nil {
					types[k-1] = map[string]uint32{}
				}
				types[k-1][name] = typ
				return nil
			})
			return err
		})
		if err != nil {
			if len(batch) == 1 {
				return nil, nil, fmt.Errorf("sink/postgres: read the column types of %s: %w", qnames[0], err)
			}
			return nil, nil, fmt.Errorf("sink/postgres: read the column types of %d tables: %w", len(batch), err)
		}
		for k, i := range batch {
			ok[i], why[i] = s.takesBinary(tables[i], qnames[k], types[k], sourceMajor, targetMajor)
		}
	}
	return ok, why, nil
}

// takesBinaryBatch is how many tables TakesBinaryOf asks about at once.
const takesBinaryBatch = 1000

// takesBinary judges one table from its target column types.
func (s *Sink) takesBinary(t *schema.Table, qname string, targetTypes map[string]uint32, sourceMajor, targetMajor int) (bool, string) {
	if len(targetTypes) == 0 {
		return false, "no target table " + qname
	}
	for _, c := range t.Columns {
		col := s.dialect.QuoteIdent(c.Name)
		typ, ok := targetTypes[c.Name]
		switch {
		case !ok:
			return false, fmt.Sprintf("no column %s in %s", col, qname)
		case typ != c.TypeOID:
			return false, fmt.Sprintf("column %s is of type %s (OID %d) on the source, OID %d on the target", col, c.TypeName, c.TypeOID, typ)
		case !schema.BinaryCopyBetween(c.TypeOID, sourceMajor, targetMajor):
			return false, fmt.Sprintf("column %s of type %s may hold values of a PostgreSQL %d source that a PostgreSQL %d target does not know", col, c.TypeName, sourceMajor, targetMajor)
		}
	}
	return true, ""
}

// blankPadded marks, in t's column order, the columns whose target column is
// char(n): the target pads their values to n characters, so the trailing
// blanks of a value need not be sent (blankTrimmer). A bare bpchar keeps its
// value's blanks and is not marked. Only a table with a bpchar column costs a
// query.
func (s *Sink) blankPadded(ctx context.Context, conn *pgx.Conn, t *schema.Table) ([]bool, error) {
	has := false
	for _, c := range t.Columns {
		has = has || c.TypeOID == bpcharOID
	}
	if !has {
		return nil, nil
	}
	qname := quotedTable(s.dialect, t)
	rows, err := conn.Query(ctx, `SELECT a.attname::text FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
			AND a.atttypid = $2 AND a.atttypmod >= 4`, qname, bpcharOID)
	if err != nil {
		return nil, changeError(sink.ChangeError{Op: "read the column types of", Table: qname, Err: err})
	}
	padded, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, changeError(sink.ChangeError{Op: "read the column types of", Table: qname, Err: err})
	}
	trim := make([]bool, len(t.Columns))
	for i, c := range t.Columns {
		trim[i] = c.TypeOID == bpcharOID && slices.Contains(padded, c.Name)
	}
	return trim, nil
}

// bpcharOID is the OID of bpchar, the type of char(n).
const bpcharOID = 1042

// serverMajor is the major version of the server behind conn, 0 when unknown.
func serverMajor(conn *pgx.Conn) int {
	v := conn.PgConn().ParameterStatus("server_version")
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	major, _ := strconv.Atoi(v[:i])
	return major
}

// copyOptions are the options of one target COPY.
type copyOptions struct {
	binary bool // COPY binary format instead of text
	whole  bool // the load has all of the table's rows: load it frozen if it can
}

// CopyWhole is CopyFrom, or CopyFromBinary, for a load that holds all of the
// table's rows, into an empty table nothing else loads meanwhile. It empties
// the table again in the load's own transaction (TRUNCATE) and loads it with
// COPY … FREEZE: the rows are stored frozen, so the primary key's build after
// the load reads them without setting hint bits (and writing every page once
// more), and the table's first VACUUM has nothing to freeze. A table it
// cannot truncate (referenced by a foreign key, partitioned, locked by
// another session for more than a second, or without the TRUNCATE privilege)
// is loaded as CopyFrom does.
func (s *Sink) CopyWhole(ctx context.Context, t *schema.Table, r io.Reader, binary bool) (int64, error) {
	return s.copyFrom(ctx, t, r, copyOptions{binary: binary, whole: true})
}

// truncateForFreeze opens a transaction on conn and truncates qname in it,
// reporting whether the table can now be loaded with COPY … FREEZE. When it
// cannot, the transaction is rolled back and the error is only logged; an
// error is returned only when conn broke.
func (s *Sink) truncateForFreeze(ctx context.Context, conn *pgx.Conn, t *schema.Table, qname string) (bool, error) {
	// The short wait is for the TRUNCATE alone: the load after it waits as
	// any other.
	err := execLockWait(ctx, conn, shortLockWait, "TRUNCATE ONLY "+qname, true)
	if err == nil {
		return true, nil
	}
	if conn.IsClosed() || conn.PgConn().TxStatus() != 'I' {
		return false, classify(changeError(sink.ChangeError{Op: "truncate", Table: qname, Err: err}), true)
	}
	s.logger().Debug("loading without COPY FREEZE", "table", t.DisplayName(), "why", err.Error())
	return false, nil
}

func (s *Sink) copyFrom(ctx context.Context, t *schema.Table, r io.Reader, o copyOptions) (rows int64, err error) {
	ts := newTableStatements(s.dialect, t)
	conn, err := s.bulkConn(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { s.releaseBulk(ctx, conn, err == nil) }()
	pg := conn.PgConn()
	var with []string
	if o.binary {
		with = append(with, "FORMAT binary")
		trim, err := s.blankPadded(ctx, conn, t)
		if err != nil {
			return 0, err
		}
		r = newBlankTrimmer(r, trim)
	}
	frozen := false
	if o.whole {
		if frozen, err = s.truncateForFreeze(ctx, conn, t, ts.qname); err != nil {
			return 0, err
		}
	}
	if frozen {
		with = append(with, "FREEZE")
	}
	sql := ts.copySQL
	if len(with) > 0 {
		sql += " WITH (" + strings.Join(with, ", ") + ")"
	}
	// A session of the user's holding the table makes the copy wait: say who.
	stop := s.watchLocks(conn, ts.qname, 0)
	tag, err := pg.CopyFrom(ctx, r, sql)
	stop()
	if err != nil {
		ce := changeError(sink.ChangeError{Op: "copy into", Table: ts.qname, Err: err})
		if line, column := copyLine(err); line > 0 {
			ce.Op = fmt.Sprintf("copy (input line %d) into", line)
			refusedColumn(ce, column)
			if o.binary {
				ce.Op = fmt.Sprintf("copy (binary input row %d) into", line)
			}
		}
		rollbackIfInTx(ctx, conn)
		return 0, classify(ce, conn.IsClosed())
	}
	if frozen {
		if _, err := pg.Exec(ctx, "COMMIT").ReadAll(); err != nil {
			return 0, classify(changeError(sink.ChangeError{Op: "commit the copy into", Table: ts.qname, Err: err}), conn.IsClosed())
		}
	}
	return tag.RowsAffected(), nil
}

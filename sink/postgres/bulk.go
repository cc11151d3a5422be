package postgres

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/schema"
)

// CopyFrom loads rows in COPY text format (columns in t's order) into t's
// target table on a connection of its own (kept for later loads),
// committing at the end: a failure
// leaves nothing of this call behind. Several CopyFrom calls may run at once
// (parallel copy of tables or of CTID ranges of one table).
func (s *Sink) CopyFrom(ctx context.Context, t *schema.Table, r io.Reader) (int64, error) {
	return s.copyFrom(ctx, t, r, copyOptions{})
}

// Empty truncates t's target table, on the sink's metadata connection: a
// table is emptied once before its copy, which may load it in parallel CTID
// ranges (CopyFrom each), and with thousands of tables a connection of its
// own for each cost most of the time before the first row was copied. A table
// without rows, as a table just created is, is left as it is: TRUNCATE costs
// a new file and 1 ms a table. Whether it has rows is read under a SHARE lock,
// which waits for a load still running (an earlier pgrelay's, killed), so
// rows that load commits are not missed.
func (s *Sink) Empty(ctx context.Context, t *schema.Table) error {
	qname := quotedTable(s.dialect, t)
	return s.withMeta(ctx, func(conn *pgx.Conn) error {
		results, err := conn.PgConn().Exec(ctx, "BEGIN; LOCK TABLE "+qname+" IN SHARE MODE; SELECT EXISTS (SELECT FROM "+qname+"); COMMIT").ReadAll()
		if err != nil {
			if conn.PgConn().TxStatus() != 'I' {
				_, _ = conn.PgConn().Exec(ctx, "ROLLBACK").ReadAll()
			}
			return &ChangeError{Op: "truncate", Table: qname, Err: err}
		}
		if len(results) == 4 && len(results[2].Rows) == 1 && len(results[2].Rows[0]) == 1 && string(results[2].Rows[0][0]) == "f" {
			return nil
		}
		if _, err := conn.Exec(ctx, "TRUNCATE "+qname); err != nil {
			return &ChangeError{Op: "truncate", Table: qname, Err: err}
		}
		return nil
	})
}

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
	qname := quotedTable(s.dialect, t)
	for _, c := range t.Columns {
		if _, ok := schema.BinaryCopyType(c.TypeOID); !ok {
			return false, fmt.Sprintf("column %s is of type %s", s.dialect.QuoteIdent(c.Name), c.TypeName), nil
		}
	}
	var targetMajor int
	targetTypes := map[string]uint32{}
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		targetMajor = serverMajor(conn)
		rows, err := conn.Query(ctx, `SELECT a.attname::text, a.atttypid FROM pg_catalog.pg_attribute a
			WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, qname)
		if err != nil {
			return err
		}
		var name string
		var typ uint32
		_, err = pgx.ForEachRow(rows, []any{&name, &typ}, func() error {
			targetTypes[name] = typ
			return nil
		})
		return err
	})
	if err != nil {
		return false, "", fmt.Errorf("sink/postgres: read the column types of %s: %w", qname, err)
	}
	if len(targetTypes) == 0 {
		return false, "no target table " + qname, nil
	}
	for _, c := range t.Columns {
		col := s.dialect.QuoteIdent(c.Name)
		typ, ok := targetTypes[c.Name]
		switch {
		case !ok:
			return false, fmt.Sprintf("no column %s in %s", col, qname), nil
		case typ != c.TypeOID:
			return false, fmt.Sprintf("column %s is of type %s (OID %d) on the source, OID %d on the target", col, c.TypeName, c.TypeOID, typ), nil
		case !schema.BinaryCopyBetween(c.TypeOID, sourceMajor, targetMajor):
			return false, fmt.Sprintf("column %s of type %s may hold values of a PostgreSQL %d source that a PostgreSQL %d target does not know", col, c.TypeName, sourceMajor, targetMajor), nil
		}
	}
	return true, "", nil
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
		return nil, &ChangeError{Op: "read the column types of", Table: qname, Err: err}
	}
	padded, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, &ChangeError{Op: "read the column types of", Table: qname, Err: err}
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
}

func (s *Sink) copyFrom(ctx context.Context, t *schema.Table, r io.Reader, o copyOptions) (rows int64, err error) {
	ts := newTableStatements(s.dialect, t)
	conn, err := s.bulkConn(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { s.releaseBulk(ctx, conn, err == nil) }()
	pg := conn.PgConn()
	sql := ts.copySQL
	var with []string
	if o.binary {
		with = append(with, "FORMAT binary")
	}
	if len(with) > 0 {
		sql += " WITH (" + strings.Join(with, ", ") + ")"
	}
	if o.binary {
		trim, err := s.blankPadded(ctx, conn, t)
		if err != nil {
			return 0, err
		}
		r = newBlankTrimmer(r, trim)
	}
	tag, err := pg.CopyFrom(ctx, r, sql)
	if err != nil {
		ce := &ChangeError{Op: "copy into", Table: ts.qname, Err: err}
		if line := copyLine(err); line > 0 {
			ce.Op = fmt.Sprintf("copy (input line %d) into", line)
			if o.binary {
				ce.Op = fmt.Sprintf("copy (binary input row %d) into", line)
			}
		}
		return 0, classify(ce, conn.IsClosed())
	}
	return tag.RowsAffected(), nil
}

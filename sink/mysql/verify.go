package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

var (
	_ sink.Verifier      = (*Sink)(nil)
	_ sink.VerifySession = (*verifySession)(nil)
)

// OpenVerify implements sink.Verifier: a session of its own that reads
// target tables for `pgrelay verify`, each value in its canonical form
// (canon.FromMySQL) as DESIGN.md's mapping stored it, key values bound
// through canon.MySQLArg. The server cannot compute the canonical forms, so
// rows are read and hashed by verify (no sink.VerifyChecksums).
func (s *Sink) OpenVerify(ctx context.Context, slot string) (sink.VerifySession, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, classify(describeConnectError(s.cfg, err), true)
	}
	v := &verifySession{conn: conn, slot: slot, dialect: s.dialect, server: s.server}
	err = conn.QueryRowContext(ctx, `SELECT COUNT(*) > 0 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'pgrelay_progress'`, s.database).Scan(&v.hasMetadata)
	if err != nil {
		discard(conn)
		return nil, classify(fmt.Errorf("sink/mysql: look for pgrelay's metadata: %w", err), false)
	}
	return v, nil
}

type verifySession struct {
	conn        *sql.Conn
	slot        string
	dialect     *schema.MySQLDialect
	server      schema.MySQLServer
	hasMetadata bool
}

// HasMetadata implements sink.VerifySession.
func (v *verifySession) HasMetadata() bool { return v.hasMetadata }

// Close implements sink.VerifySession; the session goes, with its
// isolation level.
func (v *verifySession) Close(context.Context) error {
	discard(v.conn)
	return nil
}

// Applied implements sink.VerifySession.
func (v *verifySession) Applied(ctx context.Context) (source.LSN, error) {
	if !v.hasMetadata {
		return 0, nil
	}
	p, err := readProgress(ctx, v.conn, v.slot)
	return p.LSN, classify(err, false)
}

// CopyInProgress implements sink.VerifySession.
func (v *verifySession) CopyInProgress(ctx context.Context) (bool, error) {
	if !v.hasMetadata {
		return false, nil
	}
	var done bool
	err := v.conn.QueryRowContext(ctx, "SELECT snapshot_done FROM pgrelay_seed WHERE slot = ?", v.slot).Scan(&done)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, classify(fmt.Errorf("sink/mysql: read the seed state of slot %q: %w", v.slot, err), false)
	}
	return !done, nil
}

// Locate implements sink.VerifySession: the dialect's target table; failing
// that, the one pgrelay_relation holds the source relation OID under for
// this slot.
func (v *verifySession) Locate(ctx context.Context, src sink.VerifyName, relationOID uint32) (sink.VerifyName, bool, error) {
	sch, name := v.dialect.TargetTable(&schema.Table{Schema: src.Schema, Name: src.Name, RelationID: relationOID})
	want := sink.VerifyName{Schema: sch, Name: name}
	found, err := v.exists(ctx, want)
	if err != nil || found || !v.hasMetadata || relationOID == 0 {
		return want, found, err
	}
	var other sink.VerifyName
	err = v.conn.QueryRowContext(ctx, `SELECT target_schema, target_name FROM pgrelay_relation WHERE slot = ? AND relation_oid = ?
		ORDER BY updated_at DESC LIMIT 1`, v.slot, relationOID).Scan(&other.Schema, &other.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return want, false, nil
	}
	if err != nil {
		return want, false, classify(fmt.Errorf("sink/mysql: look up the stored definition of %s: %w", src, err), false)
	}
	found, err = v.exists(ctx, other)
	if err != nil || !found {
		return want, false, err
	}
	return other, true, nil
}

func (v *verifySession) exists(ctx context.Context, n sink.VerifyName) (bool, error) {
	var count int
	if err := v.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", n.Schema, n.Name).Scan(&count); err != nil {
		return false, classify(fmt.Errorf("sink/mysql: look up table %s: %w", n, err), false)
	}
	return count > 0, nil
}

// Describe implements sink.VerifyReader: the columns from
// information_schema, the primary key as the key. A column's canonical type
// is the source column's (a VARCHAR may hold an enum, inet or interval),
// but MySQL 8's JSON keeps numbers as doubles, and a text column orders its
// values as text, whatever it holds.
func (v *verifySession) Describe(ctx context.Context, n sink.VerifyName) (*sink.VerifyShape, error) {
	rows, err := v.conn.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(COLLATION_NAME, ''), DATA_TYPE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, n.Schema, n.Name)
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: describe %s: %w", n, err), false)
	}
	defer rows.Close()
	sh := &sink.VerifyShape{Name: n, Identity: 'd'}
	for rows.Next() {
		var c sink.VerifyColumn
		var coll, dataType string
		if err := rows.Scan(&c.Name, &c.Type, &coll, &dataType); err != nil {
			return nil, fmt.Errorf("sink/mysql: describe %s: %w", n, err)
		}
		switch {
		case strings.HasSuffix(coll, "_bin"):
			c.Collation = "libc C" // a binary collation orders by code point: byte order
		case coll != "":
			c.Collation = "mysql " + coll
		}
		switch dataType {
		case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
			c.TextOrder = true
		case "json":
			c.Canon.DoubleNumbers = !v.server.MariaDB
		}
		sh.Columns = append(sh.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: describe %s: %w", n, err), false)
	}
	if len(sh.Columns) == 0 {
		return nil, nil
	}
	krows, err := v.conn.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, n.Schema, n.Name)
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: describe %s: %w", n, err), false)
	}
	defer krows.Close()
	for krows.Next() {
		var k string
		if err := krows.Scan(&k); err != nil {
			return nil, fmt.Errorf("sink/mysql: describe %s: %w", n, err)
		}
		sh.Key = append(sh.Key, k)
	}
	if err := krows.Err(); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: describe %s: %w", n, err), false)
	}
	if len(sh.Key) > 0 {
		sh.Indexes = [][]string{sh.Key}
	}
	var est sql.NullInt64
	if err := v.conn.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", n.Schema, n.Name).Scan(&est); err == nil {
		sh.EstimatedRows = est.Int64
	}
	return sh, nil
}

// selectExpr reads a column: FLOAT as DOUBLE (its text has 6 digits only).
func (v *verifySession) selectExpr(c *sink.VerifyColumn) string {
	if strings.HasPrefix(c.Type, "float") {
		return "CAST(" + v.dialect.QuoteIdent(c.Name) + " AS DOUBLE)"
	}
	return v.dialect.QuoteIdent(c.Name)
}

// keyCompare renders (k1, …, kn) op (v1, …, vn) for op > or <= as the
// lexicographic comparison spelled out, which MySQL and MariaDB both serve
// from the key's index (MariaDB does not for a row comparison); args are
// the bound key values.
func keyCompare(cols []string, args []any, op string) (string, []any) {
	strict := "<"
	if op == ">" {
		strict = ">"
	}
	var ors []string
	var out []any
	for i := range cols {
		var ands []string
		for j := 0; j < i; j++ {
			ands = append(ands, cols[j]+" = ?")
			out = append(out, args[j])
		}
		ands = append(ands, cols[i]+" "+strict+" ?")
		out = append(out, args[i])
		ors = append(ors, strings.Join(ands, " AND "))
	}
	if op == "<=" {
		var ands []string
		for j := range cols {
			ands = append(ands, cols[j]+" = ?")
			out = append(out, args[j])
		}
		ors = append(ors, strings.Join(ands, " AND "))
	}
	return "(" + strings.Join(ors, " OR ") + ")", out
}

// Rows implements sink.VerifyReader. The rows and the position stored for
// the slot are read in one consistent snapshot (REPEATABLE READ).
func (v *verifySession) Rows(ctx context.Context, t *sink.VerifyTable, r sink.VerifyRange, keys []sink.VerifyKey, row func(key []string, values []canon.Value) error) (source.LSN, error) {
	if keys != nil && len(keys) == 0 {
		return 0, nil
	}
	var sel, keyCols []string
	for i := range t.Key {
		sel = append(sel, v.selectExpr(&t.Key[i]))
		keyCols = append(keyCols, v.dialect.QuoteIdent(t.Key[i].Name))
	}
	for i := range t.Columns {
		sel = append(sel, v.selectExpr(&t.Columns[i]))
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + v.dialect.QuoteIdent(t.Name.Schema) + "." + v.dialect.QuoteIdent(t.Name.Name)
	bind := func(k sink.VerifyKey) ([]any, error) {
		if len(k) != len(t.Key) {
			return nil, fmt.Errorf("sink/mysql: verify %s: a key of %d values for %d key columns", t.Name, len(k), len(t.Key))
		}
		out := make([]any, len(k))
		for i, s := range k {
			a, err := canon.MySQLArg(t.Key[i].Canon, s)
			if err != nil {
				return nil, fmt.Errorf("sink/mysql: verify %s: %w", t.Name, err)
			}
			out[i] = a
		}
		return out, nil
	}
	var conds []string
	var args []any
	switch {
	case keys != nil:
		var list []string
		for _, k := range keys {
			a, err := bind(k)
			if err != nil {
				return 0, err
			}
			list = append(list, "("+strings.TrimSuffix(strings.Repeat("?, ", len(a)), ", ")+")")
			args = append(args, a...)
		}
		conds = append(conds, "("+strings.Join(keyCols, ", ")+") IN ("+strings.Join(list, ", ")+")")
	default:
		for _, b := range []struct {
			k  sink.VerifyKey
			op string
		}{{r.From, ">"}, {r.To, "<="}} {
			if b.k == nil {
				continue
			}
			a, err := bind(b.k)
			if err != nil {
				return 0, err
			}
			c, ca := keyCompare(keyCols, a, b.op)
			conds, args = append(conds, c), append(args, ca...)
		}
	}
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	if len(keyCols) > 0 {
		q += " ORDER BY " + strings.Join(keyCols, ", ")
	}
	if _, err := v.conn.ExecContext(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return 0, classify(fmt.Errorf("sink/mysql: verify %s: %w", t.Name, err), connLost(err))
	}
	if _, err := v.conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"); err != nil {
		return 0, classify(fmt.Errorf("sink/mysql: verify %s: %w", t.Name, err), connLost(err))
	}
	defer v.conn.ExecContext(context.WithoutCancel(ctx), "COMMIT") //nolint:errcheck // a read-only transaction
	var position source.LSN
	if v.hasMetadata {
		p, err := readProgress(ctx, v.conn, v.slot)
		if err != nil {
			return 0, classify(err, false)
		}
		position = p.LSN
	}
	rows, err := v.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, classify(fmt.Errorf("sink/mysql: verify %s: %w", t.Name, err), false)
	}
	defer rows.Close()
	nk := len(t.Key)
	vals := make([]any, nk+len(t.Columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	key := make([]string, nk)
	values := make([]canon.Value, len(t.Columns))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, fmt.Errorf("sink/mysql: verify %s: %w", t.Name, err)
		}
		for i, val := range vals {
			var c *sink.VerifyColumn
			if i < nk {
				c = &t.Key[i]
			} else {
				c = &t.Columns[i-nk]
			}
			cv, err := canon.FromMySQL(c.Canon, val)
			if err != nil {
				return 0, fmt.Errorf("sink/mysql: verify %s: column %s: %w", t.Name, c.Name, err)
			}
			if i < nk {
				key[i] = cv.S
			} else {
				values[i-nk] = cv
			}
		}
		if err := row(key, values); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, classify(fmt.Errorf("sink/mysql: verify %s: %w", t.Name, err), false)
	}
	return position, nil
}

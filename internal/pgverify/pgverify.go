// Package pgverify reads a PostgreSQL server's tables for `pgrelay verify`,
// with their values in canonical form (package schema/canon): the source
// side (apply/verify) and a PostgreSQL target (sink/postgres) share it. All
// of the comparison's PostgreSQL SQL is here.
//
// Values are read in text result format as the canonical expressions print
// them (canon.PostgresExpr; the session's settings fix what printing depends
// on). The checksum of a key range is computed on the server (Checksum),
// over the same record text and md5 canon.Checksum uses, unless a column's
// form needs a conversion only Go does (CanChecksum): then the rows are read
// and hashed here. Key values travel in canonical text and are read back
// with $n::text::<type>, which every type's input function accepts.
package pgverify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// sessionSQL pins the settings the text form of values depends on
// (canon.PostgresSettings), and xmloption = content like every other pgrelay
// session on a target (xml input then takes the fragments the source may
// hold); the session only reads.
const sessionSQL = canon.PostgresSettings + `; SET search_path = pg_catalog, pg_temp; SET xmloption = content;
SET default_transaction_read_only = on; SET application_name = 'pgrelay verify';
SET lock_timeout = '` + LockTimeout + `'`

// LockTimeout bounds the wait for a table another session holds locked (DDL
// in progress, or a prepared transaction that altered or truncated it, which
// keeps the lock until COMMIT PREPARED).
const LockTimeout = "30s"

// LockHint adds what to do to err when it is a lock timeout: a table verify
// could not read because another session kept it locked.
func LockHint(err error) error {
	if source.IsLockTimeout(err) {
		return fmt.Errorf("%w; the table stayed locked for "+LockTimeout+" (DDL in progress, or a prepared transaction that altered or truncated it: see pg_prepared_xacts); run verify again once it is released", err)
	}
	return err
}

// ErrNoKey is returned when key ranges or a boundary are asked of a keyless
// table.
var ErrNoKey = errors.New("verify: the table has no key to range over")

// Reader reads one server in a session of its own.
type Reader struct {
	conn  *pgx.Conn
	major int
	// toUTF8 hashes rows' text converted to UTF8: the database's encoding is
	// another, and the other side's text of the same values would be UTF8.
	toUTF8 bool
	// position is the SQL of a read's position, evaluated after its rows;
	// it holds one %d for the number of its parameter posArg, when not "".
	position string
	posArg   string
}

var (
	_ sink.VerifyReader    = (*Reader)(nil)
	_ sink.VerifyChecksums = (*Reader)(nil)
)

// NewReader prepares conn, a session of its own, for reading; side ("source"
// or "target") prefixes errors. The position of its reads is SQL NULL until
// SetPosition.
func NewReader(ctx context.Context, conn *pgx.Conn, side string) (*Reader, error) {
	if _, err := conn.Exec(ctx, sessionSQL); err != nil {
		return nil, fmt.Errorf("%s: verify session settings: %w", side, err)
	}
	var num, enc string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num'), current_setting('server_encoding')").Scan(&num, &enc); err != nil {
		return nil, fmt.Errorf("%s: read server version: %w", side, err)
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return nil, fmt.Errorf("%s: server_version_num %q: %w", side, num, err)
	}
	return &Reader{conn: conn, major: n / 10000, toUTF8: enc != "UTF8", position: "NULL::text"}, nil
}

// SetPosition sets the SQL of the position each read reports, evaluated
// after its rows, as text: with one %d for the number of its parameter arg
// when arg is not "".
func (r *Reader) SetPosition(sql, arg string) { r.position, r.posArg = sql, arg }

// Conn is the reader's session.
func (r *Reader) Conn() *pgx.Conn { return r.conn }

// Major is the server's major version.
func (r *Reader) Major() int { return r.major }

// ParseLSN reads a position's text; nil is 0.
func ParseLSN(what string, text *string) (source.LSN, error) {
	if text == nil {
		return 0, nil
	}
	lsn, err := pglogrepl.ParseLSN(*text)
	if err != nil {
		return 0, fmt.Errorf("%s: position %q: %w", what, *text, err)
	}
	return lsn, nil
}

// Exists reports whether table n exists (a table or a partitioned table).
func (r *Reader) Exists(ctx context.Context, n sink.VerifyName) (bool, error) {
	var ok bool
	err := r.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p'))`, n.Schema, n.Name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up table %s: %w", n, err)
	}
	return ok, nil
}

// collationSQL is the effective collation of attribute a, as provider and
// locale ("" when not collatable): the database's for the default collation.
// The catalog columns holding a locale moved between versions.
func collationSQL(major int) string {
	dbLocale, collLocale, deterministic := "NULL::text", "co.collcollate", "''"
	if major >= 15 {
		dbLocale, collLocale = "d.daticulocale", "co.colliculocale"
	}
	if major >= 17 {
		dbLocale, collLocale = "d.datlocale", "co.colllocale"
	}
	if major >= 12 {
		deterministic = "CASE WHEN co.collisdeterministic THEN '' ELSE ' nondeterministic' END"
	}
	db := `'libc ' || d.datcollate || '/' || d.datctype`
	if major >= 15 {
		db = `CASE d.datlocprovider WHEN 'c' THEN 'libc ' || d.datcollate || '/' || d.datctype
			WHEN 'i' THEN 'icu ' || ` + dbLocale + ` ELSE 'builtin ' || ` + dbLocale + ` END`
	}
	return `CASE WHEN a.attcollation = 0 THEN ''
		WHEN a.attcollation = 100 THEN (SELECT ` + db + ` FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
		ELSE (SELECT CASE co.collprovider WHEN 'c' THEN 'libc ' || co.collcollate || '/' || co.collctype
			WHEN 'i' THEN 'icu ' || ` + collLocale + ` ELSE 'builtin ' || coalesce(` + collLocale + `, '') END || ` + deterministic + `
			FROM pg_catalog.pg_collation co WHERE co.oid = a.attcollation) END`
}

// NormalizeCollation makes spellings of byte order the same: libc C and
// POSIX.
func NormalizeCollation(c string) string {
	switch c {
	case "libc POSIX/POSIX", "libc C/C":
		return "libc C"
	}
	return c
}

// Describe implements sink.VerifyReader.
func (r *Reader) Describe(ctx context.Context, n sink.VerifyName) (*sink.VerifyShape, error) {
	sh := &sink.VerifyShape{Name: n}
	var oid uint32
	var identity string
	err := r.conn.QueryRow(ctx, `SELECT c.oid, c.relreplident::text, greatest(c.reltuples, 0)::int8, c.relkind = 'p'
		FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, n.Schema, n.Name).Scan(&oid, &identity, &sh.EstimatedRows, &sh.Partitioned)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", n, err)
	}
	if len(identity) == 1 {
		sh.Identity = identity[0]
	}
	rows, err := r.conn.Query(ctx, `SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), a.atttypid, `+collationSQL(r.major)+`
		FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, oid)
	if err != nil {
		return nil, fmt.Errorf("describe %s: columns: %w", n, err)
	}
	var col sink.VerifyColumn
	var coll *string
	if _, err := pgx.ForEachRow(rows, []any{&col.Name, &col.Type, &col.TypeOID, &coll}, func() error {
		c := col
		if coll != nil {
			c.Collation = NormalizeCollation(*coll)
		}
		sh.Columns = append(sh.Columns, c)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("describe %s: columns: %w", n, err)
	}
	if err := r.canonTypes(ctx, sh.Columns); err != nil {
		return nil, fmt.Errorf("describe %s: column types: %w", n, err)
	}
	// Every valid non-partial index with its columns in order; the replica
	// identity key is the primary key's (DEFAULT) or the chosen index's.
	rows, err = r.conn.Query(ctx, `SELECT i.indisprimary, i.indisreplident,
			array_agg(coalesce(a.attname::text, '') ORDER BY k.ord)
		FROM pg_catalog.pg_index i
		CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
		LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
		WHERE i.indrelid = $1 AND i.indisvalid AND i.indpred IS NULL
		GROUP BY i.indexrelid, i.indisprimary, i.indisreplident`, oid)
	if err != nil {
		return nil, fmt.Errorf("describe %s: indexes: %w", n, err)
	}
	var primary, replident bool
	var cols []string
	if _, err := pgx.ForEachRow(rows, []any{&primary, &replident, &cols}, func() error {
		sh.Indexes = append(sh.Indexes, cols)
		if primary && sh.Identity == 'd' || replident && sh.Identity == 'i' {
			sh.Key = cols
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("describe %s: indexes: %w", n, err)
	}
	return sh, nil
}

// pgType is what canonTypes needs of a pg_type row.
type pgType struct {
	typtype, category byte
	base, elem        uint32
}

// canonTypes sets each column's Canon from its type: a domain's base type,
// an array's element type (itself resolved).
func (r *Reader) canonTypes(ctx context.Context, cols []sink.VerifyColumn) error {
	types := map[uint32]pgType{}
	var want []uint32
	for _, c := range cols {
		want = append(want, c.TypeOID)
	}
	// Domains over domains and arrays of domains: a few rounds at most.
	for round := 0; len(want) > 0 && round < 32; round++ {
		rows, err := r.conn.Query(ctx, `SELECT oid, typtype::text, typcategory::text, typbasetype, typelem FROM pg_catalog.pg_type WHERE oid = ANY($1)`, want)
		if err != nil {
			return err
		}
		var oid, base, elem uint32
		var typtype, category string
		if _, err := pgx.ForEachRow(rows, []any{&oid, &typtype, &category, &base, &elem}, func() error {
			types[oid] = pgType{typtype: typtype[0], category: category[0], base: base, elem: elem}
			return nil
		}); err != nil {
			return err
		}
		next := want[:0:0]
		for _, oid := range want {
			t, ok := types[oid]
			if !ok {
				continue // gone meanwhile: Other
			}
			for _, o := range []uint32{t.base, t.elem} {
				if _, seen := types[o]; o != 0 && !seen {
					next = append(next, o)
				}
			}
		}
		want = next
	}
	var baseOf func(oid uint32, depth int) uint32
	baseOf = func(oid uint32, depth int) uint32 {
		if t, ok := types[oid]; ok && t.typtype == 'd' && t.base != 0 && depth < 32 {
			return baseOf(t.base, depth+1)
		}
		return oid
	}
	for i := range cols {
		base := baseOf(cols[i].TypeOID, 0)
		var elem uint32
		if t := types[base]; t.category == 'A' && t.elem != 0 {
			elem = baseOf(t.elem, 0)
		}
		cols[i].Canon = canon.TypeOf(base, elem)
	}
	return nil
}

// quotedTable is the FROM item of t: the table alone, or a partitioned table
// with its partitions.
func quotedTable(t *sink.VerifyTable) string {
	name := pgquote.Ident(t.Name.Schema) + "." + pgquote.Ident(t.Name.Name)
	if t.Partitioned {
		return name
	}
	return "ONLY " + name
}

// filtered adds t's row filter to where (" WHERE …" or "").
func filtered(t *sink.VerifyTable, where string) string {
	switch {
	case t.Filter == "":
		return where
	case where == "":
		return " WHERE (" + t.Filter + ")"
	default:
		return where + " AND (" + t.Filter + ")"
	}
}

// valueExpr is the SQL that prints column c's canonical form; ok is false
// when Go converts its text (canon.FromPostgresText).
func (r *Reader) valueExpr(c *sink.VerifyColumn) (string, bool) {
	return canon.PostgresExpr(pgquote.Ident(c.Name), c.Canon, r.major)
}

// CanChecksum implements sink.VerifyChecksums.
func (r *Reader) CanChecksum(t *sink.VerifyTable) bool {
	for i := range t.Columns {
		if _, ok := r.valueExpr(&t.Columns[i]); !ok {
			return false
		}
	}
	return true
}

// rowHash is the SQL of one row's canonical hash: md5 of the record text of
// its canonical values, converted to UTF8 first in a database of another
// encoding.
func (r *Reader) rowHash(t *sink.VerifyTable) string {
	vals := make([]string, len(t.Columns))
	for i := range t.Columns {
		vals[i], _ = r.valueExpr(&t.Columns[i])
	}
	row := "ROW(" + strings.Join(vals, ", ") + ")::text"
	if r.toUTF8 {
		row = "pg_catalog.convert_to(" + row + ", 'UTF8')"
	}
	return "pg_catalog.md5(" + row + ")"
}

// textOrder reports whether key column i is ordered as its canonical text
// in byte order: a column the other side orders so, whose type here does not
// collate.
func textOrder(t *sink.VerifyTable, i int) bool {
	return t.ByteOrder[i] && t.Key[i].Collation == ""
}

// keyOrder is key column i as the ranges compare it: in byte order where
// asked (a collatable column in COLLATE "C", another as its canonical text).
func (r *Reader) keyOrder(t *sink.VerifyTable, i int) string {
	c := &t.Key[i]
	switch {
	case textOrder(t, i):
		e, _ := r.valueExpr(c)
		return "(" + e + `)::pg_catalog.text COLLATE "C"`
	case t.ByteOrder[i]:
		return pgquote.Ident(c.Name) + ` COLLATE "C"`
	}
	return pgquote.Ident(c.Name)
}

// keyColumns is the key in the comparison's order.
func (r *Reader) keyColumns(t *sink.VerifyTable) string {
	cols := make([]string, len(t.Key))
	for i := range t.Key {
		cols[i] = r.keyOrder(t, i)
	}
	return strings.Join(cols, ", ")
}

// keyParams appends the key k as parameters and returns their SQL.
func keyParams(t *sink.VerifyTable, k sink.VerifyKey, args *[]any) string {
	ps := make([]string, len(t.Key))
	for i, c := range t.Key {
		*args = append(*args, k[i])
		p := "$" + strconv.Itoa(len(*args)) + "::pg_catalog.text"
		switch {
		case textOrder(t, i):
			p += ` COLLATE "C"`
		case t.ByteOrder[i]:
			p += "::" + c.Type + ` COLLATE "C"`
		default:
			p += "::" + c.Type
		}
		ps[i] = p
	}
	return strings.Join(ps, ", ")
}

// rangeWhere is the WHERE clause selecting rg ("" for the whole table). Row
// comparisons, (a, b) > ($1, $2), are what a btree index on (a, b) serves.
func (r *Reader) rangeWhere(t *sink.VerifyTable, rg sink.VerifyRange, args *[]any) string {
	if rg.Whole() {
		return filtered(t, "")
	}
	var conds []string
	key := "(" + r.keyColumns(t) + ")"
	if rg.From != nil {
		conds = append(conds, key+" > ("+keyParams(t, rg.From, args)+")")
	}
	if rg.To != nil {
		conds = append(conds, key+" <= ("+keyParams(t, rg.To, args)+")")
	}
	return filtered(t, " WHERE "+strings.Join(conds, " AND "))
}

// keysWhere is the WHERE clause selecting the rows with the given keys.
func keysWhere(t *sink.VerifyTable, keys []sink.VerifyKey, args *[]any) string {
	cols := make([]string, len(t.Key))
	vals := make([]string, len(t.Key))
	arrays := make([]string, len(t.Key))
	aliases := make([]string, len(t.Key))
	for i, c := range t.Key {
		col := make([]string, len(keys))
		for j, k := range keys {
			col[j] = k[i]
		}
		*args = append(*args, col)
		cols[i] = pgquote.Ident(c.Name)
		vals[i] = "u.c" + strconv.Itoa(i) + "::" + c.Type
		arrays[i] = "$" + strconv.Itoa(len(*args)) + "::pg_catalog.text[]"
		aliases[i] = "c" + strconv.Itoa(i)
	}
	return filtered(t, " WHERE ("+strings.Join(cols, ", ")+") IN (SELECT "+strings.Join(vals, ", ")+
		" FROM pg_catalog.unnest("+strings.Join(arrays, ", ")+") AS u("+strings.Join(aliases, ", ")+"))")
}

// positionSQL is the position expression, its parameter appended.
func (r *Reader) positionSQL(args *[]any) string {
	if r.posArg == "" {
		return r.position
	}
	*args = append(*args, r.posArg)
	return fmt.Sprintf(r.position, len(*args))
}

// checksumSQL counts the rows of rg and sums the first halves of their md5
// (canon.Checksum).
func (r *Reader) checksumSQL(t *sink.VerifyTable, rg sink.VerifyRange) (string, []any) {
	var args []any
	where := r.rangeWhere(t, rg, &args)
	return "SELECT count(*), coalesce(sum(('x' || pg_catalog.left(" + r.rowHash(t) + ", 16))::bit(64)::int8)::text, ''), " +
		r.positionSQL(&args) + " FROM " + quotedTable(t) + where, args
}

// Checksum implements sink.VerifyChecksums. The position is read in the same
// statement, after the rows.
func (r *Reader) Checksum(ctx context.Context, t *sink.VerifyTable, rg sink.VerifyRange) (sink.VerifySummary, error) {
	if len(t.Key) == 0 && !rg.Whole() {
		return sink.VerifySummary{}, ErrNoKey
	}
	if !r.CanChecksum(t) {
		return r.checksumRows(ctx, t, rg)
	}
	sql, args := r.checksumSQL(t, rg)
	var sum sink.VerifySummary
	var pos *string
	if err := r.conn.QueryRow(ctx, sql, args...).Scan(&sum.Rows, &sum.Checksum, &pos); err != nil {
		return sink.VerifySummary{}, fmt.Errorf("checksum %s %s: %w", t.Name, FormatRange(KeyNames(t), rg), LockHint(err))
	}
	var err error
	sum.Position, err = ParseLSN(t.Name.String(), pos)
	return sum, err
}

// checksumRows is Checksum over rows read and hashed here.
func (r *Reader) checksumRows(ctx context.Context, t *sink.VerifyTable, rg sink.VerifyRange) (sink.VerifySummary, error) {
	var c canon.Checksum
	pos, err := r.Rows(ctx, t, rg, nil, func(_ []string, values []canon.Value) error {
		c.Add(values)
		return nil
	})
	return sink.VerifySummary{Rows: c.Rows, Checksum: c.String(), Position: pos}, err
}

// KeyNames are t's key column names.
func KeyNames(t *sink.VerifyTable) []string {
	names := make([]string, len(t.Key))
	for i, c := range t.Key {
		names[i] = c.Name
	}
	return names
}

// selectList is the canonical expressions of the key columns (as k0, k1, …:
// an output named like a column would be what ORDER BY "id" sorts by) and
// then of the columns (as v0, v1, …), and which need converting in Go.
func (r *Reader) selectList(t *sink.VerifyTable) (string, []bool) {
	sel := make([]string, 0, len(t.Key)+len(t.Columns))
	goConv := make([]bool, 0, cap(sel))
	for i := range t.Key {
		e, ok := r.valueExpr(&t.Key[i])
		sel = append(sel, e+" AS k"+strconv.Itoa(i))
		goConv = append(goConv, !ok)
	}
	for i := range t.Columns {
		e, ok := r.valueExpr(&t.Columns[i])
		sel = append(sel, e+" AS v"+strconv.Itoa(i))
		goConv = append(goConv, !ok)
	}
	return strings.Join(sel, ", "), goConv
}

// textResults asks for every result column in text format: the output
// functions' text is the canonical form.
var textResults = pgx.QueryResultFormats{pgx.TextFormatCode}

// rowsSQL reads the keys and values of the rows of rg, or of those with the
// given keys, in key order; goConv as for selectList.
func (r *Reader) rowsSQL(t *sink.VerifyTable, rg sink.VerifyRange, keys []sink.VerifyKey) (string, []any, []bool) {
	sel, goConv := r.selectList(t)
	var args []any
	where := ""
	if keys != nil {
		where = keysWhere(t, keys, &args)
	} else {
		where = r.rangeWhere(t, rg, &args)
	}
	sql := "SELECT " + sel + " FROM " + quotedTable(t) + where
	if len(t.Key) > 0 {
		sql += " ORDER BY " + r.keyColumns(t)
	}
	return sql, args, goConv
}

// Rows implements sink.VerifyReader, in a repeatable read transaction that
// reads the position after the rows.
func (r *Reader) Rows(ctx context.Context, t *sink.VerifyTable, rg sink.VerifyRange, keys []sink.VerifyKey, row func(key []string, values []canon.Value) error) (source.LSN, error) {
	if len(t.Key) == 0 && (keys != nil || !rg.Whole()) {
		return 0, ErrNoKey
	}
	var pos source.LSN
	err := pgx.BeginTxFunc(ctx, r.conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if keys != nil && len(keys) == 0 {
			return r.readPosition(ctx, tx, t, &pos)
		}
		sql, args, goConv := r.rowsSQL(t, rg, keys)
		rows, err := tx.Query(ctx, sql, append([]any{textResults}, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		nk := len(t.Key)
		key := make([]string, nk)
		values := make([]canon.Value, len(t.Columns))
		for rows.Next() {
			raw := rows.RawValues()
			for i, b := range raw {
				v := canon.Null
				if b != nil {
					v = canon.V(string(b))
				}
				if v.Valid && goConv[i] {
					var c *sink.VerifyColumn
					if i < nk {
						c = &t.Key[i]
					} else {
						c = &t.Columns[i-nk]
					}
					if v.S, err = canon.FromPostgresText(c.Canon, v.S); err != nil {
						return fmt.Errorf("column %s: %w", c.Name, err)
					}
				}
				if i < nk {
					key[i] = v.S
				} else {
					values[i-nk] = v
				}
			}
			if err := row(key, values); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return r.readPosition(ctx, tx, t, &pos)
	})
	if err != nil {
		return 0, fmt.Errorf("read rows of %s %s: %w", t.Name, FormatRange(KeyNames(t), rg), LockHint(err))
	}
	return pos, nil
}

func (r *Reader) readPosition(ctx context.Context, tx pgx.Tx, t *sink.VerifyTable, pos *source.LSN) error {
	var args []any
	var text *string
	if err := tx.QueryRow(ctx, "SELECT "+r.positionSQL(&args), args...).Scan(&text); err != nil {
		return err
	}
	var err error
	*pos, err = ParseLSN(t.Name.String(), text)
	return err
}

// boundarySQL selects the key of the n-th row after after.
func (r *Reader) boundarySQL(t *sink.VerifyTable, after sink.VerifyKey, n int64) (string, []any, []bool) {
	var args []any
	where := r.rangeWhere(t, sink.VerifyRange{From: after}, &args)
	args = append(args, n-1)
	sel := make([]string, len(t.Key))
	goConv := make([]bool, len(t.Key))
	for i := range t.Key {
		e, ok := r.valueExpr(&t.Key[i])
		sel[i], goConv[i] = e+" AS k"+strconv.Itoa(i), !ok
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM " + quotedTable(t) + where +
		" ORDER BY " + r.keyColumns(t) + " LIMIT 1 OFFSET $" + strconv.Itoa(len(args)), args, goConv
}

// Boundary returns the key of the n-th row after after (nil: from the first
// row) in t's key order, nil when fewer than n rows follow.
func (r *Reader) Boundary(ctx context.Context, t *sink.VerifyTable, after sink.VerifyKey, n int64) (sink.VerifyKey, error) {
	if len(t.Key) == 0 {
		return nil, ErrNoKey
	}
	sql, args, goConv := r.boundarySQL(t, after, n)
	rows, err := r.conn.Query(ctx, sql, append([]any{textResults}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("plan the chunks of %s: %w", t.Name, LockHint(err))
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("plan the chunks of %s: %w", t.Name, LockHint(err))
		}
		return nil, nil
	}
	key := make(sink.VerifyKey, len(t.Key))
	for i, b := range rows.RawValues() {
		key[i] = string(b)
		if goConv[i] {
			if key[i], err = canon.FromPostgresText(t.Key[i].Canon, key[i]); err != nil {
				return nil, fmt.Errorf("plan the chunks of %s: column %s: %w", t.Name, t.Key[i].Name, err)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("plan the chunks of %s: %w", t.Name, LockHint(err))
	}
	return key, nil
}

// FormatRange shows rg over key columns as a condition one can paste into a
// WHERE clause: id > '1000' AND id <= '2000', (a, b) > ('x', '1') AND ….
func FormatRange(key []string, rg sink.VerifyRange) string {
	if rg.Whole() {
		return "whole table"
	}
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = pgquote.Ident(k)
	}
	lhs := strings.Join(cols, ", ")
	if len(cols) > 1 {
		lhs = "(" + lhs + ")"
	}
	var parts []string
	if rg.From != nil {
		parts = append(parts, lhs+" > "+formatKey(rg.From))
	}
	if rg.To != nil {
		parts = append(parts, lhs+" <= "+formatKey(rg.To))
	}
	return strings.Join(parts, " AND ")
}

// formatKey shows a key as SQL literals: '42', ('x', '1').
func formatKey(k sink.VerifyKey) string {
	lits := make([]string, len(k))
	for i, v := range k {
		lits[i] = pgquote.Literal(v)
	}
	if len(lits) == 1 {
		return lits[0]
	}
	return "(" + strings.Join(lits, ", ") + ")"
}

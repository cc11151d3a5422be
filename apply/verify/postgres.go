package verify

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// This file holds all of the comparison's PostgreSQL SQL, for both sides.
//
// A row is hashed as md5 of ROW(c1, c2, …)::text: the record's text form
// quotes every value that needs it and writes NULL as nothing, so two rows
// hash alike exactly when every value prints alike. Both sessions pin what
// printing depends on (sessionSQL); float4/float8 values are hashed in their
// binary form (float8send), which does not depend on extra_float_digits and
// the server version's float printing, money as numeric in the C locale (the
// stored amount, whatever lc_monetary each database has). Key
// values travel between the servers in text and are read back with
// $n::text::<type>, which every type's input function accepts.

// sessionSQL pins the settings the text form of values depends on, and
// xmloption = content like every other pgrelay session on a target (xml
// input then takes the fragments the source may hold); the session only reads.
const sessionSQL = `SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'postgres'; SET TimeZone = 'UTC';
SET extra_float_digits = 3; SET bytea_output = 'hex'; SET search_path = pg_catalog, pg_temp; SET xmloption = content;
SET default_transaction_read_only = on; SET application_name = 'pgrelay verify'; SET client_encoding = 'UTF8'; SET lc_monetary = 'C';
SET lock_timeout = '` + lockTimeout + `'`

// lockTimeout bounds the wait for a table another session holds locked (DDL in
// progress, or a prepared transaction that altered or truncated it, which
// keeps the lock until COMMIT PREPARED).
const lockTimeout = "30s"

// LockHint adds what to do to err when it is a lock timeout: a table verify
// could not read because another session kept it locked.
func LockHint(err error) error {
	if source.IsLockTimeout(err) {
		return fmt.Errorf("%w; the table stayed locked for "+lockTimeout+" (DDL in progress, or a prepared transaction that altered or truncated it: see pg_prepared_xacts); run verify again once it is released", err)
	}
	return err
}

// Type OIDs hashed in another form than their text.
const (
	oidFloat4 = 700
	oidFloat8 = 701
	oidMoney  = 790
)

// postgresSide is what both PostgreSQL sides share.
type postgresSide struct {
	conn  *pgx.Conn
	major int
	// position is the SQL of Summary.Position, evaluated after the rows are
	// read; posArg is its parameter ("" when none).
	position string
	posArg   string
	// toUTF8 hashes rows' text converted to UTF8: the database's encoding is
	// another, and the other side's text of the same values would be UTF8.
	toUTF8 bool
}

// PostgresSource is a PostgreSQL source.
type PostgresSource struct{ postgresSide }

// PostgresTarget is a PostgreSQL target written by pgrelay for slot.
type PostgresTarget struct {
	postgresSide
	slot string
	// hasProgress and hasRelationOID tell what of pgrelay's metadata exists.
	hasProgress, hasRelationOID bool
}

var (
	_ Source = (*PostgresSource)(nil)
	_ Target = (*PostgresTarget)(nil)
)

func newPostgresSide(ctx context.Context, conn *pgx.Conn, side string) (postgresSide, error) {
	if _, err := conn.Exec(ctx, sessionSQL); err != nil {
		return postgresSide{}, fmt.Errorf("%s: verify session settings: %w", side, err)
	}
	var num, enc string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num'), current_setting('server_encoding')").Scan(&num, &enc); err != nil {
		return postgresSide{}, fmt.Errorf("%s: read server version: %w", side, err)
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return postgresSide{}, fmt.Errorf("%s: server_version_num %q: %w", side, num, err)
	}
	return postgresSide{conn: conn, major: n / 10000, toUTF8: enc != "UTF8"}, nil
}

// Major is the server's major version.
func (s *postgresSide) Major() int { return s.major }

// NewPostgresSource prepares conn, a session of its own, for reading the
// source. Its position is the WAL insert position (the replay position on a
// standby).
func NewPostgresSource(ctx context.Context, conn *pgx.Conn) (*PostgresSource, error) {
	s, err := newPostgresSide(ctx, conn, "source")
	if err != nil {
		return nil, err
	}
	s.position = `(CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_insert_lsn() END)::text`
	return &PostgresSource{s}, nil
}

// NewPostgresTarget prepares conn, a session of its own, for reading the
// target. Its position is what pgrelay.progress holds for slot.
func NewPostgresTarget(ctx context.Context, conn *pgx.Conn, slot string) (*PostgresTarget, error) {
	s, err := newPostgresSide(ctx, conn, "target")
	if err != nil {
		return nil, err
	}
	t := &PostgresTarget{postgresSide: s, slot: slot}
	err = conn.QueryRow(ctx, `SELECT to_regclass('pgrelay.progress') IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass('pgrelay.relation') AND attname = 'relation_oid')`).
		Scan(&t.hasProgress, &t.hasRelationOID)
	if err != nil {
		return nil, fmt.Errorf("target: look for pgrelay's metadata: %w", err)
	}
	t.position = "NULL::text"
	if t.hasProgress {
		t.position = "(SELECT p.lsn FROM pgrelay.progress p WHERE p.slot = $%d)::text"
		t.posArg = slot
	}
	return t, nil
}

// HasMetadata reports whether pgrelay's metadata schema exists on the target.
func (t *PostgresTarget) HasMetadata() bool { return t.hasProgress }

// CopyInProgress reports whether the slot's snapshot copy was started and has
// not finished: the target then holds only part of the tables.
func (t *PostgresTarget) CopyInProgress(ctx context.Context) (bool, error) {
	if !t.hasProgress {
		return false, nil
	}
	var done bool
	err := t.conn.QueryRow(ctx, "SELECT snapshot_done FROM pgrelay.seed WHERE slot = $1", t.slot).Scan(&done)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("target: read the seed state of slot %q: %w", t.slot, err)
	}
	return !done, nil
}

// Applied implements Target.
func (t *PostgresTarget) Applied(ctx context.Context) (source.LSN, error) {
	if !t.hasProgress {
		return 0, nil
	}
	var text *string
	err := t.conn.QueryRow(ctx, "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1", t.slot).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("target: read the applied position of slot %q: %w", t.slot, err)
	}
	return parseLSN("target", text)
}

// Locate finds the target table of a source table the way apply names it:
// the dialect's target name; failing that, for a table renamed or moved on
// the source while pgrelay was stopped (its target still has the old name
// until the next change to it), the target table whose stored definition
// has the same source relation OID under this slot. ok is false when neither
// exists.
func (t *PostgresTarget) Locate(ctx context.Context, src TableName, relationOID uint32) (TableName, bool, error) {
	sch, name := schema.Postgres.TargetTable(&schema.Table{Schema: src.Schema, Name: src.Name, RelationID: relationOID})
	want := TableName{Schema: sch, Name: name}
	found, err := t.exists(ctx, want)
	if err != nil || found || !t.hasRelationOID || relationOID == 0 {
		return want, found, err
	}
	var other TableName
	err = t.conn.QueryRow(ctx, `SELECT schema, name FROM pgrelay.relation WHERE slot = $1 AND relation_oid = $2
		ORDER BY updated_at DESC LIMIT 1`, t.slot, relationOID).Scan(&other.Schema, &other.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return want, false, nil
	}
	if err != nil {
		return want, false, fmt.Errorf("target: look up the stored definition of %s: %w", src, err)
	}
	found, err = t.exists(ctx, other)
	if err != nil || !found {
		return want, false, err
	}
	return other, true, nil
}

func (s *postgresSide) exists(ctx context.Context, n TableName) (bool, error) {
	var ok bool
	err := s.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p'))`, n.Schema, n.Name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up table %s: %w", n, err)
	}
	return ok, nil
}

func parseLSN(side string, text *string) (source.LSN, error) {
	if text == nil {
		return 0, nil
	}
	lsn, err := pglogrepl.ParseLSN(*text)
	if err != nil {
		return 0, fmt.Errorf("%s: position %q: %w", side, *text, err)
	}
	return lsn, nil
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

// normalizeCollation makes spellings of byte order the same: libc C and POSIX.
func normalizeCollation(c string) string {
	switch c {
	case "libc POSIX/POSIX", "libc C/C":
		return "libc C"
	}
	return c
}

// Describe implements Side.
func (s *postgresSide) Describe(ctx context.Context, n TableName) (*Shape, error) {
	sh := &Shape{Name: n}
	var oid uint32
	var identity string
	err := s.conn.QueryRow(ctx, `SELECT c.oid, c.relreplident::text, greatest(c.reltuples, 0)::int8, c.relkind = 'p'
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
	rows, err := s.conn.Query(ctx, `SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), a.atttypid, `+collationSQL(s.major)+`
		FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, oid)
	if err != nil {
		return nil, fmt.Errorf("describe %s: columns: %w", n, err)
	}
	var col Column
	var coll *string
	if _, err := pgx.ForEachRow(rows, []any{&col.Name, &col.Type, &col.TypeOID, &coll}, func() error {
		c := col
		if coll != nil {
			c.Collation = normalizeCollation(*coll)
		}
		sh.Columns = append(sh.Columns, c)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("describe %s: columns: %w", n, err)
	}
	// Every valid non-partial index with its columns in order; the replica
	// identity key is the primary key's (DEFAULT) or the chosen index's.
	rows, err = s.conn.Query(ctx, `SELECT i.indisprimary, i.indisreplident,
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

// quotedTable is the FROM item of t: the table alone, or a partitioned table
// with its partitions.
func quotedTable(t *SideTable) string {
	name := pgx.Identifier{t.Name.Schema, t.Name.Name}.Sanitize()
	if t.Partitioned {
		return name
	}
	return "ONLY " + name
}

// filtered adds t's row filter to where (" WHERE …" or "").
func filtered(t *SideTable, where string) string {
	switch {
	case t.Filter == "":
		return where
	case where == "":
		return " WHERE (" + t.Filter + ")"
	default:
		return where + " AND (" + t.Filter + ")"
	}
}

// rowHash is the SQL of one row's hash; toUTF8 hashes the row's text
// converted to UTF8 (a database of another encoding).
func rowHash(t *SideTable, toUTF8 bool) string {
	vals := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		q := pgquote.Ident(c.Name)
		switch c.TypeOID {
		case oidFloat4:
			q = "pg_catalog.float4send(" + q + ")"
		case oidFloat8:
			q = "pg_catalog.float8send(" + q + ")"
		case oidMoney:
			q += "::numeric"
		}
		vals[i] = q
	}
	row := "ROW(" + strings.Join(vals, ", ") + ")::text"
	if toUTF8 {
		row = "pg_catalog.convert_to(" + row + ", 'UTF8')"
	}
	return "pg_catalog.md5(" + row + ")"
}

// keyColumns is the key in the comparison's order, each column with the
// collation the ranges compare in.
func keyColumns(t *SideTable) string {
	cols := make([]string, len(t.Key))
	for i, c := range t.Key {
		cols[i] = pgquote.Ident(c.Name) + collate(t, i)
	}
	return strings.Join(cols, ", ")
}

func collate(t *SideTable, i int) string {
	if t.ByteOrder[i] {
		return ` COLLATE "C"`
	}
	return ""
}

// keyParams appends the key k as parameters and returns their SQL.
func keyParams(t *SideTable, k Key, args *[]any) string {
	ps := make([]string, len(t.Key))
	for i, c := range t.Key {
		*args = append(*args, k[i])
		ps[i] = "$" + strconv.Itoa(len(*args)) + "::text::" + c.Type + collate(t, i)
	}
	return strings.Join(ps, ", ")
}

// rangeWhere is the WHERE clause selecting r ("" for the whole table). Row
// comparisons, (a, b) > ($1, $2), are what a btree index on (a, b) serves.
func rangeWhere(t *SideTable, r Range, args *[]any) string {
	if r.Whole() {
		return filtered(t, "")
	}
	var conds []string
	key := "(" + keyColumns(t) + ")"
	if r.From != nil {
		conds = append(conds, key+" > ("+keyParams(t, r.From, args)+")")
	}
	if r.To != nil {
		conds = append(conds, key+" <= ("+keyParams(t, r.To, args)+")")
	}
	return filtered(t, " WHERE "+strings.Join(conds, " AND "))
}

// keysWhere is the WHERE clause selecting the rows with the given keys.
func keysWhere(t *SideTable, keys []Key, args *[]any) string {
	cols := make([]string, len(t.Key))
	vals := make([]string, len(t.Key))
	arrays := make([]string, len(t.Key))
	for i, c := range t.Key {
		col := make([]string, len(keys))
		for j, k := range keys {
			col[j] = k[i]
		}
		*args = append(*args, col)
		cols[i] = pgquote.Ident(c.Name)
		vals[i] = "u.c" + strconv.Itoa(i) + "::" + c.Type
		arrays[i] = "$" + strconv.Itoa(len(*args)) + "::text[]"
	}
	aliases := make([]string, len(t.Key))
	for i := range aliases {
		aliases[i] = "c" + strconv.Itoa(i)
	}
	return filtered(t, " WHERE ("+strings.Join(cols, ", ")+") IN (SELECT "+strings.Join(vals, ", ")+
		" FROM unnest("+strings.Join(arrays, ", ")+") AS u("+strings.Join(aliases, ", ")+"))")
}

// positionSQL is the side's position expression, its parameter appended.
func (s *postgresSide) positionSQL(args *[]any) string {
	if s.posArg == "" {
		return s.position
	}
	*args = append(*args, s.posArg)
	return fmt.Sprintf(s.position, len(*args))
}

// summarizeSQL is the count and checksum of r: ordered by key for a keyed
// table, the sums of the two halves of every row's md5 for a keyless one.
func (s *postgresSide) summarizeSQL(t *SideTable, r Range) (string, []any) {
	var args []any
	if len(t.Key) == 0 {
		where := rangeWhere(t, Range{}, &args)
		return "SELECT count(*), coalesce(sum(('x' || substr(h, 1, 16))::bit(64)::int8)::text || ' ' || sum(('x' || substr(h, 17, 16))::bit(64)::int8)::text, ''), " +
			s.positionSQL(&args) + " FROM (SELECT " + rowHash(t, s.toUTF8) + " AS h FROM " + quotedTable(t) + where + ") r", args
	}
	where := rangeWhere(t, r, &args)
	return "SELECT count(*), coalesce(pg_catalog.md5(string_agg(" + rowHash(t, s.toUTF8) + ", '' ORDER BY " + keyColumns(t) + ")), ''), " +
		s.positionSQL(&args) + " FROM " + quotedTable(t) + where, args
}

// Summarize implements Side. The position is read in the same statement,
// after the rows: on the source the WAL position then, on the target the
// progress row of the statement's snapshot.
func (s *postgresSide) Summarize(ctx context.Context, t *SideTable, r Range) (Summary, error) {
	if len(t.Key) == 0 && !r.Whole() {
		return Summary{}, errNoKey
	}
	sql, args := s.summarizeSQL(t, r)
	var sum Summary
	var pos *string
	if err := s.conn.QueryRow(ctx, sql, args...).Scan(&sum.Rows, &sum.Checksum, &pos); err != nil {
		return Summary{}, fmt.Errorf("checksum %s %s: %w", t.Name, FormatRange(keyNames(t), r), LockHint(err))
	}
	var err error
	sum.Position, err = parseLSN(t.Name.String(), pos)
	return sum, err
}

func keyNames(t *SideTable) []string {
	names := make([]string, len(t.Key))
	for i, c := range t.Key {
		names[i] = c.Name
	}
	return names
}

// keyTexts selects the key columns' text. The outputs are named k0, k1, …:
// an output named like a column would be what ORDER BY "id" sorts by, in
// text order.
func keyTexts(t *SideTable) string {
	sel := make([]string, len(t.Key))
	for i, c := range t.Key {
		sel[i] = pgquote.Ident(c.Name) + "::text AS k" + strconv.Itoa(i)
	}
	return strings.Join(sel, ", ")
}

// rowsSQL lists r's keys (as text) and row hashes in key order, or those of
// keys; toUTF8 as for rowHash.
func rowsSQL(t *SideTable, r Range, keys []Key, toUTF8 bool) (string, []any) {
	var args []any
	where := ""
	if keys != nil {
		where = keysWhere(t, keys, &args)
	} else {
		where = rangeWhere(t, r, &args)
	}
	return "SELECT " + keyTexts(t) + ", " + rowHash(t, toUTF8) + " FROM " + quotedTable(t) + where + " ORDER BY " + keyColumns(t), args
}

// Rows implements Side, in a repeatable read transaction that reads the
// position after the rows.
func (s *postgresSide) Rows(ctx context.Context, t *SideTable, r Range, keys []Key) (RowSet, error) {
	if len(t.Key) == 0 {
		return RowSet{}, errNoKey
	}
	set := RowSet{Hashes: map[string]string{}}
	if keys != nil && len(keys) == 0 {
		set.Keys = []string{}
	}
	err := pgx.BeginTxFunc(ctx, s.conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		sql, args := rowsSQL(t, r, keys, s.toUTF8)
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		vals := make([]string, len(t.Key)+1)
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if _, err := pgx.ForEachRow(rows, dest, func() error {
			k := Key(vals[:len(t.Key)]).joined()
			set.Keys = append(set.Keys, k)
			set.Hashes[k] = vals[len(t.Key)]
			return nil
		}); err != nil {
			return err
		}
		var args2 []any
		var pos *string
		if err := tx.QueryRow(ctx, "SELECT "+s.positionSQL(&args2), args2...).Scan(&pos); err != nil {
			return err
		}
		set.Position, err = parseLSN(t.Name.String(), pos)
		return err
	})
	if err != nil {
		return RowSet{}, fmt.Errorf("read rows of %s %s: %w", t.Name, FormatRange(keyNames(t), r), LockHint(err))
	}
	return set, nil
}

// boundarySQL selects the key of the n-th row after after.
func boundarySQL(t *SideTable, after Key, n int64) (string, []any) {
	var args []any
	where := rangeWhere(t, Range{From: after}, &args)
	args = append(args, n-1)
	return "SELECT " + keyTexts(t) + " FROM " + quotedTable(t) + where +
		" ORDER BY " + keyColumns(t) + " LIMIT 1 OFFSET $" + strconv.Itoa(len(args)), args
}

// Boundary implements Source.
func (s *PostgresSource) Boundary(ctx context.Context, t *SideTable, after Key, n int64) (Key, error) {
	if len(t.Key) == 0 {
		return nil, errNoKey
	}
	sql, args := boundarySQL(t, after, n)
	vals := make([]string, len(t.Key))
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	err := s.conn.QueryRow(ctx, sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("source: plan the chunks of %s: %w", t.Name, LockHint(err))
	}
	return Key(vals), nil
}

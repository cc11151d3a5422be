package integration

// verify against a MariaDB target, through a sink.VerifySession written here
// as sink/mysql would: the comparison of apply/verify, unchanged, finds a
// PostgreSQL source and a MariaDB table of DESIGN.md's mapping equal, and
// names the rows that differ.

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/apply/verify"
	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// myVerifySession reads a MariaDB database for verify: columns from
// information_schema, rows in key order with their values through
// canon.FromMySQL, key values bound through canon.MySQLArg. It has no
// pgrelay metadata.
type myVerifySession struct {
	db       *sql.DB
	database string
}

var _ sink.VerifySession = (*myVerifySession)(nil)

func myQuote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

func (m *myVerifySession) Describe(ctx context.Context, n sink.VerifyName) (*sink.VerifyShape, error) {
	rows, err := m.db.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_TYPE, COALESCE(COLLATION_NAME, ''), DATA_TYPE
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, n.Schema, n.Name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	sh := &sink.VerifyShape{Name: n, Identity: 'd'}
	for rows.Next() {
		var c sink.VerifyColumn
		var coll, dataType string
		if err := rows.Scan(&c.Name, &c.Type, &coll, &dataType); err != nil {
			return nil, err
		}
		switch {
		case strings.HasSuffix(coll, "_bin"):
			c.Collation = "libc C" // binary collations order by code point: byte order
		case coll != "":
			c.Collation = "mysql " + coll
		}
		// A text column orders its values as text, whatever the source type
		// it holds; the source's Type decides the form (Canon left unknown).
		switch dataType {
		case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
			c.TextOrder = true
		}
		sh.Columns = append(sh.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(sh.Columns) == 0 {
		return nil, nil
	}
	var key []string
	krows, err := m.db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX`, n.Schema, n.Name)
	if err != nil {
		return nil, err
	}
	defer krows.Close()
	for krows.Next() {
		var k string
		if err := krows.Scan(&k); err != nil {
			return nil, err
		}
		key = append(key, k)
	}
	sh.Key = key
	sh.Indexes = [][]string{key}
	return sh, krows.Err()
}

// selectExpr reads a column: FLOAT as DOUBLE (its text has 6 digits only).
func selectExpr(c *sink.VerifyColumn) string {
	if strings.HasPrefix(c.Type, "float") {
		return "CAST(" + myQuote(c.Name) + " AS DOUBLE)"
	}
	return myQuote(c.Name)
}

func (m *myVerifySession) Rows(ctx context.Context, t *sink.VerifyTable, r sink.VerifyRange, keys []sink.VerifyKey, row func(key []string, values []canon.Value) error) (source.LSN, error) {
	if keys != nil && len(keys) == 0 {
		return 0, nil
	}
	var sel, keyCols []string
	for i := range t.Key {
		sel = append(sel, selectExpr(&t.Key[i]))
		keyCols = append(keyCols, myQuote(t.Key[i].Name))
	}
	for i := range t.Columns {
		sel = append(sel, selectExpr(&t.Columns[i]))
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + myQuote(t.Name.Schema) + "." + myQuote(t.Name.Name)
	var args []any
	bind := func(k sink.VerifyKey) (string, error) {
		ps := make([]string, len(k))
		for i, v := range k {
			a, err := canon.MySQLArg(t.Key[i].Canon, v)
			if err != nil {
				return "", err
			}
			args = append(args, a)
			ps[i] = "?"
		}
		return "(" + strings.Join(ps, ", ") + ")", nil
	}
	lhs := "(" + strings.Join(keyCols, ", ") + ")"
	var conds []string
	switch {
	case keys != nil:
		var list []string
		for _, k := range keys {
			p, err := bind(k)
			if err != nil {
				return 0, err
			}
			list = append(list, p)
		}
		conds = append(conds, lhs+" IN ("+strings.Join(list, ", ")+")")
	default:
		if r.From != nil {
			p, err := bind(r.From)
			if err != nil {
				return 0, err
			}
			conds = append(conds, lhs+" > "+p)
		}
		if r.To != nil {
			p, err := bind(r.To)
			if err != nil {
				return 0, err
			}
			conds = append(conds, lhs+" <= "+p)
		}
	}
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	if len(keyCols) > 0 {
		q += " ORDER BY " + strings.Join(keyCols, ", ")
	}
	rows, err := m.db.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, err
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
			return 0, err
		}
		for i, v := range vals {
			var c *sink.VerifyColumn
			if i < nk {
				c = &t.Key[i]
			} else {
				c = &t.Columns[i-nk]
			}
			cv, err := canon.FromMySQL(c.Canon, v)
			if err != nil {
				return 0, errors.New("column " + c.Name + ": " + err.Error())
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
	return 0, rows.Err()
}

func (m *myVerifySession) Applied(context.Context) (source.LSN, error)  { return 0, nil }
func (m *myVerifySession) HasMetadata() bool                            { return false }
func (m *myVerifySession) CopyInProgress(context.Context) (bool, error) { return false, nil }
func (m *myVerifySession) Close(context.Context) error                  { return nil }
func (m *myVerifySession) Locate(_ context.Context, src sink.VerifyName, _ uint32) (sink.VerifyName, bool, error) {
	n := sink.VerifyName{Schema: src.Schema, Name: src.Name}
	if n.Schema == "public" {
		n.Schema = m.database
	}
	return n, true, nil
}

// TestVerifyMariaDBTarget: verify.Compare with a PostgreSQL source and a
// MariaDB target holding the same rows in DESIGN.md's mapping reports them
// equal, keyed (int key, and a text key whose PostgreSQL collation differs
// from utf8mb4_nopad_bin, compared in byte order), and keyless; a value
// changed, a row deleted and a row added on MariaDB are named.
func TestVerifyMariaDBTarget(t *testing.T) {
	major := harness.Majors()[len(harness.Majors())-1]
	pg := harness.Postgres(t, major)
	my := harness.MariaDB(t)
	var pgCols, pgVals, myCols, myVals, names []string
	for _, c := range myCases {
		pgCols = append(pgCols, c.name+" "+c.pgType)
		pgVals = append(pgVals, c.pgVal)
		coll := ""
		if strings.Contains(c.myType, "CHAR") || strings.Contains(c.myType, "TEXT") {
			coll = " CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"
		}
		myCols = append(myCols, myQuote(c.name)+" "+c.myType+coll)
		myVals = append(myVals, c.myVal)
		names = append(names, c.name)
	}
	pg.Exec(t, "CREATE TYPE canon_mood AS ENUM ('sad', 'ok'); CREATE TABLE m (id int PRIMARY KEY, "+strings.Join(pgCols, ", ")+")")
	pg.Exec(t, "INSERT INTO m SELECT i, "+strings.Join(pgVals, ", ")+" FROM generate_series(1, 1000) i")
	my.Exec(t, "CREATE TABLE m (id INT PRIMARY KEY, "+strings.Join(myCols, ", ")+") ENGINE=InnoDB")
	my.Exec(t, "INSERT INTO m SELECT seq, "+strings.Join(myVals, ", ")+" FROM seq_1_to_1000")
	// Text keys that sort one way in byte order and another in most
	// collations; 'a' and 'a ' are two rows on both (no-pad).
	collation := `"C"`
	if pg.QueryString(t, "SELECT count(*) FROM pg_collation WHERE collname = 'und-x-icu'") == "1" {
		collation = `"und-x-icu"`
	}
	pg.Exec(t, `CREATE TABLE k (k text COLLATE `+collation+` PRIMARY KEY, v int);
		INSERT INTO k SELECT chr(65 + i % 26 + 32 * (i / 26 % 2)) || i, i FROM generate_series(1, 300) i;
		INSERT INTO k VALUES ('a', 1), ('a ', 2), ('é', 3), ('E', 4)`)
	my.Exec(t, "CREATE TABLE k (k VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin PRIMARY KEY, v INT)")
	my.Exec(t, "INSERT INTO k SELECT CONCAT(CHAR(65 + seq % 26 + 32 * (seq DIV 26 % 2)), seq), seq FROM seq_1_to_300")
	my.Exec(t, "INSERT INTO k VALUES ('a', 1), ('a ', 2), ('é', 3), ('E', 4)")
	pg.Exec(t, "CREATE TABLE nk (a int, n numeric, s text); ALTER TABLE nk REPLICA IDENTITY FULL; INSERT INTO nk SELECT i % 7, i / 8.0, 'x' FROM generate_series(1, 100) i")
	my.Exec(t, "CREATE TABLE nk (a INT, n DECIMAL(65,30), s LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin); INSERT INTO nk SELECT seq % 7, seq / 8, 'x' FROM seq_1_to_100")

	ctx := e2eCtx(t, 3*time.Minute)
	srcSide, err := verify.NewPostgresSource(ctx, pg.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	tgt := verify.NewTarget(&myVerifySession{db: my.Open(t), database: my.DB})
	tables := []verify.Table{
		{Source: verify.TableName{Schema: "public", Name: "m"}, Target: verify.TableName{Schema: my.DB, Name: "m"}, Columns: append([]string{"id"}, names...)},
		{Source: verify.TableName{Schema: "public", Name: "k"}, Target: verify.TableName{Schema: my.DB, Name: "k"}, Columns: []string{"k", "v"}},
		{Source: verify.TableName{Schema: "public", Name: "nk"}, Target: verify.TableName{Schema: my.DB, Name: "nk"}, Columns: []string{"a", "n", "s"}},
	}
	cfg := verify.Config{ChunkRows: 100, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	rep, err := verify.Compare(ctx, cfg, srcSide, tgt, tables)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range rep.Tables {
		if !tr.Equal() || tr.SourceRows != tr.TargetRows || tr.SourceRows == 0 {
			t.Errorf("%s: equal %v, rows %d/%d, differences %+v", tr.Table, tr.Equal(), tr.SourceRows, tr.TargetRows, tr.Differences)
		}
	}
	if k := rep.Tables[1]; k.ByteOrder != (collation != `"C"`) || k.Chunks < 3 {
		t.Errorf("text key in collation %s: byte order %v, %d chunks; want byte order only for ICU, several chunks", collation, k.ByteOrder, k.Chunks)
	}

	my.Exec(t, "UPDATE m SET tz = '2024-02-29 07:04:56.789013' WHERE id = 250")
	my.Exec(t, "UPDATE m SET an = '[1.5, 2]' WHERE id = 900") // MariaDB keeps JSON numbers as written
	my.Exec(t, "DELETE FROM m WHERE id = 42")
	my.Exec(t, "INSERT INTO k VALUES ('A ', 5)")
	my.Exec(t, "UPDATE k SET v = -v WHERE k = 'é'")
	my.Exec(t, "UPDATE nk SET s = 'X' WHERE a = 3 LIMIT 1")
	rep, err = verify.Compare(ctx, cfg, srcSide, tgt, tables)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, tr := range rep.Tables {
		for _, d := range tr.Differences {
			for kind, keys := range map[string][]verify.Key{"missing": d.MissingKeys, "extra": d.ExtraKeys, "changed": d.ChangedKeys} {
				for _, k := range keys {
					got[tr.Table.Name] = append(got[tr.Table.Name], kind+" "+verify.FormatKey(k))
				}
			}
			if len(tr.Key) == 0 {
				got[tr.Table.Name] = append(got[tr.Table.Name], "whole table")
			}
		}
		slices.Sort(got[tr.Table.Name])
	}
	want := map[string][]string{
		"m":  {"changed 250", "changed 900", "missing 42"},
		"k":  {"changed é", "extra A "},
		"nk": {"whole table"},
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%s: differences %q, want %q", name, got[name], w)
		}
	}
}

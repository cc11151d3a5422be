package integration

// Tests of verify's canonical forms (schema/canon) against real servers: the
// forms PostgreSQL computes in SQL are the ones Go computes from the same
// values' text; a checksum on the server is the checksum of the rows read;
// the comparison gives the same answers whether each side checksums on its
// server or reads its rows; a MariaDB table of DESIGN.md's mapped types reads
// back in the source values' forms.

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/apply/verify"
	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/internal/pgverify"
	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/postgres"
)

// canonEdgeSQL is a table of values whose forms need care.
const canonEdgeSQL = `CREATE TYPE canon_mood AS ENUM ('sad', 'ok');
CREATE DOMAIN canon_amount AS numeric(12,4);
CREATE TABLE canon_edge (
    id    int PRIMARY KEY,
    n     numeric,
    n4    canon_amount,
    m     money,
    f8    float8,
    f4    real,
    c     char(5),
    cs    char(5)[],
    j     json,
    jb    jsonb,
    na    numeric[],
    ts    timestamptz,
    t     time,
    mood  canon_mood,
    b     bool,
    bs    bool[],
    raw   bytea
);
INSERT INTO canon_edge VALUES
 (1, 1.50, 1.5, 1.50, 0.1, 0.1, 'ab', '{ab,"c  d"}', '{"b": 1, "a": [1.50, 1e2, -0], "a": 3}', '{"é": 1, "z": "\u0001"}', '{1.50,NaN,2}',
     '2024-02-29 12:34:56.789012+05:30', '12:00:00.100', 'ok', true, '{t,f,NULL}', '\x00ff'),
 (2, -0.000, 0, 0, '-0', '-0', '', '{}', '[]', '"x"', '{{1.0,2},{3,NULL}}', '-infinity', '24:00:00', 'sad', false, '{}', '\x'),
 (3, 'NaN', NULL, NULL, 'NaN', 'Infinity', NULL, NULL, 'null', 'null', NULL, 'infinity', NULL, NULL, NULL, NULL, NULL),
 (4, 12345678901234567890.1234567890, 99999999.9999, -12.34, 1e300, 1e-37, '  x', '{NULL}', '{"k":{"y":1,"x":[{}]}}', '[1, "two", {"three": 3.0}]', '[0:1]={1,2}',
     '4713-01-01 00:00:00+00 BC', '00:00:00.000001', 'ok', true, '{{t},{f}}', '\x5c4e'),
 (5, 1e-20, 0.0001, 0.01, 5e-324, 1.17549435e-38, 'abcde', '{"  "}', '{"a":"\ud83d\udc18 \/"}', '{"a": 1.5e-3}', '{-0.0}',
     '1999-12-31 23:59:59.999+00', '23:59:59.999999', 'sad', false, '{t}', '\x00');
INSERT INTO canon_edge (id, f8, f4)
SELECT 100 + i, (random() - 0.5) * 10 ^ (random() * 600 - 300), ((random() - 0.5) * 10 ^ (random() * 70 - 35))::real
FROM generate_series(1, 2000) i;
INSERT INTO canon_edge (id, f8, f4, n) SELECT 3000 + i, i / 7.0, i / 7.0, i / 7.0 FROM generate_series(1, 500) i;`

// TestVerifyCanonicalForms: on each major, the canonical forms PostgreSQL
// prints (canon.PostgresExpr) are what canon.FromPostgresText makes of the
// same values' own text output, and the server's checksum of a range is
// canon.Checksum over its rows, for the edge values above and every row of
// the e2e types workload.
func TestVerifyCanonicalForms(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(e2eMajorName(major), func(t *testing.T) {
			t.Parallel()
			testVerifyCanonicalForms(t, major)
		})
	}
}

func testVerifyCanonicalForms(t *testing.T, major int) {
	pg := harness.Postgres(t, major)
	pg.Exec(t, e2eWorkload(t, "types_schema.sql"))
	pg.Exec(t, canonEdgeSQL)
	ctx := e2eCtx(t, 3*time.Minute)
	r, err := pgverify.NewReader(ctx, pg.Conn(t), "source")
	if err != nil {
		t.Fatal(err)
	}
	raw := pg.Conn(t)
	if _, err := raw.Exec(ctx, canon.PostgresSettings); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"canon_edge", "types_all"} {
		sh, err := r.Describe(ctx, sink.VerifyName{Schema: "public", Name: name})
		if err != nil || sh == nil {
			t.Fatalf("describe %s: %v, %v", name, sh, err)
		}
		st := &sink.VerifyTable{Name: sh.Name, Columns: sh.Columns, Key: []sink.VerifyColumn{*sh.Column("id")}, ByteOrder: []bool{false}}
		// Every value's server form is Go's form of its text output.
		byKey := map[string][]canon.Value{}
		if _, err := r.Rows(ctx, st, sink.VerifyRange{}, nil, func(key []string, values []canon.Value) error {
			byKey[key[0]] = slices.Clone(values)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		cols := make([]string, len(sh.Columns))
		for i, c := range sh.Columns {
			cols[i] = pgx.Identifier{c.Name}.Sanitize()
		}
		rows, err := raw.Query(ctx, "SELECT id::text, "+strings.Join(cols, ", ")+" FROM public."+name, pgx.QueryResultFormats{pgx.TextFormatCode})
		if err != nil {
			t.Fatal(err)
		}
		checked, bad := 0, 0
		for rows.Next() {
			vals := rows.RawValues()
			id := string(vals[0])
			server := byKey[id]
			for i, c := range sh.Columns {
				if vals[i+1] == nil || c.Canon.Kind == canon.KindMoney {
					continue // money's amount is read on the server only
				}
				text := string(vals[i+1])
				got, err := canon.FromPostgresText(c.Canon, text)
				checked++
				if err != nil || !server[i].Valid || got != server[i].S {
					if bad++; bad <= 20 {
						t.Errorf("%s id %s column %s (%s): PostgreSQL prints %q, its form on the server is %v, in Go %q (%v)", name, id, c.Name, c.Canon, text, server[i], got, err)
					}
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d values of %d rows checked", name, checked, len(byKey))
		// The server's checksum of every range is the checksum of its rows.
		for _, rg := range []sink.VerifyRange{{}, {To: sink.VerifyKey{"3"}}, {From: sink.VerifyKey{"3"}, To: sink.VerifyKey{"600"}}, {From: sink.VerifyKey{"1000"}}} {
			if !r.CanChecksum(st) {
				t.Fatalf("%s: PostgreSQL %d cannot checksum on the server", name, major)
			}
			server, err := r.Checksum(ctx, st, rg)
			if err != nil {
				t.Fatal(err)
			}
			var c canon.Checksum
			if _, err := r.Rows(ctx, st, rg, nil, func(_ []string, values []canon.Value) error { c.Add(values); return nil }); err != nil {
				t.Fatal(err)
			}
			if server.Rows != c.Rows || server.Checksum != c.String() || c.Rows == 0 {
				t.Errorf("%s %s: server checksum %d rows %q, rows read %d %q", name, pgverify.FormatRange([]string{"id"}, rg), server.Rows, server.Checksum, c.Rows, c.String())
			}
		}
	}
}

// withoutChecksums hides a reader's server checksums: its side reads and
// hashes rows.
type withoutChecksums struct{ sink.VerifySession }

// TestVerifyCanonicalComparison: values equal in canonical form are equal
// across two PostgreSQL databases (numeric 1.5 and 1.50, a json document
// with its keys in another order, -0 and 0, char padding), values that are
// not are named (text case and trailing space, a float's last bit, a jsonb
// number's scale); and the comparison
// gives the same answer whether each side checksums on its server or reads
// its rows, keyed and keyless.
func TestVerifyCanonicalComparison(t *testing.T) {
	major := harness.Majors()[len(harness.Majors())-1]
	src, tgt := harness.Postgres(t, major), harness.Postgres(t, major)
	const schemaSQL = `CREATE TABLE vc (id int PRIMARY KEY, n numeric, c char(4), j json, jb jsonb, f float8, s text);
		CREATE TABLE vc_full (a int, n numeric, s text);
		ALTER TABLE vc_full REPLICA IDENTITY FULL`
	src.Exec(t, schemaSQL)
	tgt.Exec(t, schemaSQL)
	src.Exec(t, `INSERT INTO vc SELECT i, i / 4.0, 'c' || i % 10, '{"a": 1, "b": [1, 2]}', '{"x": 1.5}', CASE WHEN i = 20001 THEN 0 ELSE i / 3.0 END, 'row ' || i FROM generate_series(1, 30000) i;
		INSERT INTO vc_full SELECT i % 100, 1.50, 's' FROM generate_series(1, 1000) i`)
	tgt.Exec(t, `INSERT INTO vc SELECT i, (i / 4.0)::numeric(20,10), 'c' || i % 10, '{"b":[1,2],"a":1}', '{"x": 1.5}', CASE WHEN i = 20001 THEN 0 ELSE i / 3.0 END, 'row ' || i FROM generate_series(1, 30000) i;
		INSERT INTO vc_full SELECT i % 100, 1.5, 's' FROM generate_series(1, 1000) i;
		UPDATE vc SET s = 'ROW 7' WHERE id = 7;
		UPDATE vc SET s = 'row 12 ' WHERE id = 12;
		UPDATE vc SET f = '-0' WHERE id = 20001;
		UPDATE vc SET f = f * (1 + 1e-15) WHERE id = 20002;
		UPDATE vc SET jb = '{"x": 1.50}' WHERE id = 29999;
		UPDATE vc SET c = 'c5  ' WHERE id = 15`) // char padding: not a difference
	ctx := e2eCtx(t, 3*time.Minute)
	srcSide, err := verify.NewPostgresSource(ctx, src.Conn(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := postgres.New(ctx, tgt.URL(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.WithoutCancel(ctx))
	sess, err := s.OpenVerify(ctx, "verify_canon")
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.WithoutCancel(ctx))
	tables := []verify.Table{
		{Source: verify.TableName{Schema: "public", Name: "vc"}, Target: verify.TableName{Schema: "public", Name: "vc"}, Columns: []string{"id", "n", "c", "j", "jb", "f", "s"}},
		{Source: verify.TableName{Schema: "public", Name: "vc_full"}, Target: verify.TableName{Schema: "public", Name: "vc_full"}, Columns: []string{"a", "n", "s"}},
	}
	cfg := verify.Config{ChunkRows: 10_000, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	summary := func(rep *verify.Report) string {
		var out []string
		for _, tr := range rep.Tables {
			line := tr.Table.Name + " chunks " + strconv.Itoa(tr.Chunks) + " rows " + strconv.FormatInt(tr.SourceRows, 10) + "/" + strconv.FormatInt(tr.TargetRows, 10)
			for _, d := range tr.Differences {
				line += " | " + verify.FormatRange(tr.Key, d.Range) + " changed"
				for _, k := range d.ChangedKeys {
					line += " " + verify.FormatKey(k)
				}
				line += " missing " + strconv.Itoa(d.MissingOnTarget) + " extra " + strconv.Itoa(d.ExtraOnTarget)
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	fast, err := verify.Compare(ctx, cfg, srcSide, verify.NewTarget(sess), tables)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := verify.Compare(ctx, cfg, srcSide, verify.NewTarget(withoutChecksums{sess}), tables)
	if err != nil {
		t.Fatal(err)
	}
	want := `vc chunks 4 rows 30000/30000 | "id" <= '10000' changed 7 12 missing 0 extra 0 | "id" > '20000' AND "id" <= '30000' changed 20002 29999 missing 0 extra 0
vc_full chunks 1 rows 1000/1000`
	if got := summary(fast); got != want {
		t.Errorf("server checksums on both sides:\n%s\nwant\n%s", got, want)
	}
	if got := summary(slow); got != want {
		t.Errorf("target rows read and hashed:\n%s\nwant\n%s", got, want)
	}
	// A real difference in the keyless table is found both ways.
	tgt.Exec(t, "UPDATE vc_full SET n = 1.51 WHERE ctid = (SELECT min(ctid) FROM vc_full)")
	for _, tgtSide := range []verify.Target{verify.NewTarget(sess), verify.NewTarget(withoutChecksums{sess})} {
		rep, err := verify.Compare(ctx, cfg, srcSide, tgtSide, tables[1:])
		if err != nil {
			t.Fatal(err)
		}
		if rep.Equal() || len(rep.Tables[0].Differences) != 1 {
			t.Errorf("keyless table with a changed row: %s", summary(rep))
		}
	}
}

// myCase is one mapped type: a PostgreSQL column and value, and the MariaDB
// column and value DESIGN.md's mapping stores for it.
type myCase struct {
	name          string
	pgType, pgVal string
	myType, myVal string
}

var myCases = []myCase{
	{"b", "bool", "true", "TINYINT(1)", "1"},
	{"b0", "bool", "false", "TINYINT(1)", "0"},
	{"i2", "int2", "-32768", "SMALLINT", "-32768"},
	{"i8", "int8", "-9223372036854775808", "BIGINT", "-9223372036854775808"},
	{"f8", "float8", "0.1", "DOUBLE", "0.1"},
	{"f8e", "float8", "1e300", "DOUBLE", "1e300"},
	{"f8t", "float8", "5e-324", "DOUBLE", "5e-324"},
	{"f8z", "float8", "'-0'", "DOUBLE", "-0e0"},
	{"f8s", "float8", "1/3.0", "DOUBLE", "1/3e0"},
	{"f4", "real", "0.1", "FLOAT", "0.1"},
	{"f4m", "real", "1.17549435e-38", "FLOAT", "1.17549435e-38"},
	{"f4b", "real", "123456.7", "FLOAT", "123456.7"},
	{"f4p", "real", "3.14159274", "FLOAT", "3.14159274"},
	{"n", "numeric", "1.5", "DECIMAL(65,30)", "1.5"},
	{"nb", "numeric", "12345678901234567890.123456789012345678901234567890", "DECIMAL(65,30)", "12345678901234567890.123456789012345678901234567890"},
	{"np", "numeric(20,6)", "-99999999999999.999999", "DECIMAL(20,6)", "-99999999999999.999999"},
	{"nz", "numeric(10,2)", "0", "DECIMAL(10,2)", "0"},
	{"t", "text", "E'ünïcødé 🐘 \\t tab \\\\ \"q\" '", "LONGTEXT", "'ünïcødé 🐘 \\t tab \\\\ \"q\" '"},
	{"tcase", "text", "'Aa '", "LONGTEXT", "'Aa '"},
	{"vc", "varchar(10)", "'x'", "VARCHAR(10)", "'x'"},
	{"c", "char(5)", "'ab'", "CHAR(5)", "'ab'"},
	{"ce", "char(3)", "''", "CHAR(3)", "''"},
	{"raw", "bytea", "'\\x00ff5c0a00'", "LONGBLOB", "x'00ff5c0a00'"},
	{"rawe", "bytea", "'\\x'", "LONGBLOB", "x''"},
	{"d", "date", "'2024-02-29'", "DATE", "'2024-02-29'"},
	{"tm", "time(6)", "'12:34:56.1'", "TIME(6)", "'12:34:56.1'"},
	{"tm0", "time", "'23:59:59.999999'", "TIME(6)", "'23:59:59.999999'"},
	{"ts", "timestamp(3)", "'1999-12-31 23:59:59.999'", "DATETIME(6)", "'1999-12-31 23:59:59.999'"},
	{"tz", "timestamptz", "'2024-02-29 12:34:56.789012+05:30'", "DATETIME(6)", "'2024-02-29 07:04:56.789012'"},
	{"tz0", "timestamptz", "'2000-01-01 00:00:00+00'", "DATETIME(6)", "'2000-01-01 00:00:00'"},
	{"u", "uuid", "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'", "CHAR(36)", "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"},
	{"j", "jsonb", `'{"b": [1, 2.50], "a": "é", "c": {"y": null, "x": true}}'`, "JSON", `'{"b": [1, 2.50], "a": "é", "c": {"y": null, "x": true}}'`},
	{"jj", "json", `'{"b":1,  "a":[1e2]}'`, "JSON", `'{"b":1,  "a":[1e2]}'`},
	{"ai", "int[]", "'{{1,2},{3,NULL}}'", "JSON", "'[[1,2],[3,null]]'"},
	{"at", "text[]", `ARRAY['a b', '', NULL, 'NULL', 'q"']`, "JSON", `'["a b", "", null, "NULL", "q\\""]'`},
	{"an", "numeric[]", "'{1.50,2}'", "JSON", "'[1.50, 2]'"},
	{"ab", "bool[]", "'{t,f}'", "JSON", "'[true, false]'"},
	{"inet", "inet", "'10.0.0.1/24'", "VARCHAR(43)", "'10.0.0.1/24'"},
	{"iv", "interval", "'1 year 2 mons 3 days 04:05:06.789'", "VARCHAR(255)", "'1 year 2 mons 3 days 04:05:06.789'"},
	{"mood", "canon_mood", "'ok'", "VARCHAR(255)", "'ok'"},
	// money is kept as the C locale's text (the mapping's "other types").
	{"cash", "money", "'-1234.5'", "LONGTEXT", "'-$1,234.50'"},
	{"cashs", "money[]", "'{1,NULL}'", "JSON", `'["$1.00", null]'`},
}

// TestVerifyMariaDBForms: each mapped MariaDB column type, read back through
// go-sql-driver/mysql in the text protocol, the binary protocol, and with
// parseTime, comes out by canon.FromMySQL in the form PostgreSQL gives the
// source value. FLOAT is read as CAST(c AS DOUBLE) in the text protocol (its
// text has fewer digits than a float4 needs).
func TestVerifyMariaDBForms(t *testing.T) {
	major := harness.Majors()[len(harness.Majors())-1]
	pg := harness.Postgres(t, major)
	my := harness.MariaDB(t)
	var pgCols, pgVals, myCols, myVals []string
	for _, c := range myCases {
		pgCols = append(pgCols, c.name+" "+c.pgType)
		pgVals = append(pgVals, c.pgVal)
		coll := ""
		if strings.Contains(c.myType, "CHAR") || strings.Contains(c.myType, "TEXT") {
			coll = " CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"
		}
		myCols = append(myCols, "`"+c.name+"` "+c.myType+coll)
		myVals = append(myVals, c.myVal)
	}
	pg.Exec(t, "CREATE TYPE canon_mood AS ENUM ('sad', 'ok'); CREATE TABLE m (id int PRIMARY KEY, "+strings.Join(pgCols, ", ")+")")
	pg.Exec(t, "INSERT INTO m VALUES (1, "+strings.Join(pgVals, ", ")+")")
	pg.Exec(t, "INSERT INTO m (id) VALUES (2)")
	my.Exec(t, "SET time_zone = '+00:00'; CREATE TABLE m (id INT PRIMARY KEY, "+strings.Join(myCols, ", ")+") ENGINE=InnoDB")
	my.Exec(t, "INSERT INTO m VALUES (1, "+strings.Join(myVals, ", ")+")")
	my.Exec(t, "INSERT INTO m (id) VALUES (2)")

	ctx := e2eCtx(t, 3*time.Minute)
	r, err := pgverify.NewReader(ctx, pg.Conn(t), "source")
	if err != nil {
		t.Fatal(err)
	}
	sh, err := r.Describe(ctx, sink.VerifyName{Schema: "public", Name: "m"})
	if err != nil || sh == nil {
		t.Fatalf("describe: %v, %v", sh, err)
	}
	st := &sink.VerifyTable{Name: sh.Name, Columns: sh.Columns[1:], Key: sh.Columns[:1], ByteOrder: []bool{false}}
	want := map[string][]canon.Value{}
	if _, err := r.Rows(ctx, st, sink.VerifyRange{}, nil, func(key []string, values []canon.Value) error {
		want[key[0]] = slices.Clone(values)
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	sel := make([]string, len(myCases))
	for i, c := range myCases {
		sel[i] = "`" + c.name + "`"
		if c.myType == "FLOAT" {
			sel[i] = "CAST(`" + c.name + "` AS DOUBLE)"
		}
	}
	query := "SELECT id, " + strings.Join(sel, ", ") + " FROM m"
	binarySel := make([]string, len(myCases))
	for i, c := range myCases {
		binarySel[i] = "`" + c.name + "`" // the binary protocol sends FLOAT as float32
	}
	for _, read := range []struct {
		what, dsn, query string
		args             []any
	}{
		{"text protocol", my.DSN(), query, nil},
		{"binary protocol", my.DSN(), "SELECT id, " + strings.Join(binarySel, ", ") + " FROM m WHERE id > ?", []any{0}},
		{"parseTime", withParam(my.DSN(), "parseTime=true"), query, nil},
	} {
		db, err := sql.Open("mysql", read.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, read.query, read.args...)
		if err != nil {
			t.Fatalf("%s: %v", read.what, err)
		}
		n := 0
		for rows.Next() {
			vals := make([]any, len(myCases)+1)
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			id := strconv.FormatInt(vals[0].(int64), 10)
			n++
			for i, c := range myCases {
				got, err := canon.FromMySQL(st.Columns[i].Canon, vals[i+1])
				if w := want[id][i]; err != nil || got != w {
					t.Errorf("%s: row %s column %s: PostgreSQL %s %s is %v; MariaDB %s %s gave %#v, read as %v (%v)",
						read.what, id, c.name, c.pgType, c.pgVal, w, c.myType, c.myVal, vals[i+1], got, err)
				}
			}
		}
		if err := rows.Err(); err != nil || n != 2 {
			t.Fatalf("%s: %d rows, %v", read.what, n, err)
		}
	}
}

// withParam adds a parameter to a go-sql-driver/mysql DSN.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}

package integration

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
	"github.com/pgrelay/pgrelay/source"
)

// TestSinkMySQLValuesFromPostgres: values in the text form a PostgreSQL
// source's walsender writes them (its session settings, a time zone with a
// 45-minute offset) land on MariaDB meaning the same: each column is read
// back on both sides in a canonical form and compared.
func TestSinkMySQLValuesFromPostgres(t *testing.T) {
	pg := harness.Postgres(t, 15)
	my, s := myTarget(t, mysql.Options{})
	ctx := t.Context()
	type column struct {
		name, pgType string
		values       []string // SQL literals on the source
		pgCanon      string   // a source expression of the column ({}) giving the canonical form
		myCanon      string   // a MySQL expression of the column ({}) giving it
		cmp          string   // how to compare: exact, decimal, float4, float8, time, json
	}
	cols := []column{
		{"i2", "smallint", []string{"-32768", "32767"}, "{}::text", "CAST({} AS CHAR)", "exact"},
		{"i8", "bigint", []string{"-9223372036854775808", "9223372036854775807"}, "{}::text", "CAST({} AS CHAR)", "exact"},
		{"f4", "real", []string{"3.4028235e38", "1.4e-45", "-0", "0.1", "123456.79"}, "{}::text", "CAST({} AS DOUBLE)", "float4"},
		{"f8", "double precision", []string{"1.7976931348623157e308", "5e-324", "0.1", "-1.5e-300", "1e22"}, "{}::text", "CAST({} AS CHAR)", "float8"},
		{"n", "numeric", []string{"0.000000000000000000000000000001", "12345678901234567890123456789012345.12345678901234567890123456789", "-1.50", "1e20", "0"},
			"{}::text", "CAST({} AS CHAR)", "decimal"},
		{"n52", "numeric(5,2)", []string{"999.99", "-0.01", "1"}, "{}::text", "CAST({} AS CHAR)", "decimal"},
		{"t", "text", []string{`E'tab\there ''q'' \\ 🎉 \x01'`, "''", "'a '"}, "{}", "{}", "exact"},
		{"vc", "character varying(10)", []string{"'ünïcödé'", "'x'"}, "{}", "{}", "exact"},
		{"ch", "character(5)", []string{"'ab'", "'abcde'"}, "rtrim({})", "{}", "exact"},
		{"by", "bytea", []string{`'\x00ff5c'`, `'\x'`, "'abc'::bytea"}, "encode({}, 'hex')", "LOWER(HEX({}))", "exact"},
		{"d", "date", []string{"'1000-01-01'", "'9999-12-31'", "'2024-02-29'"}, "{}::text", "CAST({} AS CHAR)", "exact"},
		{"tm", "time", []string{"'00:00:00'", "'23:59:59.999999'", "'12:00:00.5'"}, "to_char('2000-01-01'::date + {}, 'HH24:MI:SS.US')", "TIME_FORMAT({}, '%H:%i:%s.%f')", "exact"},
		{"ts", "timestamp", []string{"'1000-01-01 00:00:00'", "'9999-12-31 23:59:59.999999'", "'2024-05-06 07:08:09.1'"},
			"to_char({}, 'YYYY-MM-DD HH24:MI:SS.US')", "DATE_FORMAT({}, '%Y-%m-%d %H:%i:%s.%f')", "exact"},
		{"tz", "timestamp with time zone", []string{"'2024-05-06 07:08:09.123456+05:30'", "'1999-12-31 23:59:59+14'", "'2024-03-10 02:30:00 America/Los_Angeles'", "'1000-01-02 00:00:00+00'"},
			"to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')", "DATE_FORMAT({}, '%Y-%m-%d %H:%i:%s.%f')", "exact"},
		{"u", "uuid", []string{"'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'"}, "{}::text", "{}", "exact"},
		{"j", "json", []string{`'{"b": 1, "a": [1, 2.50, "x\u00e9"],  "a": null}'`}, "{}::text", "{}", "exact"},
		{"jb", "jsonb", []string{`'{"a": [1, 2.50, "x"], "b": {"c": null}, "d": 1e2}'`}, "{}::text", "{}", "json"},
		{"ia", "integer[]", []string{"'{{1,2},{NULL,4}}'", "'{}'"}, "to_json({})::text", "{}", "json"},
		{"ta", "text[]", []string{`ARRAY['a', 'b c', 'NULL', NULL, 'q"x\y', '', '{,}']`}, "to_json({})::text", "{}", "json"},
		{"na", "numeric[]", []string{"'{1.50,-2,0.000001}'"}, "to_json({})::text", "{}", "json"},
		{"ba", "boolean[]", []string{"'{t,f}'"}, "to_json({})::text", "{}", "json"},
		{"tza", "timestamp with time zone[]", []string{"ARRAY['2024-01-01 00:00:00+00'::timestamptz]"}, "(SELECT json_agg(x::text) FROM unnest({}) x)::text", "{}", "json"},
		{"iv", "interval", []string{"'1 year 2 mons 3 days 04:05:06.7'", "'-1 day'"}, "{}::text", "{}", "exact"},
		{"ip", "inet", []string{"'192.168.0.1/24'", "'::1'"}, "format('%s', {})", "{}", "exact"}, // the output function's form, not the cast's
		{"mac", "macaddr", []string{"'08:00:2b:01:02:03'"}, "{}::text", "{}", "exact"},
		{"bits", "bit varying(8)", []string{"B'1010'"}, "{}::text", "{}", "exact"},
		{"pt", "point", []string{"'(1.5,2)'"}, "{}::text", "{}", "exact"},
	}
	conn := pg.Conn(t)
	// The walsender writes values with the source sessions' settings.
	for k, v := range map[string]string{"DateStyle": "ISO, YMD", "IntervalStyle": "postgres", "extra_float_digits": "3", "TimeZone": "Asia/Kathmandu"} {
		if _, err := conn.Exec(ctx, "SELECT set_config($1, $2, false)", k, v); err != nil {
			t.Fatal(err)
		}
	}
	tb := &schema.Table{RelationID: 17300, Schema: "public", Name: "from_pg", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{{Name: "id", TypeName: "integer", TypeOID: 23, TypeMod: -1, Key: true, NotNull: true, Attnum: 1}}}
	var defs []string
	for _, c := range cols {
		defs = append(defs, c.name+" "+c.pgType)
	}
	pgExec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	pgExec("CREATE TABLE from_pg (id int PRIMARY KEY, " + strings.Join(defs, ", ") + ")")
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c.values))
	}
	for r := range rows {
		var vals []string
		for _, c := range cols {
			v := "NULL"
			if r < len(c.values) {
				v = "(" + c.values[r] + ")::" + c.pgType
			}
			vals = append(vals, v)
		}
		pgExec(fmt.Sprintf("INSERT INTO from_pg VALUES (%d, %s)", r, strings.Join(vals, ", ")))
	}
	for _, c := range cols {
		var oid uint32
		var typmod int32
		var name string
		if err := conn.QueryRow(ctx, `SELECT atttypid, atttypmod, format_type(atttypid, atttypmod) FROM pg_attribute
			WHERE attrelid = 'from_pg'::regclass AND attname = $1`, c.name).Scan(&oid, &typmod, &name); err != nil {
			t.Fatal(err)
		}
		tb.Columns = append(tb.Columns, schema.Column{Name: c.name, TypeName: name, TypeOID: oid, TypeMod: typmod, Attnum: int16(len(tb.Columns) + 1)})
	}
	ensure(t, s, tb)
	// Every value in its text form, as the stream carries it.
	res, err := conn.Query(ctx, "SELECT * FROM from_pg ORDER BY id", pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		t.Fatal(err)
	}
	var changes []*sink.Change
	for res.Next() {
		var tuple source.Tuple
		for _, raw := range res.RawValues() {
			if raw == nil {
				tuple = append(tuple, sinktest.N())
			} else {
				tuple = append(tuple, sinktest.T(string(raw)))
			}
		}
		changes = append(changes, sinktest.Ins(tb, source.LSN(len(changes)+1), tuple))
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, 100, changes...)
	for _, c := range cols {
		for r := range len(c.values) {
			var want string
			if err := conn.QueryRow(ctx, "SELECT ("+strings.ReplaceAll(c.pgCanon, "{}", c.name)+")::text FROM from_pg WHERE id = $1", r).Scan(&want); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			got := my.QueryString(t, "SELECT "+strings.ReplaceAll(c.myCanon, "{}", "`"+c.name+"`")+" FROM from_pg WHERE id = ?", r)
			if !sameCanon(t, c.cmp, want, got) {
				t.Errorf("%s (%s) row %d: source %q, MySQL %q", c.name, c.pgType, r, want, got)
			}
		}
	}
}

// sameCanon compares a source value with the MySQL one in their canonical
// forms.
func sameCanon(t *testing.T, cmp, want, got string) bool {
	t.Helper()
	switch cmp {
	case "decimal":
		a, ok1 := new(big.Rat).SetString(want)
		b, ok2 := new(big.Rat).SetString(got)
		return ok1 && ok2 && a.Cmp(b) == 0
	case "float4":
		a, err1 := strconv.ParseFloat(want, 32)
		b, err2 := strconv.ParseFloat(got, 64)
		return err1 == nil && err2 == nil && float32(a) == float32(b) && (a == 0) == (b == 0)
	case "float8":
		a, err1 := strconv.ParseFloat(want, 64)
		b, err2 := strconv.ParseFloat(got, 64)
		return err1 == nil && err2 == nil && a == b
	case "json":
		var a, b any
		da, db := json.NewDecoder(strings.NewReader(want)), json.NewDecoder(strings.NewReader(got))
		da.UseNumber()
		db.UseNumber()
		if da.Decode(&a) != nil || db.Decode(&b) != nil {
			return false
		}
		return reflect.DeepEqual(normNumbers(a), normNumbers(b))
	case "time":
		a, err1 := time.Parse("2006-01-02 15:04:05.999999", want)
		b, err2 := time.Parse("2006-01-02 15:04:05.999999", got)
		return err1 == nil && err2 == nil && a.Equal(b)
	}
	return want == got
}

// normNumbers turns JSON numbers into exact rationals, so 2.50 and 2.5 are
// one number.
func normNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return string(x)
		}
		return r.RatString()
	case []any:
		for i := range x {
			x[i] = normNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normNumbers(x[k])
		}
	}
	return v
}

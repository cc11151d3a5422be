package pgverify

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/sink"
)

func col(name, typ string, oid uint32) sink.VerifyColumn {
	return sink.VerifyColumn{Name: name, Type: typ, TypeOID: oid, Canon: canon.TypeOf(oid, 0)}
}

func testTable() *sink.VerifyTable {
	return &sink.VerifyTable{
		Name: sink.VerifyName{Schema: "public", Name: "Orders"},
		Columns: []sink.VerifyColumn{col("id", "integer", canon.OIDInt4), col("price", "double precision", canon.OIDFloat8),
			col("amount", "numeric(10,2)", canon.OIDNumeric), col("code", "character(3)", canon.OIDBpchar), col("doc", "json", canon.OIDJSON)},
		Key:       []sink.VerifyColumn{col("id", "integer", canon.OIDInt4)},
		ByteOrder: []bool{false},
	}
}

// The checksum is canon.Checksum's: md5 of the record text of the canonical
// values, the first halves summed, whatever the key.
func TestChecksumSQL(t *testing.T) {
	src := &Reader{major: 15, position: "pg_catalog.pg_current_wal_insert_lsn()::text"}
	tgt := &Reader{major: 15, position: "(SELECT p.lsn FROM pgrelay.progress p WHERE p.slot = $%d)::text", posArg: "s1"}
	st := testTable()
	const sums = `SELECT count(*), coalesce(sum(('x' || pg_catalog.left(pg_catalog.md5(ROW("id", ("price" + 0::pg_catalog.float8), pg_catalog.trim_scale("amount"), "code"::pg_catalog.text, "doc"::pg_catalog.jsonb)::text), 16))::bit(64)::int8)::text, ''), `
	sql, args := src.checksumSQL(st, sink.VerifyRange{From: sink.VerifyKey{"10"}, To: sink.VerifyKey{"20"}})
	want := sums + `pg_catalog.pg_current_wal_insert_lsn()::text FROM ONLY "public"."Orders" WHERE ("id") > ($1::pg_catalog.text::integer) AND ("id") <= ($2::pg_catalog.text::integer)`
	if sql != want || !slices.Equal(args, []any{"10", "20"}) {
		t.Errorf("source checksum:\n got %s %v\nwant %s [10 20]", sql, args, want)
	}
	sql, args = tgt.checksumSQL(st, sink.VerifyRange{To: sink.VerifyKey{"20"}})
	want = sums + `(SELECT p.lsn FROM pgrelay.progress p WHERE p.slot = $2)::text FROM ONLY "public"."Orders" WHERE ("id") <= ($1::pg_catalog.text::integer)`
	if sql != want || !slices.Equal(args, []any{"20", "s1"}) {
		t.Errorf("target checksum:\n got %s %v\nwant %s [20 s1]", sql, args, want)
	}
	keyless := testTable()
	keyless.Key, keyless.ByteOrder = nil, nil
	sql, _ = src.checksumSQL(keyless, sink.VerifyRange{})
	want = sums + `pg_catalog.pg_current_wal_insert_lsn()::text FROM ONLY "public"."Orders"`
	if sql != want {
		t.Errorf("keyless checksum:\n got %s\nwant %s", sql, want)
	}
	// Another encoding: the record text is hashed as UTF8.
	latin := &Reader{major: 12, toUTF8: true, position: "NULL::text"}
	sql, _ = latin.checksumSQL(keyless, sink.VerifyRange{})
	if want := `pg_catalog.md5(pg_catalog.convert_to(ROW("id", ("price" + 0::pg_catalog.float8), pg_catalog.regexp_replace(("amount")::pg_catalog.text, '(\.[0-9]*[1-9])0+$|\.0+$', '\1'), "code"::pg_catalog.text, "doc"::pg_catalog.jsonb)::text, 'UTF8'))`; !strings.Contains(sql, want) {
		t.Errorf("LATIN1, PostgreSQL 12 checksum:\n got %s\nwant …%s…", sql, want)
	}
}

// Floats print their shortest form from PostgreSQL 12 on: older servers'
// tables are read and hashed in Go.
func TestCanChecksum(t *testing.T) {
	st := testTable()
	if !(&Reader{major: 12}).CanChecksum(st) {
		t.Error("PostgreSQL 12 cannot checksum a float column")
	}
	if (&Reader{major: 11}).CanChecksum(st) {
		t.Error("PostgreSQL 11 checksums a float column on the server")
	}
	st.Columns[4].Canon.DoubleNumbers = true
	if (&Reader{major: 15}).CanChecksum(st) {
		t.Error("JSON numbers as doubles checksummed on the server")
	}
}

// TestCompositeKeySQL: a composite key compares as a row, the text column in
// byte order when the servers' collations differ, in boundaries, ranges and
// key lists alike; keys are selected in canonical form.
func TestCompositeKeySQL(t *testing.T) {
	r := &Reader{major: 15}
	st := &sink.VerifyTable{
		Name:      sink.VerifyName{Schema: "s", Name: "t"},
		Columns:   []sink.VerifyColumn{col("region", "text", canon.OIDText), col("n", "numeric", canon.OIDNumeric), col("v", "money", canon.OIDMoney)},
		Key:       []sink.VerifyColumn{col("region", "text", canon.OIDText), col("n", "numeric", canon.OIDNumeric)},
		ByteOrder: []bool{true, false},
	}
	st.Key[0].Collation = "libc en_US.UTF-8/en_US.UTF-8"
	sql, args, goConv := r.boundarySQL(st, sink.VerifyKey{"eu", "7.5"}, 500)
	want := `SELECT "region" AS k0, pg_catalog.trim_scale("n") AS k1 FROM ONLY "s"."t" WHERE ("region" COLLATE "C", "n") > ($1::pg_catalog.text::text COLLATE "C", $2::pg_catalog.text::numeric) ORDER BY "region" COLLATE "C", "n" LIMIT 1 OFFSET $3`
	if sql != want || !slices.Equal(args, []any{"eu", "7.5", int64(499)}) || !slices.Equal(goConv, []bool{false, false}) {
		t.Errorf("boundary:\n got %s %v %v\nwant %s [eu 7.5 499]", sql, args, goConv, want)
	}
	sql, _, _ = r.boundarySQL(st, nil, 500)
	want = `SELECT "region" AS k0, pg_catalog.trim_scale("n") AS k1 FROM ONLY "s"."t" ORDER BY "region" COLLATE "C", "n" LIMIT 1 OFFSET $1`
	if sql != want {
		t.Errorf("first boundary:\n got %s\nwant %s", sql, want)
	}
	sql, args, _ = r.rowsSQL(st, sink.VerifyRange{}, []sink.VerifyKey{{"eu", "1"}, {"us", "2"}})
	want = `SELECT "region" AS k0, pg_catalog.trim_scale("n") AS k1, "region" AS v0, pg_catalog.trim_scale("n") AS v1, pg_catalog.trim_scale("v"::pg_catalog.numeric) AS v2 FROM ONLY "s"."t" WHERE ("region", "n") IN (SELECT u.c0::text, u.c1::numeric FROM pg_catalog.unnest($1::pg_catalog.text[], $2::pg_catalog.text[]) AS u(c0, c1)) ORDER BY "region" COLLATE "C", "n"`
	if sql != want || len(args) != 2 || !slices.Equal(args[0].([]string), []string{"eu", "us"}) || !slices.Equal(args[1].([]string), []string{"1", "2"}) {
		t.Errorf("rows by key:\n got %s %v\nwant %s", sql, args, want)
	}
}

// A key column whose type does not collate but which the other side orders
// as text compares as its canonical text in byte order.
func TestTextOrderSQL(t *testing.T) {
	r := &Reader{major: 15}
	mood := sink.VerifyColumn{Name: "mood", Type: "public.mood", Canon: canon.Type{Kind: canon.KindOther}}
	st := &sink.VerifyTable{Name: sink.VerifyName{Schema: "s", Name: "t"}, Columns: []sink.VerifyColumn{mood}, Key: []sink.VerifyColumn{mood}, ByteOrder: []bool{true}}
	sql, _, _ := r.rowsSQL(st, sink.VerifyRange{From: sink.VerifyKey{"ok"}}, nil)
	want := `SELECT "mood" AS k0, "mood" AS v0 FROM ONLY "s"."t" WHERE (("mood")::pg_catalog.text COLLATE "C") > ($1::pg_catalog.text COLLATE "C") ORDER BY ("mood")::pg_catalog.text COLLATE "C"`
	if sql != want {
		t.Errorf("rows in text order:\n got %s\nwant %s", sql, want)
	}
}

// A partitioned table is read with its partitions, and the source side of a
// table with a publication row filter reads only the rows it publishes.
func TestFilteredPartitionedSQL(t *testing.T) {
	r := &Reader{major: 15}
	st := testTable()
	st.Partitioned = true
	st.Filter = `"price" > 0`
	sql, _, _ := r.boundarySQL(st, nil, 10)
	want := `SELECT "id" AS k0 FROM "public"."Orders" WHERE ("price" > 0) ORDER BY "id" LIMIT 1 OFFSET $1`
	if sql != want {
		t.Errorf("boundary:\n got %s\nwant %s", sql, want)
	}
	sql, _, _ = r.rowsSQL(st, sink.VerifyRange{From: sink.VerifyKey{"1"}}, nil)
	if want := ` FROM "public"."Orders" WHERE ("id") > ($1::pg_catalog.text::integer) AND ("price" > 0) ORDER BY "id"`; !strings.HasSuffix(sql, want) {
		t.Errorf("rows:\n got %s\nwant …%s", sql, want)
	}
	sql, _, _ = r.rowsSQL(st, sink.VerifyRange{}, []sink.VerifyKey{{"1"}})
	if want := `FROM pg_catalog.unnest($1::pg_catalog.text[]) AS u(c0)) AND ("price" > 0) ORDER BY "id"`; !strings.HasSuffix(sql, want) {
		t.Errorf("rows by key:\n got %s\nwant …%s", sql, want)
	}
}

func TestFormatRange(t *testing.T) {
	for _, c := range []struct {
		key  []string
		r    sink.VerifyRange
		want string
	}{
		{nil, sink.VerifyRange{}, "whole table"},
		{[]string{"id"}, sink.VerifyRange{To: sink.VerifyKey{"100"}}, `"id" <= '100'`},
		{[]string{"id"}, sink.VerifyRange{From: sink.VerifyKey{"100"}, To: sink.VerifyKey{"200"}}, `"id" > '100' AND "id" <= '200'`},
		{[]string{"Region", "n"}, sink.VerifyRange{From: sink.VerifyKey{"o'hare", "1"}}, `("Region", "n") > ('o''hare', '1')`},
	} {
		if got := FormatRange(c.key, c.r); got != c.want {
			t.Errorf("FormatRange(%v, %v) = %s, want %s", c.key, c.r, got, c.want)
		}
	}
}

package verify

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestChunkRows(t *testing.T) {
	for _, c := range []struct{ estimate, want int64 }{
		{0, MinChunkRows},
		{5_000, MinChunkRows},
		{1_000_000, MinChunkRows},
		{2_000_000, 20_000},
		{5_000_000, MaxChunkRows},
		{1_000_000_000, MaxChunkRows},
	} {
		if got := ChunkRows(c.estimate); got != c.want {
			t.Errorf("ChunkRows(%d) = %d, want %d", c.estimate, got, c.want)
		}
	}
}

// intBoundary is a BoundaryFunc over sorted integer keys, as the source's
// key index would answer it.
func intBoundary(keys []int) BoundaryFunc {
	return func(_ context.Context, after Key, n int64) (Key, error) {
		i := 0
		if after != nil {
			a, _ := strconv.Atoi(after[0])
			i, _ = slices.BinarySearch(keys, a+1)
		}
		if j := i + int(n) - 1; j < len(keys) {
			return Key{strconv.Itoa(keys[j])}, nil
		}
		return nil, nil
	}
}

// inRange reports whether integer key k lies in r.
func inRange(r Range, k int) bool {
	if r.From != nil {
		if from, _ := strconv.Atoi(r.From[0]); k <= from {
			return false
		}
	}
	if r.To != nil {
		if to, _ := strconv.Atoi(r.To[0]); k > to {
			return false
		}
	}
	return true
}

// TestPlannerCoversEveryKey: the chunks are consecutive, each holds n rows
// but the last, which is open-ended, and every key lies in exactly one.
func TestPlannerCoversEveryKey(t *testing.T) {
	const n = 10
	for _, rows := range []int{0, 1, n - 1, n, n + 1, 3 * n, 3*n + 7} {
		keys := make([]int, rows)
		for i := range keys {
			keys[i] = 3*i + 5 // gaps between keys
		}
		p := newPlanner(intBoundary(keys), n)
		var chunks []Range
		for {
			r, ok, err := p.next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			chunks = append(chunks, r)
			if len(chunks) > rows+2 {
				t.Fatalf("%d rows: planner does not end", rows)
			}
		}
		if want := rows/n + 1; len(chunks) != want {
			t.Errorf("%d rows: %d chunks, want %d: %v", rows, len(chunks), want, chunks)
		}
		if chunks[0].From != nil || chunks[len(chunks)-1].To != nil {
			t.Errorf("%d rows: first chunk must start at the first row and the last end after the last: %v", rows, chunks)
		}
		for i := 1; i < len(chunks); i++ {
			if !slices.Equal(chunks[i].From, chunks[i-1].To) {
				t.Errorf("%d rows: chunk %d starts at %v, the previous ends at %v", rows, i, chunks[i].From, chunks[i-1].To)
			}
		}
		// Keys that exist and keys added later (between, before, after) are
		// each in exactly one chunk.
		probe := append(slices.Clone(keys), -100, 0, 6, 7, 3*rows+100)
		for _, k := range probe {
			in := 0
			for _, r := range chunks {
				if inRange(r, k) {
					in++
				}
			}
			if in != 1 {
				t.Errorf("%d rows: key %d is in %d chunks, want 1: %v", rows, k, in, chunks)
			}
		}
		for i, r := range chunks[:len(chunks)-1] {
			count := 0
			for _, k := range keys {
				if inRange(r, k) {
					count++
				}
			}
			if count != n {
				t.Errorf("%d rows: chunk %d holds %d rows, want %d", rows, i, count, n)
			}
		}
	}
}

func testSide() *SideTable {
	return &SideTable{
		Name:      TableName{"public", "Orders"},
		Columns:   []Column{{Name: "id", Type: "integer", TypeOID: 23}, {Name: "price", Type: "double precision", TypeOID: oidFloat8}, {Name: "note", Type: "text", TypeOID: 25}},
		Key:       []Column{{Name: "id", Type: "integer", TypeOID: 23}},
		ByteOrder: []bool{false},
	}
}

func TestSummarizeSQL(t *testing.T) {
	src := &postgresSide{position: "pg_catalog.pg_current_wal_insert_lsn()::text"}
	tgt := &postgresSide{position: "(SELECT p.lsn FROM pgrelay.progress p WHERE p.slot = $%d)::text", posArg: "s1"}
	st := testSide()
	sql, args := src.summarizeSQL(st, Range{From: Key{"10"}, To: Key{"20"}})
	want := `SELECT count(*), coalesce(pg_catalog.md5(string_agg(pg_catalog.md5(ROW("id", pg_catalog.float8send("price"), "note")::text), '' ORDER BY "id")), ''), pg_catalog.pg_current_wal_insert_lsn()::text FROM ONLY "public"."Orders" WHERE ("id") > ($1::text::integer) AND ("id") <= ($2::text::integer)`
	if sql != want || !slices.Equal(args, []any{"10", "20"}) {
		t.Errorf("source summary:\n got %s %v\nwant %s [10 20]", sql, args, want)
	}
	sql, args = tgt.summarizeSQL(st, Range{To: Key{"20"}})
	want = `SELECT count(*), coalesce(pg_catalog.md5(string_agg(pg_catalog.md5(ROW("id", pg_catalog.float8send("price"), "note")::text), '' ORDER BY "id")), ''), (SELECT p.lsn FROM pgrelay.progress p WHERE p.slot = $2)::text FROM ONLY "public"."Orders" WHERE ("id") <= ($1::text::integer)`
	if sql != want || !slices.Equal(args, []any{"20", "s1"}) {
		t.Errorf("target summary:\n got %s %v\nwant %s [20 s1]", sql, args, want)
	}
	keyless := testSide()
	keyless.Key, keyless.ByteOrder = nil, nil
	sql, _ = src.summarizeSQL(keyless, Range{})
	want = `SELECT count(*), coalesce(sum(('x' || substr(h, 1, 16))::bit(64)::int8)::text || ' ' || sum(('x' || substr(h, 17, 16))::bit(64)::int8)::text, ''), pg_catalog.pg_current_wal_insert_lsn()::text FROM (SELECT pg_catalog.md5(ROW("id", pg_catalog.float8send("price"), "note")::text) AS h FROM ONLY "public"."Orders") r`
	if sql != want {
		t.Errorf("keyless summary:\n got %s\nwant %s", sql, want)
	}
}

// TestCompositeKeySQL: a composite key compares as a row, the text column in
// byte order when the servers' collations differ, in boundaries, ranges and
// key lists alike.
func TestCompositeKeySQL(t *testing.T) {
	st := &SideTable{
		Name:      TableName{"s", "t"},
		Columns:   []Column{{Name: "region", Type: "text"}, {Name: "n", Type: "bigint"}, {Name: "v", Type: "money", TypeOID: oidMoney}},
		Key:       []Column{{Name: "region", Type: "text"}, {Name: "n", Type: "bigint"}},
		ByteOrder: []bool{true, false},
	}
	sql, args := boundarySQL(st, Key{"eu", "7"}, 500)
	want := `SELECT "region"::text AS k0, "n"::text AS k1 FROM ONLY "s"."t" WHERE ("region" COLLATE "C", "n") > ($1::text::text COLLATE "C", $2::text::bigint) ORDER BY "region" COLLATE "C", "n" LIMIT 1 OFFSET $3`
	if sql != want || !slices.Equal(args, []any{"eu", "7", int64(499)}) {
		t.Errorf("boundary:\n got %s %v\nwant %s [eu 7 499]", sql, args, want)
	}
	sql, _ = boundarySQL(st, nil, 500)
	want = `SELECT "region"::text AS k0, "n"::text AS k1 FROM ONLY "s"."t" ORDER BY "region" COLLATE "C", "n" LIMIT 1 OFFSET $1`
	if sql != want {
		t.Errorf("first boundary:\n got %s\nwant %s", sql, want)
	}
	sql, args = rowsSQL(st, Range{}, []Key{{"eu", "1"}, {"us", "2"}}, false)
	want = `SELECT "region"::text AS k0, "n"::text AS k1, pg_catalog.md5(ROW("region", "n", "v"::numeric)::text) FROM ONLY "s"."t" WHERE ("region", "n") IN (SELECT u.c0::text, u.c1::bigint FROM unnest($1::text[], $2::text[]) AS u(c0, c1)) ORDER BY "region" COLLATE "C", "n"`
	if sql != want || len(args) != 2 || !slices.Equal(args[0].([]string), []string{"eu", "us"}) || !slices.Equal(args[1].([]string), []string{"1", "2"}) {
		t.Errorf("rows by key:\n got %s %v\nwant %s", sql, args, want)
	}
}

func TestFormatRange(t *testing.T) {
	for _, c := range []struct {
		key  []string
		r    Range
		want string
	}{
		{nil, Range{}, "whole table"},
		{[]string{"id"}, Range{To: Key{"100"}}, `"id" <= '100'`},
		{[]string{"id"}, Range{From: Key{"100"}, To: Key{"200"}}, `"id" > '100' AND "id" <= '200'`},
		{[]string{"Region", "n"}, Range{From: Key{"o'hare", "1"}}, `("Region", "n") > ('o''hare', '1')`},
	} {
		if got := FormatRange(c.key, c.r); got != c.want {
			t.Errorf("FormatRange(%v, %v) = %s, want %s", c.key, c.r, got, c.want)
		}
	}
}

// TestBuildPlan: the published columns the target has are compared in the
// source's order; a missing one is reported; the key sorts in byte order
// only where the collations differ.
func TestBuildPlan(t *testing.T) {
	ss := &Shape{Identity: 'd', Key: []string{"code", "n"}, EstimatedRows: 3_000_000, Columns: []Column{
		{Name: "code", Type: "text", Collation: "libc en_US.UTF-8/en_US.UTF-8"}, {Name: "n", Type: "integer"},
		{Name: "gone", Type: "text"}, {Name: "extra", Type: "text", Collation: "libc C"},
	}}
	ts := &Shape{Identity: 'd', Key: []string{"code", "n"}, Indexes: [][]string{{"code", "n"}}, Columns: []Column{
		{Name: "n", Type: "integer"}, {Name: "extra", Type: "text", Collation: "libc C.UTF-8/C.UTF-8"}, {Name: "code", Type: "text", Collation: "libc C.UTF-8/C.UTF-8"},
	}}
	tbl := Table{Source: TableName{"public", "t"}, Target: TableName{"public", "t"}, Columns: []string{"code", "n", "gone", "extra"}}
	p := buildPlan(tbl, ss, ts, 0, discardLog())
	var names []string
	for _, c := range p.tgt.Columns {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"code", "n", "extra"}) {
		t.Errorf("compared columns %v, want [code n extra]", names)
	}
	if !slices.Equal(p.result.MissingColumns, []string{"gone"}) {
		t.Errorf("missing columns %v, want [gone]", p.result.MissingColumns)
	}
	if !slices.Equal(p.src.ByteOrder, []bool{true, false}) || !slices.Equal(p.tgt.ByteOrder, []bool{true, false}) || !p.result.ByteOrder {
		t.Errorf("byte order src %v tgt %v, want [true false]", p.src.ByteOrder, p.tgt.ByteOrder)
	}
	if p.rows != 30_000 {
		t.Errorf("chunk rows %d, want 30000 (a hundredth of the estimate)", p.rows)
	}
	ts.Columns[2].Collation = ss.Columns[0].Collation
	if p := buildPlan(tbl, ss, ts, 1234, discardLog()); p.result.ByteOrder || p.rows != 1234 {
		t.Errorf("same collation: byte order %v, rows %d; want false, 1234", p.result.ByteOrder, p.rows)
	}
	// REPLICA IDENTITY FULL: compared whole, even with a primary key.
	ss.Identity = 'f'
	if p := buildPlan(tbl, ss, ts, 0, discardLog()); len(p.src.Key) != 0 || len(p.result.Key) != 0 {
		t.Errorf("FULL identity: key %v, want none", p.result.Key)
	}
}

// A partitioned table is read with its partitions, and the source side of a
// table with a publication row filter reads only the rows it publishes.
func TestFilteredPartitionedSQL(t *testing.T) {
	st := testSide()
	st.Partitioned = true
	st.Filter = `"price" > 0`
	sql, _ := boundarySQL(st, nil, 10)
	want := `SELECT "id"::text AS k0 FROM "public"."Orders" WHERE ("price" > 0) ORDER BY "id" LIMIT 1 OFFSET $1`
	if sql != want {
		t.Errorf("boundary:\n got %s\nwant %s", sql, want)
	}
	sql, _ = rowsSQL(st, Range{From: Key{"1"}}, nil, false)
	if want := ` FROM "public"."Orders" WHERE ("id") > ($1::text::integer) AND ("price" > 0) ORDER BY "id"`; !strings.HasSuffix(sql, want) {
		t.Errorf("rows:\n got %s\nwant …%s", sql, want)
	}
	sql, _ = rowsSQL(st, Range{}, []Key{{"1"}}, false)
	if want := `FROM unnest($1::text[]) AS u(c0)) AND ("price" > 0) ORDER BY "id"`; !strings.HasSuffix(sql, want) {
		t.Errorf("rows by key:\n got %s\nwant …%s", sql, want)
	}
}

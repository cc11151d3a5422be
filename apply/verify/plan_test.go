package verify

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/pgrelay/pgrelay/schema/canon"
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
	tbl := Table{Source: TableName{Schema: "public", Name: "t"}, Target: TableName{Schema: "public", Name: "t"}, Columns: []string{"code", "n", "gone", "extra"}}
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

// TestBuildPlanCanon: a target column whose type does not tell its
// canonical form (a MySQL VARCHAR) compares as the source column; a target
// that keeps JSON numbers as doubles has the source compare them so; a key
// the target orders as text is compared in byte order on both sides.
func TestBuildPlanCanon(t *testing.T) {
	mood := canon.Type{Kind: canon.KindOther}
	doc := canon.Type{Kind: canon.KindJSONB}
	ints := canon.Type{Kind: canon.KindArray, Elem: canon.KindNumeric}
	ss := &Shape{Identity: 'd', Key: []string{"mood"}, Columns: []Column{
		{Name: "mood", Type: "public.mood", Canon: mood}, {Name: "doc", Type: "jsonb", Canon: doc}, {Name: "n", Type: "numeric", Canon: canon.Type{Kind: canon.KindNumeric}},
		{Name: "a", Type: "numeric[]", Canon: ints},
	}}
	ts := &Shape{Identity: 'd', Key: []string{"mood"}, Indexes: [][]string{{"mood"}}, Columns: []Column{
		{Name: "mood", Type: "varchar(255)", Collation: "libc C", TextOrder: true},
		{Name: "doc", Type: "json", Canon: canon.Type{Kind: canon.KindJSON, DoubleNumbers: true}},
		{Name: "n", Type: "decimal(65,30)", Canon: canon.Type{Kind: canon.KindNumeric}},
		{Name: "a", Type: "json", Canon: canon.Type{DoubleNumbers: true}}, // MySQL 8: the form is the source's, numbers as doubles
	}}
	tbl := Table{Source: TableName{Schema: "public", Name: "t"}, Target: TableName{Schema: "db", Name: "t"}, Columns: []string{"mood", "doc", "n", "a"}}
	p := buildPlan(tbl, ss, ts, 0, discardLog())
	intsAsDoubles := ints
	intsAsDoubles.DoubleNumbers = true
	want := []struct{ src, tgt canon.Type }{
		{mood, mood},
		{canon.Type{Kind: canon.KindJSONB, DoubleNumbers: true}, canon.Type{Kind: canon.KindJSON, DoubleNumbers: true}},
		{canon.Type{Kind: canon.KindNumeric}, canon.Type{Kind: canon.KindNumeric}},
		{intsAsDoubles, intsAsDoubles},
	}
	for i, w := range want {
		if p.src.Columns[i].Canon != w.src || p.tgt.Columns[i].Canon != w.tgt {
			t.Errorf("column %s compares as %s on the source, %s on the target; want %s, %s",
				p.src.Columns[i].Name, p.src.Columns[i].Canon, p.tgt.Columns[i].Canon, w.src, w.tgt)
		}
	}
	if p.tgt.Key[0].Canon != mood || !p.src.ByteOrder[0] || !p.tgt.ByteOrder[0] || !p.result.ByteOrder {
		t.Errorf("key compares as %s, byte order %v/%v; want %s in byte order on both sides", p.tgt.Key[0].Canon, p.src.ByteOrder, p.tgt.ByteOrder, mood)
	}
	// A uuid or a text key in a text column orders alike (text: as the
	// collations say).
	for _, c := range []struct {
		kind      canon.Kind
		collation string
		want      bool
	}{{canon.KindUUID, "", false}, {canon.KindText, "libc C", false}, {canon.KindText, "icu und", true}, {canon.KindInt, "", true}} {
		ss.Columns[0].Canon, ss.Columns[0].Collation = canon.Type{Kind: c.kind}, c.collation
		if p := buildPlan(tbl, ss, ts, 0, discardLog()); p.src.ByteOrder[0] != c.want {
			t.Errorf("%s key (%q) in a text column: byte order %v, want %v", c.kind, c.collation, p.src.ByteOrder[0], c.want)
		}
	}
	// The source's own shape is left as it was.
	if ss.Columns[1].Canon.DoubleNumbers {
		t.Error("buildPlan changed the source's shape")
	}
}

func TestByteOrderIndex(t *testing.T) {
	key := []Column{{Name: "Code", Collation: "libc en_US.UTF-8/en_US.UTF-8"}, {Name: "mood"}, {Name: "n"}}
	tbl := TableName{Schema: "s", Name: "t"}
	if got, want := byteOrderIndex(tbl, key, []bool{true, true, false}), `CREATE INDEX ON "s"."t" ("Code" COLLATE "C", (("mood")::text COLLATE "C"), "n")`; got != want {
		t.Errorf("byteOrderIndex = %s, want %s", got, want)
	}
	if got, want := byteOrderIndex(tbl, key, nil), `CREATE INDEX ON "s"."t" ("Code", "mood", "n")`; got != want {
		t.Errorf("byteOrderIndex = %s, want %s", got, want)
	}
}

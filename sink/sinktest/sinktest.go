// Package sinktest is the test suite every sink passes, the way golang-migrate's
// database/testing.Test is for its drivers: Run drives a sink through the
// sink.Sink contract, every capability sink.Target requires and the optional
// ones it implements, against a real target, and reads the target's rows back
// to check the outcome. A sink that passes it works under the relay. A case
// that does not apply to a sink (a capability it lacks, an ability its
// Target lacks) skips, saying why.
package sinktest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Null stands for SQL NULL in the rows a Target returns. It cannot be confused
// with a text value: PostgreSQL text never holds a NUL byte.
const Null = "\x00NULL"

// Harness gives the suite fresh targets.
type Harness interface {
	// Target returns a fresh, empty target for one test; it is released at
	// t's cleanup.
	Target(t *testing.T) Target
}

// Target is one target database.
type Target interface {
	// Open connects a new sink to the target; it is closed at t's cleanup.
	Open(t *testing.T) sink.Sink
	// Rows returns the committed rows of table's target table, each as its
	// column values (in table's column order) in text form, NULL as Null, in
	// any order. It reads on a connection of its own.
	Rows(t *testing.T, table *schema.Table) [][]string
}

// Slot is the slot name the suite records progress for.
const Slot = "sinktest"

// baseLSN is where the suite's source LSNs start.
const baseLSN source.LSN = 0x16B3748

// Run runs every case of the suite, each in a subtest with a fresh target.
func Run(t *testing.T, h Harness) {
	cases := []struct {
		name string
		fn   func(*testing.T, Target)
	}{
		{"InsertUpdateDelete", testInsertUpdateDelete},
		{"RepeatedChangesInterleaved", testRepeatedChanges},
		{"KeyChange", testKeyChange},
		{"CompositeKey", testCompositeKey},
		{"ReplicaIdentityFull", testReplicaIdentityFull},
		{"ReplicaIdentityNothing", testReplicaIdentityNothing},
		{"UnchangedToastKept", testUnchangedToast},
		{"Truncate", testTruncate},
		{"RollbackLeavesNothing", testRollback},
		{"ProgressAtomicAndMonotonic", testProgress},
		{"ErrorNamesTableAndLSN", testErrorNamesTableAndLSN},
		{"PipelinedErrorMapsToChange", testPipelinedError},
		{"MissingRowIsAnError", testMissingRow},
		{"LongInsertRunsRoundTrip", testLongInsertRuns},
		{"ManyRowsUpdatedAndDeleted", testManyRows},
		{"EmptyAndNullText", testEmptyVersusNull},
		{"EnsureTableEvolves", testEnsureTableEvolves},
		{"QuotedIdentifiers", testQuotedIdentifiers},
		{"TwoPhase", testTwoPhase},
		{"TwoPhaseRollback", testTwoPhaseRollback},
		{"TwoPhaseDoesNotBlockProgress", testTwoPhaseNoLockWait},
		{"BulkLoad", testBulkLoad},
	}
	cases = append(cases, capabilityCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h.Target(t)) })
	}
}

// Values and tuples.

// T is a text value.
func T(s string) source.Value { return source.Value{Kind: source.ValueText, Data: []byte(s)} }

// N is a NULL value.
func N() source.Value { return source.Value{Kind: source.ValueNull} }

// U is an unchanged TOAST value.
func U() source.Value { return source.Value{Kind: source.ValueUnchanged} }

// Row builds a tuple.
func Row(vs ...source.Value) source.Tuple { return vs }

// Changes.

// Ins is an insert.
func Ins(t *schema.Table, lsn source.LSN, row source.Tuple) *sink.Change {
	return &sink.Change{Kind: sink.Insert, Table: t, New: row, LSN: lsn}
}

// Upd is an update located by the new row's key (no old tuple).
func Upd(t *schema.Table, lsn source.LSN, row source.Tuple) *sink.Change {
	return &sink.Change{Kind: sink.Update, Table: t, New: row, LSN: lsn}
}

// UpdOld is an update with an old tuple of the given kind.
func UpdOld(t *schema.Table, lsn source.LSN, oldKind byte, old, row source.Tuple) *sink.Change {
	return &sink.Change{Kind: sink.Update, Table: t, OldKind: oldKind, Old: old, New: row, LSN: lsn}
}

// Del is a delete.
func Del(t *schema.Table, lsn source.LSN, oldKind byte, old source.Tuple) *sink.Change {
	return &sink.Change{Kind: sink.Delete, Table: t, OldKind: oldKind, Old: old, LSN: lsn}
}

// Tables.

// relationID is a source relation OID for the test table schemaName.name: the
// same for each version of one table, different between tables, as a source's
// OIDs are (a sink may find a renamed table by it).
func relationID(schemaName, name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(schemaName + "." + name))
	return 16384 + h.Sum32()%(1<<30)
}

// ItemsTable is (id bigint key, name text, note text) with REPLICA IDENTITY DEFAULT.
func ItemsTable(schemaName, name string) *schema.Table {
	return &schema.Table{
		RelationID: relationID(schemaName, name), Schema: schemaName, Name: name, ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{
			{Name: "id", TypeOID: 20, TypeMod: -1, TypeName: "bigint", Key: true, NotNull: true, Attnum: 1},
			{Name: "name", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 2},
			{Name: "note", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 3},
		},
	}
}

// FullTable is (a bigint, b text) with REPLICA IDENTITY FULL and no key.
func FullTable(schemaName, name string) *schema.Table {
	return &schema.Table{
		RelationID: relationID(schemaName, name), Schema: schemaName, Name: name, ReplicaIdentity: schema.IdentityFull,
		Columns: []schema.Column{
			{Name: "a", TypeOID: 20, TypeMod: -1, TypeName: "bigint", Attnum: 1},
			{Name: "b", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 2},
		},
	}
}

// Helpers.

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// open opens a sink, runs Setup and creates tables.
func open(t *testing.T, tgt Target, tables ...*schema.Table) (sink.Sink, sink.Progress) {
	t.Helper()
	ctx := ctxFor(t)
	s := tgt.Open(t)
	p, err := s.Setup(ctx, Slot)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	for _, tb := range tables {
		if err := s.EnsureTable(ctx, tb, nil); err != nil {
			t.Fatalf("EnsureTable %s: %v", tb.QualifiedName(), err)
		}
	}
	return s, p
}

// apply runs changes in one transaction and commits it at lsn.
func apply(t *testing.T, s sink.Sink, lsn source.LSN, changes ...*sink.Change) {
	t.Helper()
	if err := applyErr(t, s, lsn, changes...); err != nil {
		t.Fatalf("apply at %s: %v", lsn, err)
	}
}

func applyErr(t *testing.T, s sink.Sink, lsn source.LSN, changes ...*sink.Change) error {
	t.Helper()
	ctx := ctxFor(t)
	tx, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		if err := tx.Apply(ctx, ch); err != nil {
			_ = tx.Rollback(ctx)
			return err
		}
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: Slot, LSN: lsn, CommitTime: time.Unix(1700000000, 0).UTC()}); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return nil
}

// sorted renders rows as "a|b|c" lines (NULL as \N), sorted.
func sorted(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		cells := make([]string, len(r))
		for j, v := range r {
			if v == Null {
				cells[j] = `\N`
			} else {
				cells[j] = v
			}
		}
		out[i] = strings.Join(cells, "|")
	}
	slices.Sort(out)
	return out
}

func wantRows(t *testing.T, tgt Target, table *schema.Table, want ...string) {
	t.Helper()
	got := sorted(tgt.Rows(t, table))
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Fatalf("rows of %s:\n got %q\nwant %q", table.QualifiedName(), got, w)
	}
}

func progressOf(t *testing.T, tgt Target) sink.Progress {
	t.Helper()
	s := tgt.Open(t)
	p, err := s.Setup(ctxFor(t), Slot)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return p
}

func wantErrMentions(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
}

func lsn(i int) source.LSN { return baseLSN + source.LSN(i) }

func itoa(i int) string { return strconv.Itoa(i) }

// Cases.

func testInsertUpdateDelete(t *testing.T, tgt Target) {
	items := ItemsTable("public", "items")
	s, p := open(t, tgt, items)
	if p.LSN != 0 {
		t.Fatalf("fresh target: progress %s, want 0/0", p.LSN)
	}
	apply(t, s, lsn(100),
		Ins(items, lsn(1), Row(T("1"), T("one"), N())),
		Ins(items, lsn(2), Row(T("2"), T("two"), T("x"))),
		Ins(items, lsn(3), Row(T("3"), T("three"), T("y"))),
		Upd(items, lsn(4), Row(T("2"), T("TWO"), N())),
		Del(items, lsn(5), source.OldKey, Row(T("3"), N(), N())),
	)
	wantRows(t, tgt, items, `1|one|\N`, `2|TWO|\N`)
	apply(t, s, lsn(200),
		Upd(items, lsn(101), Row(T("1"), T("uno"), T("z"))),
		Ins(items, lsn(102), Row(T("3"), T("again"), N())),
	)
	wantRows(t, tgt, items, `1|uno|z`, `2|TWO|\N`, `3|again|\N`)
}

// A row changed many times in one transaction, other tables in between, every
// kind of change on the same key: a sink may batch or fold, but the result is
// the last state.
func testRepeatedChanges(t *testing.T, tgt Target) {
	items := ItemsTable("public", "rep_items")
	other := ItemsTable("public", "rep_other")
	s, _ := open(t, tgt, items, other)
	var chs []*sink.Change
	add := func(c *sink.Change) { chs = append(chs, c) }
	n := 0
	next := func() source.LSN { n++; return lsn(n) }
	add(Ins(items, next(), Row(T("1"), T("a"), N())))
	add(Ins(other, next(), Row(T("1"), T("o"), N())))
	for i := range 50 {
		add(Upd(items, next(), Row(T("1"), T("v"+itoa(i)), N())))
		add(Upd(other, next(), Row(T("1"), T("w"+itoa(i)), T("x"))))
		add(Ins(items, next(), Row(T(itoa(100+i)), T("bulk"), N())))
	}
	add(Del(items, next(), source.OldKey, Row(T("1"), N(), N())))
	add(Ins(items, next(), Row(T("1"), T("reborn"), N())))
	add(Upd(items, next(), Row(T("1"), T("after"), N())))
	add(UpdOld(items, next(), source.OldKey, Row(T("1"), N(), N()), Row(T("5"), T("moved"), N())))
	add(Upd(items, next(), Row(T("5"), T("moved again"), T("n"))))
	add(Upd(items, next(), Row(T("5"), T("toast kept"), U())))
	add(Upd(items, next(), Row(T("5"), T("final"), U())))
	add(Upd(other, next(), Row(T("1"), N(), N())))
	apply(t, s, lsn(1000), chs...)
	want := []string{`5|final|n`}
	for i := range 50 {
		want = append(want, itoa(100+i)+`|bulk|\N`)
	}
	wantRows(t, tgt, items, want...)
	wantRows(t, tgt, other, `1|\N|\N`)

	// Updates of a missing row stay an error, however many there are.
	err := applyErr(t, s, lsn(2000),
		Upd(items, lsn(1500), Row(T("999"), T("x"), N())),
		Upd(other, lsn(1501), Row(T("1"), T("y"), N())),
		Upd(items, lsn(1502), Row(T("999"), T("z"), N())))
	wantErrMentions(t, err, "rep_items")
	wantRows(t, tgt, other, `1|\N|\N`)
}

func testKeyChange(t *testing.T, tgt Target) {
	items := ItemsTable("public", "items")
	s, _ := open(t, tgt, items)
	apply(t, s, lsn(10),
		Ins(items, lsn(1), Row(T("1"), T("one"), T("n"))),
		Ins(items, lsn(2), Row(T("2"), T("two"), T("n"))),
	)
	apply(t, s, lsn(20),
		UpdOld(items, lsn(11), source.OldKey, Row(T("1"), N(), N()), Row(T("10"), T("ten"), T("n"))),
		// Swap-like chain: 2 → 1 (free again now).
		UpdOld(items, lsn(12), source.OldKey, Row(T("2"), N(), N()), Row(T("1"), T("one again"), U())),
	)
	wantRows(t, tgt, items, `1|one again|n`, `10|ten|n`)
}

func testCompositeKey(t *testing.T, tgt Target) {
	tb := &schema.Table{RelationID: 16402, Schema: "public", Name: "pairs", ReplicaIdentity: schema.IdentityIndex,
		Columns: []schema.Column{
			{Name: "a", TypeOID: 25, TypeMod: -1, TypeName: "text", Key: true, NotNull: true, Attnum: 1},
			{Name: "b", TypeOID: 23, TypeMod: -1, TypeName: "integer", Key: true, NotNull: true, Attnum: 2},
			{Name: "v", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 3},
		}}
	s, _ := open(t, tgt, tb)
	apply(t, s, lsn(10),
		Ins(tb, lsn(1), Row(T("x"), T("1"), T("a"))),
		Ins(tb, lsn(2), Row(T("x"), T("2"), T("b"))),
		Ins(tb, lsn(3), Row(T("y"), T("1"), T("c"))),
		Upd(tb, lsn(4), Row(T("x"), T("2"), T("B"))),
		Del(tb, lsn(5), source.OldKey, Row(T("y"), T("1"), N())),
	)
	wantRows(t, tgt, tb, `x|1|a`, `x|2|B`)
}

func testReplicaIdentityFull(t *testing.T, tgt Target) {
	full := FullTable("public", "full_rows")
	s, _ := open(t, tgt, full)
	apply(t, s, lsn(10),
		Ins(full, lsn(1), Row(T("1"), N())),
		Ins(full, lsn(2), Row(T("1"), N())),
		Ins(full, lsn(3), Row(T("2"), T("x"))),
		Ins(full, lsn(4), Row(N(), N())),
	)
	// One of two identical rows (with a NULL) changes: exactly one row is touched.
	apply(t, s, lsn(20),
		UpdOld(full, lsn(11), source.OldFull, Row(T("1"), N()), Row(T("1"), T("y"))),
		UpdOld(full, lsn(12), source.OldFull, Row(N(), N()), Row(N(), T("was null"))),
	)
	wantRows(t, tgt, full, `1|\N`, `1|y`, `2|x`, `\N|was null`)
	apply(t, s, lsn(30),
		Del(full, lsn(21), source.OldFull, Row(T("1"), N())),
		Del(full, lsn(22), source.OldFull, Row(T("2"), T("x"))),
	)
	wantRows(t, tgt, full, `1|y`, `\N|was null`)
	// A row that is not there any more.
	err := applyErr(t, s, lsn(40), Del(full, lsn(31), source.OldFull, Row(T("2"), T("x"))))
	wantErrMentions(t, err, "full_rows", lsn(31).String())
}

func testReplicaIdentityNothing(t *testing.T, tgt Target) {
	tb := FullTable("public", "no_identity")
	tb.ReplicaIdentity = schema.IdentityNothing
	s, _ := open(t, tgt, tb)
	apply(t, s, lsn(10), Ins(tb, lsn(1), Row(T("1"), T("a"))))
	wantRows(t, tgt, tb, `1|a`)
	err := applyErr(t, s, lsn(20), Upd(tb, lsn(11), Row(T("1"), T("b"))))
	wantErrMentions(t, err, "no_identity", lsn(11).String(), "identity")
	err = applyErr(t, s, lsn(20), Del(tb, lsn(12), source.OldNone, nil))
	wantErrMentions(t, err, "no_identity", lsn(12).String(), "identity")
	wantRows(t, tgt, tb, `1|a`)
}

func testUnchangedToast(t *testing.T, tgt Target) {
	items := ItemsTable("public", "toasty")
	s, _ := open(t, tgt, items)
	big := strings.Repeat("large value ", 1000)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), T(big), T("a"))), Ins(items, lsn(2), Row(T("2"), T(big), T(big))))
	apply(t, s, lsn(20),
		Upd(items, lsn(11), Row(T("1"), U(), T("b"))),
		Upd(items, lsn(12), Row(T("2"), U(), U())),
		UpdOld(items, lsn(13), source.OldKey, Row(T("1"), N(), N()), Row(T("3"), U(), T("c"))),
	)
	wantRows(t, tgt, items, "2|"+big+"|"+big, "3|"+big+"|c")
}

func testTruncate(t *testing.T, tgt Target) {
	a, b := ItemsTable("public", "trunc_a"), ItemsTable("public", "trunc_b")
	s, _ := open(t, tgt, a, b)
	apply(t, s, lsn(10), Ins(a, lsn(1), Row(T("1"), N(), N())), Ins(b, lsn(2), Row(T("1"), N(), N())))
	ctx := ctxFor(t)
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(a, lsn(11), Row(T("2"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Truncate(ctx, []*schema.Table{a, b}, source.TruncateRestartIdentity); err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(a, lsn(13), Row(T("3"), T("after"), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: Slot, LSN: lsn(20)}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, tgt, a, `3|after|\N`)
	wantRows(t, tgt, b)
}

func testRollback(t *testing.T, tgt Target) {
	items := ItemsTable("public", "items")
	s, _ := open(t, tgt, items)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), T("kept"), N())))
	ctx := ctxFor(t)
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Several source transactions' worth of changes (group commit), including a
	// long insert run, an update and a delete, then abandoned.
	for i := 2; i < 500; i++ {
		if err := tx.Apply(ctx, Ins(items, lsn(10+i), Row(T(itoa(i)), T("gone"), N()))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Apply(ctx, Upd(items, lsn(600), Row(T("1"), T("changed"), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Del(items, lsn(601), source.OldKey, Row(T("2"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	wantRows(t, tgt, items, `1|kept|\N`)
	if p := progressOf(t, tgt); p.LSN != lsn(10) {
		t.Fatalf("progress after rollback: %s, want %s", p.LSN, lsn(10))
	}
	// The sink is usable after a rollback.
	apply(t, s, lsn(700), Ins(items, lsn(650), Row(T("5"), T("five"), N())))
	wantRows(t, tgt, items, `1|kept|\N`, `5|five|\N`)
}

func testProgress(t *testing.T, tgt Target) {
	items := ItemsTable("public", "items")
	s, _ := open(t, tgt, items)
	ctx := ctxFor(t)
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(items, lsn(1), Row(T("1"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: Slot, LSN: lsn(50), CommitTime: when}); err != nil {
		t.Fatal(err)
	}
	p := progressOf(t, tgt)
	if p.LSN != lsn(50) || !p.CommitTime.Equal(when) {
		t.Fatalf("stored progress %s at %v, want %s at %v", p.LSN, p.CommitTime, lsn(50), when)
	}
	// An empty transaction still records its position (idle progress).
	apply(t, s, lsn(60))
	if p := progressOf(t, tgt); p.LSN != lsn(60) {
		t.Fatalf("progress %s, want %s", p.LSN, lsn(60))
	}
	// Progress never moves backwards.
	apply(t, s, lsn(55))
	if p := progressOf(t, tgt); p.LSN != lsn(60) {
		t.Fatalf("progress moved back to %s, want %s", p.LSN, lsn(60))
	}
	// Another slot is independent.
	tx, err = s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: "other", LSN: lsn(5)}); err != nil {
		t.Fatal(err)
	}
	if p := progressOf(t, tgt); p.LSN != lsn(60) {
		t.Fatalf("progress %s, want %s", p.LSN, lsn(60))
	}
	// A failed transaction leaves progress where it was.
	err = applyErr(t, s, lsn(70), Ins(items, lsn(65), Row(T("1"), N(), N())))
	if err == nil {
		t.Fatal("duplicate insert: no error")
	}
	if p := progressOf(t, tgt); p.LSN != lsn(60) {
		t.Fatalf("progress after failed transaction: %s, want %s", p.LSN, lsn(60))
	}
}

func testErrorNamesTableAndLSN(t *testing.T, tgt Target) {
	items := ItemsTable("public", "dup_items")
	s, _ := open(t, tgt, items)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	err := applyErr(t, s, lsn(20), Ins(items, lsn(11), Row(T("1"), N(), N())))
	wantErrMentions(t, err, "dup_items", lsn(11).String())
	if errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("duplicate key is retryable: %v", err)
	}
	// A value the target cannot hold.
	err = applyErr(t, s, lsn(30), Ins(items, lsn(21), Row(T("not a number"), N(), N())))
	wantErrMentions(t, err, "dup_items", lsn(21).String())
	if errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("bad value is retryable: %v", err)
	}
	// The sink recovers for the next transaction.
	apply(t, s, lsn(40), Ins(items, lsn(31), Row(T("2"), N(), N())))
	wantRows(t, tgt, items, `1|\N|\N`, `2|\N|\N`)
}

func testPipelinedError(t *testing.T, tgt Target) {
	items := ItemsTable("public", "pipe")
	other := ItemsTable("public", "pipe_other")
	s, _ := open(t, tgt, items, other)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("7"), N(), N())))
	// Short runs (statements): the 7th change of many collides.
	var chs []*sink.Change
	for i := range 12 {
		tb := items
		if i%2 == 1 {
			tb = other
		}
		id := 100 + i
		if i == 6 {
			id = 7
		}
		chs = append(chs, Ins(tb, lsn(1000+i), Row(T(itoa(id)), N(), N())))
	}
	err := applyErr(t, s, lsn(2000), chs...)
	wantErrMentions(t, err, `pipe`, lsn(1006).String())
	for i := range 12 {
		if i != 6 && strings.Contains(err.Error(), lsn(1000+i).String()) {
			t.Fatalf("error %q names the LSN of change %d", err, i)
		}
	}
	// A long run (bulk path): row 150 of 300 collides.
	chs = chs[:0]
	for i := range 300 {
		id := 1000 + i
		if i == 150 {
			id = 7
		}
		chs = append(chs, Ins(items, lsn(3000+i), Row(T(itoa(id)), T("bulk"), N())))
	}
	err = applyErr(t, s, lsn(4000), chs...)
	wantErrMentions(t, err, `pipe`, lsn(3150).String())
	wantRows(t, tgt, items, `7|\N|\N`)
	wantRows(t, tgt, other)
}

func testMissingRow(t *testing.T, tgt Target) {
	items := ItemsTable("public", "missing")
	s, _ := open(t, tgt, items)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	err := applyErr(t, s, lsn(20),
		Upd(items, lsn(11), Row(T("1"), T("ok"), N())),
		Upd(items, lsn(12), Row(T("42"), T("nowhere"), N())),
		Upd(items, lsn(13), Row(T("1"), T("ok again"), N())),
	)
	wantErrMentions(t, err, "missing", "42", lsn(12).String())
	err = applyErr(t, s, lsn(20), Del(items, lsn(14), source.OldKey, Row(T("43"), N(), N())))
	wantErrMentions(t, err, "missing", "43", lsn(14).String())
	wantRows(t, tgt, items, `1|\N|\N`)
}

// awkward are text values that need escaping somewhere.
var awkward = []string{
	"tab\there", "new\nline", "carriage\rreturn", `back\slash`, `\N`, `\\N`, "\\.", ".",
	"trailing backslash\\", "ünïcödé", "日本語", "emoji 🎉", " leading and trailing ", "|pipe|", "'quote'", `"dq"`,
	"a\r\n\tb\\c", "",
}

func testLongInsertRuns(t *testing.T, tgt Target) {
	items := ItemsTable("public", "long_runs")
	s, _ := open(t, tgt, items)
	var chs []*sink.Change
	var want []string
	for i := range 1000 {
		name := awkward[i%len(awkward)]
		note := N()
		noteText := `\N`
		if i%3 == 0 {
			note = T(awkward[(i+5)%len(awkward)])
			noteText = awkward[(i+5)%len(awkward)]
		}
		chs = append(chs, Ins(items, lsn(i), Row(T(itoa(i)), T(name), note)))
		want = append(want, itoa(i)+"|"+name+"|"+noteText)
	}
	// Interrupt the run with an update and continue it.
	chs = append(chs[:500:500], append([]*sink.Change{Upd(items, lsn(5000), Row(T("3"), T("updated\tmid-run"), N()))}, chs[500:]...)...)
	want[3] = "3|updated\tmid-run|\\N"
	apply(t, s, lsn(10000), chs...)
	wantRows(t, tgt, items, want...)
}

// testManyRows: long runs of updates and deletes of distinct rows (which a
// sink may apply as one statement each) with awkward values, NULLs, unchanged
// TOAST values and repeated rows; a missing row among many is still named.
func testManyRows(t *testing.T, tgt Target) {
	items := ItemsTable("public", "many_rows")
	s, _ := open(t, tgt, items)
	var chs []*sink.Change
	want := map[int]string{}
	for i := range 300 {
		chs = append(chs, Ins(items, lsn(i), Row(T(itoa(i)), T("start"), T("note"))))
		want[i] = itoa(i) + "|start|note"
	}
	apply(t, s, lsn(1000), chs...)

	chs = chs[:0]
	at := 1000
	next := func() source.LSN { at++; return lsn(at) }
	for i := range 200 {
		name := awkward[i%len(awkward)]
		switch {
		case i%7 == 3:
			chs = append(chs, Upd(items, next(), Row(T(itoa(i)), N(), N())))
			want[i] = itoa(i) + `|\N|\N`
		case i >= 100 && i < 150:
			// The note is unchanged TOAST: left as it is.
			chs = append(chs, Upd(items, next(), Row(T(itoa(i)), T(name), U())))
			want[i] = itoa(i) + "|" + name + "|note"
		default:
			chs = append(chs, Upd(items, next(), Row(T(itoa(i)), T(name), T(awkward[(i+3)%len(awkward)]))))
			want[i] = itoa(i) + "|" + name + "|" + awkward[(i+3)%len(awkward)]
		}
		if i == 60 {
			// A row updated twice in one run, then again later.
			chs = append(chs, Upd(items, next(), Row(T("5"), T("twice"), T("t"))))
			want[5] = "5|twice|t"
		}
	}
	for i := 200; i < 290; i++ {
		chs = append(chs, Del(items, next(), source.OldKey, Row(T(itoa(i)), N(), N())))
		delete(want, i)
	}
	chs = append(chs, Upd(items, next(), Row(T("5"), T("thrice"), N())))
	want[5] = `5|thrice|\N`
	chs = append(chs, Ins(items, next(), Row(T("250"), T("back"), N())))
	want[250] = `250|back|\N`
	chs = append(chs, Del(items, next(), source.OldKey, Row(T("250"), N(), N())))
	delete(want, 250)
	apply(t, s, lsn(5000), chs...)
	var rows []string
	for _, r := range want {
		rows = append(rows, r)
	}
	wantRows(t, tgt, items, rows...)

	// A missing row in the middle of a long run of updates, then of deletes:
	// the error names it, and nothing of the transaction stays.
	chs = chs[:0]
	for i := range 60 {
		id := i
		if i == 37 {
			id = 9999
		}
		chs = append(chs, Upd(items, lsn(6000+i), Row(T(itoa(id)), T("lost"), N())))
	}
	wantErrMentions(t, applyErr(t, s, lsn(7000), chs...), "many_rows", "9999", lsn(6037).String())
	chs = chs[:0]
	for i := range 60 {
		id := i
		if i == 21 {
			id = 8888
		}
		chs = append(chs, Del(items, lsn(8000+i), source.OldKey, Row(T(itoa(id)), N(), N())))
	}
	wantErrMentions(t, applyErr(t, s, lsn(9000), chs...), "many_rows", "8888", lsn(8021).String())
	wantRows(t, tgt, items, rows...)
}

func testEmptyVersusNull(t *testing.T, tgt Target) {
	items := ItemsTable("public", "empties")
	s, _ := open(t, tgt, items)
	apply(t, s, lsn(10),
		Ins(items, lsn(1), Row(T("1"), T(""), N())),
		Ins(items, lsn(2), Row(T("2"), N(), T(""))),
	)
	rows := tgt.Rows(t, items)
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	want := [][]string{{"1", "", Null}, {"2", Null, ""}}
	if fmt.Sprint(rows) != fmt.Sprint(want) || rows[0][1] != "" || rows[0][2] != Null || rows[1][1] != Null {
		t.Fatalf("rows %q, want %q", rows, want)
	}
}

func testEnsureTableEvolves(t *testing.T, tgt Target) {
	v1 := ItemsTable("public", "evolving")
	s, _ := open(t, tgt, v1)
	apply(t, s, lsn(10), Ins(v1, lsn(1), Row(T("1"), T("a"), N())))
	v2 := ItemsTable("public", "evolving")
	v2.Columns = append(v2.Columns, schema.Column{Name: "extra", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 4})
	ctx := ctxFor(t)
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(v1, lsn(11), Row(T("2"), T("b"), N()))); err != nil {
		t.Fatal(err)
	}
	// A Relation message in the middle of a transaction: the DDL lands after
	// the change before it and before the change after it. A sink whose DDL
	// commits implicitly gets it between two transactions, as apply does.
	if dc, ok := s.(sink.DDLCommits); ok && dc.DDLCommits() {
		if err := tx.Commit(ctx, sink.Progress{Slot: Slot, LSN: lsn(11)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EnsureTable(ctx, v2, v1); err != nil {
		t.Fatalf("EnsureTable(v2, v1): %v", err)
	}
	if dc, ok := s.(sink.DDLCommits); ok && dc.DDLCommits() {
		if tx, err = s.Begin(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Apply(ctx, Ins(v2, lsn(12), Row(T("3"), T("c"), N(), T("new")))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Upd(v2, lsn(13), Row(T("1"), T("a"), N(), T("set")))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: Slot, LSN: lsn(20)}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, tgt, v2, `1|a|\N|set`, `2|b|\N|\N`, `3|c|\N|new`)
	// EnsureTable is idempotent.
	if err := s.EnsureTable(ctx, v2, nil); err != nil {
		t.Fatalf("EnsureTable again: %v", err)
	}
}

func testQuotedIdentifiers(t *testing.T, tgt Target) {
	tb := &schema.Table{RelationID: 16403, Schema: "Odd Schema", Name: `Mixed "Case" Table`, ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{
			{Name: "Id", TypeOID: 20, TypeMod: -1, TypeName: "bigint", Key: true, NotNull: true, Attnum: 1},
			{Name: "select", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 2},
			{Name: `we"ird`, TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 3},
		}}
	s, _ := open(t, tgt, tb)
	var chs []*sink.Change
	for i := range 100 { // long enough for the bulk path
		chs = append(chs, Ins(tb, lsn(i), Row(T(itoa(i)), T("s"), T("w"))))
	}
	chs = append(chs, Upd(tb, lsn(200), Row(T("1"), T("S"), U())), Del(tb, lsn(201), source.OldKey, Row(T("2"), N(), N())))
	apply(t, s, lsn(300), chs...)
	tx, err := s.Begin(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Truncate(ctxFor(t), []*schema.Table{tb}, 0); err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctxFor(t), Ins(tb, lsn(301), Row(T("1"), T("S"), T("w")))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctxFor(t), sink.Progress{Slot: Slot, LSN: lsn(400)}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, tgt, tb, `1|S|w`)
}

func twoPhase(t *testing.T, s sink.Sink) sink.TwoPhase {
	t.Helper()
	tp, ok := s.(sink.TwoPhase)
	if !ok {
		t.Skip("the sink has no sink.TwoPhase: prepared transactions apply at COMMIT PREPARED")
	}
	if p, ok := s.(sink.PrepareChecker); ok && !p.CanPrepare() {
		t.Fatal("the test target cannot prepare transactions: configure it to (e.g. max_prepared_transactions > 0)")
	}
	return tp
}

func prepare(t *testing.T, s sink.Sink, tp sink.TwoPhase, gid string, at source.LSN, changes ...*sink.Change) {
	t.Helper()
	ctx := ctxFor(t)
	begin := s.Begin
	if pb, ok := s.(sink.PreparedBeginner); ok {
		begin = func(ctx context.Context) (sink.Tx, error) { return pb.BeginPrepared(ctx, gid) }
	}
	tx, err := begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if err := tx.Apply(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	if err := tp.Prepare(ctx, tx, gid, sink.Progress{Slot: Slot, LSN: at}); err != nil {
		t.Fatalf("Prepare %s: %v", gid, err)
	}
}

func wantPrepared(t *testing.T, tp sink.TwoPhase, prefix string, want ...string) {
	t.Helper()
	got, err := tp.PreparedGIDs(ctxFor(t), prefix)
	if err != nil {
		t.Fatalf("PreparedGIDs: %v", err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Fatalf("prepared GIDs with prefix %q: %q, want %q", prefix, got, want)
	}
}

func testTwoPhase(t *testing.T, tgt Target) {
	items := ItemsTable("public", "tp")
	s, _ := open(t, tgt, items)
	tp := twoPhase(t, s)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), T("before"), N())))
	var chs []*sink.Change
	for i := range 100 {
		chs = append(chs, Ins(items, lsn(20+i), Row(T(itoa(100+i)), T("prepared"), N())))
	}
	chs = append(chs, Upd(items, lsn(130), Row(T("1"), T("after"), N())))
	prepare(t, s, tp, "sinktest_1_777", lsn(200), chs...)
	wantPrepared(t, tp, "sinktest_", "sinktest_1_777")
	wantPrepared(t, tp, "other_")
	wantRows(t, tgt, items, `1|before|\N`)
	if p := progressOf(t, tgt); p.LSN != lsn(10) {
		t.Fatalf("progress while prepared: %s, want %s (unchanged)", p.LSN, lsn(10))
	}
	if err := tp.CommitPrepared(ctxFor(t), "sinktest_1_777", sink.Progress{Slot: Slot, LSN: lsn(300)}); err != nil {
		t.Fatalf("CommitPrepared: %v", err)
	}
	wantPrepared(t, tp, "sinktest_")
	if got := len(tgt.Rows(t, items)); got != 101 {
		t.Fatalf("after CommitPrepared: %d rows, want 101", got)
	}
	if p := progressOf(t, tgt); p.LSN != lsn(300) {
		t.Fatalf("progress after CommitPrepared: %s, want %s", p.LSN, lsn(300))
	}
	// The sink keeps working normally.
	apply(t, s, lsn(400), Del(items, lsn(350), source.OldKey, Row(T("1"), N(), N())))
	if got := len(tgt.Rows(t, items)); got != 100 {
		t.Fatalf("%d rows, want 100", got)
	}
}

func testTwoPhaseRollback(t *testing.T, tgt Target) {
	items := ItemsTable("public", "tp_rb")
	s, _ := open(t, tgt, items)
	tp := twoPhase(t, s)
	prepare(t, s, tp, "sinktest_1_900", lsn(100), Ins(items, lsn(1), Row(T("1"), N(), N())))
	wantPrepared(t, tp, "sinktest_", "sinktest_1_900")
	if err := tp.RollbackPrepared(ctxFor(t), "sinktest_1_900", sink.Progress{Slot: Slot, LSN: lsn(200)}); err != nil {
		t.Fatalf("RollbackPrepared: %v", err)
	}
	wantPrepared(t, tp, "sinktest_")
	wantRows(t, tgt, items)
	if p := progressOf(t, tgt); p.LSN != lsn(200) {
		t.Fatalf("progress after RollbackPrepared: %s, want %s", p.LSN, lsn(200))
	}
	// The same GID can be used again (a source transaction prepared anew).
	prepare(t, s, tp, "sinktest_1_900", lsn(300), Ins(items, lsn(250), Row(T("2"), N(), N())))
	if err := tp.CommitPrepared(ctxFor(t), "sinktest_1_900", sink.Progress{Slot: Slot, LSN: lsn(400)}); err != nil {
		t.Fatalf("CommitPrepared: %v", err)
	}
	wantRows(t, tgt, items, `2|\N|\N`)
}

func testTwoPhaseNoLockWait(t *testing.T, tgt Target) {
	items := ItemsTable("public", "tp_lock")
	s, _ := open(t, tgt, items)
	tp := twoPhase(t, s)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	prepare(t, s, tp, "sinktest_1_1", lsn(100), Ins(items, lsn(50), Row(T("2"), N(), N())))
	prepare(t, s, tp, "sinktest_1_2", lsn(150), Upd(items, lsn(120), Row(T("1"), T("by prepared"), N())))
	// Later transactions commit and record progress while both are prepared.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(items, lsn(160), Row(T("3"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: Slot, LSN: lsn(200)}); err != nil {
		t.Fatalf("commit while another transaction is prepared (lock wait?): %v", err)
	}
	wantPrepared(t, tp, "sinktest_", "sinktest_1_1", "sinktest_1_2")
	wantRows(t, tgt, items, `1|\N|\N`, `3|\N|\N`)
	if err := tp.CommitPrepared(ctxFor(t), "sinktest_1_2", sink.Progress{Slot: Slot, LSN: lsn(300)}); err != nil {
		t.Fatal(err)
	}
	if err := tp.CommitPrepared(ctxFor(t), "sinktest_1_1", sink.Progress{Slot: Slot, LSN: lsn(310)}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, tgt, items, `1|by prepared|\N`, `2|\N|\N`, `3|\N|\N`)
	if p := progressOf(t, tgt); p.LSN != lsn(310) {
		t.Fatalf("progress %s, want %s", p.LSN, lsn(310))
	}
}

func testBulkLoad(t *testing.T, tgt Target) {
	items := ItemsTable("public", "bulk")
	s, _ := open(t, tgt, items)
	bl := target(t, s)
	var data strings.Builder
	var want []string
	for i := range 2000 {
		name := awkward[i%len(awkward)]
		data.WriteString(itoa(i) + "\t" + copyEscape(name) + "\t\\N\n")
		want = append(want, itoa(i)+"|"+name+`|\N`)
	}
	n, err := bl.CopyFrom(ctxFor(t), items, strings.NewReader(data.String()))
	if err != nil {
		t.Fatalf("CopyFrom: %v", err)
	}
	if n != 2000 {
		t.Fatalf("CopyFrom loaded %d rows, want 2000", n)
	}
	wantRows(t, tgt, items, want...)
	// A bad row fails the whole load and names the table.
	_, err = bl.CopyFrom(ctxFor(t), items, strings.NewReader("5000\tx\t\\N\nnot a number\ty\t\\N\n"))
	wantErrMentions(t, err, "bulk")
	if got := len(tgt.Rows(t, items)); got != 2000 {
		t.Fatalf("after a failed load: %d rows, want 2000", got)
	}
}

// copyEscape escapes a value for COPY text format, independently of the sinks.
func copyEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(s)
}

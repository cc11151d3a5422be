package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
	"github.com/pgrelay/pgrelay/sink/sinktest"
	"github.com/pgrelay/pgrelay/source"
)

// myPrepare applies changes in a transaction begun for gid and prepares it.
func myPrepare(t *testing.T, s *mysql.Sink, gid string, at source.LSN, changes ...*sink.Change) {
	t.Helper()
	ctx := t.Context()
	tx, err := s.BeginPrepared(ctx, gid)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if err := tx.Apply(ctx, ch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Prepare(ctx, tx, gid, sink.Progress{Slot: sinktest.Slot, LSN: at}); err != nil {
		t.Fatalf("Prepare %s: %v", gid, err)
	}
}

func wantGIDs(t *testing.T, s *mysql.Sink, prefix string, want ...string) {
	t.Helper()
	got, err := s.PreparedGIDs(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("prepared GIDs %q, want %q", got, want)
	}
}

// TestSinkMySQLXA: prepared transactions are XA transactions that survive
// the sink's session, found again by a new one under their whole GID (one
// longer than an XA gtrid, as a long slot name makes it), and every crash
// window between XA PREPARE, XA COMMIT and the bookkeeping is settled.
func TestSinkMySQLXA(t *testing.T) {
	my, s := myTarget(t, mysql.Options{BatchBytes: 2048})
	if !s.CanPrepare() {
		t.Fatal("MariaDB cannot prepare XA transactions for pgrelay")
	}
	ctx := t.Context()
	items := sinktest.ItemsTable("public", "xa_items")
	ensure(t, s, items)
	T, N := sinktest.T, sinktest.N
	mustApply(t, s, 10, sinktest.Ins(items, 1, sinktest.Row(T("1"), T("before"), N())))
	slot := strings.Repeat("s", 63)
	gidA, gidB, gidC := sink.GID(slot, 4000000001), sink.GID(slot, 4000000002), sink.GID(slot, 4000000003)
	if len(gidA) <= 64 {
		t.Fatalf("GID %q fits an XA gtrid: the test needs a longer one", gidA)
	}
	// A: a prepared transaction larger than a batch (the batches of the
	// sink are 2 KiB here), then the sink's session is gone (a crash).
	var chs []*sink.Change
	for i := range 200 {
		chs = append(chs, sinktest.Ins(items, source.LSN(20+i), sinktest.Row(T(strconv.Itoa(100+i)), T("prepared "+strings.Repeat("x", 50)), N())))
	}
	chs = append(chs, sinktest.Upd(items, 300, sinktest.Row(T("1"), T("after"), N())))
	myPrepare(t, s, gidA, 400, chs...)
	myPrepare(t, s, gidB, 500, sinktest.Ins(items, 450, sinktest.Row(T("2"), N(), N())))
	myPrepare(t, s, gidC, 600, sinktest.Ins(items, 550, sinktest.Row(T("3"), N(), N())))
	wantMyQuery(t, my, "1", "SELECT COUNT(*) FROM xa_items")
	// Later transactions commit while these are prepared.
	mustApply(t, s, 700, sinktest.Ins(items, 650, sinktest.Row(T("4"), N(), N())))

	s2 := (&mySinkTarget{my: my}).open(t)
	if p, err := s2.Setup(ctx, sinktest.Slot); err != nil || p.LSN != 700 {
		t.Fatalf("Setup: %v, %v", p.LSN, err)
	}
	wantGIDs(t, s2, sink.GIDPrefix(slot), gidA, gidB, gidC)
	wantGIDs(t, s2, "pgrelay_other_")
	if ok, err := s2.PreparedCommitted(ctx, gidA, 400); err != nil || ok {
		t.Fatalf("PreparedCommitted of a prepared one: %v, %v", ok, err)
	}
	if err := s2.CommitPrepared(ctx, gidA, sink.Progress{Slot: sinktest.Slot, LSN: 800}); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "202|after", "SELECT CONCAT_WS('|', COUNT(*), MAX(CASE WHEN id = 1 THEN name END)) FROM xa_items")

	// B committed by hand (XA COMMIT done, the bookkeeping not): it reads as
	// committed, and CommitPrepared only books it.
	my.Exec(t, "XA COMMIT "+mysql.XID(my.DB, gidB))
	if ok, err := s2.PreparedCommitted(ctx, gidB, 500); err != nil || !ok {
		t.Fatalf("PreparedCommitted after XA COMMIT: %v, %v", ok, err)
	}
	if ok, _ := s2.PreparedCommitted(ctx, gidB, 501); ok {
		t.Fatal("PreparedCommitted with another prepare LSN: true")
	}
	if err := s2.RollbackPrepared(ctx, gidB, sink.Progress{Slot: sinktest.Slot, LSN: 850}); err == nil || !strings.Contains(err.Error(), "cannot be rolled back") {
		t.Fatalf("RollbackPrepared of a committed one: %v", err)
	}
	if err := s2.CommitPrepared(ctx, gidB, sink.Progress{Slot: sinktest.Slot, LSN: 900}); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "1", "SELECT COUNT(*) FROM xa_items WHERE id = 2")
	// C rolled back by hand: RollbackPrepared only moves progress, and a
	// CommitPrepared would say the changes are lost.
	my.Exec(t, "XA ROLLBACK "+mysql.XID(my.DB, gidC))
	if err := s2.CommitPrepared(ctx, gidC, sink.Progress{Slot: sinktest.Slot, LSN: 950}); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("CommitPrepared of a rolled back one: %v", err)
	}
	if err := s2.RollbackPrepared(ctx, gidC, sink.Progress{Slot: sinktest.Slot, LSN: 1000}); err != nil {
		t.Fatal(err)
	}
	wantGIDs(t, s2, sink.GIDPrefix(slot))
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM pgrelay_prepared")
	if p, _ := s2.Progress(ctx, sinktest.Slot); p.LSN != 1000 {
		t.Fatalf("progress %s, want 0/3E8", p.LSN)
	}
	// A transaction begun for a GID may still be committed as usual.
	tx, err := s2.BeginPrepared(ctx, gidA)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, sinktest.Ins(items, 1050, sinktest.Row(T("5"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: sinktest.Slot, LSN: 1100}); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s2, 1200, sinktest.Ins(items, 1150, sinktest.Row(T("6"), N(), N())))
	wantMyQuery(t, my, "2", "SELECT COUNT(*) FROM xa_items WHERE id IN (5, 6)")
	// Rolled back before it was prepared: nothing of it stays.
	tx, err = s2.BeginPrepared(ctx, gidB)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := tx.Apply(ctx, sinktest.Ins(items, source.LSN(1300+i), sinktest.Row(T(strconv.Itoa(5000+i)), T(strings.Repeat("y", 60)), N()))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	mustApply(t, s2, 1500, sinktest.Ins(items, 1450, sinktest.Row(T("7"), N(), N())))
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM xa_items WHERE id >= 5000")
	wantGIDs(t, s2, sink.GIDPrefix(slot))
}

// TestSinkMySQLHeldPrepared: a new sink (as the relay's check opens one)
// lists the slot's prepared XA transactions oldest first with the age and
// LSN of their marker rows, uncommitted and locked by the transactions,
// without waiting on those locks (a locking read would fail here after
// innodb_lock_wait_timeout), and leaves its pool's sessions READ COMMITTED.
// One without a marker row is listed too.
func TestSinkMySQLHeldPrepared(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	items := sinktest.ItemsTable("public", "held_items")
	ensure(t, s, items)
	ctx := t.Context()
	T, N := sinktest.T, sinktest.N
	slot := sinktest.Slot
	gidA, gidB, gidC := sink.GID(slot, 101), sink.GID(slot, 102), sink.GID(slot, 103)
	myPrepare(t, s, gidA, 400, sinktest.Ins(items, 350, sinktest.Row(T("1"), N(), N())))

	// B as Prepare makes it, prepared two hours ago by its marker (before
	// pgrelay or the server restarted); C without a marker, holding an
	// uncommitted progress row of another slot. Each stays with the
	// test's session that prepared it (MariaDB) and is rolled back there.
	db := my.Open(t)
	handPrepare := func(gid string, stmts ...string) {
		t.Helper()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		xid := mysql.XID(my.DB, gid)
		for _, stmt := range append(append([]string{"XA START " + xid}, stmts...), "XA END "+xid, "XA PREPARE "+xid) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		t.Cleanup(func() {
			if _, err := conn.ExecContext(context.Background(), "XA ROLLBACK "+xid); err != nil {
				t.Errorf("XA ROLLBACK %s: %v", gid, err)
			}
			conn.Close()
		})
	}
	handPrepare(gidB, "INSERT INTO held_items (id) VALUES (2)",
		"INSERT INTO pgrelay_prepared (slot, gid, xa_xid, end_lsn, created_at) VALUES ('"+slot+"', '"+gidB+"', '', 500, UTC_TIMESTAMP(6) - INTERVAL 2 HOUR)")
	handPrepare(gidC, "INSERT INTO pgrelay_progress (slot, lsn) VALUES ('held_probe', 999)")

	in, err := mysql.New(ctx, my.URL(), mysql.Options{Inspect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(context.Background()) })
	held, err := in.HeldPrepared(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	byGID := map[string]sink.HeldPrepared{}
	for _, h := range held {
		byGID[h.GID] = h
	}
	if len(held) != 3 || held[0].GID != gidB || byGID[gidA].GID == "" || byGID[gidC].GID == "" {
		t.Fatalf("held %+v; want %s first, then %s and %s", held, gidB, gidA, gidC)
	}
	if b := byGID[gidB]; b.Age < 2*time.Hour || b.Age > 3*time.Hour || b.LSN != 500 {
		t.Errorf("%s: age %v, LSN %s; want the marker's: 2h and some moments, 0/1F4", gidB, b.Age, b.LSN)
	}
	if a := byGID[gidA]; a.Age < 0 || a.Age > time.Hour || a.LSN != 400 {
		t.Errorf("%s: age %v, LSN %s; want moments, 0/190", gidA, a.Age, a.LSN)
	}
	if c := byGID[gidC]; c.LSN != 0 {
		t.Errorf("%s without a marker: LSN %s, want 0", gidC, c.LSN)
	}
	// The uncommitted row was read uncommitted in that transaction alone.
	if p, err := in.Progress(ctx, "held_probe"); err != nil || p.LSN != 0 {
		t.Errorf("a session of the pool after HeldPrepared reads another's uncommitted progress: %s, %v; want 0/0", p.LSN, err)
	}
	// A's lock is intact: it commits, and is no longer listed.
	if err := s.CommitPrepared(ctx, gidA, sink.Progress{Slot: slot, LSN: 600}); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "1", "SELECT COUNT(*) FROM held_items")
	if held, err := in.HeldPrepared(ctx, slot); err != nil || len(held) != 2 || held[0].GID != gidB || held[1].GID != gidC || held[1].Age < byGID[gidC].Age {
		t.Errorf("after XA COMMIT of %s: %+v, %v; want %s, then %s no younger than before", gidA, held, err, gidB, gidC)
	}
}

// TestSinkMySQLSequences: a serial key column becomes AUTO_INCREMENT past the
// source sequence's value, so the target's own inserts continue it; a column
// that cannot carry one is left as it is.
func TestSinkMySQLSequences(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	items := sinktest.ItemsTable("public", "seq_items")
	ensure(t, s, items)
	T, N := sinktest.T, sinktest.N
	mustApply(t, s, 10, sinktest.Ins(items, 1, sinktest.Row(T("0"), T("zero"), N())), sinktest.Ins(items, 2, sinktest.Row(T("5"), T("five"), N())))
	seqs := []source.Sequence{
		{Schema: "public", Name: "seq_items_id_seq", TableSchema: "public", Table: "seq_items", Column: "id", Readable: true, Called: true, LastValue: 41, Increment: 1, Nextval: true},
		{Schema: "public", Name: "seq_items_name_seq", TableSchema: "public", Table: "seq_items", Column: "name", Readable: true, Called: true, LastValue: 3, Increment: 1},
	}
	for range 2 { // again is the same
		if err := s.SetSequences(t.Context(), seqs); err != nil {
			t.Fatal(err)
		}
	}
	my.Exec(t, "INSERT INTO seq_items (name) VALUES ('own')")
	wantMyQuery(t, my, "42", "SELECT id FROM seq_items WHERE name = 'own'")
	wantMyQuery(t, my, "zero", "SELECT name FROM seq_items WHERE id = 0")
	// Replicated rows keep their values, 0 included.
	mustApply(t, s, 20, sinktest.Del(items, 11, source.OldKey, sinktest.Row(T("0"), N(), N())), sinktest.Ins(items, 12, sinktest.Row(T("0"), T("again"), N())))
	wantMyQuery(t, my, "again", "SELECT name FROM seq_items WHERE id = 0")
	wantMyQuery(t, my, "longtext", "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'seq_items' AND COLUMN_NAME = 'name'")
}

// TestSinkMySQLSeedStore: the snapshot state kept in pgrelay_seed and
// pgrelay_table_state, and teardown, as for PostgreSQL targets.
func TestSinkMySQLSeedStore(t *testing.T) {
	my, s := myTarget(t, mysql.Options{})
	ctx := t.Context()
	var store sink.SeedStore = s
	if _, found, err := store.Seed(ctx, "a"); err != nil || found {
		t.Fatalf("Seed before any: %v, %v", found, err)
	}
	if err := store.StartSeed(ctx, "a", 0x1000); err != nil {
		t.Fatal(err)
	}
	for _, st := range []sink.TableState{
		{Schema: "public", Name: "b", State: sink.TablePending},
		{Schema: "public", Name: "a", State: sink.TableCopying},
		{Schema: "public", Name: "a", State: sink.TableCopied, Rows: 10, Bytes: 100, RelationID: 16500},
		// A redone copy's snapshot, kept by the later states that do not name one.
		{Schema: "public", Name: "b", State: sink.TablePending, SyncLSN: 0x1800, SyncSnapshot: "700:705:702"},
		{Schema: "public", Name: "b", State: sink.TableCopying},
	} {
		if err := store.SetTableState(ctx, "a", st); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.SetTableState(ctx, "a", sink.TableState{Schema: "public", Name: "c", State: "weird"}); err == nil {
		t.Fatal("unknown state accepted")
	}
	states, err := store.TableStates(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0].Name != "a" || states[0].State != sink.TableCopied || states[0].Rows != 10 || states[0].Bytes != 100 || states[1].State != sink.TableCopying ||
		states[0].SyncLSN != 0 || states[0].SyncSnapshot != "" || states[1].SyncLSN != 0x1800 || states[1].SyncSnapshot != "700:705:702" ||
		states[0].RelationID != 16500 || states[0].UpdatedAt.IsZero() {
		t.Fatalf("states: %+v", states)
	}
	if err := s.SetTableStates(ctx, "a", []sink.TableState{
		{Schema: "public", Name: "b", State: sink.TablePending},
		{Schema: "public", Name: "c", State: sink.TablePending},
		{Schema: "public", Name: "c", State: sink.TableCopied, Rows: 7, Bytes: 70, PublishedAs: "public.c_root"},
		{Schema: "s 1", Name: "D", State: sink.TablePending, SyncLSN: 0x1900, SyncSnapshot: "710:712:"},
	}); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "public.a copied 10 - - -|public.b pending 0 6144 700:705:702 -|public.c copied 7 - - public.c_root|s 1.D pending 0 6400 710:712: -",
		`SELECT GROUP_CONCAT(CONCAT_WS(' ', CONCAT(source_schema, '.', source_name), state, row_count, COALESCE(sync_lsn, '-'), COALESCE(sync_snapshot, '-'), COALESCE(published_as, '-'))
			ORDER BY source_schema, source_name SEPARATOR '|') FROM pgrelay_table_state WHERE slot = 'a'`)
	if err := store.MarkSeeded(ctx, "a", 0x2000); err == nil {
		t.Fatal("MarkSeeded at another consistent point accepted")
	}
	if err := store.MarkSeeded(ctx, "a", 0x1000); err != nil {
		t.Fatal(err)
	}
	seed, found, err := store.Seed(ctx, "a")
	if err != nil || !found || !seed.SnapshotDone || seed.ConsistentPoint != 0x1000 || seed.DoneAt.IsZero() || seed.CreatedAt.IsZero() {
		t.Fatalf("Seed: %+v %v %v", seed, found, err)
	}
	if p, err := s.Progress(ctx, "a"); err != nil || p.LSN != 0x1000 {
		t.Fatalf("progress after MarkSeeded: %+v %v", p, err)
	}
	if err := store.StartSeed(ctx, "a", 0x3000); err != nil {
		t.Fatal(err)
	}
	if states, _ := store.TableStates(ctx, "a"); len(states) != 0 {
		t.Fatalf("states after a new seed: %+v", states)
	}
	if err := store.StartSeed(ctx, "b", 0x1000); err != nil {
		t.Fatal(err)
	}
	if err := s.Teardown(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "b", "SELECT GROUP_CONCAT(slot) FROM pgrelay_seed")
	if err := s.Teardown(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "0", "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'pgrelay\\_%'")
	if err := s.Teardown(ctx, "b"); err != nil {
		t.Fatalf("Teardown twice: %v", err)
	}
	// Setup again brings the metadata back.
	if _, err := s.Setup(ctx, sinktest.Slot); err != nil {
		t.Fatal(err)
	}
	wantMyQuery(t, my, "8", "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'pgrelay\\_%'")
}

// TestSinkMySQLHalfMadeMetadata: a run stopped inside pgrelay's first
// migration (MySQL commits its statements one by one) leaves some of the
// metadata tables: that is no metadata yet for status and teardown, not
// metadata whose other tables they would fail to find; the next run
// finishes the migration.
func TestSinkMySQLHalfMadeMetadata(t *testing.T) {
	my := harness.MariaDB(t)
	ctx := t.Context()
	my.Exec(t, `CREATE TABLE pgrelay_schema_migrations (version INT NOT NULL PRIMARY KEY, name VARCHAR(200) NOT NULL,
		applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB`)
	my.Exec(t, `CREATE TABLE pgrelay_progress (slot VARCHAR(64) NOT NULL PRIMARY KEY, lsn BIGINT UNSIGNED NOT NULL,
		commit_time DATETIME(6) NULL, updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB`)
	in, err := mysql.New(ctx, my.URL(), mysql.Options{Inspect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(context.Background()) })
	if has, err := in.HasMetadata(ctx); err != nil || has {
		t.Fatalf("HasMetadata with the first migration half run: %v, %v; want false", has, err)
	}
	s, err := mysql.New(ctx, my.URL(), mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	if _, err := s.Setup(ctx, sinktest.Slot); err != nil {
		t.Fatalf("Setup after a half-run migration: %v", err)
	}
	if has, err := in.HasMetadata(ctx); err != nil || !has {
		t.Fatalf("HasMetadata after Setup: %v, %v; want true", has, err)
	}
	if _, err := in.KnownRelations(ctx); err != nil {
		t.Fatalf("KnownRelations after Setup: %v", err)
	}
}

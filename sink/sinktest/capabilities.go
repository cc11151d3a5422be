package sinktest

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// The cases of the capabilities beyond apply: the ones the relay needs of
// every sink (sink.Target), and the optional ones, each skipped with the
// reason when the sink lacks it.

// Optional abilities of a Target that some cases need to set the stage; a
// case skips, saying so, when the Target lacks the one it needs.

// TableMaker creates tables on the target without the sink, as a user would.
type TableMaker interface {
	// MakeTable creates schemaName.name (id bigint primary key, name text),
	// with one row when withRow.
	MakeTable(t *testing.T, schemaName, name string, withRow bool)
}

// SessionKiller ends every session of the target's database, as a server
// restart or a network cut would.
type SessionKiller interface {
	KillSessions(t *testing.T)
}

// ReadOnlySwitch makes new sessions of the target database refuse writes (on)
// or take them again.
type ReadOnlySwitch interface {
	SetReadOnly(t *testing.T, on bool)
}

// RestrictedOpener opens a sink as a role that may not create schemas or
// tables on the target.
type RestrictedOpener interface {
	OpenRestricted(t *testing.T) sink.Sink
}

// PreparedCommitter commits a prepared transaction behind the sink's back,
// as a crash right after COMMIT PREPARED leaves it: before the sink recorded
// its position.
type PreparedCommitter interface {
	CommitPreparedBehind(t *testing.T, gid string)
}

// SequenceReader reads the next value the target gives column of table from
// its sequence (identity, serial, auto-increment), using it up.
type SequenceReader interface {
	NextValue(t *testing.T, table *schema.Table, column string) int64
}

// capabilityCases are the cases of this file, in Run's order.
var capabilityCases = []struct {
	name string
	fn   func(*testing.T, Target)
}{
	{"RequiredCapabilities", testRequired},
	{"SeedStore", testSeedStore},
	{"MetadataReads", testMetadataReads},
	{"Teardown", testTeardown},
	{"SlotLock", testSlotLock},
	{"Preflight", testPreflight},
	{"TableInspector", testTableInspector},
	{"ErrorClassRefused", testRefusedClasses},
	{"ErrorClassRetryable", testRetryableClass},
	{"ErrorClassReadOnly", testReadOnlyClass},
	{"DDLInTransaction", testDDLInTransaction},
	{"DDLCommitsImplicitly", testDDLCommits},
	{"AsyncCommit", testAsyncCommit},
	{"PreparedCommits", testPreparedCommits},
	{"PreparedLister", testPreparedLister},
	{"Sequences", testSequences},
	{"SchemaCarrier", testSchemaCarrier},
	{"CutoverRecorder", testCutoverRecorder},
	{"SequenceChecker", testSequenceChecker},
}

// target is s with every required capability, or the test fails naming those
// it lacks.
func target(t *testing.T, s sink.Sink) sink.Target {
	t.Helper()
	var missing []string
	for name, ok := range map[string]bool{
		"SeedStore":      is[sink.SeedStore](s),
		"BulkLoader":     is[sink.BulkLoader](s),
		"MetadataReader": is[sink.MetadataReader](s),
		"SlotLocker":     is[sink.SlotLocker](s),
		"Teardowner":     is[sink.Teardowner](s),
		"TableInspector": is[sink.TableInspector](s),
	} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Fatalf("the sink lacks required capabilities: sink.%s", strings.Join(missing, ", sink."))
	}
	return s.(sink.Target)
}

func is[T any](s sink.Sink) bool { _, ok := s.(T); return ok }

// testRequired: the relay runs on a sink with every capability of
// sink.Target.
func testRequired(t *testing.T, tgt Target) {
	target(t, tgt.Open(t))
}

func testSeedStore(t *testing.T, tgt Target) {
	s, _ := open(t, tgt)
	st := target(t, s)
	ctx := ctxFor(t)
	if _, found, err := st.Seed(ctx, Slot); err != nil || found {
		t.Fatalf("fresh target: seed found %v, %v", found, err)
	}
	if err := st.StartSeed(ctx, Slot, lsn(100)); err != nil {
		t.Fatal(err)
	}
	seed, found, err := st.Seed(ctx, Slot)
	if err != nil || !found || seed.SnapshotDone || seed.ConsistentPoint != lsn(100) {
		t.Fatalf("after StartSeed: %+v found %v, %v", seed, found, err)
	}
	states := []sink.TableState{
		{Schema: "public", Name: "b", RelationID: 7, State: sink.TableCopying},
		{Schema: "public", Name: "a", State: sink.TableIndexed, Rows: 10, Bytes: 100, SyncLSN: lsn(150), SyncSnapshot: "10:12:11", PublishedAs: "filter: "},
	}
	for _, s := range states {
		if err := st.SetTableState(ctx, Slot, s); err != nil {
			t.Fatal(err)
		}
	}
	// A state replaced keeps what it does not say (the OID, the sync).
	if err := st.SetTableState(ctx, Slot, sink.TableState{Schema: "public", Name: "b", State: sink.TableIndexed, Rows: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := st.TableStates(ctx, Slot)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("table states %+v, want a then b", got)
	}
	if a := got[0]; a.State != sink.TableIndexed || a.Rows != 10 || a.Bytes != 100 || a.SyncLSN != lsn(150) || a.SyncSnapshot != "10:12:11" || a.PublishedAs != "filter: " {
		t.Errorf("state of a: %+v", a)
	}
	if b := got[1]; b.State != sink.TableIndexed || b.Rows != 3 || b.RelationID != 7 {
		t.Errorf("state of b: %+v, want indexed, 3 rows, its OID kept", b)
	}
	if err := st.MarkSeeded(ctx, Slot, lsn(99)); err == nil {
		t.Error("MarkSeeded at another point than the seed's was accepted")
	}
	if err := st.MarkSeeded(ctx, Slot, lsn(100)); err != nil {
		t.Fatal(err)
	}
	if seed, _, _ := st.Seed(ctx, Slot); !seed.SnapshotDone {
		t.Error("not done after MarkSeeded")
	}
	if p := progressOf(t, tgt); p.LSN != lsn(100) {
		t.Errorf("progress after MarkSeeded: %s, want %s", p.LSN, lsn(100))
	}
	// A new seed forgets the table states.
	if err := st.StartSeed(ctx, Slot, lsn(200)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.TableStates(ctx, Slot); len(got) != 0 {
		t.Errorf("states after a new seed: %+v", got)
	}
}

func testMetadataReads(t *testing.T, tgt Target) {
	ctx := ctxFor(t)
	fresh := target(t, tgt.Open(t))
	if has, err := fresh.HasMetadata(ctx); err != nil || has {
		t.Fatalf("a target pgrelay never wrote to: has metadata %v, %v", has, err)
	}
	if has, _ := fresh.HasMetadata(ctx); has {
		t.Fatal("asking created the metadata")
	}
	if fresh.MetadataSchema() == "" {
		t.Error("no metadata schema named")
	}
	items := ItemsTable("public", "known")
	s, _ := open(t, tgt, items)
	st := target(t, s)
	if has, err := st.HasMetadata(ctx); err != nil || !has {
		t.Fatalf("after Setup: has metadata %v, %v", has, err)
	}
	if p, err := st.Progress(ctx, Slot); err != nil || p.LSN != 0 {
		t.Fatalf("progress before anything was applied: %+v, %v", p, err)
	}
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	if p, err := st.Progress(ctx, Slot); err != nil || p.LSN != lsn(10) || p.CommitTime.IsZero() {
		t.Fatalf("progress: %+v, %v; want %s with its commit time", p, err, lsn(10))
	}
	known, err := st.KnownRelations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(known, func(k sink.KnownRelation) bool {
		return k.Schema == "public" && k.Name == "known" && k.RelationID == items.RelationID
	}) {
		t.Errorf("known relations %+v lack public.known with OID %d", known, items.RelationID)
	}
}

func testTeardown(t *testing.T, tgt Target) {
	ctx := ctxFor(t)
	items := ItemsTable("public", "torn")
	s, _ := open(t, tgt, items)
	st := target(t, s)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	var gid string
	if tp, ok := s.(sink.TwoPhase); ok && canPrepare(s) {
		gid = sink.GID(Slot, 777)
		prepare(t, s, tp, gid, lsn(20), Ins(items, lsn(11), Row(T("2"), N(), N())))
		// Another slot's prepared transaction is not this slot's.
		prepare(t, s, tp, sink.GID(Slot+"_x", 1), lsn(30), Ins(items, lsn(21), Row(T("3"), N(), N())))
	}
	if err := st.StartSeed(ctx, "other", lsn(5)); err != nil {
		t.Fatal(err)
	}
	done, err := st.RollbackSlotPrepared(ctx, Slot)
	if err != nil {
		t.Fatal(err)
	}
	if gid != "" && !slices.Equal(done, []string{gid}) {
		t.Errorf("rolled back %q, want only %q", done, gid)
	}
	if gid == "" && len(done) != 0 {
		t.Errorf("rolled back %q on a target that prepared nothing", done)
	}
	if tp, ok := s.(sink.TwoPhase); ok && gid != "" {
		if err := tp.RollbackPrepared(ctx, sink.GID(Slot+"_x", 1), sink.Progress{Slot: Slot, LSN: lsn(40)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Teardown(ctx, Slot); err != nil {
		t.Fatal(err)
	}
	// Another slot's record keeps the metadata; its teardown removes it.
	if has, err := st.HasMetadata(ctx); err != nil || !has {
		t.Fatalf("after the teardown of one slot of two: has metadata %v, %v", has, err)
	}
	if _, found, _ := st.Seed(ctx, "other"); !found {
		t.Error("the other slot's seed went with the teardown")
	}
	if err := st.Teardown(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if has, err := st.HasMetadata(ctx); err != nil || has {
		t.Fatalf("after the teardown of every slot: has metadata %v, %v", has, err)
	}
	wantRows(t, tgt, items, `1|\N|\N`)
}

func testSlotLock(t *testing.T, tgt Target) {
	ctx := ctxFor(t)
	first, second := target(t, tgt.Open(t)), target(t, tgt.Open(t))
	release, err := first.LockSlot(ctx, Slot, func() { t.Error("waited for a lock nobody held") })
	if err != nil {
		t.Fatal(err)
	}
	// Another slot's lock is another lock.
	if _, err := second.LockSlot(ctx, Slot+"_other", func() { t.Error("waited for another slot's lock") }); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	var once sync.Once
	took := make(chan error, 1)
	go func() {
		_, err := second.LockSlot(ctx, Slot, func() { once.Do(func() { close(waiting) }) })
		took <- err
	}()
	select {
	case <-waiting:
	case err := <-took:
		t.Fatalf("a second sink took the slot's lock the first holds: %v", err)
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-took; err != nil {
		t.Fatalf("the waiting sink did not take over: %v", err)
	}
	// Closing the holder releases the lock too.
	third := target(t, tgt.Open(t))
	go func() {
		_, err := third.LockSlot(ctx, Slot, func() {})
		took <- err
	}()
	if err := second.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-took; err != nil {
		t.Fatalf("after the holder closed: %v", err)
	}
}

func testPreflight(t *testing.T, tgt Target) {
	pf, ok := tgt.Open(t).(sink.Preflighter)
	if !ok {
		t.Skip("the sink has no sink.Preflighter: problems show at the first write")
	}
	problems, err := pf.Preflight(ctxFor(t), []string{"public", "sinktest_new"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if p.Kind != sink.ProblemSetting {
			t.Errorf("a target that takes everything: problem %+v", p)
		}
	}
	ro, ok := tgt.(RestrictedOpener)
	if !ok {
		t.Skip("the target cannot open a sink as a role without privileges: only the unrestricted case was checked")
	}
	restricted := ro.OpenRestricted(t)
	problems, err = restricted.(sink.Preflighter).Preflight(ctxFor(t), []string{"public", "sinktest_new"})
	if err != nil {
		t.Fatal(err)
	}
	// The metadata's schema may be one of its own (refused as a schema to
	// create) or the one public lands in (MySQL: the URL's database).
	meta := target(t, restricted).MetadataSchema()
	var metaRefused, newRefused, publicRefused bool
	for _, p := range problems {
		if p.Object == "" || p.Fix == "" {
			t.Errorf("problem %+v does not say what about and how to fix it", p)
		}
		metaRefused = metaRefused || (p.Kind == sink.ProblemCreateSchema || p.Kind == sink.ProblemCreateTables) && strings.Contains(p.Object, meta)
		newRefused = newRefused || p.Kind == sink.ProblemCreateSchema && strings.Contains(p.Object, "sinktest_new")
		publicRefused = publicRefused || p.Kind == sink.ProblemCreateTables
	}
	if !metaRefused || !newRefused || !publicRefused {
		t.Errorf("problems %+v; want the metadata schema (%s) and sinktest_new refused, and tables in public", problems, meta)
	}
}

func testTableInspector(t *testing.T, tgt Target) {
	ctx := ctxFor(t)
	own := ItemsTable("public", "own")
	s, _ := open(t, tgt, own)
	st := target(t, s)
	names := []schema.QualifiedName{{Schema: "public", Name: "own"}, {Schema: "public", Name: "absent"}}
	foreign, err := st.ForeignTables(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(foreign) != 0 {
		t.Errorf("foreign tables %+v: a table the sink created, and one that does not exist, are not", foreign)
	}
	cols, err := st.TableColumns(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	if got := cols[names[0]]; !slices.Equal(got, []string{"id", "name", "note"}) {
		t.Errorf("columns of public.own: %q", got)
	}
	if _, ok := cols[names[1]]; ok {
		t.Error("columns of a table that does not exist")
	}
	tm, ok := tgt.(TableMaker)
	if !ok {
		t.Skip("the target cannot make a table without the sink: tables pgrelay did not create were not checked")
	}
	tm.MakeTable(t, "public", "theirs_full", true)
	tm.MakeTable(t, "public", "theirs_empty", false)
	names = []schema.QualifiedName{{Schema: "public", Name: "theirs_full"}, {Schema: "public", Name: "theirs_empty"}, {Schema: "public", Name: "own"}}
	if foreign, err = st.ForeignTables(ctx, names); err != nil {
		t.Fatal(err)
	}
	if len(foreign) != 2 || foreign[0].Name.Name != "theirs_empty" || foreign[0].HasRows || foreign[1].Name.Name != "theirs_full" || !foreign[1].HasRows ||
		!strings.Contains(foreign[1].Quoted, "theirs_full") {
		t.Errorf("foreign tables %+v, want theirs_empty without rows, then theirs_full with, by name", foreign)
	}
}

// testRefusedClasses: a value the target cannot take and a row breaking a
// constraint are the change's ChangeError, refused; the value also rejected.
func testRefusedClasses(t *testing.T, tgt Target) {
	items := ItemsTable("public", "refused")
	s, _ := open(t, tgt, items)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	err := applyErr(t, s, lsn(20), Ins(items, lsn(11), Row(T("1"), T("again"), N())))
	var ce *sink.ChangeError
	if !errors.As(err, &ce) || !errors.Is(err, sink.ErrChangeRefused) || errors.Is(err, sink.ErrRetryable) || errors.Is(err, sink.ErrValueRejected) {
		t.Errorf("duplicate key: %v; want a refused ChangeError, neither retryable nor a rejected value", err)
	} else if ce.LSN != lsn(11) && !(ce.LSN <= lsn(11) && lsn(11) <= ce.LastLSN) {
		t.Errorf("duplicate key: %v names LSN %s, want %s", err, ce.LSN, lsn(11))
	}
	err = applyErr(t, s, lsn(30), Ins(items, lsn(21), Row(T("not a number"), N(), N())))
	if !errors.As(err, &ce) || !errors.Is(err, sink.ErrChangeRefused) || !errors.Is(err, sink.ErrValueRejected) || errors.Is(err, sink.ErrRetryable) {
		t.Errorf("a value the column cannot hold: %v; want a refused ChangeError, its value rejected, not retryable", err)
	}
	wantRows(t, tgt, items, `1|\N|\N`)
}

// testRetryableClass: a transaction cut off with its connection may be
// retried as a whole, and the retry succeeds.
func testRetryableClass(t *testing.T, tgt Target) {
	sk, ok := tgt.(SessionKiller)
	if !ok {
		t.Skip("the target cannot end the sink's sessions: a lost connection was not checked")
	}
	items := ItemsTable("public", "cut")
	s, _ := open(t, tgt, items)
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	ctx := ctxFor(t)
	tx, err := s.Begin(ctx)
	if err == nil {
		err = tx.Apply(ctx, Ins(items, lsn(11), Row(T("2"), N(), N())))
	}
	if err != nil {
		t.Fatal(err)
	}
	sk.KillSessions(t)
	err = tx.Commit(ctx, sink.Progress{Slot: Slot, LSN: lsn(20)})
	if err == nil {
		// A sink that sent the change before the cut may have committed;
		// then the cut shows at the next transaction.
		err = applyErr(t, s, lsn(30), Ins(items, lsn(21), Row(T("3"), N(), N())))
	} else {
		_ = tx.Rollback(ctx)
	}
	if !errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("a transaction cut off with its connection: %v, want it retryable", err)
	}
	apply(t, s, lsn(40), Ins(items, lsn(31), Row(T("4"), N(), N())))
	if got := len(tgt.Rows(t, items)); got < 2 {
		t.Errorf("%d rows after the retry", got)
	}
}

// testReadOnlyClass: a write a read-only target refuses is marked so (the
// relay retries it as such, not as ErrRetryable), and a preflight finds it.
func testReadOnlyClass(t *testing.T, tgt Target) {
	rs, ok := tgt.(ReadOnlySwitch)
	if !ok {
		t.Skip("the target cannot be made read-only: the class was not checked")
	}
	items := ItemsTable("public", "ro")
	_, _ = open(t, tgt, items)
	rs.SetReadOnly(t, true)
	t.Cleanup(func() { rs.SetReadOnly(t, false) })
	s := tgt.Open(t)
	_, err := s.Setup(ctxFor(t), Slot)
	if err == nil {
		err = applyErr(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	}
	if !errors.Is(err, sink.ErrReadOnly) || errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("writing to a read-only target: %v, want it marked read-only, not retryable", err)
	}
	// A preflight finds it first, saying which database and what to undo.
	pf, ok := tgt.Open(t).(sink.Preflighter)
	if !ok {
		return
	}
	problems, err := pf.Preflight(ctxFor(t), []string{"public"})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 || problems[0].Kind != sink.ProblemReadOnly || problems[0].Object == "" || problems[0].Fix == "" {
		t.Errorf("preflight of a read-only target: %+v, want a read-only problem first, naming the database and the fix", problems)
	}
}

func ddlCommits(s sink.Sink) bool {
	dc, ok := s.(sink.DDLCommits)
	return ok && dc.DDLCommits()
}

// testDDLInTransaction: DDL run while a transaction is open joins it, and
// goes with its rollback.
func testDDLInTransaction(t *testing.T, tgt Target) {
	items := ItemsTable("public", "ddl_tx")
	s, _ := open(t, tgt, items)
	if ddlCommits(s) {
		t.Skip("the target's DDL commits implicitly (sink.DDLCommits): apply runs it with no transaction open")
	}
	ctx := ctxFor(t)
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(items, lsn(1), Row(T("1"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	added := ItemsTable("public", "ddl_tx_new")
	if err := s.EnsureTable(ctx, added, nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(added, lsn(2), Row(T("2"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	cols, err := target(t, s).TableColumns(ctx, []schema.QualifiedName{{Schema: "public", Name: "ddl_tx_new"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) != 0 {
		t.Errorf("the table created in a rolled back transaction exists: %v", cols)
	}
	wantRows(t, tgt, items)
}

// testDDLCommits: a sink whose DDL commits implicitly says so, and creates and
// evolves tables with no transaction open.
func testDDLCommits(t *testing.T, tgt Target) {
	s, _ := open(t, tgt)
	if !ddlCommits(s) {
		t.Skip("the target's DDL is transactional: DDLInTransaction checks it")
	}
	items := ItemsTable("public", "ddl_auto")
	if err := s.EnsureTable(ctxFor(t), items, nil); err != nil {
		t.Fatal(err)
	}
	apply(t, s, lsn(10), Ins(items, lsn(1), Row(T("1"), N(), N())))
	wantRows(t, tgt, items, `1|\N|\N`)
}

func testAsyncCommit(t *testing.T, tgt Target) {
	items := ItemsTable("public", "async")
	s, _ := open(t, tgt, items)
	ac, ok := s.(sink.AsyncCommitter)
	if !ok {
		t.Skip("the sink has no sink.AsyncCommitter: every commit waits for its outcome")
	}
	ctx := ctxFor(t)
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	atx, ok := tx.(sink.AsyncTx)
	if !ok {
		t.Fatal("the sink is an AsyncCommitter but its Tx has no CommitAsync")
	}
	if err := tx.Apply(ctx, Ins(items, lsn(1), Row(T("1"), N(), N()))); err != nil {
		t.Fatal(err)
	}
	if err := atx.CommitAsync(ctx, sink.Progress{Slot: Slot, LSN: lsn(10)}); err != nil {
		t.Fatal(err)
	}
	if err := ac.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	wantRows(t, tgt, items, `1|\N|\N`)
	if p := progressOf(t, tgt); p.LSN != lsn(10) {
		t.Errorf("progress after a settled commit: %s, want %s", p.LSN, lsn(10))
	}
	// A failed commit is Settle's to tell.
	tx, err = s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, Ins(items, lsn(11), Row(T("1"), T("dup"), N()))); err != nil {
		_ = tx.Rollback(ctx)
		return // refused at once: nothing outstanding
	}
	if err := tx.(sink.AsyncTx).CommitAsync(ctx, sink.Progress{Slot: Slot, LSN: lsn(20)}); err != nil {
		return // refused before the commit was sent
	}
	if err := ac.Settle(ctx); !errors.Is(err, sink.ErrChangeRefused) {
		t.Errorf("Settle of a commit the target refused: %v", err)
	}
	if err := ac.Settle(ctx); err != nil {
		t.Errorf("a second Settle: %v, want nil (told once)", err)
	}
}

func canPrepare(s sink.Sink) bool {
	if _, ok := s.(sink.TwoPhase); !ok {
		return false
	}
	pc, ok := s.(sink.PrepareChecker)
	return !ok || pc.CanPrepare()
}

func testPreparedCommits(t *testing.T, tgt Target) {
	items := ItemsTable("public", "prepared_commits")
	s, _ := open(t, tgt, items)
	pcs, ok := s.(sink.PreparedCommits)
	if !ok {
		t.Skip("the sink has no sink.PreparedCommits")
	}
	tp := twoPhase(t, s)
	ctx := ctxFor(t)
	gid := sink.GID(Slot, 901)
	prepare(t, s, tp, gid, lsn(100), Ins(items, lsn(1), Row(T("1"), N(), N())))
	if done, err := pcs.PreparedCommitted(ctx, gid, lsn(100)); err != nil || done {
		t.Fatalf("while prepared: committed %v, %v", done, err)
	}
	if done, err := pcs.PreparedCommitted(ctx, sink.GID(Slot, 902), lsn(100)); err != nil || done {
		t.Errorf("a GID never prepared: committed %v, %v; want false", done, err)
	}
	pc, ok := tgt.(PreparedCommitter)
	if !ok {
		t.Skip("the target cannot commit a prepared transaction behind the sink's back: the crash window was not checked")
	}
	pc.CommitPreparedBehind(t, gid)
	if done, err := pcs.PreparedCommitted(ctx, gid, lsn(100)); err != nil || !done {
		t.Errorf("committed, its position not recorded: committed %v, %v; want true", done, err)
	}
	if done, err := pcs.PreparedCommitted(ctx, gid, lsn(50)); err != nil || done {
		t.Errorf("the same GID prepared at another position: committed %v, %v; want false", done, err)
	}
	// The source's COMMIT PREPARED, applied again, only records the position.
	if err := tp.CommitPrepared(ctx, gid, sink.Progress{Slot: Slot, LSN: lsn(200)}); err != nil {
		t.Fatal(err)
	}
	wantRows(t, tgt, items, `1|\N|\N`)
	if p := progressOf(t, tgt); p.LSN != lsn(200) {
		t.Errorf("progress %s, want %s", p.LSN, lsn(200))
	}
}

// testPreparedLister: the transactions prepared for the slot are listed with
// their age, another slot's are not, and a finished one is gone.
func testPreparedLister(t *testing.T, tgt Target) {
	items := ItemsTable("public", "prepared_lister")
	s, _ := open(t, tgt, items)
	pl, ok := s.(sink.PreparedLister)
	if !ok {
		t.Skip("the sink has no sink.PreparedLister: prepared.waiting is never sent")
	}
	tp := twoPhase(t, s)
	ctx := ctxFor(t)
	if held, err := pl.HeldPrepared(ctx, Slot); err != nil || len(held) != 0 {
		t.Fatalf("nothing prepared: %+v, %v", held, err)
	}
	mine, other := sink.GID(Slot, 911), sink.GID(Slot+"_b", 912) // the other's prefix extends ours
	prepare(t, s, tp, mine, lsn(100), Ins(items, lsn(1), Row(T("1"), N(), N())))
	prepare(t, s, tp, other, lsn(110), Ins(items, lsn(2), Row(T("2"), N(), N())))
	t.Cleanup(func() { _ = tp.RollbackPrepared(ctxFor(t), other, sink.Progress{Slot: Slot + "_b", LSN: lsn(120)}) })
	held, err := pl.HeldPrepared(ctx, Slot)
	if err != nil || len(held) != 1 || held[0].GID != mine || held[0].Age < 0 || held[0].Age > time.Hour {
		t.Fatalf("prepared %s and %s: held %+v, %v; want %s alone, with an age of moments", mine, other, held, err, mine)
	}
	again, err := pl.HeldPrepared(ctx, Slot)
	if err != nil || len(again) != 1 || again[0].Age < held[0].Age {
		t.Errorf("asked again: %+v, %v; want %s, no younger than %v", again, err, mine, held[0].Age)
	}
	if err := tp.CommitPrepared(ctx, mine, sink.Progress{Slot: Slot, LSN: lsn(200)}); err != nil {
		t.Fatal(err)
	}
	if held, err := pl.HeldPrepared(ctx, Slot); err != nil || len(held) != 0 {
		t.Errorf("after COMMIT PREPARED: %+v, %v; want none", held, err)
	}
}

func testSequences(t *testing.T, tgt Target) {
	serial, identity := ItemsTable("public", "seq_serial"), ItemsTable("public", "seq_identity")
	s, _ := open(t, tgt, serial, identity)
	setter, ok := s.(sink.SequenceSetter)
	if !ok {
		t.Skip("the sink has no sink.SequenceSetter: migrate leaves the target's sequences alone")
	}
	sr, ok := tgt.(SequenceReader)
	if !ok {
		t.Skip("the target cannot read a column's next value: sequences were not checked")
	}
	seq := func(table *schema.Table, identity bool) source.Sequence {
		return source.Sequence{Schema: "public", Name: table.Name + "_id_seq", TableSchema: "public", Table: table.Name, Column: "id",
			Identity: identity, Nextval: !identity, TypeName: "bigint", Start: 1, Increment: 1, Min: 1, Max: 1 << 62, Cache: 1,
			Readable: true, Called: true, LastValue: 41}
	}
	if err := setter.SetSequences(ctxFor(t), []source.Sequence{seq(serial, false), seq(identity, true)}); err != nil {
		t.Fatal(err)
	}
	for _, table := range []*schema.Table{serial, identity} {
		if got := sr.NextValue(t, table, "id"); got != 42 {
			t.Errorf("%s: next value %d, want 42", table.QualifiedName(), got)
		}
	}
	// Set again (a later migrate): the value moves on, nothing is created twice.
	q := seq(serial, false)
	q.LastValue = 99
	if err := setter.SetSequences(ctxFor(t), []source.Sequence{q}); err != nil {
		t.Fatal(err)
	}
	if got := sr.NextValue(t, serial, "id"); got != 100 {
		t.Errorf("set again: next value %d, want 100", got)
	}
}

package integration

// Crash tests: pgrelay is killed with SIGKILL at random moments and started
// again; afterwards the target must equal the source, with no row missing and
// none applied twice. Also: a row the target rejects, and a target that goes
// away for a while.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// e2eKillDelay is a random wait before a kill: 50–800ms.
func e2eKillDelay(rng *rand.Rand) time.Duration {
	return time.Duration(50+rng.IntN(751)) * time.Millisecond
}

// e2eProgress is the slot's stored position on the target; 0 when none is
// stored yet.
func e2eProgress(t testing.TB, e *e2eEnv) pglogrepl.LSN {
	t.Helper()
	if e.tgt.QueryString(t, "SELECT to_regclass('pgrelay.progress') IS NOT NULL") != "t" {
		return 0
	}
	s := e.tgt.QueryString(t, "SELECT coalesce((SELECT lsn::text FROM pgrelay.progress WHERE slot = $1), '0/0')", e.slot)
	return e2eLSN(t, "pgrelay.progress", s)
}

// e2eConfirmed is the slot's confirmed_flush_lsn on the source; 0 without a slot.
func e2eConfirmed(t testing.TB, e *e2eEnv) pglogrepl.LSN {
	t.Helper()
	s := e.src.QueryString(t, "SELECT coalesce((SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1), '0/0')", e.slot)
	return e2eLSN(t, "confirmed_flush_lsn", s)
}

// e2eCrashCheck runs after a kill: the stored position never goes back, and
// the source was never told more than the target durably holds (invariant 2).
// It reports whether the position moved since the last kill.
func e2eCrashCheck(t testing.TB, e *e2eEnv, last *pglogrepl.LSN, round int) bool {
	t.Helper()
	progress := e2eProgress(t, e)
	if progress < *last {
		t.Errorf("kill %d: stored progress went back from %s to %s", round, *last, progress)
	}
	advanced := progress > *last
	*last = progress
	if progress == 0 {
		return false
	}
	if confirmed := e2eConfirmed(t, e); confirmed > progress {
		t.Errorf("kill %d: slot confirmed %s, past what the target holds (%s): feedback before durability", round, confirmed, progress)
	}
	return advanced
}

// TestCrashContinuousWriter: small transactions keep coming while replicate
// is killed and restarted again and again.
func TestCrashContinuousWriter(t *testing.T) {
	e2eEachMajor(t, testCrashContinuousWriter)
}

func testCrashContinuousWriter(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, e2eChurnSchema(20000))
	rng := e2eRand(t)
	w := e2eStartWriter(t, e.src, rng, 20001)

	kills := 8 + rng.IntN(8)
	var last pglogrepl.LSN
	streamed, advanced := 0, 0
	for i := 1; i <= kills; i++ {
		p := e.start("replicate")
		if rng.IntN(2) == 0 {
			// Half of the kills hit a streaming applier, the others any moment
			// from start-up on (preflight, the copy, resuming).
			p.waitLog(t, "streaming", time.Minute)
			streamed++
		}
		time.Sleep(e2eKillDelay(rng))
		if p.exited() {
			t.Fatalf("kill %d: replicate exited by itself (%v); log:\n%s", i, p.err, p.logs())
		}
		p.kill()
		if e2eCrashCheck(t, e, &last, i) {
			advanced++
		}
	}
	txns := w.stop(t)
	if advanced < 2 {
		t.Errorf("the stored position moved between only %d of %d kills: the runs applied (almost) nothing", advanced, kills)
	}
	final := e.start("replicate")
	e2eSync(t, e, final, 3*time.Minute)
	e2eCompare(t, e)
	if code := final.term(t, time.Minute); code != 0 {
		t.Errorf("final replicate exited %d after SIGTERM; log:\n%s", code, final.logs())
	}
	t.Logf("%d kills (%d while streaming, %d after progress was stored), %d writer transactions", kills, streamed, advanced, txns)
}

// TestStopMidGroup: SIGTERM while replicate works through a backlog, so
// that a group of source transactions is on its way to the target when the
// signal comes. The stop is clean: exit 0, "stopped cleanly" with the
// durable position, and no error logged for the group the signal cut short
// (the target rolled it back; the next run applies it); likewise for a stop
// in the middle of one big transaction's COPY. Then nothing is missing or
// doubled.
func TestStopMidGroup(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE backlog (id bigint PRIMARY KEY, note text)")
	// The slot first: a backlog is what it holds and nobody consumed.
	p := e.start("replicate")
	p.waitLog(t, "streaming", time.Minute)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	// checkClean checks the log of a stop: "stopped cleanly" with the position
	// the target stores, and no error or warning (but the start's advice
	// about the shared source's unlimited max_slot_wal_keep_size).
	checkClean := func(what string, p *e2eProc) {
		t.Helper()
		stopped := p.waitLog(t, "stopped cleanly", 0)
		durable := e2eLSN(t, "durable_lsn of the stop line", stopped.str("durable_lsn"))
		stored := e2eLSN(t, "pgrelay.progress", e.tgt.QueryString(t, "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1", e.slot))
		if durable != stored {
			t.Errorf("%s: the stop logged durable %s, the target stores %s\n%s", what, durable, stored, p.logs())
		}
		for _, l := range p.logLines() {
			if l.str("level") == "ERROR" || l.str("level") == "WARN" && l.str("risk") != "unlimited" {
				t.Errorf("%s: a clean stop logged %s %q: %v", what, l.str("level"), l.str("msg"), l)
			}
		}
	}
	next := 0
	for round := 1; round <= 3; round++ {
		// 30,000 one-row transactions, each committed on its own.
		e.src.Exec(t, fmt.Sprintf(`DO $$ BEGIN FOR i IN %d..%d LOOP INSERT INTO backlog VALUES (i, repeat('x', 40)); COMMIT; END LOOP; END $$`, next+1, next+30000))
		next += 30000
		before := e.tgt.QueryString(t, "SELECT count(*) FROM backlog")
		p := e.start("replicate")
		p.waitLog(t, "streaming", time.Minute)
		e2eWaitTarget(t, e, p, time.Minute, "the first rows of the backlog", "SELECT count(*) > $1::bigint FROM backlog", before)
		if code := p.term(t, time.Minute); code != 0 {
			t.Fatalf("round %d: replicate exited %d after SIGTERM, want 0; log:\n%s", round, code, p.logs())
		}
		checkClean(fmt.Sprintf("round %d", round), p)
		after := e.tgt.QueryString(t, "SELECT count(*) FROM backlog")
		t.Logf("round %d: %s rows before, %s after the stop, of %d", round, before, after, next)
	}
	// One big transaction (1,500 rows of 48 kB), stopped while its rows are
	// on their way to the target in a COPY: a COPY the signal cut short is a
	// stop too, not an error.
	p = e.start("replicate")
	e2eSync(t, e, p, 3*time.Minute)
	e.src.Exec(t, fmt.Sprintf(`INSERT INTO backlog SELECT n, (SELECT string_agg(md5(random()::text || j || n), '') FROM generate_series(1, 1500) AS k(j)) FROM generate_series(%d, %d) AS g(n)`, next+1, next+1500))
	e2eWaitTarget(t, e, p, time.Minute, "a COPY into backlog", "SELECT count(*) > 0 FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'COPY %backlog%'")
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate stopped during a COPY exited %d after SIGTERM, want 0; log:\n%s", code, p.logs())
	}
	checkClean("stop during a COPY", p)
	final := e.start("replicate")
	e2eSync(t, e, final, 3*time.Minute)
	e2eCompare(t, e)
	if code := final.term(t, time.Minute); code != 0 {
		t.Errorf("final replicate exited %d after SIGTERM; log:\n%s", code, final.logs())
	}
}

// TestCrashStreamedTransaction: kills while a large transaction is streamed
// from the source and applied (200k rows, a savepoint rolled back).
func TestCrashStreamedTransaction(t *testing.T) {
	e2eEachMajor(t, testCrashStreamedTransaction)
}

func testCrashStreamedTransaction(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, "CREATE TABLE bulk (id int PRIMARY KEY, part text NOT NULL, pad text); CREATE TABLE side (id int PRIMARY KEY)")
	rng := e2eRand(t)

	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)

	conn, err := pgx.Connect(e2eCtx(t, time.Minute), e.src.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	committed := make(chan error, 1)
	go func() {
		ctx := context.Background()
		var err error
		for _, sql := range []string{
			"BEGIN",
			"INSERT INTO bulk SELECT i, 'a', repeat('p', 20) FROM generate_series(1, 100000) i",
			"SAVEPOINT s",
			"INSERT INTO bulk SELECT i, 'rolled back', NULL FROM generate_series(100001, 150000) i",
			"UPDATE bulk SET part = 'rolled back too' WHERE id <= 5000",
			"ROLLBACK TO SAVEPOINT s",
			"INSERT INTO bulk SELECT i, 'b', repeat('q', 20) FROM generate_series(150001, 250000) i",
			"UPDATE bulk SET part = 'c' WHERE id % 1000 = 0",
			"DELETE FROM bulk WHERE id % 777 = 0",
			"COMMIT",
		} {
			if _, err = conn.Exec(ctx, sql); err != nil {
				err = fmt.Errorf("%s: %w", sql, err)
				break
			}
		}
		committed <- err
	}()

	var last pglogrepl.LSN
	done := false
	waitCommitted := func() {
		if err := <-committed; err != nil {
			t.Fatalf("big transaction: %v", err)
		}
		done = true
	}
	kills, duringTxn, afterCommit, duringApply := 0, 0, 0, 0
	killAndRestart := func() {
		t.Helper()
		if p.exited() {
			t.Fatalf("kill %d: replicate exited by itself (%v); log:\n%s", kills+1, p.err, p.logs())
		}
		p.kill()
		kills++
		e2eCrashCheck(t, e, &last, kills)
		p = e.start("replicate")
	}
	// While the source runs the transaction: its first chunks are streamed.
	for !done && kills < 5 {
		time.Sleep(e2eKillDelay(rng))
		select {
		case err := <-committed:
			if err != nil {
				t.Fatalf("big transaction: %v", err)
			}
			done = true
		default:
			duringTxn++
		}
		killAndRestart()
	}
	if !done {
		waitCommitted()
	}
	// After the commit: each restart streams the whole transaction again.
	for afterCommit < 3 || kills < 8 {
		time.Sleep(e2eKillDelay(rng))
		killAndRestart()
		afterCommit++
	}
	// While the target applies it: a target transaction holds a lock on bulk.
	applying := `SELECT count(*) > 0 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND c.relname = 'bulk' AND l.mode = 'RowExclusiveLock' AND l.granted AND l.pid <> pg_backend_pid()`
	for duringApply < 3 {
		if e.tgt.QueryString(t, "SELECT count(*) > 0 FROM public.bulk") == "t" {
			break // applied before a kill could hit the apply
		}
		e2eWaitTarget(t, e, p, 2*time.Minute, "an apply transaction on bulk", applying)
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		killAndRestart()
		duringApply++
	}
	if duringApply == 0 {
		t.Errorf("no kill hit the apply of the big transaction")
	}
	e.src.Exec(t, "INSERT INTO side VALUES (1)")
	e2eSync(t, e, p, 4*time.Minute)
	if got, want := e.tgt.QueryString(t, "SELECT count(*) FROM public.bulk"), e.src.QueryString(t, "SELECT count(*) FROM public.bulk"); got != want || want != "199744" {
		t.Errorf("target holds %s bulk rows, source %s, want 199744", got, want)
	}
	e2eCompare(t, e)
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("final replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	t.Logf("%d kills: %d while the source ran the transaction, %d after its commit, %d while the target applied it", kills, duringTxn, afterCommit, duringApply)
}

// TestCrashTwoPhase: kills around PREPARE TRANSACTION, with the source
// finishing the transaction while pgrelay is down or after it is back.
func TestCrashTwoPhase(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		if major < 15 {
			t.Logf("PostgreSQL %d decodes prepared transactions only at COMMIT PREPARED for pgoutput; nothing to test", major)
			return
		}
		testCrashTwoPhase(t, major)
	})
}

func testCrashTwoPhase(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, "CREATE TABLE tp (id int PRIMARY KEY, round int, v text)")
	rng := e2eRand(t)
	conn := e.src.Conn(t)
	ctx := e2eCtx(t, 5*time.Minute)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	targetGID := func(gid string) string {
		t.Helper()
		xid := e.src.QueryString(t, "SELECT transaction::text FROM pg_prepared_xacts WHERE gid = $1", gid)
		return fmt.Sprintf("pgrelay_%s_%s", e.slot, xid)
	}

	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	want := 0

	// The case of the brief: killed right after the target shows the prepared
	// transaction, COMMIT PREPARED while pgrelay is down.
	gid := "e2e_" + e.slot + "_0"
	exec("BEGIN")
	exec("INSERT INTO tp SELECT i, 0, 'r0' FROM generate_series(1, 100) i")
	exec("PREPARE TRANSACTION '" + gid + "'")
	tgid := targetGID(gid)
	e2eWaitTarget(t, e, p, time.Minute, "prepared "+tgid, "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE gid = $1", tgid)
	p.kill()
	e.src.Exec(t, "COMMIT PREPARED '"+gid+"'")
	want += 100
	p = e.start("replicate")
	e2eWaitTarget(t, e, p, time.Minute, "rows of round 0", "SELECT count(*) = 100 FROM public.tp WHERE round = 0")
	e2eWaitTarget(t, e, p, time.Minute, "no prepared transaction", "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE database = current_database()")

	// Killed while prepared, restarted with the transaction still prepared on
	// both sides: the restart must keep exactly the one target transaction.
	gid = "e2e_" + e.slot + "_1"
	exec("BEGIN")
	exec("INSERT INTO tp SELECT i, 1, 'r1' FROM generate_series(1001, 1050) i")
	exec("PREPARE TRANSACTION '" + gid + "'")
	tgid = targetGID(gid)
	e2eWaitTarget(t, e, p, time.Minute, "prepared "+tgid, "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE gid = $1", tgid)
	p.kill()
	p = e.start("replicate")
	p.waitLog(t, "streaming", time.Minute)
	e.src.Exec(t, "INSERT INTO tp VALUES (5000, -1, 'while prepared')")
	want++
	e2eSync(t, e, p, time.Minute)
	if got := e2eTargetPrepared(t, e); got != tgid {
		t.Errorf("after a restart with %s prepared, the target holds %q", tgid, got)
	}
	e.src.Exec(t, "ROLLBACK PREPARED '"+gid+"'")
	e2eWaitTarget(t, e, p, time.Minute, "no prepared transaction", "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE database = current_database()")

	// Random rounds: the kill lands before, during or after the prepare is
	// applied, and the source commits or rolls back before or after the restart.
	rounds := 6 + rng.IntN(4)
	for r := 2; r < 2+rounds; r++ {
		gid = fmt.Sprintf("e2e_%s_%d", e.slot, r)
		exec("BEGIN")
		rows := 20
		if rng.IntN(3) == 0 {
			rows = 3000 // streamed (Stream Prepare)
		}
		exec(fmt.Sprintf("INSERT INTO tp SELECT i, %d, repeat('x', 50) FROM generate_series(%d, %d) i", r, r*10000, r*10000+rows-1))
		exec("PREPARE TRANSACTION '" + gid + "'")
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		p.kill()
		commit := rng.IntN(2) == 0
		finish := func() {
			if commit {
				e.src.Exec(t, "COMMIT PREPARED '"+gid+"'")
				want += rows
			} else {
				e.src.Exec(t, "ROLLBACK PREPARED '"+gid+"'")
			}
		}
		finishFirst := rng.IntN(2) == 0
		if finishFirst {
			finish()
		}
		p = e.start("replicate")
		if !finishFirst {
			time.Sleep(e2eKillDelay(rng))
			finish()
		}
		e2eSync(t, e, p, 2*time.Minute)
	}
	e2eWaitTarget(t, e, p, time.Minute, "no prepared transaction", "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE database = current_database()")
	if got, wantS := e.tgt.QueryString(t, "SELECT count(*) FROM public.tp"), fmt.Sprint(want); got != wantS {
		t.Errorf("target tp holds %s rows, want %s", got, wantS)
	}
	e2eCompare(t, e)
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pgrelay.prepared WHERE slot = $1", e.slot); got != "0" {
		t.Errorf("pgrelay.prepared keeps %s rows after every prepared transaction finished", got)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("final replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	t.Logf("%d random rounds", rounds)
}

// TestCrashSnapshotCopy: migrate killed while it copies a large table, twice;
// the restart copies only the unfinished table and streams the changes made
// in between.
func TestCrashSnapshotCopy(t *testing.T) {
	e2eEachMajor(t, testCrashSnapshotCopy)
}

func testCrashSnapshotCopy(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, `CREATE TABLE huge (id int PRIMARY KEY, v int NOT NULL);
		INSERT INTO huge SELECT i, i % 1000 FROM generate_series(1, 2000000) i;
		CREATE TABLE small_a (id int PRIMARY KEY, v int);
		INSERT INTO small_a SELECT i, i FROM generate_series(1, 100) i;
		CREATE TABLE small_b (id int PRIMARY KEY, v text);
		INSERT INTO small_b SELECT i, 'b' || i FROM generate_series(1, 100) i;
		ANALYZE`)
	rng := e2eRand(t)
	// Enough workers for every table and range at once: the small tables are
	// done while huge is still being copied.
	e.extra = append(e.extra, "PGRELAY_COPY_WORKERS=4")
	state := func(table string) string {
		t.Helper()
		if e.tgt.QueryString(t, "SELECT to_regclass('pgrelay.table_state') IS NOT NULL") != "t" {
			return ""
		}
		return e.tgt.QueryString(t, "SELECT coalesce((SELECT state FROM pgrelay.table_state WHERE slot = $1 AND name = $2), '')", e.slot, table)
	}

	// Round 1: kill during the first copy, once the small tables are done.
	p := e.start("migrate")
	e2eWaitTarget(t, e, p, 2*time.Minute, "huge copying, small tables indexed",
		"SELECT count(*) FILTER (WHERE name = 'huge' AND state = 'copying') = 1 AND count(*) FILTER (WHERE name LIKE 'small%' AND state = 'indexed') = 2 FROM pgrelay.table_state WHERE slot = $1", e.slot)
	// Well inside huge's copy (about a second on a quiet machine, behind the
	// wait's last poll).
	time.Sleep(e2eKillDelay(rng) / 3)
	p.kill()
	if s := state("huge"); s == "indexed" || s == "copied" {
		t.Fatalf("the copy of huge finished (%s) before the kill: make the table larger", s)
	}
	xminA := e.tgt.QueryString(t, "SELECT xmin::text FROM public.small_a WHERE id = 1")

	// Changes while pgrelay is down, to tables done and not done.
	e.src.Exec(t, `UPDATE huge SET v = -1 WHERE id % 100000 = 0;
		INSERT INTO huge SELECT i, 7 FROM generate_series(2000001, 2000010) i;
		DELETE FROM huge WHERE id BETWEEN 10 AND 20;
		UPDATE small_a SET v = v + 1 WHERE id > 50;
		DELETE FROM small_b WHERE id < 10;
		INSERT INTO small_b VALUES (1000, 'new')`)

	// Round 2: kill during the redo.
	p = e.start("migrate")
	redo := p.waitLog(t, "resuming an interrupted copy", 2*time.Minute)
	if fmt.Sprint(redo["tables_done"]) != "2" || fmt.Sprint(redo["tables_to_copy"]) != "1" {
		t.Errorf("redo plan: %v; want 2 tables done, 1 to copy", redo)
	}
	// Copying under the redo's snapshot: round 1 left huge "copying", without
	// a sync position (that copy ran under the slot's snapshot).
	e2eWaitTarget(t, e, p, 2*time.Minute, "huge copying again", "SELECT count(*) = 1 FROM pgrelay.table_state WHERE slot = $1 AND name = 'huge' AND state = 'copying' AND sync_lsn IS NOT NULL", e.slot)
	// The redo's snapshot is kept with its transaction ids, which judge the
	// transactions prepared before it.
	if got := e.tgt.QueryString(t, "SELECT coalesce(sync_snapshot, '') ~ '^[0-9]+:[0-9]+:[0-9,]*$' AND sync_lsn IS NOT NULL FROM pgrelay.table_state WHERE slot = $1 AND name = 'huge'", e.slot); got != "t" {
		t.Errorf("huge's redo snapshot is not stored: %s", e.tgt.QueryString(t, "SELECT coalesce(sync_snapshot, 'NULL') || ' at ' || coalesce(sync_lsn::text, 'NULL') FROM pgrelay.table_state WHERE slot = $1 AND name = 'huge'", e.slot))
	}
	time.Sleep(e2eKillDelay(rng))
	p.kill()
	if s := state("huge"); s == "indexed" || s == "copied" {
		t.Logf("note: the redo copy of huge finished (%s) before the second kill", s)
	}
	e.src.Exec(t, "UPDATE huge SET v = -2 WHERE id % 250000 = 1; INSERT INTO small_a VALUES (1000, 1000)")

	// Round 3: to the end.
	p = e.mustRun(5*time.Minute, "migrate")
	p.waitLog(t, "caught up", 0)
	e2eCompare(t, e)
	for _, table := range []string{"huge", "small_a", "small_b"} {
		if s := state(table); s != "indexed" {
			t.Errorf("table %s is %q after migrate, want indexed", table, s)
		}
	}
	if got := e.tgt.QueryString(t, "SELECT xmin::text FROM public.small_a WHERE id = 1"); got != xminA {
		t.Errorf("small_a was copied again (xmin of row 1 %s, was %s): only unfinished tables may be redone", got, xminA)
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE $1", e.slot+"\\_redo\\_%"); got != "0" {
		t.Errorf("%s temporary redo slots left on the source", got)
	}
}

// TestCrashRejectedRow: the target rejects a row (a CHECK constraint, then a
// unique index the source does not have): pgrelay stops with one line naming
// the table, the source LSN and the SQL error; once the constraint is gone a
// restart applies everything.
func TestCrashRejectedRow(t *testing.T) {
	e2eEachMajor(t, testCrashRejectedRow)
}

func testCrashRejectedRow(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, "CREATE TABLE guarded (id int PRIMARY KEY, v int); CREATE TABLE other (id int PRIMARY KEY); INSERT INTO guarded VALUES (1, 10)")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)

	for _, tc := range []struct {
		name, add, drop, bad string
		words                []string
	}{
		{"check", "ALTER TABLE public.guarded ADD CONSTRAINT small_v CHECK (v < 1000)", "ALTER TABLE public.guarded DROP CONSTRAINT small_v",
			"INSERT INTO guarded VALUES (3, 5000)", []string{"small_v", "23514"}},
		{"unique", "CREATE UNIQUE INDEX guarded_v_key ON public.guarded (v)", "DROP INDEX public.guarded_v_key",
			"UPDATE guarded SET v = 10 WHERE id = 2", []string{"guarded_v_key", "23505"}},
	} {
		e.tgt.Exec(t, tc.add)
		e.src.Exec(t, fmt.Sprintf("INSERT INTO guarded VALUES (%d, 20)", 2))
		if tc.name == "unique" {
			e.src.Exec(t, "UPDATE guarded SET v = 21 WHERE id = 2")
		}
		before := e2eLSN(t, "wal lsn", e.src.QueryString(t, "SELECT pg_current_wal_lsn()::text"))
		e.src.Exec(t, tc.bad)
		after := e2eLSN(t, "wal lsn", e.src.QueryString(t, "SELECT pg_current_wal_lsn()::text"))
		e.src.Exec(t, fmt.Sprintf("INSERT INTO other VALUES (%d)", len(tc.name)))

		code := p.wait(t, time.Minute)
		if code == 0 {
			t.Fatalf("%s: replicate exited 0 on a rejected row; log:\n%s", tc.name, p.logs())
		}
		lines := p.errOut.all()
		var errLines []string
		for _, l := range lines {
			if strings.HasPrefix(l, "pgrelay: ") {
				errLines = append(errLines, l)
			}
		}
		if len(errLines) != 1 || lines[len(lines)-1] != errLines[0] {
			t.Fatalf("%s: want one final \"pgrelay: \" error line; stderr:\n%s", tc.name, p.logs())
		}
		line := errLines[0]
		t.Logf("%s: %s", tc.name, line)
		if !strings.Contains(line, "guarded") {
			t.Errorf("%s: the error does not name the table: %s", tc.name, line)
		}
		for _, w := range tc.words {
			if !strings.Contains(line, w) {
				t.Errorf("%s: the error lacks %q: %s", tc.name, w, line)
			}
		}
		lsns := e2eLSNPattern.FindAllString(line, -1)
		named := false
		for _, s := range lsns {
			if lsn, err := pglogrepl.ParseLSN(s); err == nil && lsn >= before && lsn <= after {
				named = true
			}
		}
		if !named {
			t.Errorf("%s: the error names no source LSN in %s..%s (found %v): %s", tc.name, before, after, lsns, line)
		}
		if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.other"); got != fmt.Sprint(map[string]int{"check": 0, "unique": 1}[tc.name]) {
			t.Errorf("%s: the transaction after the rejected one was applied (%s rows in other)", tc.name, got)
		}

		e.tgt.Exec(t, tc.drop)
		p = e.start("replicate")
		e2eSync(t, e, p, time.Minute)
		e2eCompare(t, e)
		e.src.Exec(t, "DELETE FROM guarded WHERE id = 2")
		e2eSync(t, e, p, time.Minute)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}

// TestCrashTargetDown: the target server stops for a few seconds while
// replicate runs and writes go on; pgrelay retries with backoff and resumes.
func TestCrashTargetDown(t *testing.T) {
	e2eEachMajor(t, testCrashTargetDown)
}

func testCrashTargetDown(t *testing.T, major int) {
	src := harness.Postgres(t, major)
	tgt := harness.Postgres(t, e2eTargetMajor, harness.Dedicated())
	e := e2eNewEnv(t, src, tgt)
	e.src.Exec(t, e2eChurnSchema(5000))
	rng := e2eRand(t)
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	w := e2eStartWriter(t, e.src, rng, 5001)
	e2eWaitTarget(t, e, p, time.Minute, "the writer's first rows", "SELECT count(*) > 0 FROM public.churn_log")

	tgt.Stop(t)
	// Down until replicate has failed and waited three times (its waits
	// must grow), then a random while more: the target comes back at any
	// point of a wait.
	var retry e2eLogLine
	if err := harness.Await(2*time.Minute, 50*time.Millisecond, "three retries while the target is down", func() error {
		n := 0
		for _, l := range p.logLines() {
			if l.str("msg") == "will retry" {
				if n == 0 {
					retry = l
				}
				n++
			}
		}
		switch {
		case n >= 3:
			return nil
		case p.exited():
			return harness.Abort(fmt.Errorf("replicate exited while the target was down (%v)", p.err))
		}
		return fmt.Errorf("%d retries so far", n)
	}); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
	if p.exited() {
		t.Fatalf("replicate exited while the target was down (%v); log:\n%s", p.err, p.logs())
	}
	tgt.Start(t)
	// A second streaming line: the new session after the outage.
	if err := harness.Await(2*time.Minute, 50*time.Millisecond, "replicate to stream again after the target came back", func() error {
		n := 0
		for _, l := range p.logLines() {
			if l.str("msg") == "streaming" {
				n++
			}
		}
		switch {
		case n >= 2:
			return nil
		case p.exited():
			return harness.Abort(fmt.Errorf("replicate exited (%v)", p.err))
		}
		return fmt.Errorf("%d streaming lines", n)
	}); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	// Writes go on after the outage too.
	resumed := w.committed()
	harness.Eventually(t, time.Minute, "writer transactions after the outage", func() error {
		if n := w.committed() - resumed; n < 20 {
			return fmt.Errorf("%d so far", n)
		}
		return nil
	})
	txns := w.stop(t)
	e2eSync(t, e, p, 2*time.Minute)
	e2eCompare(t, e)
	// Backoff: the waits between attempts grow.
	var waits []float64
	for _, l := range p.logLines() {
		if l.str("msg") == "will retry" {
			in, _ := l["in"].(float64)
			waits = append(waits, in)
		}
	}
	retries := len(waits)
	if retries < 2 {
		t.Errorf("%d retries during the outage; want several, with backoff", retries)
	}
	for i := 1; i < len(waits); i++ {
		if waits[i] < waits[i-1] || waits[i] == 0 {
			t.Errorf("retry waits %v do not back off", waits)
			break
		}
	}
	if len(waits) >= 3 && waits[len(waits)-1] <= waits[0] {
		t.Errorf("retry waits %v do not grow", waits)
	}
	t.Logf("%d writer transactions, %d retries (waits %v ns); first: %v", txns, retries, waits, retry)
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}

// TestCrashSnapshotRedoPrepared: a transaction prepared before a redone
// copy's snapshot and committed after it is not in the copy; it reaches the
// copied table through the stream. (Source and target are two databases of
// one server here. The redo once took its snapshot from a temporary slot,
// whose creation waited for the prepared transaction to end.)
func TestCrashSnapshotRedoPrepared(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, `CREATE TABLE huge (id int PRIMARY KEY, v int NOT NULL);
		INSERT INTO huge SELECT i, i % 1000 FROM generate_series(1, 2000000) i;
		CREATE TABLE side (id int PRIMARY KEY);
		ANALYZE`)
	ctx := e2eCtx(t, 5*time.Minute)
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	// Round 1: killed while huge is being copied.
	p := e.start("migrate")
	e2eWaitTarget(t, e, p, 2*time.Minute, "huge copying", "SELECT count(*) = 1 FROM pgrelay.table_state WHERE slot = $1 AND name = 'huge' AND state = 'copying'", e.slot)
	p.kill()

	// Round 2 redoes huge under a new snapshot, taken while T is prepared, and
	// while another transaction is open.
	open, tx := e.src.Conn(t), e.src.Conn(t)
	exec(open, "BEGIN")
	exec(open, "INSERT INTO side VALUES (1)")
	exec(tx, "BEGIN")
	exec(tx, "INSERT INTO huge VALUES (3000000, 42)")
	exec(tx, "PREPARE TRANSACTION 'redo_prepared'")
	p = e.start("migrate")
	p.waitLog(t, "resuming an interrupted copy", 2*time.Minute)
	exec(open, "COMMIT")
	p.waitLog(t, "caught up", 3*time.Minute)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("migrate exited %d; log:\n%s", code, p.logs())
	}
	if got := e2eTargetPrepared(t, e); got == "" {
		t.Fatalf("the target holds no prepared transaction while the source holds redo_prepared; log:\n%s", p.logs())
	}
	exec(tx, "COMMIT PREPARED 'redo_prepared'")

	// Round 3: the commit arrives; the row must be on the target.
	p = e.mustRun(3*time.Minute, "migrate")
	p.waitLog(t, "caught up", 0)
	if got := e.tgt.QueryString(t, "SELECT coalesce((SELECT v::text FROM public.huge WHERE id = 3000000), 'missing')"); got != "42" {
		t.Errorf("row 3000000 of the transaction prepared before the redo snapshot is %s on the target, want 42", got)
	}
	e2eCompare(t, e)
}

// TestCrashSourceRestart: the source restarts (a clean, fast shutdown) while
// replicate is caught up; the walsender ends the stream, pgrelay retries and
// resumes, and later writes arrive.
func TestCrashSourceRestart(t *testing.T) {
	e2eEachMajor(t, testCrashSourceRestart)
}

func testCrashSourceRestart(t *testing.T, major int) {
	src := harness.Postgres(t, major, harness.Dedicated())
	e := e2eNewEnv(t, src, harness.Postgres(t, e2eTargetMajor))
	e.src.Exec(t, "CREATE TABLE restarted (id int PRIMARY KEY, v text); INSERT INTO restarted VALUES (1, 'before')")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)
	src.Restart(t)
	p.waitLog(t, "will retry", time.Minute)
	if p.exited() {
		t.Fatalf("replicate exited when the source restarted (%v); log:\n%s", p.err, p.logs())
	}
	e.src.Exec(t, "INSERT INTO restarted VALUES (2, 'after')")
	e2eSync(t, e, p, 2*time.Minute)
	e2eCompare(t, e)
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}

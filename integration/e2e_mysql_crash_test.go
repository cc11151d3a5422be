package integration

// Crash tests with a MariaDB target: pgrelay killed with SIGKILL between XA
// PREPARE and XA COMMIT, inside a large streamed transaction, at random
// moments under a continuous writer, during the LOAD DATA copy; afterwards
// the target equals the source with no row missing and none applied twice.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/mysql"
)

// xaPrepared lists the slot's prepared XA transactions on the target, by
// target GID.
func (e *myE2E) xaPrepared(t testing.TB) []string {
	t.Helper()
	ctx := e2eCtx(t, time.Minute)
	s, err := mysql.New(ctx, e.my.URL(), mysql.Options{Inspect: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	gids, err := s.PreparedGIDs(ctx, sink.GIDPrefix(e.slot))
	if err != nil {
		t.Fatal(err)
	}
	return gids
}

// waitXA waits until the slot's prepared XA transactions on the target are
// want.
func (e *myE2E) waitXA(t testing.TB, p *e2eProc, timeout time.Duration, want ...string) {
	t.Helper()
	slices.Sort(want)
	var got []string
	err := harness.Await(timeout, 50*time.Millisecond, fmt.Sprintf("prepared XA transactions %q on the target", want), func() error {
		if got = e.xaPrepared(t); slices.Equal(got, want) {
			return nil
		}
		if p != nil && p.exited() {
			return harness.Abort(fmt.Errorf("%s exited with %v", p.name, p.err))
		}
		return fmt.Errorf("they are %q", got)
	})
	if err != nil {
		msg := err.Error()
		if p != nil {
			msg += "; log:\n" + p.logs()
		}
		t.Fatal(msg)
	}
}

// TestE2EMySQLTwoPhase: a prepared source transaction becomes a prepared XA
// transaction on MariaDB; pgrelay killed between XA PREPARE and XA COMMIT,
// with the source finishing it while pgrelay is down or after, resumes
// without loss or a double; teardown rolls back the XA transactions pgrelay
// left prepared.
func TestE2EMySQLTwoPhase(t *testing.T) {
	major := harness.Majors()[len(harness.Majors())-1]
	if major < 15 {
		t.Skipf("PostgreSQL %d decodes prepared transactions only at COMMIT PREPARED for pgoutput; the newest major here is %d", major, major)
	}
	e := myE2EPair(t, major)
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
	count := func(round int) string {
		return e.query(t, "SELECT COUNT(*) FROM tp WHERE round = ?", round)
	}

	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	want := 0

	// Killed right after the target prepared it (XA PREPARE done, XA COMMIT
	// not): COMMIT PREPARED while pgrelay is down.
	gid := "e2e_" + e.slot + "_0"
	exec("BEGIN")
	exec("INSERT INTO tp SELECT i, 0, 'r0' FROM generate_series(1, 100) i")
	exec("PREPARE TRANSACTION '" + gid + "'")
	tgid := targetGID(gid)
	e.waitXA(t, p, time.Minute, tgid)
	if got := count(0); got != "0" {
		t.Errorf("%s rows of a prepared transaction are visible on the target", got)
	}
	p.kill()
	e.src.Exec(t, "COMMIT PREPARED '"+gid+"'")
	want += 100
	p = e.start("replicate")
	e.wait(t, p, time.Minute, "rows of round 0", "SELECT COUNT(*) = 100 FROM tp WHERE round = 0")
	e.waitXA(t, p, time.Minute)

	// Killed while prepared, restarted with it still prepared on both
	// sides: the restart keeps exactly the one XA transaction; later
	// transactions commit past it; ROLLBACK PREPARED rolls it back.
	gid = "e2e_" + e.slot + "_1"
	exec("BEGIN")
	exec("INSERT INTO tp SELECT i, 1, 'r1' FROM generate_series(1001, 1050) i")
	exec("PREPARE TRANSACTION '" + gid + "'")
	tgid = targetGID(gid)
	e.waitXA(t, p, time.Minute, tgid)
	p.kill()
	p = e.start("replicate")
	p.waitLog(t, "streaming", time.Minute)
	e.src.Exec(t, "INSERT INTO tp VALUES (5000, -1, 'while prepared')")
	want++
	e.sync(t, p, time.Minute)
	if got := e.xaPrepared(t); !slices.Equal(got, []string{tgid}) {
		t.Errorf("after a restart with %s prepared, the target holds %q", tgid, got)
	}
	e.src.Exec(t, "ROLLBACK PREPARED '"+gid+"'")
	e.waitXA(t, p, time.Minute)

	// Random rounds: the kill lands before, during or after the prepare is
	// applied; the source commits or rolls back before or after the restart.
	rounds := 5 + rng.IntN(4)
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
		e.sync(t, p, 2*time.Minute)
	}
	e.waitXA(t, p, time.Minute)
	if got, wantS := e.query(t, "SELECT COUNT(*) FROM tp"), fmt.Sprint(want); got != wantS {
		t.Errorf("target tp holds %s rows, want %s", got, wantS)
	}
	e.compare(t)
	e.verify(t)
	if got := e.query(t, "SELECT COUNT(*) FROM pgrelay_prepared WHERE slot = ?", e.slot); got != "0" {
		t.Errorf("pgrelay_prepared keeps %s rows after every prepared transaction finished", got)
	}

	// Left prepared when pgrelay stops: teardown rolls it back.
	gid = "e2e_" + e.slot + "_left"
	exec("BEGIN")
	exec("INSERT INTO tp VALUES (-7, -7, 'left prepared')")
	exec("PREPARE TRANSACTION '" + gid + "'")
	tgid = targetGID(gid)
	e.waitXA(t, p, time.Minute, tgid)
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	e.src.Exec(t, "ROLLBACK PREPARED '"+gid+"'")
	td := e.mustRun(time.Minute, "teardown")
	if got := e.xaPrepared(t); len(got) != 0 {
		t.Errorf("after teardown the target still holds prepared XA transactions %q; log:\n%s", got, td.logs())
	}
	if got := e.query(t, `SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'pgrelay\_%'`); got != "0" {
		t.Errorf("%s pgrelay_* tables after teardown", got)
	}
	t.Logf("%d random rounds", rounds)
}

// TestE2EMySQLStreamedSavepoints: a large transaction with savepoints, one
// rolled back, streamed by the source (PGRELAY_STREAMING=on, a small
// logical_decoding_work_mem) while pgrelay is killed again and again: in
// the source's transaction, after its commit, and while the target applies
// it. The target ends with exactly the rows the source kept.
func TestE2EMySQLStreamedSavepoints(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[len(harness.Majors())-1]).with("PGRELAY_STREAMING=on")
	e.src.Exec(t, "CREATE TABLE bulk (id int PRIMARY KEY, part text NOT NULL, pad text); CREATE TABLE side (id int PRIMARY KEY)")
	if wm := e.src.QueryString(t, "SHOW logical_decoding_work_mem"); wm != "64kB" {
		t.Logf("logical_decoding_work_mem is %s", wm)
	}
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
			"INSERT INTO bulk SELECT i, 'a', repeat('p', 20) FROM generate_series(1, 60000) i",
			"SAVEPOINT s1",
			"INSERT INTO bulk SELECT i, 'rolled back', NULL FROM generate_series(60001, 90000) i",
			"UPDATE bulk SET part = 'rolled back too' WHERE id <= 5000",
			"ROLLBACK TO SAVEPOINT s1",
			"SAVEPOINT s2",
			"INSERT INTO bulk SELECT i, 'b', repeat('q', 20) FROM generate_series(90001, 150000) i",
			"RELEASE SAVEPOINT s2",
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
	kills, duringTxn, afterCommit := 0, 0, 0
	killAndRestart := func() {
		t.Helper()
		if p.exited() {
			t.Fatalf("kill %d: replicate exited by itself (%v); log:\n%s", kills+1, p.err, p.logs())
		}
		p.kill()
		kills++
		e.crashCheck(t, &last, kills)
		p = e.start("replicate")
	}
	done := false
	for !done && kills < 4 {
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
		if err := <-committed; err != nil {
			t.Fatalf("big transaction: %v", err)
		}
	}
	for afterCommit < 3 {
		time.Sleep(e2eKillDelay(rng))
		killAndRestart()
		afterCommit++
	}
	e.src.Exec(t, "INSERT INTO side VALUES (1)")
	e.sync(t, p, 4*time.Minute)
	want := e.src.QueryString(t, "SELECT count(*) FROM bulk")
	if got := e.query(t, "SELECT COUNT(*) FROM bulk"); got != want || want != "119845" {
		t.Errorf("target holds %s bulk rows, source %s, want 119845", got, want)
	}
	if got := e.query(t, "SELECT COUNT(*) FROM bulk WHERE part LIKE 'rolled back%'"); got != "0" {
		t.Errorf("%s rows of the rolled-back savepoint on the target", got)
	}
	e.compare(t)
	if l, ok := p.findLog("streamed"); !ok && kills == 0 {
		t.Logf("no log line about streaming: %v", l)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("final replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	t.Logf("%d kills: %d while the source ran the transaction, %d after its commit", kills, duringTxn, afterCommit)
}

// TestE2EMySQLCrashContinuousWriter: small transactions keep coming while
// replicate into MariaDB is killed and restarted again and again.
func TestE2EMySQLCrashContinuousWriter(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[0])
	e.src.Exec(t, e2eChurnSchema(20000))
	rng := e2eRand(t)
	w := e2eStartWriter(t, e.src, rng, 20001)
	kills := 8 + rng.IntN(6)
	var last pglogrepl.LSN
	streamed, advanced := 0, 0
	for i := 1; i <= kills; i++ {
		p := e.start("replicate")
		if rng.IntN(2) == 0 {
			p.waitLog(t, "streaming", time.Minute)
			streamed++
		}
		time.Sleep(e2eKillDelay(rng))
		if p.exited() {
			t.Fatalf("kill %d: replicate exited by itself (%v); log:\n%s", i, p.err, p.logs())
		}
		p.kill()
		if e.crashCheck(t, &last, i) {
			advanced++
		}
	}
	txns := w.stop(t)
	if advanced < 2 {
		t.Errorf("the stored position moved between only %d of %d kills: the runs applied (almost) nothing", advanced, kills)
	}
	final := e.start("replicate")
	e.sync(t, final, 3*time.Minute)
	e.compare(t)
	e.verify(t)
	if code := final.term(t, time.Minute); code != 0 {
		t.Errorf("final replicate exited %d after SIGTERM; log:\n%s", code, final.logs())
	}
	t.Logf("%d kills (%d while streaming, %d after progress was stored), %d writer transactions", kills, streamed, advanced, txns)
}

// TestE2EMySQLCrashLoadData: migrate killed while LOAD DATA copies a large
// table, twice, with changes in between; the restart copies only the
// unfinished table again and streams the changes.
func TestE2EMySQLCrashLoadData(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[0]).with("PGRELAY_COPY_WORKERS=3")
	e.src.Exec(t, `CREATE TABLE huge (id int PRIMARY KEY, v int NOT NULL, note text);
		INSERT INTO huge SELECT i, i % 1000, 'n' || i FROM generate_series(1, 600000) i;
		CREATE TABLE small_a (id int PRIMARY KEY, v int);
		INSERT INTO small_a SELECT i, i FROM generate_series(1, 100) i;
		CREATE TABLE small_b (id int PRIMARY KEY, v text);
		INSERT INTO small_b SELECT i, 'b' || i FROM generate_series(1, 100) i;
		ANALYZE`)
	rng := e2eRand(t)
	state := func(table string) string {
		t.Helper()
		if e.query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pgrelay_table_state'") != "1" {
			return ""
		}
		return e.query(t, "SELECT state FROM pgrelay_table_state WHERE slot = ? AND source_name = ?", e.slot, table)
	}
	loading := `SELECT COUNT(*) > 0 FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'LOAD DATA LOCAL INFILE%huge%'`

	p := e.start("migrate")
	e.wait(t, p, 2*time.Minute, "LOAD DATA into huge", loading)
	time.Sleep(e2eKillDelay(rng) / 4)
	p.kill()
	if s := state("huge"); s == "indexed" || s == "copied" {
		t.Fatalf("the copy of huge finished (%s) before the kill: make the table larger", s)
	}
	e.src.Exec(t, `UPDATE huge SET v = -1 WHERE id % 50000 = 0;
		INSERT INTO huge SELECT i, 7, 'late' FROM generate_series(600001, 600010) i;
		DELETE FROM huge WHERE id BETWEEN 10 AND 20;
		UPDATE small_a SET v = v + 1 WHERE id > 50;
		DELETE FROM small_b WHERE id < 10`)

	p = e.start("migrate")
	e.wait(t, p, 2*time.Minute, "LOAD DATA into huge again", loading)
	time.Sleep(e2eKillDelay(rng) / 4)
	p.kill()
	e.src.Exec(t, "UPDATE huge SET v = -2 WHERE id % 100000 = 1; INSERT INTO small_a VALUES (1000, 1000)")

	p = e.mustRun(5*time.Minute, "migrate")
	p.waitLog(t, "caught up", 0)
	e.compare(t)
	for _, table := range []string{"huge", "small_a", "small_b"} {
		if s := state(table); s != "indexed" {
			t.Errorf("table %s is %q after migrate, want indexed", table, s)
		}
	}
	e.verify(t)
}

// TestE2EMySQLMigrateConcurrentWrites: writes keep coming while migrate
// copies the tables into MariaDB (LOAD DATA) and catches up; a second
// migrate after they stop leaves the target equal to the source.
func TestE2EMySQLMigrateConcurrentWrites(t *testing.T) {
	e := myE2EPair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, e2eChurnSchema(300000))
	w := e2eStartWriter(t, e.src, e2eRand(t), 300001)
	p := e.start("migrate")
	e.wait(t, p, 2*time.Minute, "LOAD DATA into churn", `SELECT COUNT(*) > 0 FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'LOAD DATA LOCAL INFILE%churn%'`)
	atCopy := w.committed()
	code := p.wait(t, 5*time.Minute)
	ops := w.stop(t)
	if code != 0 {
		t.Fatalf("migrate with concurrent writes exited %d; log:\n%s", code, p.logs())
	}
	if ops-atCopy < 10 {
		t.Errorf("only %d writer transactions ran from the copy's start to migrate's end; want the copy to overlap writes", ops-atCopy)
	}
	e.mustRun(3*time.Minute, "migrate")
	e.compare(t)
	e.verify(t)
	if n := e.query(t, "SELECT COUNT(*) FROM churn_log"); n == "0" {
		t.Error("no writer transaction reached the target")
	}
	t.Logf("%d writer transactions, %d of them after the copy started", ops, ops-atCopy)
}

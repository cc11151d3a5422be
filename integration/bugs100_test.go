package integration

// Scenarios of PostgreSQL's own logical replication test suite
// (src/test/subscription/t/100_bugs.pl), translated to pgrelay. Left out, as
// they test the server alone: CREATE_REPLICATION_SLOT then DROP_REPLICATION_SLOT
// in one walsender session (a v18 memory bug), LOAD of an output plugin by a
// REPLICATION role, DROP SUBSCRIPTION's self-deadlock (bug #18988), REFRESH
// PUBLICATION racing a DROP TABLE (injection points), and a partition whose
// DETACH CONCURRENTLY never finished (a walsender crash fixed after the
// releases tested here).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// bugsRows is a table's c1 values in order, comma-separated.
func bugsRows(table string) string {
	return "SELECT coalesce(string_agg(c1::text, ',' ORDER BY c1), '') FROM " + table
}

// TestE2ESchemaRenamedUnderTables: a schema is renamed, and a new schema of
// its old name gets a table of the same name, while replicate runs; then the
// renamed schema's table changes. PostgreSQL before 16 sends no new Relation
// message for that table (a schema rename does not invalidate it), so its
// changes still carry the old name, now the new table's. Each target table
// follows its source table by OID: the two are never merged. In one source
// transaction (also with PGRELAY_KEEP_ORDER=true) and one statement per
// transaction.
func TestE2ESchemaRenamedUnderTables(t *testing.T) {
	steps := []string{"INSERT INTO sch1.t1 VALUES (1)", "INSERT INTO sch1.k VALUES (3, 'c')", "INSERT INTO sch1.tr VALUES (10)",
		"ALTER SCHEMA sch1 RENAME TO sch2",
		"CREATE SCHEMA sch1", "CREATE TABLE sch1.t1 (c1 int)", "INSERT INTO sch1.t1 VALUES (2)", "INSERT INTO sch2.t1 VALUES (3)",
		// Updates, deletes and a truncate of the renamed schema's tables,
		// whose names the new tables hold.
		"CREATE TABLE sch1.k (id int PRIMARY KEY, v text)", "INSERT INTO sch1.k VALUES (1, 'new1'), (2, 'new2')",
		"UPDATE sch2.k SET v = 'a2' WHERE id = 1", "DELETE FROM sch2.k WHERE id = 2",
		"CREATE TABLE sch1.tr (c1 int)", "INSERT INTO sch1.tr VALUES (8)", "TRUNCATE sch2.tr"}
	cases := []struct {
		name, keepOrder string
		txns            []string
	}{
		{"one transaction", "", []string{"BEGIN; " + strings.Join(steps, "; ") + "; COMMIT"}},
		{"one transaction, keep order", "true", []string{"BEGIN; " + strings.Join(steps, "; ") + "; COMMIT"}},
		{"one transaction per statement", "", steps},
	}
	e2eEachMajor(t, func(t *testing.T, major int) {
		for _, tc := range cases {
			t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				e := e2ePair(t, major)
				if tc.keepOrder != "" {
					e.extra = append(e.extra, "PGRELAY_KEEP_ORDER="+tc.keepOrder)
				}
				e.src.Exec(t, `CREATE SCHEMA sch1; CREATE TABLE sch1.t1 (c1 int);
					CREATE TABLE sch1.k (id int PRIMARY KEY, v text); INSERT INTO sch1.k VALUES (1, 'a'), (2, 'b');
					CREATE TABLE sch1.tr (c1 int); INSERT INTO sch1.tr VALUES (9)`)
				p := e.start("replicate")
				e2eSync(t, e, p, 2*time.Minute)
				for _, sql := range tc.txns {
					e.src.Exec(t, sql)
				}
				e2eSync(t, e, p, 2*time.Minute)
				for table, want := range map[string]string{"sch1.t1": "2", "sch2.t1": "1,3", "sch1.tr": "8", "sch2.tr": "",
					"sch1.k": "1 new1,2 new2", "sch2.k": "1 a2,3 c"} {
					q := bugsRows(table)
					if strings.HasSuffix(table, ".k") {
						q = renameRows(table)
					}
					if got := e.tgt.QueryString(t, q); got != want {
						t.Errorf("target %s holds {%s}, want {%s} as on the source", table, got, want)
					}
				}
				e2eCompare(t, e)
				// A new session finds each table by its OID again.
				e.src.Exec(t, "INSERT INTO sch2.t1 VALUES (4); INSERT INTO sch1.t1 VALUES (5)")
				e2eSyncCompareStop(t, e, p)
				p = e.start("replicate")
				e.src.Exec(t, "INSERT INTO sch2.t1 VALUES (6); INSERT INTO sch1.t1 VALUES (7)")
				e2eSyncCompareStop(t, e, p)
			})
		}
	})
}

// TestE2ESchemaRenamedAlone: a schema renamed while replicate runs, its
// table changed after. Before PostgreSQL 16 no Relation message says so: the
// rows reach the table's target table, still under the old schema's name,
// until the table's next Relation message (a new session's first change to
// it) moves it; from 16 on it moves at once.
func TestE2ESchemaRenamedAlone(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		e := e2ePair(t, major)
		e.src.Exec(t, "CREATE SCHEMA sa1; CREATE TABLE sa1.t1 (c1 int); INSERT INTO sa1.t1 VALUES (1)")
		p := e.start("replicate")
		e2eSync(t, e, p, 2*time.Minute)
		e.src.Exec(t, "INSERT INTO sa1.t1 VALUES (2); ALTER SCHEMA sa1 RENAME TO sa2; INSERT INTO sa2.t1 VALUES (3)")
		e2eSync(t, e, p, 2*time.Minute)
		where := "sa2.t1"
		if major < 16 {
			where = "sa1.t1"
		}
		if got := e.tgt.QueryString(t, bugsRows(where)); got != "1,2,3" {
			t.Errorf("target %s holds {%s}, want {1,2,3}", where, got)
		}
		if code := p.term(t, time.Minute); code != 0 {
			t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
		}
		p = e.start("replicate")
		e.src.Exec(t, "INSERT INTO sa2.t1 VALUES (4)")
		e2eSyncCompareStop(t, e, p)
	})
}

// TestE2EBugsTemporaryAndUnloggedTables: with pgrelay's FOR ALL TABLES
// publication, a temporary and an unlogged table without a replica identity
// take updates on the source (they are not published), and pgrelay neither
// warns about them nor creates them on the target.
func TestE2EBugsTemporaryAndUnloggedTables(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		e := e2ePair(t, major)
		e.src.Exec(t, "CREATE UNLOGGED TABLE tu1 AS SELECT 1 AS a; CREATE TABLE kept (id int PRIMARY KEY); INSERT INTO kept VALUES (1)")
		p := e.start("replicate")
		e2eSync(t, e, p, 2*time.Minute)
		e.src.Exec(t, "CREATE TEMPORARY TABLE tt1 AS SELECT 1 AS a; UPDATE tt1 SET a = 2; UPDATE tu1 SET a = 2; CREATE UNLOGGED TABLE tu2 AS SELECT 1 AS a; UPDATE tu2 SET a = 2")
		e.src.Exec(t, "INSERT INTO kept VALUES (2)")
		e2eSync(t, e, p, 2*time.Minute)
		if got := e.tgt.QueryString(t, "SELECT coalesce(string_agg(relname, ','), '') FROM pg_class WHERE relname IN ('tt1', 'tu1', 'tu2')"); got != "" {
			t.Errorf("the target has tables %s, which are not published", got)
		}
		for _, l := range p.logLines() {
			if l.str("level") == "WARN" && strings.Contains(fmt.Sprint(l), "tu1") {
				t.Errorf("a warning names the unlogged table: %v", l)
			}
		}
		e2eSyncCompareStop(t, e, p)
	})
}

// TestE2EBugsTableAddedToPublication (bug #16643): the replication slot is
// made before pgrelay's first run, rows are written after it, and a table is
// added to the publication (which lists its tables) while replicate runs;
// the subscription's REFRESH PUBLICATION is a new session here (as the
// table's first change would start). Every row reaches the target exactly
// once: the tables have no key, so a row applied twice shows in the counts.
func TestE2EBugsTableAddedToPublication(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		e := e2ePair(t, major)
		e.src.Exec(t, `CREATE TABLE t (f int); CREATE TABLE t2 (f int);
			INSERT INTO t SELECT * FROM generate_series(1, 3000); INSERT INTO t2 SELECT * FROM generate_series(1, 3000);
			CREATE TABLE e2e_sync (token text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
			CREATE PUBLICATION `+e.pub+` FOR TABLE t, e2e_sync`)
		e.src.Exec(t, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", e.slot)
		e.src.Exec(t, "INSERT INTO t SELECT * FROM generate_series(1, 3000); INSERT INTO t2 SELECT * FROM generate_series(1, 3000)")
		p := e.start("replicate")
		e2eSync(t, e, p, 2*time.Minute)
		e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" ADD TABLE t2")
		if code := p.term(t, time.Minute); code != 0 {
			t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
		}
		p = e.start("replicate")
		p.waitLog(t, "tables were added to the publication since the snapshot copy: copying them", 2*time.Minute)
		e2eSync(t, e, p, 2*time.Minute)
		for _, tb := range []string{"t", "t2"} {
			if got := e.tgt.QueryString(t, "SELECT count(f) FROM "+tb); got != "6000" {
				t.Errorf("target %s holds %s rows, want 6000", tb, got)
			}
		}
		e2eSyncCompareStop(t, e, p)
	})
}

// TestE2EBugsCascade: a pgrelay target is the source of another pgrelay.
// The rows the first one's snapshot copy writes into the middle database
// reach the last one through the middle's stream (the second pgrelay streams
// before the copy is made), and so do the first one's streamed changes.
func TestE2EBugsCascade(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		first := e2ePair(t, major)
		last := harness.Postgres(t, e2eTargetMajor)
		second := e2eNewEnv(t, first.tgt, last)
		// The middle's e2e_sync is the first one's: the second waits by rows.
		second.extra = append(second.extra, "PGRELAY_TABLES=public.tab1")
		for _, pg := range []*harness.PG{first.src, first.tgt, last} {
			pg.Exec(t, "CREATE TABLE tab1 (a int)")
		}
		p2 := second.start("replicate")
		p2.waitLog(t, "streaming", 2*time.Minute)
		first.src.Exec(t, "INSERT INTO tab1 SELECT generate_series(1, 10)")
		first.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
		e2eWaitTarget(t, second, p2, 2*time.Minute, "the copied rows", "SELECT count(*) = 10 FROM tab1")
		p1 := first.start("replicate")
		first.src.Exec(t, "INSERT INTO tab1 SELECT generate_series(11, 20)")
		e2eSyncCompareStop(t, first, p1)
		e2eWaitTarget(t, second, p2, 2*time.Minute, "the streamed rows", "SELECT count(*) = 20 FROM tab1")
		if got := last.QueryString(t, "SELECT count(DISTINCT a) || ' ' || count(*) FROM tab1"); got != "20 20" {
			t.Errorf("the last target's tab1 holds %s (distinct, all) rows, want 20 20", got)
		}
		e2eCompare(t, second)
		if code := p2.term(t, time.Minute); code != 0 {
			t.Errorf("the second replicate exited %d after SIGTERM; log:\n%s", code, p2.logs())
		}
	})
}

// TestE2EBugsTargetTriggerCatchesError: a trigger on the target that fires
// for pgrelay's changes (ENABLE ALWAYS) raises an error and handles it
// itself. The position pgrelay stores still moves with each transaction: a
// new session does not apply them again.
func TestE2EBugsTargetTriggerCatchesError(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		e := e2ePair(t, major)
		e.src.Exec(t, "CREATE TABLE t1 (a int)")
		e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
		e.tgt.Exec(t, `CREATE FUNCTION handle_exception_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				BEGIN
					RAISE EXCEPTION 'This is a test exception';
				EXCEPTION WHEN OTHERS THEN
					RETURN NEW;
				END;
				RETURN NEW;
			END $$;
			CREATE TRIGGER silent_exception_trigger AFTER INSERT OR UPDATE ON t1 FOR EACH ROW EXECUTE FUNCTION handle_exception_trigger();
			ALTER TABLE t1 ENABLE ALWAYS TRIGGER silent_exception_trigger`)
		position := "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1"
		before := e2eLSN(t, "stored position", e.tgt.QueryString(t, position, e.slot))
		p := e.start("replicate")
		e.src.Exec(t, "INSERT INTO t1 VALUES (1)")
		e2eWaitTarget(t, e, p, 2*time.Minute, "the row", "SELECT count(*) = 1 FROM t1")
		e2eSyncCompareStop(t, e, p)
		if after := e2eLSN(t, "stored position", e.tgt.QueryString(t, position, e.slot)); after <= before {
			t.Errorf("the stored position stayed at %s after a transaction whose trigger caught an error (was %s)", after, before)
		}
		e.src.Exec(t, "INSERT INTO t1 VALUES (2)")
		e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
		if got := e.tgt.QueryString(t, "SELECT string_agg(a::text, ',' ORDER BY a) FROM t1"); got != "1,2" {
			t.Errorf("target t1 holds %s after a restart, want 1,2", got)
		}
	})
}

// TestE2EBugsRowFilterError: a publication's row filter that fails for the
// row an INSERT … ON CONFLICT writes (division by zero) stops the source's
// decoding; pgrelay stops with the source's error, applies nothing of it, and
// keeps its position.
func TestE2EBugsRowFilterError(t *testing.T) {
	e2eEachMajor(t, func(t *testing.T, major int) {
		if major < 15 {
			t.Skipf("row filters need PostgreSQL 15; this is %d", major)
		}
		e := e2ePair(t, major)
		e.src.Exec(t, `CREATE TABLE tab_upsert (a int PRIMARY KEY, b int);
			CREATE PUBLICATION `+e.pub+` FOR TABLE tab_upsert WHERE ((a / 0) > 0)`)
		e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
		position := "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1"
		before := e.tgt.QueryString(t, position, e.slot)
		e.src.Exec(t, "INSERT INTO tab_upsert (a, b) VALUES (1, 1) ON CONFLICT (a) DO UPDATE SET b = excluded.b")
		p, code := e.run(3*time.Minute, "migrate")
		if code == 0 || !strings.Contains(p.logs(), "division by zero") {
			t.Errorf("migrate exited %d over a row filter that fails; want a failure naming the source's error; log:\n%s", code, p.logs())
		}
		if got := e.tgt.QueryString(t, "SELECT count(*) FROM tab_upsert"); got != "0" {
			t.Errorf("target tab_upsert holds %s rows, want none", got)
		}
		if after := e.tgt.QueryString(t, position, e.slot); after != before {
			t.Errorf("the stored position moved from %s to %s", before, after)
		}
	})
}

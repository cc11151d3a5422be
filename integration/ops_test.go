package integration

// End-to-end tests of target and source set-ups a tester found pgrelay
// stumbling on: target database defaults, names pgrelay uses for itself,
// and targets of an older major than the source.

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// TestE2ETargetXMLOptionDocument: a target database whose default is
// xmloption = document still takes the xml fragments (content) a source
// holds, in the copy and in the stream: pgrelay's target sessions pin
// xmloption = content, as pg_dump does.
func TestE2ETargetXMLOptionDocument(t *testing.T) {
	e2eEachMajor(t, testE2ETargetXMLOptionDocument)
}

func testE2ETargetXMLOptionDocument(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.tgt.Exec(t, "ALTER DATABASE "+pgx.Identifier{e.tgt.DB}.Sanitize()+" SET xmloption = document")
	e.src.Exec(t, `CREATE TABLE xf (id int PRIMARY KEY, x xml, xs xml[]);
		INSERT INTO xf VALUES (1, 'abc<a/>def', ARRAY['t<b/>'::xml, '<c/>']), (2, '<doc/>', NULL);
		CREATE TABLE xfull (x xml, n int);
		ALTER TABLE xfull REPLICA IDENTITY FULL;
		INSERT INTO xfull VALUES ('one<a/>two', 1)`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e.src.Exec(t, `INSERT INTO xf VALUES (3, 'x<c/>y', ARRAY['u<v/>'::xml]);
		UPDATE xf SET x = 'z<d/>' WHERE id = 1;
		UPDATE xfull SET n = 2 WHERE n = 1;
		INSERT INTO xfull VALUES ('frag<d/>', 3)`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	if n := e2eCompare(t, e); n != 2 {
		t.Errorf("compared %d tables, want 2", n)
	}
}

// TestE2ESourceSchemaPgrelay: pgrelay keeps its metadata in schema pgrelay on
// the target, so published source tables of a schema named pgrelay cannot be
// replicated. Preflight refuses them before anything is created, in one line
// that says how to go on, also on a target another replication already uses
// (whose pgrelay.progress must never be offered up as "a table in the way");
// leaving them out works; and one that appears while replicate runs stops it
// before it reaches pgrelay's tables.
func TestE2ESourceSchemaPgrelay(t *testing.T) {
	e2eEachMajor(t, testE2ESourceSchemaPgrelay)
}

func testE2ESourceSchemaPgrelay(t *testing.T, major int) {
	// A target another replication uses: its position is in pgrelay.progress.
	first := e2ePair(t, major)
	first.src.Exec(t, "CREATE TABLE a (id int PRIMARY KEY); INSERT INTO a VALUES (1)")
	first.mustRun(3*time.Minute, "migrate")
	progress := "SELECT lsn::text FROM pgrelay.progress WHERE slot = '" + first.slot + "'"
	wantProgress := first.tgt.QueryString(t, progress)

	e := e2eNewEnv(t, harness.Postgres(t, major), first.tgt)
	e.src.Exec(t, `CREATE SCHEMA pgrelay;
		CREATE TABLE pgrelay.progress (id int PRIMARY KEY, note text);
		CREATE TABLE pgrelay.jobs (id int PRIMARY KEY);
		INSERT INTO pgrelay.progress VALUES (1, 'mine'); INSERT INTO pgrelay.jobs VALUES (1);
		CREATE TABLE b (id int PRIMARY KEY); INSERT INTO b VALUES (1)`)
	checkRefused := func(p *e2eProc, code int, what, wayOut string) {
		t.Helper()
		line := p.lastLine()
		if code != 1 || !strings.Contains(line, "pgrelay.jobs, pgrelay.progress cannot be replicated: pgrelay keeps its metadata in schema pgrelay on the target") ||
			!strings.Contains(line, "ALTER SCHEMA pgrelay RENAME TO") || !strings.Contains(line, wayOut) {
			t.Errorf("%s: exit %d, last line %q; want 1 and the tables in schema pgrelay refused, with the ways out (%q); log:\n%s", what, code, line, wayOut, p.logs())
		}
		if strings.Contains(line, "empty") {
			t.Errorf("%s: %q offers pgrelay's own tables to be emptied", what, line)
		}
		if got := e.tgt.QueryString(t, progress); got != wantProgress {
			t.Errorf("%s: the first replication's position in pgrelay.progress is %q, want %q", what, got, wantProgress)
		}
		if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "0" {
			t.Errorf("%s: the refused run created slot %s", what, e.slot)
		}
	}
	// pgrelay would create the publication FOR ALL TABLES: nothing is created.
	p, code := e.run(3*time.Minute, "migrate")
	checkRefused(p, code, "migrate, no publication yet", "list them in PGRELAY_TABLES")
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); got != "0" {
		t.Errorf("the refused migrate created publication %s", e.pub)
	}
	// The user's publication publishes them.
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE b, pgrelay.progress, pgrelay.jobs")
	p, code = e.run(3*time.Minute, "migrate")
	checkRefused(p, code, "migrate, a publication of the user's",
		"leave them out of the publication: ALTER PUBLICATION "+pgx.Identifier{e.pub}.Sanitize()+" DROP TABLE pgrelay.jobs, pgrelay.progress;")
	// Left out, the rest replicates.
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" DROP TABLE pgrelay.progress, pgrelay.jobs")
	e.mustRun(3*time.Minute, "migrate")
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.b"); got != "1" {
		t.Errorf("target public.b has %s rows, want 1", got)
	}
	// A table created in schema pgrelay while replicate runs (FOR ALL
	// TABLES) stops it, without touching pgrelay's tables.
	e.src.Exec(t, "DROP PUBLICATION "+e.pub+"; CREATE PUBLICATION "+e.pub+" FOR ALL TABLES")
	e.src.Exec(t, "DROP TABLE pgrelay.progress, pgrelay.jobs")
	rp := e.start("replicate")
	rp.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "CREATE TABLE pgrelay.progress (id int PRIMARY KEY); INSERT INTO pgrelay.progress VALUES (1)")
	if code := rp.wait(t, 2*time.Minute); code != 1 || !strings.Contains(rp.lastLine(), `table "pgrelay"."progress" cannot be replicated: pgrelay keeps its metadata in schema pgrelay on the target`) {
		t.Errorf("replicate exited %d with %q, want 1 and the table in schema pgrelay refused; log:\n%s", code, rp.lastLine(), rp.logs())
	}
	if got := e.tgt.QueryString(t, progress); got != wantProgress {
		t.Errorf("the first replication's position in pgrelay.progress is %q, want %q", got, wantProgress)
	}
	if got := e.tgt.QueryString(t, "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'pgrelay.progress'::regclass AND attnum > 0 AND NOT attisdropped"); got != "slot,lsn,commit_time,updated_at" {
		t.Errorf("target pgrelay.progress has columns %s, want pgrelay's own", got)
	}
}

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

// TestE2EOlderTarget: a target of an older major than the source cannot build
// everything the source has. What nothing replicated depends on is left out
// with a warning naming it, and migrate and replicate go on: a secondary
// index (UNIQUE NULLS NOT DISTINCT, PostgreSQL 15, on a 14 target) and a
// column default (uuidv7() and casefold(), 18, on a 17 target), both in the
// snapshot and for tables and columns that arrive later from the stream,
// whose DDL joins an open apply transaction.
func TestE2EOlderTarget(t *testing.T) {
	e2eBinary(t)
	t.Run("pg15to14", func(t *testing.T) {
		t.Parallel()
		testE2EOlderTargetIndex(t)
	})
	t.Run("pg18to17", func(t *testing.T) {
		t.Parallel()
		testE2EOlderTargetDefault(t)
	})
	t.Run("pg15to14char", func(t *testing.T) {
		t.Parallel()
		testE2EOlderTargetChar(t)
	})
}

// testE2EOlderTargetChar: a "char" value above 127, which a 15+ source
// prints as \ooo and a 14 target's input reads as a backslash, reaches the
// 14 target as its byte in streamed inserts, updates and deletes, keys
// included (the snapshot copies such a table in binary format).
func testE2EOlderTargetChar(t *testing.T) {
	e := e2eNewEnv(t, harness.Postgres(t, 15), harness.Postgres(t, 14))
	e.src.Exec(t, `CREATE TABLE qc (id int PRIMARY KEY, c "char", v text);
		INSERT INTO qc VALUES (1, 'é', 'copied'), (2, 'a', 'copied'), (3, NULL, 'copied');
		CREATE TABLE qk (k "char" PRIMARY KEY, v int);
		INSERT INTO qk VALUES ('ü', 1), ('b', 2)`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e.src.Exec(t, `INSERT INTO qc VALUES (4, 'Ω', 'streamed'), (5, '\', 'streamed'), (6, 'x', 'streamed');
		UPDATE qc SET c = 'ж' WHERE id = 2; UPDATE qc SET v = 'moved' WHERE id = 1;
		INSERT INTO qk VALUES ('€', 3); UPDATE qk SET v = 10 WHERE k = 'ü'; DELETE FROM qk WHERE k = 'b';
		UPDATE qk SET k = '中' WHERE k = '€'`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	for _, q := range []string{
		`SELECT string_agg(id || ':' || coalesce(c::int::text, 'null') || ':' || v, ',' ORDER BY id) FROM qc`,
		`SELECT string_agg(k::int || ':' || v, ',' ORDER BY k::int) FROM qk`,
	} {
		if src, tgt := e.src.QueryString(t, q), e.tgt.QueryString(t, q); src != tgt {
			t.Errorf("%s:\nsource %s\ntarget %s", q, src, tgt)
		}
	}
}

// e2eWarned fails the test unless p logged a warning whose msg contains msg
// and whose attrs hold want (key: substring of the value).
func e2eWarned(t *testing.T, p *e2eProc, msg string, want map[string]string) {
	t.Helper()
	for _, l := range p.logLines() {
		if l.str("level") != "WARN" || !strings.Contains(l.str("msg"), msg) {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && strings.Contains(l.str(k), v)
		}
		if ok {
			return
		}
	}
	t.Errorf("%s logged no warning %q with %v; log:\n%s", p.name, msg, want, p.logs())
}

func testE2EOlderTargetIndex(t *testing.T) {
	e := e2eNewEnv(t, harness.Postgres(t, 15), harness.Postgres(t, 14))
	e.src.Exec(t, `CREATE TABLE nnd (id int PRIMARY KEY, u int, w int, UNIQUE NULLS NOT DISTINCT (u));
		CREATE INDEX nnd_w ON nnd (w);
		INSERT INTO nnd VALUES (1, NULL, 1), (2, 5, 2);
		CREATE TABLE other (id int PRIMARY KEY); INSERT INTO other VALUES (1);
		CREATE TABLE nndc (id int, u int, CONSTRAINT nndc_pk PRIMARY KEY (id) DEFERRABLE, CONSTRAINT nndc_u UNIQUE NULLS NOT DISTINCT (u) DEFERRABLE);
		INSERT INTO nndc VALUES (1, NULL)`)
	p := e.mustRun(3*time.Minute, "migrate")
	e2eWarned(t, p, "secondary index left out", map[string]string{"index": "nnd_u_key", "definition": "NULLS NOT DISTINCT", "error": "42601"})
	// A constraint is left out the same way, the others built.
	e2eWarned(t, p, "secondary index left out", map[string]string{"table": "nndc", "index": `"nndc_u"`, "definition": "NULLS NOT DISTINCT", "error": "42601"})
	e2eCompare(t, e)
	indexes := func(table string) string {
		return e.tgt.QueryString(t, "SELECT coalesce(string_agg(indexname, ',' ORDER BY indexname), '') FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1", table)
	}
	if got := indexes("nnd"); got != "nnd_pkey,nnd_w" {
		t.Errorf("target indexes of nnd: %s, want nnd_pkey,nnd_w", got)
	}
	if got := indexes("nndc"); got != "nndc_pk_unique" {
		t.Errorf("target indexes of nndc: %s, want nndc_pk_unique", got)
	}
	// Again: nothing left to do, exit 0.
	e.mustRun(3*time.Minute, "migrate")

	// A table created from the stream, in a transaction that changed another
	// table first: its index build may not abort the apply transaction.
	rp := e.start("replicate")
	rp.waitLog(t, "streaming", 2*time.Minute)
	e2eExec(t, e2eCtx(t, time.Minute), e.src.Conn(t), "BEGIN", "INSERT INTO other VALUES (2)",
		"CREATE TABLE late (id int PRIMARY KEY, u int, v int)",
		"CREATE UNIQUE INDEX late_u ON late (u) NULLS NOT DISTINCT",
		"CREATE INDEX late_v ON late (v)",
		"INSERT INTO late VALUES (1, NULL, 1), (2, 5, 2)", "INSERT INTO other VALUES (3)", "COMMIT")
	e2eSync(t, e, rp, 2*time.Minute)
	e2eWarned(t, rp, "secondary index left out", map[string]string{"index": "late_u", "error": "42601"})
	e2eCompare(t, e)
	if got := indexes("late"); got != "late_pkey,late_v" {
		t.Errorf("target indexes of late: %s, want late_pkey,late_v", got)
	}
	if code := rp.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, rp.logs())
	}
}

func testE2EOlderTargetDefault(t *testing.T) {
	e := e2eNewEnv(t, harness.Postgres(t, 18), harness.Postgres(t, 17))
	e.src.Exec(t, `CREATE TABLE u7 (id uuid PRIMARY KEY DEFAULT uuidv7(), v text DEFAULT 'x', n int);
		INSERT INTO u7 (v) VALUES ('a'), ('b')`)
	p := e.mustRun(3*time.Minute, "migrate")
	e2eWarned(t, p, "column default left out", map[string]string{"table": "u7", "column": "id", "default": "uuidv7()", "error": "42883"})
	e2eCompare(t, e)
	defaults := func(table string) string {
		return e.tgt.QueryString(t, `SELECT string_agg(attname || '=' || coalesce(pg_get_expr(adbin, adrelid), ''), ',' ORDER BY attnum)
			FROM pg_attribute LEFT JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
			WHERE attrelid = ('public.' || $1)::regclass AND attnum > 0 AND NOT attisdropped`, table)
	}
	if got, want := defaults("u7"), "id=,v='x'::text,n="; got != want {
		t.Errorf("target defaults of u7: %s, want %s", got, want)
	}
	e.mustRun(3*time.Minute, "migrate")

	// From the stream: a new table, and a column added with an immutable
	// default the target lacks (existing rows hold its value: that part
	// is created).
	rp := e.start("replicate")
	rp.waitLog(t, "streaming", 2*time.Minute)
	e2eExec(t, e2eCtx(t, time.Minute), e.src.Conn(t), "BEGIN", "INSERT INTO u7 (v) VALUES ('c')",
		"CREATE TABLE u7late (id uuid PRIMARY KEY DEFAULT uuidv7(), v text)",
		"INSERT INTO u7late (v) VALUES ('a')", "COMMIT")
	e.src.Exec(t, "ALTER TABLE u7 ADD COLUMN c text DEFAULT casefold('AB'); INSERT INTO u7 (v) VALUES ('d')")
	e2eSync(t, e, rp, 2*time.Minute)
	e2eWarned(t, rp, "column default left out", map[string]string{"table": "u7late", "column": "id"})
	e2eWarned(t, rp, "column default left out", map[string]string{"table": "u7", "column": "c", "default": "casefold"})
	e2eCompare(t, e)
	if got, want := defaults("u7late"), "id=,v="; got != want {
		t.Errorf("target defaults of u7late: %s, want %s", got, want)
	}
	if got, want := defaults("u7"), "id=,v='x'::text,n=,c="; got != want {
		t.Errorf("target defaults of u7: %s, want %s", got, want)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.u7 WHERE c = 'ab'"); got != "4" {
		t.Errorf("target u7 rows with c = 'ab': %s, want 4 (the 3 older rows filled as on the source, and the new one)", got)
	}
	if code := rp.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, rp.logs())
	}
}

package integration

// A target table belongs to one source table, known by its OID, not by its
// name: names swap, and a name left by a table renamed or dropped on the source
// is taken by the next one created. Each test runs its steps with pgrelay
// stopped (the next run finds what changed) and while it runs.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// renameTables lists the target's tables outside pgrelay's schema (and the
// sync table e2eSync adds), schema-qualified, comma-separated.
const renameTables = `SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY schemaname, tablename)
	FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema', 'pgrelay') AND tablename <> 'e2e_sync'`

// renameRows is the rows of a table as "id v" pairs in id order.
func renameRows(table string) string {
	return "SELECT coalesce(string_agg(id || ' ' || v, ',' ORDER BY id), '') FROM " + table
}

// renameCheck compares source and target, then checks the target's tables and
// that each table pgrelay.relation keeps for the slot is stored with the OID
// of the source table of that name.
func renameCheck(t *testing.T, e *e2eEnv, step, wantTables string) {
	t.Helper()
	e2eCompare(t, e)
	if got := e.tgt.QueryString(t, renameTables); got != wantTables {
		t.Errorf("%s: target tables %s, want %s", step, got, wantTables)
	}
	stored := e.tgt.QueryString(t, `SELECT string_agg(schema || '.' || name || '=' || relation_oid, ',' ORDER BY schema, name)
		FROM pgrelay.relation WHERE slot = $1 AND relation_oid IS NOT NULL AND name <> 'e2e_sync'`, e.slot)
	for _, entry := range strings.Split(stored, ",") {
		name, oid, _ := strings.Cut(entry, "=")
		if src := e.src.QueryString(t, "SELECT coalesce((SELECT oid::text FROM pg_class WHERE oid = to_regclass($1)), 'none')", name); src != oid {
			t.Errorf("%s: pgrelay.relation keeps %s as source relation %s; the source's %s is %s", step, name, oid, name, src)
		}
	}
}

// renamed is renameCheck as a step of TestE2ECases.
func renamed(step, wantTables string) e2eStep {
	return e2eStep{"rename check: " + step, func(r *e2eCaseRun) {
		r.t.Helper()
		renameCheck(r.t, r.e, step, wantTables)
	}}
}

// TestE2ETableDroppedAndCreatedAgain: a table is dropped and created again
// under the same name. The new target table starts empty; the dropped table's
// target table is kept under <name>_pgrelay_dropped_<oid>, with a warning.
func TestE2ETableDroppedAndCreatedAgain(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, `CREATE TABLE dc_b (id int PRIMARY KEY, v text); INSERT INTO dc_b VALUES (1, 'old1'), (2, 'old2');
		CREATE TABLE dc_c (id int PRIMARY KEY, v text); INSERT INTO dc_c VALUES (1, 'c1'), (2, 'c2')`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	oidB := e.src.QueryString(t, "SELECT 'dc_b'::regclass::oid::text")
	oidC := e.src.QueryString(t, "SELECT 'dc_c'::regclass::oid::text")
	warned := func(p *e2eProc, table, oid string) {
		t.Helper()
		l, ok := p.findLog("target table renamed aside")
		if !ok || l.str("level") != "WARN" || l.str("table") != "public."+table || l.str("renamed_to") != "public."+table+"_pgrelay_dropped_"+oid {
			t.Errorf("no warning naming %s and where it went (got %v); log:\n%s", table, l, p.logs())
		}
	}

	// Stopped, the same columns.
	e.src.Exec(t, "DROP TABLE dc_b; CREATE TABLE dc_b (id int PRIMARY KEY, v text); INSERT INTO dc_b VALUES (3, 'new3'), (4, 'new4')")
	p := e.mustRun(3*time.Minute, "migrate")
	p.waitLog(t, "caught up", 0)
	warned(p, "dc_b", oidB)
	renameCheck(t, e, "dropped while stopped", fmt.Sprintf("public.dc_b,public.dc_b_pgrelay_dropped_%s,public.dc_c", oidB))
	if got := e.tgt.QueryString(t, renameRows("dc_b_pgrelay_dropped_"+oidB)); got != "1 old1,2 old2" {
		t.Errorf("the dropped table's rows on the target: %s, want 1 old1,2 old2", got)
	}

	// Running, other column types.
	p = e.start("replicate")
	e2eSync(t, e, p, 2*time.Minute)
	e.src.Exec(t, "DROP TABLE dc_c; CREATE TABLE dc_c (id bigint PRIMARY KEY, v numeric); INSERT INTO dc_c VALUES (7, 1.5)")
	e2eSync(t, e, p, 2*time.Minute)
	warned(p, "dc_c", oidC)
	renameCheck(t, e, "dropped while running",
		fmt.Sprintf("public.dc_b,public.dc_b_pgrelay_dropped_%s,public.dc_c,public.dc_c_pgrelay_dropped_%s", oidB, oidC))
	if got := e.tgt.QueryString(t, renameRows("dc_c_pgrelay_dropped_"+oidC)); got != "1 c1,2 c2" {
		t.Errorf("the dropped table's rows on the target: %s, want 1 c1,2 c2", got)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d; log:\n%s", code, p.logs())
	}
}

// TestE2EColumnAddedThenTableRenamed: a column is added with a constant
// default, a row changes, then the table is renamed, all before pgrelay reads
// the Relation message that shows the column. Its facts (the fill value older
// rows hold) are the renamed table's: they are looked up by the table's OID,
// not by the name the message carries. A column whose default is volatile is
// refused, as on a table not renamed, not added empty.
func TestE2EColumnAddedThenTableRenamed(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, `CREATE TABLE ar (id int PRIMARY KEY, a int); INSERT INTO ar SELECT g, g FROM generate_series(1, 5) g;
		CREATE TABLE av (id int PRIMARY KEY, a int); INSERT INTO av SELECT g, g FROM generate_series(1, 3) g`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)

	// Stopped.
	e.src.Exec(t, `ALTER TABLE ar ADD COLUMN c2 text DEFAULT 'd2'; UPDATE ar SET a = 0 WHERE id = 1;
		ALTER TABLE ar RENAME TO ar_b; UPDATE ar_b SET a = 0 WHERE id = 2`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	renameCheck(t, e, "stopped", "public.ar_b,public.av")
	if got := e.tgt.QueryString(t, "SELECT string_agg(id || ' ' || coalesce(c2, 'NULL'), ',' ORDER BY id) FROM ar_b"); got != "1 d2,2 d2,3 d2,4 d2,5 d2" {
		t.Errorf("stopped: target ar_b.c2 holds %s, want d2 in every row", got)
	}

	// Running.
	p := e.start("replicate")
	e2eSync(t, e, p, 2*time.Minute)
	e.src.Exec(t, `ALTER TABLE ar_b ADD COLUMN c3 int DEFAULT 7; UPDATE ar_b SET a = 1 WHERE id = 3;
		ALTER TABLE ar_b RENAME TO ar_c; UPDATE ar_c SET a = 1 WHERE id = 4`)
	e2eSync(t, e, p, 2*time.Minute)
	renameCheck(t, e, "running", "public.ar_c,public.av")
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d; log:\n%s", code, p.logs())
	}

	// Default now(): the value ADD COLUMN gave older rows is in the catalog
	// (attmissingval), and they get it.
	e.src.Exec(t, `ALTER TABLE av ADD COLUMN ts timestamptz DEFAULT now(); UPDATE av SET a = 0 WHERE id = 1;
		ALTER TABLE av RENAME TO av_b; UPDATE av_b SET a = 0 WHERE id = 2`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	renameCheck(t, e, "default now()", "public.ar_c,public.av_b")
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM av_b WHERE ts IS NULL"); got != "0" {
		t.Errorf("default now(): %s target rows hold NULL", got)
	}

	// A volatile default rewrites the table, and what older rows got is
	// nowhere: refused, naming the default, not added empty.
	e.src.Exec(t, `ALTER TABLE av_b ADD COLUMN ts2 timestamptz DEFAULT clock_timestamp(); UPDATE av_b SET a = 1 WHERE id = 1;
		ALTER TABLE av_b RENAME TO av_c; UPDATE av_c SET a = 1 WHERE id = 2`)
	p, code := e.run(3*time.Minute, "migrate")
	if code == 0 || !strings.Contains(p.logs(), "not immutable") {
		t.Errorf("migrate exited %d after a column with default clock_timestamp() was added to a table renamed since; want a refusal naming the default; log:\n%s", code, p.logs())
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM information_schema.columns WHERE column_name = 'ts2'"); got != "0" {
		t.Errorf("the column with default clock_timestamp() was added on the target (%s tables have it)", got)
	}
	// The fix the refusal names: a new copy.
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	p, code = always.run(3*time.Minute, "migrate")
	if code != 0 {
		t.Fatalf("migrate with PGRELAY_SNAPSHOT=always exited %d; log:\n%s", code, p.logs())
	}
	// (A copy anew goes by names: the target's av_b, which the refused
	// run did not move, stays as it is.)
	e2eCompare(t, e)
}

// TestE2ENewTableIndexesByOID: tables created on the source while pgrelay is
// stopped, then renamed, or dropped and created again under the same name with
// other columns, before pgrelay reads their first change. The target table
// made from each Relation message gets the secondary indexes of that relation,
// found by its OID: the renamed table's under its old name (then renamed with
// it), none from the table that took the name of a dropped one, whose columns
// the target table does not have.
func TestE2ENewTableIndexesByOID(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, "CREATE TABLE io_first (id int PRIMARY KEY); CREATE TABLE io_k (id int PRIMARY KEY, v text); INSERT INTO io_k VALUES (1, 'k')")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e.src.Exec(t, `CREATE TABLE io_a (id int PRIMARY KEY, v text); CREATE INDEX io_a_v ON io_a (v); INSERT INTO io_a VALUES (1, 'a');
		ALTER TABLE io_a RENAME TO io_b; INSERT INTO io_b VALUES (2, 'b');
		CREATE TABLE io_d (id int PRIMARY KEY, v text); INSERT INTO io_d VALUES (1, 'old');
		DROP TABLE io_d; CREATE TABLE io_d (id int PRIMARY KEY, w int, v text); CREATE INDEX io_d_w ON io_d (w); INSERT INTO io_d VALUES (2, 2, 'new')`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
	indexes := `SELECT string_agg(tablename || ':' || indexname, ',' ORDER BY tablename, indexname) FROM pg_indexes
		WHERE schemaname = 'public' AND tablename LIKE 'io\_%' AND indexname NOT LIKE '%pkey%'`
	if got, want := e.tgt.QueryString(t, indexes), "io_b:io_a_v,io_d:io_d_w"; got != want {
		t.Errorf("target secondary indexes %s, want %s", got, want)
	}

	// Empty when pgrelay starts again: not copied, created from the stream.
	e.src.Exec(t, `CREATE TABLE io_e (id int PRIMARY KEY, v text); CREATE INDEX io_e_v ON io_e (v); INSERT INTO io_e VALUES (1, 'e');
		ALTER TABLE io_e RENAME TO io_f; DELETE FROM io_f;
		CREATE TABLE io_g (id int PRIMARY KEY, v text); INSERT INTO io_g VALUES (1, 'old'); DROP TABLE io_g;
		CREATE TABLE io_g (id int PRIMARY KEY, w int, v text); CREATE INDEX io_g_w ON io_g (w); INSERT INTO io_g VALUES (2, 2, 'new'); DELETE FROM io_g`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
	if got, want := e.tgt.QueryString(t, indexes), "io_b:io_a_v,io_d:io_d_w,io_f:io_e_v,io_g:io_g_w"; got != want {
		t.Errorf("target secondary indexes %s, want %s", got, want)
	}

	// The replica identity set to FULL, then the table renamed: the source's
	// index on the former key is found by OID and kept as a unique index.
	e.src.Exec(t, "ALTER TABLE io_k REPLICA IDENTITY FULL; UPDATE io_k SET v = 'full'; ALTER TABLE io_k RENAME TO io_k2; UPDATE io_k2 SET v = 'renamed'")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
	if got, want := e.tgt.QueryString(t, `SELECT string_agg(indexrelid::regclass || ':' || indisunique || ':' || indisprimary, ',' ORDER BY indexrelid::regclass::text)
		FROM pg_index WHERE indrelid = 'public.io_k2'::regclass`), "io_k_pkey_unique:true:false"; got != want {
		t.Errorf("target indexes of a table set to REPLICA IDENTITY FULL, then renamed: %s, want %s", got, want)
	}
}

// TestE2EStatusAfterRename: a copied table renamed on the source, while
// replicate runs and while it is stopped, is listed by status under its new
// name, copied, with the rows its copy took; its old name is not listed. A
// table copied and then dropped from the publication still reads as
// unpublished.
func TestE2EStatusAfterRename(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, `CREATE TABLE st_a (id int PRIMARY KEY, v text); INSERT INTO st_a SELECT g, 'a' FROM generate_series(1, 5) g;
		CREATE TABLE st_b (id int PRIMARY KEY, v text); INSERT INTO st_b SELECT g, 'b' FROM generate_series(1, 3) g;
		CREATE TABLE st_c (id int PRIMARY KEY); INSERT INTO st_c VALUES (1);
		CREATE TABLE e2e_sync (token text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
		CREATE PUBLICATION `+e.pub+` FOR TABLE st_a, st_b, st_c, e2e_sync`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	check := func(step string, want map[string]int64) {
		t.Helper()
		st, raw := e.status(t)
		got := map[string]int64{}
		for _, ts := range st.Tables {
			if ts.Name == "e2e_sync" {
				continue
			}
			if ts.Copied && (ts.State == "copied" || ts.State == "indexed") {
				got[ts.Table] = ts.Rows
			} else {
				got[ts.Table+" "+ts.State] = -1
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: status lists %v, want %v; status:\n%s", step, got, want, raw)
		}
	}
	check("copied", map[string]int64{"public.st_a": 5, "public.st_b": 3, "public.st_c": 1})

	p := e.start("replicate")
	e2eSync(t, e, p, 2*time.Minute)
	e.src.Exec(t, "ALTER TABLE st_a RENAME TO st_a2; INSERT INTO st_a2 VALUES (6, 'a')")
	e2eSync(t, e, p, 2*time.Minute)
	check("renamed while running", map[string]int64{"public.st_a2": 5, "public.st_b": 3, "public.st_c": 1})
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
	}
	check("renamed while running, stopped since", map[string]int64{"public.st_a2": 5, "public.st_b": 3, "public.st_c": 1})

	// Stopped: renamed into another schema, and a table left out of the
	// publication.
	e.src.Exec(t, "CREATE SCHEMA st; ALTER TABLE st_b SET SCHEMA st; ALTER TABLE st.st_b RENAME TO b2; ALTER PUBLICATION "+e.pub+" SET TABLE st_a2, st.b2, e2e_sync")
	check("moved while stopped", map[string]int64{"st.b2": 3, "public.st_a2": 5, "public.st_c unpublished": -1})
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	check("moved while stopped, run since", map[string]int64{"st.b2": 3, "public.st_a2": 5, "public.st_c unpublished": -1})
}

// TestE2ENameReusedAddedToPublication: with a publication that lists its
// tables, a copied table is renamed while pgrelay is stopped, and a new table
// takes its name, holding rows, and is added to the publication. The new
// table is not the one the target knows by that name: the next start copies
// it, and the renamed table's target table moves to its new name, rows kept.
func TestE2ENameReusedAddedToPublication(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, `CREATE TABLE nu (id int PRIMARY KEY, v text); INSERT INTO nu VALUES (1, 'old1'), (2, 'old2');
		CREATE PUBLICATION `+e.pub+` FOR TABLE nu`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e.src.Exec(t, `ALTER TABLE nu RENAME TO nu_old; CREATE TABLE nu (id int PRIMARY KEY, v text);
		INSERT INTO nu VALUES (1, 'new1'), (3, 'new3'); ALTER PUBLICATION `+e.pub+` ADD TABLE nu`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	renameCheck(t, e, "name reused", "public.nu,public.nu_old")
	if got := e.tgt.QueryString(t, renameRows("nu_old")); got != "1 old1,2 old2" {
		t.Errorf("target nu_old holds %s, want the renamed table's rows", got)
	}
}

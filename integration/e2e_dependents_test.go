package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// TestE2ESchemaDependents: after a migration made the views, a
// materialized view and the foreign keys on the target, the source drops
// and retypes columns they depend on (dropping or remaking the objects
// first, which pgoutput does not carry). Replicate goes on: the target's
// objects are dropped around the change and made again where they can be;
// those that cannot are listed in status until the next migrate makes what
// the source has. An object the sink does not move (a function's body) stops
// apply with one line naming it and the fix.
func TestE2ESchemaDependents(t *testing.T) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, `CREATE TABLE dv_t (id int PRIMARY KEY, a int, b int, c text);
		INSERT INTO dv_t SELECT i, i, i * 2, 'c' || i FROM generate_series(1, 5) i;
		CREATE VIEW dv_v AS SELECT id, a, b FROM dv_t;
		CREATE VIEW dv_w AS SELECT id, a FROM dv_v WHERE a > 1;
		COMMENT ON VIEW dv_w IS 'the view on the view';
		CREATE MATERIALIZED VIEW dv_m AS SELECT id, b FROM dv_t;
		CREATE UNIQUE INDEX dv_m_id ON dv_m (id);
		CREATE TABLE dv_parent (id int PRIMARY KEY, code int UNIQUE);
		CREATE TABLE dv_child (id int PRIMARY KEY, pcode int REFERENCES dv_parent (code));
		INSERT INTO dv_parent VALUES (1, 10), (2, 20); INSERT INTO dv_child VALUES (1, 10)`)
	e.mustRun(3*time.Minute, "migrate")
	if got := e.tgt.QueryString(t, `SELECT count(*) FROM pg_class WHERE relname IN ('dv_v', 'dv_w', 'dv_m')`); got != "3" {
		t.Fatalf("views made by migrate: %s, want 3", got)
	}

	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	// A type change under the views and a referenced column's: the views
	// come back as they were.
	e.src.Exec(t, `DROP VIEW dv_w; DROP VIEW dv_v; DROP MATERIALIZED VIEW dv_m;
		ALTER TABLE dv_t ALTER COLUMN a TYPE bigint, ALTER COLUMN b TYPE bigint;
		CREATE VIEW dv_v AS SELECT id, a, b FROM dv_t;
		CREATE VIEW dv_w AS SELECT id, a FROM dv_v WHERE a > 1;
		COMMENT ON VIEW dv_w IS 'the view on the view';
		CREATE MATERIALIZED VIEW dv_m AS SELECT id, b FROM dv_t;
		CREATE UNIQUE INDEX dv_m_id ON dv_m (id);
		INSERT INTO dv_t VALUES (6, 6000000000, 12, 'c6');
		ALTER TABLE dv_parent ALTER COLUMN code TYPE bigint;
		INSERT INTO dv_parent VALUES (3, 30)`)
	e2eSync(t, e, p, 2*time.Minute)
	e2eSameOutcomes(t, e, []string{
		`SELECT * FROM public.dv_w ORDER BY id`,
		`SELECT obj_description('public.dv_w'::regclass, 'pg_class')`,
		`SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'public.dv_v'::regclass AND attname = 'a'`,
		`SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'public.dv_m'::regclass`,
		`SELECT conname FROM pg_constraint WHERE conrelid = 'public.dv_child'::regclass AND contype = 'f'`,
	})

	// A column dropped under the views and a referenced one: what cannot be
	// made again is listed.
	e.src.Exec(t, `DROP VIEW dv_w; DROP VIEW dv_v; DROP MATERIALIZED VIEW dv_m;
		ALTER TABLE dv_t DROP COLUMN b;
		CREATE VIEW dv_v AS SELECT id, a FROM dv_t;
		CREATE VIEW dv_w AS SELECT id, a FROM dv_v WHERE a > 1;
		INSERT INTO dv_t VALUES (7, 7, 'c7');
		ALTER TABLE dv_child DROP CONSTRAINT dv_child_pcode_fkey;
		ALTER TABLE dv_parent DROP COLUMN code;
		INSERT INTO dv_parent VALUES (4)`)
	e2eSync(t, e, p, 2*time.Minute)
	e2eCompare(t, e)
	st, raw := e.status(t)
	if st.Cutover == nil || st.Cutover.Ready {
		t.Errorf("status after views were dropped: want not ready; got %s", raw)
	}
	var listed []string
	if st.Cutover != nil {
		for _, o := range st.Cutover.LeftOut {
			if strings.Contains(o.Reason, "needed it out of the way on the target") {
				listed = append(listed, o.Name)
			}
		}
	}
	for _, want := range []string{"public.dv_v", "public.dv_w", "public.dv_m", "dv_child_pcode_fkey on public.dv_child"} {
		if !slices.Contains(listed, want) {
			t.Errorf("status does not list %s as left out; got %s", want, raw)
		}
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
	}
	out := strings.Join(e.mustRun(3*time.Minute, "migrate").out.all(), "\n")
	if !strings.Contains(out, "ready to switch: yes") {
		t.Errorf("migrate after the views were dropped: %s", out)
	}
	e2eSameOutcomes(t, e, []string{
		`SELECT * FROM public.dv_w ORDER BY id`,
		`SELECT to_regclass('public.dv_m') IS NULL`,
		`SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.dv_child'::regclass AND contype = 'f'`,
	})

	// A function whose body reads a column the source drops: apply stops,
	// naming it and what to do; once dropped on the target, it goes on.
	e.src.Exec(t, `CREATE FUNCTION dv_f() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT max(a) FROM dv_t; END`)
	e.mustRun(3*time.Minute, "migrate")
	e.src.Exec(t, `DROP VIEW dv_w; DROP VIEW dv_v; DROP FUNCTION dv_f(); ALTER TABLE dv_t DROP COLUMN a; INSERT INTO dv_t VALUES (8, 'c8')`)
	failed, code := e.run(3*time.Minute, "migrate")
	errLines := failed.errOut.all()
	errLine := errLines[len(errLines)-1]
	if code != 1 || !strings.Contains(errLine, "function public.dv_f() depends on column a of table public.dv_t") ||
		!strings.Contains(errLine, "drop it on the target too, then start pgrelay again") {
		t.Errorf("migrate with a function reading the dropped column: exit %d, error %q", code, errLine)
	}
	e.tgt.Exec(t, "DROP FUNCTION public.dv_f()")
	e.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
}

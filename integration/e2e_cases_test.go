package integration

// End-to-end scenarios of one shape, as data: tables made on the source,
// pgrelay run (migrate, or replicate in the background), the source changed,
// the sides compared and the target's catalog read. Each case is a subtest of
// TestE2ECases named as its test once was (TestE2ENotNullAddedLater is
// TestE2ECases/NotNullAddedLater/pg15 and …/pg18). A scenario that needs
// more than these steps (kills, held sessions, prepared transactions left
// open, exit codes) stays a test of its own.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// e2eCase is one scenario.
type e2eCase struct {
	name string
	on   e2eMajors
	// settings are NAME=value settings of every pgrelay run.
	settings []string
	// sourceDatabase are settings of the source database ("datestyle =
	// 'SQL, DMY'"), set before anything else.
	sourceDatabase []string
	// source makes the source's tables and rows; each string is one
	// transaction (one Exec). "{{pub}}" stands for the publication's name.
	source []string
	steps  []e2eStep
}

// e2eMajors says which source majors a case runs on; the target is always
// e2eTargetMajor.
type e2eMajors int

const (
	onEachMajor  e2eMajors = iota // every major under test, in parallel
	onFirstMajor                  // the first of PGRELAY_TEST_MAJORS
	onLastMajor                   // the last of PGRELAY_TEST_MAJORS
	onMajor15                     // PostgreSQL 15 whatever is under test
)

func (m e2eMajors) majors() []int {
	all := harness.Majors()
	switch m {
	case onFirstMajor:
		return all[:1]
	case onLastMajor:
		return all[len(all)-1:]
	case onMajor15:
		return []int{15}
	}
	return all
}

// e2eStep is one step of a case: what it does, said in failure messages,
// and the doing.
type e2eStep struct {
	what string
	do   func(r *e2eCaseRun)
}

// e2eCaseRun is a case running on one source major.
type e2eCaseRun struct {
	t     *testing.T
	e     *e2eEnv
	major int
	p     *e2eProc // the replicate running in the background, if any
	last  *e2eProc // the latest pgrelay run
}

func (r *e2eCaseRun) sql(s string) string { return strings.ReplaceAll(s, "{{pub}}", r.e.pub) }

// with is the set-up with more settings for one run.
func (r *e2eCaseRun) with(settings []string) *e2eEnv {
	e := *r.e
	e.extra = append(slices.Clone(r.e.extra), settings...)
	return &e
}

// TestE2ECases runs each case of e2eCases, one after the other, and a case's
// majors in parallel.
func TestE2ECases(t *testing.T) {
	e2eBinary(t) // once, before the subtests run in parallel
	names := map[string]bool{}
	for _, c := range e2eCases {
		if names[c.name] {
			t.Fatalf("two cases named %s", c.name)
		}
		names[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			for _, major := range c.on.majors() {
				t.Run(e2eMajorName(major), func(t *testing.T) {
					t.Parallel()
					start := time.Now()
					e2eRunCase(t, c, major)
					t.Logf("%s took %v", t.Name(), time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
}

func e2eRunCase(t *testing.T, c e2eCase, major int) {
	r := &e2eCaseRun{t: t, e: e2ePair(t, major), major: major}
	r.e.extra = append(r.e.extra, c.settings...)
	for _, s := range c.sourceDatabase {
		r.e.src.Exec(t, "ALTER DATABASE "+pgx.Identifier{r.e.src.DB}.Sanitize()+" SET "+s)
	}
	for _, s := range c.source {
		r.e.src.Exec(t, r.sql(s))
	}
	// On failure, the first step that failed and the target's DDL.
	step, failedAt := 0, -1
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if failedAt < 0 {
			failedAt = step // a step that stopped the test
		}
		if failedAt < len(c.steps) {
			t.Logf("failed at step %d of %d: %s", failedAt+1, len(c.steps), c.steps[failedAt].what)
		}
		t.Log(r.e.targetLog())
	})
	for i, s := range c.steps {
		step = i
		s.do(r)
		if t.Failed() && failedAt < 0 {
			failedAt = i
		}
	}
}

// onSource runs each statement on the source, one transaction each.
func onSource(stmts ...string) e2eStep {
	return e2eStep{"on the source: " + strings.Join(stmts, "; "), func(r *e2eCaseRun) {
		for _, s := range stmts {
			r.e.src.Exec(r.t, r.sql(s))
		}
	}}
}

// onTarget runs each statement on the target, one transaction each.
func onTarget(stmts ...string) e2eStep {
	return e2eStep{"on the target: " + strings.Join(stmts, "; "), func(r *e2eCaseRun) {
		for _, s := range stmts {
			r.e.tgt.Exec(r.t, r.sql(s))
		}
	}}
}

// migrate runs pgrelay migrate with more settings: it must exit 0 having
// caught up.
func migrate(settings ...string) e2eStep {
	return e2eStep{"migrate " + strings.Join(settings, " "), func(r *e2eCaseRun) {
		r.t.Helper()
		r.last = r.with(settings).mustRun(3*time.Minute, "migrate")
		r.last.waitLog(r.t, "caught up", 0)
	}}
}

// replicate starts pgrelay replicate in the background and waits until it
// streams.
func replicate(settings ...string) e2eStep {
	return e2eStep{"replicate " + strings.Join(settings, " "), func(r *e2eCaseRun) {
		r.t.Helper()
		if r.p != nil {
			r.t.Fatalf("case error: replicate started while %s runs", r.p.name)
		}
		r.p = r.with(settings).start("replicate")
		r.last = r.p
		r.p.waitLog(r.t, "streaming", 2*time.Minute)
	}}
}

// stopReplicate stops the running replicate with SIGTERM: it must exit 0.
func stopReplicate() e2eStep {
	return e2eStep{"stop replicate", func(r *e2eCaseRun) {
		r.t.Helper()
		if r.p == nil {
			r.t.Fatal("case error: no replicate to stop")
		}
		if code := r.p.term(r.t, time.Minute); code != 0 {
			r.t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, r.p.logs())
		}
		r.p = nil
	}}
}

// synced waits until the running replicate has applied everything the source
// committed (e2eSync).
func synced() e2eStep {
	return e2eStep{"sync", func(r *e2eCaseRun) {
		r.t.Helper()
		if r.p == nil {
			r.t.Fatal("case error: no replicate to sync with")
		}
		e2eSync(r.t, r.e, r.p, 2*time.Minute)
	}}
}

// targetComesTo waits until query, one boolean, is true on the target (for
// tables e2eSync's marker does not stand for).
func targetComesTo(what, query string) e2eStep {
	return e2eStep{"wait for " + what, func(r *e2eCaseRun) {
		r.t.Helper()
		e2eWaitTarget(r.t, r.e, r.p, 2*time.Minute, what, query)
	}}
}

// compared compares every published table (e2eCompare); tables, when not 0,
// is how many there must be.
func compared(tables int) e2eStep {
	return e2eStep{"compare", func(r *e2eCaseRun) {
		r.t.Helper()
		if n := e2eCompare(r.t, r.e); tables != 0 && n != tables {
			r.t.Errorf("compared %d tables, want %d", n, tables)
		}
	}}
}

// targetHas checks what query returns on the target.
func targetHas(query, want string, args ...any) e2eStep {
	return e2eStep{"on the target: " + query, func(r *e2eCaseRun) {
		r.t.Helper()
		if got := r.e.tgt.QueryString(r.t, query, args...); got != want {
			r.t.Errorf("on the target, %s\n got %q\nwant %q", query, got, want)
		}
	}}
}

// bothHave checks what query returns on the source (the case's own set-up:
// the test stops there) and on the target.
func bothHave(query, want string) e2eStep {
	return e2eStep{"on both sides: " + query, func(r *e2eCaseRun) {
		r.t.Helper()
		if got := r.e.src.QueryString(r.t, query); got != want {
			r.t.Fatalf("the source holds %q, want %q (the case's set-up): %s", got, want, query)
		}
		if got := r.e.tgt.QueryString(r.t, query); got != want {
			r.t.Errorf("on the target, %s\n got %q\nwant the source's %q", query, got, want)
		}
	}}
}

// sameOnBoth checks that query returns the same on both sides.
func sameOnBoth(query string) e2eStep {
	return e2eStep{"on both sides: " + query, func(r *e2eCaseRun) {
		r.t.Helper()
		if src, tgt := r.e.src.QueryString(r.t, query), r.e.tgt.QueryString(r.t, query); src != tgt {
			r.t.Errorf("%s:\nsource %s\ntarget %s", query, src, tgt)
		}
	}}
}

// targetRefuses checks that the target refuses stmt with SQLSTATE code, as
// the source would.
func targetRefuses(code, stmt string) e2eStep {
	return e2eStep{"the target refuses " + stmt, func(r *e2eCaseRun) {
		r.t.Helper()
		_, err := r.e.tgt.Conn(r.t).Exec(e2eCtx(r.t, time.Minute), stmt)
		if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != code {
			r.t.Errorf("the target took %s (error %v), want SQLSTATE %s", stmt, err, code)
		}
	}}
}

// logged checks that the latest pgrelay run logged a line whose msg contains
// msg, with field = value when field is not "".
func logged(msg, field, value string) e2eStep {
	return e2eStep{"logged " + msg, func(r *e2eCaseRun) {
		r.t.Helper()
		if l, ok := r.last.findLog(msg); !ok || field != "" && l.str(field) != value {
			r.t.Errorf("%s logged no %q with %s=%q; log:\n%s", r.last.name, msg, field, value, r.last.logs())
		}
	}}
}

// retriedWithoutError checks that the latest pgrelay run started a new
// session ("will retry") and logged no ERROR.
func retriedWithoutError() e2eStep {
	return e2eStep{"retried, logged no error", func(r *e2eCaseRun) {
		r.t.Helper()
		retried := false
		for _, l := range r.last.logLines() {
			retried = retried || l.str("msg") == "will retry"
			if l.str("level") == "ERROR" {
				r.t.Errorf("logged ERROR %q: %v", l.str("msg"), l)
			}
		}
		if !retried {
			r.t.Errorf("no new session: the change went through without the retry this case is for; log:\n%s", r.last.logs())
		}
	}}
}

// fromMajor runs steps on source majors major and later, beforeMajor on
// those before.
func fromMajor(major int, steps ...e2eStep) e2eStep {
	return e2eStep{fmt.Sprintf("from PostgreSQL %d on: %d steps", major, len(steps)), func(r *e2eCaseRun) {
		if r.major >= major {
			for _, s := range steps {
				s.do(r)
			}
		}
	}}
}

func beforeMajor(major int, steps ...e2eStep) e2eStep {
	return e2eStep{fmt.Sprintf("before PostgreSQL %d: %d steps", major, len(steps)), func(r *e2eCaseRun) {
		if r.major < major {
			for _, s := range steps {
				s.do(r)
			}
		}
	}}
}

// Queries of the target's catalog that several cases read.
const (
	e2eTargetTables = `SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY schemaname, tablename)
		FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema', 'pgrelay')`
	e2eStoredRelations = "SELECT string_agg(schema || '.' || name, ',' ORDER BY schema, name) FROM pgrelay.relation"
	e2eDeferrableKeys  = `SELECT coalesce(string_agg(conrelid::regclass || ':' || conname || ':' || contype::text || ':' || condeferrable || ':' || condeferred, ',' ORDER BY conrelid::regclass::text, conname), '')
		FROM pg_constraint WHERE conrelid::regclass::text = ANY (string_to_array($1, ','))`
	e2eKeepOrderTriggers = `CREATE TABLE public.ko_log (n serial PRIMARY KEY, what text);
		CREATE FUNCTION public.ko_note() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO public.ko_log (what) VALUES (right(TG_TABLE_NAME, 1) || NEW.id); RETURN NEW; END $$;
		CREATE TRIGGER ko_a_note AFTER INSERT ON public.ko_a FOR EACH ROW EXECUTE FUNCTION public.ko_note();
		CREATE TRIGGER ko_b_note AFTER INSERT ON public.ko_b FOR EACH ROW EXECUTE FUNCTION public.ko_note();
		ALTER TABLE public.ko_a ENABLE ALWAYS TRIGGER ko_a_note;
		ALTER TABLE public.ko_b ENABLE ALWAYS TRIGGER ko_b_note`
)

// e2eDoubleFunction is the function of BugsIndexPredicateFunction's indexes.
const e2eDoubleFunction = `CREATE FUNCTION double(x int) RETURNS int IMMUTABLE LANGUAGE SQL AS 'select x * 2'`

// e2eTwoUniqueIndexes makes table tb of BugsReplicaIdentityIndexChanged, its
// replica identity the first of two unique indexes.
func e2eTwoUniqueIndexes(tb string) string {
	return `CREATE TABLE ` + tb + ` (a int NOT NULL, b int NOT NULL);
		CREATE UNIQUE INDEX ` + tb + `_a ON ` + tb + ` (a); CREATE UNIQUE INDEX ` + tb + `_b ON ` + tb + ` (b);
		ALTER TABLE ` + tb + ` REPLICA IDENTITY USING INDEX ` + tb + `_a; INSERT INTO ` + tb + ` VALUES (1, 1), (2, 2)`
}

// e2eReplicaIdentityMoved moves tb's replica identity to the second index,
// then changes the first's key and deletes a row, in one transaction.
func e2eReplicaIdentityMoved(tb string) string {
	return `BEGIN; ALTER TABLE ` + tb + ` REPLICA IDENTITY USING INDEX ` + tb + `_b;
				UPDATE ` + tb + ` SET a = -a WHERE a = 1; DELETE FROM ` + tb + ` WHERE a = 2; COMMIT`
}

// e2eEnumLabels are the labels of an enum of the target, in order.
func e2eEnumLabels(typ string) string {
	return "SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder) FROM pg_enum WHERE enumtypid = '" + typ + "'::regtype"
}

// e2eDDLWhileBehind is a case of schema changes made while pgrelay is
// stopped, which reach it when the source catalog is already past them:
// each statement of while is a transaction of its own.
func e2eDDLWhileBehind(name string, while ...string) e2eCase {
	return e2eCase{
		name:   name,
		source: []string{"CREATE TABLE behind (id int PRIMARY KEY, v int); INSERT INTO behind SELECT i, i FROM generate_series(1, 50) i"},
		steps:  []e2eStep{replicate(), synced(), stopReplicate(), onSource(while...), replicate(), synced(), compared(0), stopReplicate()},
	}
}

// e2eCompositeRowChanges changes the rows lo to hi of TestE2ECases/CompositeRowLookup.
func e2eCompositeRowChanges(lo, hi int) string {
	r := fmt.Sprintf("BETWEEN %d AND %d", lo, hi)
	return fmt.Sprintf(`UPDATE crl_k SET v = v + 1 WHERE (k).a %[1]s;
		UPDATE crl_k SET k = ROW((k).a, 'moved')::crl_pair WHERE (k).a = %[2]d;
		DELETE FROM crl_k WHERE (k).a %% 3 = 0 AND (k).a %[1]s;
		UPDATE crl_d SET v = v + 1 WHERE (k).a %[1]s;
		DELETE FROM crl_d WHERE (k).a %% 3 = 0 AND (k).a %[1]s;
		UPDATE crl_dd SET v = v + 1 WHERE (k).a %[1]s;
		DELETE FROM crl_dd WHERE (k).a %% 3 = 0 AND (k).a %[1]s;
		UPDATE crl_a SET v = v + 1 WHERE (k[1]).a %[1]s;
		DELETE FROM crl_a WHERE (k[1]).a %% 3 = 0 AND (k[1]).a %[1]s;
		UPDATE crl_f SET v = v + 1 WHERE p %[1]s;
		DELETE FROM crl_f WHERE p %% 3 = 0 AND p %[1]s`, r, lo)
}

var e2eCases = []e2eCase{
	// Schema changes made while pgrelay is stopped: a column added with a
	// default dropped afterwards (older rows still hold it), a column renamed
	// after rows were written under its old name, one dropped and another
	// added, a default changed.
	e2eDDLWhileBehind("DDLWhileBehindDroppedDefault",
		"INSERT INTO behind VALUES (51, 51)",
		"ALTER TABLE behind ADD COLUMN status text NOT NULL DEFAULT 'active'",
		"INSERT INTO behind (id, v) VALUES (52, 52)",
		"ALTER TABLE behind ALTER COLUMN status DROP DEFAULT",
		"INSERT INTO behind VALUES (53, 53, 'explicit')"),
	e2eDDLWhileBehind("DDLWhileBehindRenamedColumn",
		"INSERT INTO behind VALUES (51, 51)",
		"ALTER TABLE behind RENAME COLUMN v TO w",
		"INSERT INTO behind VALUES (52, 52)",
		"UPDATE behind SET w = w + 1000 WHERE id <= 3"),
	e2eDDLWhileBehind("DDLWhileBehindDroppedAndAddedColumn",
		"INSERT INTO behind VALUES (51, 51)",
		"ALTER TABLE behind DROP COLUMN v",
		"ALTER TABLE behind ADD COLUMN w int",
		"INSERT INTO behind VALUES (52, 52)",
		"UPDATE behind SET w = -1 WHERE id = 1"),
	e2eDDLWhileBehind("DDLWhileBehindChangedDefault",
		"ALTER TABLE behind ADD COLUMN n int DEFAULT 1",
		"INSERT INTO behind (id, v) VALUES (51, 51)",
		"ALTER TABLE behind ALTER COLUMN n SET DEFAULT 2",
		"INSERT INTO behind (id, v) VALUES (52, 52)"),
	{
		// A label added to an enum while replicate runs, and used at once (in
		// the same transaction too), is committed on the target before the
		// rows that use it; one that goes first goes before the first.
		name:   "EnumLabelAdded",
		source: []string{"CREATE TYPE e2e_mood AS ENUM ('sad', 'ok'); CREATE TABLE moods (id int PRIMARY KEY, m e2e_mood); INSERT INTO moods VALUES (1, 'ok')"},
		steps: []e2eStep{
			replicate(),
			onSource("ALTER TYPE e2e_mood ADD VALUE 'angry'",
				"INSERT INTO moods VALUES (2, 'angry'); UPDATE moods SET m = 'angry' WHERE id = 1",
				"BEGIN; ALTER TYPE e2e_mood ADD VALUE 'happy' BEFORE 'ok'; COMMIT; INSERT INTO moods VALUES (3, 'happy')",
				"ALTER TYPE e2e_mood ADD VALUE 'calm' BEFORE 'sad'",
				"INSERT INTO moods VALUES (4, 'calm')"),
			synced(), compared(0),
			targetHas(e2eEnumLabels("public.e2e_mood"), "calm,sad,happy,ok,angry"),
			stopReplicate(),
		},
	},
	{
		// A row using a label added after the table's Relation message of the
		// session is refused by the target; the new session that adds the
		// label gets it through. That is no error: a warning and a retry.
		name:   "EnumLabelRetryIsNoError",
		on:     onFirstMajor,
		source: []string{"CREATE TYPE e2e_mood_r AS ENUM ('sad', 'ok'); CREATE TABLE moods_r (id int PRIMARY KEY, m e2e_mood_r)"},
		steps: []e2eStep{
			replicate(),
			onSource("INSERT INTO moods_r VALUES (1, 'ok')"), synced(),
			onSource("ALTER TYPE e2e_mood_r ADD VALUE 'angry'", "INSERT INTO moods_r VALUES (2, 'angry')"), synced(),
			compared(0), stopReplicate(), retriedWithoutError(),
		},
	},
	{
		// ALTER TYPE … RENAME VALUE renames the target's label too (an enum
		// of a column, an array, a domain and inside a composite), also a
		// swap of two labels (three renames) while pgrelay was stopped.
		name: "EnumLabelRenamed",
		source: []string{`CREATE TYPE er_mood AS ENUM ('sad', 'ok', 'happy'); CREATE TYPE er_inner AS ENUM ('x', 'y');
		CREATE TYPE er_pair AS (i er_inner, n int); CREATE DOMAIN er_dom AS er_mood;
		CREATE TABLE er (id int PRIMARY KEY, e er_mood, ea er_mood[], p er_pair, d er_dom);
		INSERT INTO er VALUES (1, 'sad', '{sad,ok}', ROW('x', 1), 'sad'), (2, 'ok', '{}', ROW('y', 2), 'happy')`},
		steps: []e2eStep{
			migrate(), replicate(),
			onSource("ALTER TYPE er_mood RENAME VALUE 'sad' TO 'blue'; ALTER TYPE er_inner RENAME VALUE 'x' TO 'z'",
				"ALTER TYPE er_mood ADD VALUE 'calm' AFTER 'happy'",
				"UPDATE er SET ea = '{blue,calm}' WHERE id = 2"), // a change, so that the Relation message is sent
			synced(), compared(0),
			targetHas(e2eEnumLabels("public.er_mood"), "blue,ok,happy,calm"),
			targetHas(e2eEnumLabels("public.er_inner"), "z,y"),
			stopReplicate(),
			onSource(`ALTER TYPE er_mood RENAME VALUE 'ok' TO 'tmp'; ALTER TYPE er_mood RENAME VALUE 'happy' TO 'ok';
		ALTER TYPE er_mood RENAME VALUE 'tmp' TO 'happy'; INSERT INTO er VALUES (3, 'ok', '{happy}', NULL, 'ok')`),
			migrate(), compared(0),
			targetHas(e2eEnumLabels("public.er_mood"), "blue,happy,ok,calm"),
		},
	},
	{
		// A target trigger set ENABLE ALWAYS sees a transaction's changes to
		// two tables table by table by default, in source order with
		// PGRELAY_KEEP_ORDER=true (KeepOrderTrue).
		name:     "KeepOrderFalse",
		on:       onMajor15,
		settings: []string{"PGRELAY_KEEP_ORDER=false"},
		source:   []string{"CREATE TABLE ko_a (id int PRIMARY KEY); CREATE TABLE ko_b (id int PRIMARY KEY)"},
		steps: []e2eStep{
			replicate(), onTarget(e2eKeepOrderTriggers),
			onSource("BEGIN; INSERT INTO ko_a VALUES (1); INSERT INTO ko_b VALUES (1); INSERT INTO ko_a VALUES (2); INSERT INTO ko_b VALUES (2); COMMIT"),
			synced(),
			targetHas("SELECT string_agg(what, ',' ORDER BY n) FROM public.ko_log", "a1,a2,b1,b2"),
			stopReplicate(),
		},
	},
	{
		name:     "KeepOrderTrue",
		on:       onMajor15,
		settings: []string{"PGRELAY_KEEP_ORDER=true"},
		source:   []string{"CREATE TABLE ko_a (id int PRIMARY KEY); CREATE TABLE ko_b (id int PRIMARY KEY)"},
		steps: []e2eStep{
			replicate(), onTarget(e2eKeepOrderTriggers),
			onSource("BEGIN; INSERT INTO ko_a VALUES (1); INSERT INTO ko_b VALUES (1); INSERT INTO ko_a VALUES (2); INSERT INTO ko_b VALUES (2); COMMIT"),
			synced(),
			targetHas("SELECT string_agg(what, ',' ORDER BY n) FROM public.ko_log", "a1,b1,a2,b2"),
			stopReplicate(),
		},
	},
	{
		// A source database whose DateStyle is "SQL, DMY" and IntervalStyle
		// sql_standard: pgrelay's source sessions, the walsender's included,
		// write ISO dates and postgres-style intervals, in the snapshot and in
		// the stream.
		name:           "SourceDateStyle",
		sourceDatabase: []string{"datestyle = 'SQL, DMY'", "intervalstyle = 'sql_standard'"},
		source: []string{`CREATE TABLE styled (id int PRIMARY KEY, d date, ts timestamp, iv interval, dr daterange, da date[]);
		INSERT INTO styled VALUES (1, '2024-02-03', '2024-02-03 04:05:06', '-1 day -02:03:04', '[2024-02-03,2024-03-04)', '{2024-02-03}')`},
		steps: []e2eStep{
			migrate(),
			onSource(`INSERT INTO styled VALUES (2, '2024-02-05', '2024-02-05 01:02:03', '-3 days -00:00:01', '[2024-01-02,2024-01-05)', '{2024-01-02,2024-12-01}');
		UPDATE styled SET iv = '-1 year -2 days', d = '2024-11-12' WHERE id = 1`),
			migrate(),
			// Formatted explicitly: the source session's own DateStyle is DMY.
			bothHave(`SELECT string_agg(format('%s|%s|%s|%s|%s..%s|%s', id, to_char(d, 'YYYY-MM-DD'), to_char(ts, 'YYYY-MM-DD HH24:MI:SS'),
		extract(epoch FROM iv)::bigint, to_char(lower(dr), 'YYYY-MM-DD'), to_char(upper(dr), 'YYYY-MM-DD'),
		(SELECT string_agg(to_char(x, 'YYYY-MM-DD'), ',') FROM unnest(da) x)), ' / ' ORDER BY id) FROM public.styled`,
				"1|2024-11-12|2024-02-03 04:05:06|-31730400|2024-02-03..2024-03-04|2024-02-03 / 2|2024-02-05|2024-02-05 01:02:03|-259201|2024-01-02..2024-01-05|2024-01-02,2024-12-01"),
		},
	},
	{
		// While pgrelay is stopped a row gets a NULL, the NULL is updated
		// away and the column becomes NOT NULL: the catalog pgrelay reads is
		// today's, the insert it applies older, which the target must take.
		name:   "NotNullAddedLater",
		source: []string{"CREATE TABLE nn (id int PRIMARY KEY, x int); INSERT INTO nn VALUES (1, 1)"},
		steps: []e2eStep{
			migrate(),
			onSource("INSERT INTO nn VALUES (2, NULL); UPDATE nn SET x = 0 WHERE x IS NULL; ALTER TABLE nn ALTER COLUMN x SET NOT NULL; ALTER TABLE nn ADD COLUMN y int NOT NULL DEFAULT 7; INSERT INTO nn VALUES (3, 3, 3)"),
			migrate(), compared(0),
		},
	},
	{
		// Under REPLICA IDENTITY FULL, rows equal by the type's = but not
		// identical (numeric 1.0 and 1.00, float8 0 and -0, interval '1 day'
		// and '24:00:00', jsonb 1.0 and 1.00) are told apart.
		name: "FullIdentityEqualNotIdentical",
		source: []string{`CREATE TABLE fe (n numeric, f float8, iv interval, j jsonb, tag text);
		ALTER TABLE fe REPLICA IDENTITY FULL;
		INSERT INTO fe VALUES (1.00, 1, '1 day', '{"a": 1.00}', 'x'), (1.0, 1, '1 day', '{"a": 1.00}', 'x'),
			(2, '-0', '1 day', '{"a": 1}', 'x'), (2, '0', '1 day', '{"a": 1}', 'x'),
			(3, 1, '1 day', '{"a": 1}', 'x'), (3, 1, '24:00:00', '{"a": 1}', 'x'),
			(4, 1, '1 day', '{"a": 1.0}', 'x'), (4, 1, '1 day', '{"a": 1.00}', 'x')`},
		steps: []e2eStep{
			migrate(),
			onSource(`DELETE FROM fe WHERE n::text = '1.0';
		UPDATE fe SET tag = 'zero' WHERE n = 2 AND f::text = '0';
		UPDATE fe SET tag = 'hours' WHERE n = 3 AND iv::text = '24:00:00';
		DELETE FROM fe WHERE n = 4 AND j::text = '{"a": 1.0}'`),
			migrate(), compared(0),
		},
	},
	{
		// A statement legal on the source because its unique constraint is
		// DEFERRABLE arrives row by row; the target's constraint is
		// deferrable too and checked at commit.
		name: "DeferrableUnique",
		source: []string{`CREATE TABLE dq (id int PRIMARY KEY, pos int, CONSTRAINT dq_pos UNIQUE (pos) DEFERRABLE INITIALLY IMMEDIATE);
		CREATE TABLE dd (id int PRIMARY KEY, pos int, CONSTRAINT dd_pos UNIQUE (pos) DEFERRABLE INITIALLY DEFERRED);
		INSERT INTO dq SELECT i, i FROM generate_series(1, 20) i;
		INSERT INTO dd SELECT i, i FROM generate_series(1, 20) i`},
		steps: []e2eStep{
			migrate(),
			targetHas("SELECT string_agg(conname || ':' || condeferrable || ':' || condeferred, ',' ORDER BY conname) FROM pg_constraint WHERE contype = 'u' AND connamespace = 'public'::regnamespace",
				"dd_pos:true:true,dq_pos:true:false"),
			onSource("UPDATE dq SET pos = 21 - pos; BEGIN; UPDATE dd SET pos = 100 + id; UPDATE dd SET pos = 21 - id; COMMIT"),
			migrate(), compared(0),
		},
	},
	{
		// A DEFERRABLE primary key that is not the target's key (the replica
		// identity is another index, or FULL, or there is none) becomes a
		// deferrable unique constraint, in the snapshot and for a table
		// created from the stream; a table whose primary key stops being the
		// target's key mid-stream keeps the source's index on it. The table
		// whose only key is deferrable is named as having no replica identity.
		name: "DeferrablePrimaryKey",
		source: []string{`CREATE TABLE dpi (id int, k int NOT NULL, v text, CONSTRAINT dpi_pk PRIMARY KEY (id) DEFERRABLE INITIALLY IMMEDIATE, CONSTRAINT dpi_k UNIQUE (k));
		ALTER TABLE dpi REPLICA IDENTITY USING INDEX dpi_k;
		CREATE TABLE dpf (id int, v text, CONSTRAINT dpf_pk PRIMARY KEY (id) DEFERRABLE INITIALLY DEFERRED);
		ALTER TABLE dpf REPLICA IDENTITY FULL;
		CREATE TABLE dpo (id int, v text, CONSTRAINT dpo_pk PRIMARY KEY (id) DEFERRABLE);
		CREATE TABLE ksw (id int PRIMARY KEY, v text);
		CREATE TABLE dsw (id int, k int NOT NULL, CONSTRAINT dsw_pk PRIMARY KEY (id) DEFERRABLE, CONSTRAINT dsw_k UNIQUE (k));
		ALTER TABLE dsw REPLICA IDENTITY USING INDEX dsw_k;
		INSERT INTO dpi SELECT i, 10 * i, 'v' || i FROM generate_series(1, 3) i;
		INSERT INTO dpf SELECT i, 'v' || i FROM generate_series(1, 3) i;
		INSERT INTO dpo SELECT i, 'v' || i FROM generate_series(1, 3) i;
		INSERT INTO ksw SELECT i, 'v' || i FROM generate_series(1, 3) i;
		INSERT INTO dsw SELECT i, 10 * i FROM generate_series(1, 3) i`},
		steps: []e2eStep{
			migrate(),
			logged("published tables without a replica identity", "tables", "public.dpo"),
			targetHas(e2eDeferrableKeys, "dpf:dpf_pk_unique:u:true:true,dpi:dpi_pk_unique:u:true:false,dpi:dpi_pkey:p:false:false,dpo:dpo_pk_unique:u:true:false", "dpi,dpf,dpo"),
			onSource("UPDATE dpi SET id = 4 - id; UPDATE dpf SET id = 4 - id; BEGIN; UPDATE dpf SET id = id + 1; UPDATE dpf SET id = 1 WHERE id = 4; COMMIT"),
			replicate(),
			onSource(`CREATE TABLE dps (id int, k int NOT NULL, CONSTRAINT dps_pk PRIMARY KEY (id) DEFERRABLE, CONSTRAINT dps_k UNIQUE (k));
		ALTER TABLE dps REPLICA IDENTITY USING INDEX dps_k;
		INSERT INTO dps SELECT i, 10 * i FROM generate_series(1, 3) i`,
				"UPDATE dps SET id = 4 - id",
				"ALTER TABLE ksw REPLICA IDENTITY FULL; UPDATE ksw SET v = 'full' WHERE id = 1",
				"ALTER TABLE dsw REPLICA IDENTITY FULL; UPDATE dsw SET id = 4 - id"),
			synced(), compared(0),
			targetHas(e2eDeferrableKeys, "dps:dps_pk_unique:u:true:false,dps:dps_pkey:p:false:false", "dps"),
			targetHas(`SELECT string_agg(indexrelid::regclass || ':' || indisunique || ':' || indisprimary, ',' ORDER BY indexrelid::regclass::text)
		FROM pg_index WHERE indrelid IN ('public.ksw'::regclass, 'public.dsw'::regclass)`, "dsw_k:true:false,dsw_pk_unique:true:false,ksw_pkey_unique:true:false"),
			stopReplicate(),
		},
	},
	{
		// An exclusion constraint stays a constraint on the target, in the
		// snapshot and for a table created from the stream: the target
		// refuses an overlapping row as the source does.
		name: "ExclusionConstraint",
		source: []string{`CREATE TABLE ex (id int PRIMARY KEY, r int4range, EXCLUDE USING gist (r WITH &&) WHERE (id > 0));
		CREATE TABLE exd (id int PRIMARY KEY, r int4range, EXCLUDE USING gist (r WITH &&) DEFERRABLE INITIALLY DEFERRED);
		INSERT INTO ex VALUES (1, '[1,2)'), (2, '[5,6)'); INSERT INTO exd VALUES (1, '[1,2)')`},
		steps: []e2eStep{
			migrate(), replicate(),
			onSource("CREATE TABLE ex2 (id int PRIMARY KEY, r int4range, EXCLUDE USING gist (r WITH &&)); INSERT INTO ex2 VALUES (1, '[1,2)')",
				"BEGIN; UPDATE exd SET r = '[10,20)'; INSERT INTO exd VALUES (2, '[1,2)'); COMMIT"),
			synced(), compared(0),
			targetHas(`SELECT string_agg(conrelid::regclass || ':' || conname || ':' || condeferrable || ':' || condeferred || ':' || pg_get_constraintdef(oid), ',' ORDER BY conname)
		FROM pg_constraint WHERE contype = 'x' AND connamespace = 'public'::regnamespace`,
				"ex2:ex2_r_excl:false:false:EXCLUDE USING gist (r WITH &&),ex:ex_r_excl:false:false:EXCLUDE USING gist (r WITH &&) WHERE ((id > 0)),exd:exd_r_excl:true:true:EXCLUDE USING gist (r WITH &&) DEFERRABLE INITIALLY DEFERRED"),
			targetRefuses("23P01", "INSERT INTO public.ex VALUES (99, '[1,3)')"),
			targetRefuses("23P01", "INSERT INTO public.ex2 VALUES (99, '[1,3)')"),
			stopReplicate(),
		},
	},
	{
		// Tables renamed or moved to another schema while pgrelay is stopped
		// keep their target tables and rows (found by the source relation
		// OID); a new table that takes the old name is created anew.
		name: "TableRenamedWhileStopped",
		on:   onMajor15,
		source: []string{`CREATE TABLE ren_a (id int PRIMARY KEY, v text); INSERT INTO ren_a VALUES (1, 'x'), (2, 'y');
		CREATE TABLE ren_b (id int PRIMARY KEY, v text); INSERT INTO ren_b VALUES (1, 'x'), (2, 'y')`},
		steps: []e2eStep{
			migrate(),
			onSource(`ALTER TABLE ren_a RENAME TO ren_c; INSERT INTO ren_c VALUES (3, 'z'); UPDATE ren_c SET v = 'x2' WHERE id = 1;
			CREATE SCHEMA ren_s2; ALTER TABLE ren_b SET SCHEMA ren_s2; UPDATE ren_s2.ren_b SET v = 'y2' WHERE id = 2; INSERT INTO ren_s2.ren_b VALUES (3, 'z');
			CREATE TABLE ren_a (id int PRIMARY KEY, w int); INSERT INTO ren_a VALUES (7, 7)`),
			migrate(), compared(3),
			targetHas(e2eTargetTables, "public.ren_a,public.ren_c,ren_s2.ren_b"),
			targetHas(e2eStoredRelations, "public.ren_a,public.ren_c,ren_s2.ren_b"),
			// Renamed and moved at once, a second time.
			onSource(`ALTER TABLE ren_c SET SCHEMA ren_s2; ALTER TABLE ren_s2.ren_c RENAME TO ren_d; DELETE FROM ren_s2.ren_d WHERE id = 2; UPDATE ren_s2.ren_d SET v = 'z2' WHERE id = 3`),
			migrate(), compared(3),
			targetHas(e2eTargetTables, "public.ren_a,ren_s2.ren_b,ren_s2.ren_d"),
			targetHas(e2eStoredRelations, "public.ren_a,ren_s2.ren_b,ren_s2.ren_d"),
		},
	},
	{
		// While pgrelay is stopped a column is added, then another renamed,
		// rows written in between: the first Relation message names the old
		// column, which the source catalog no longer knows.
		name:   "ColumnRenamedWhileBehind",
		source: []string{"CREATE TABLE rn (id int PRIMARY KEY, v text); INSERT INTO rn SELECT g, 'val' || g FROM generate_series(1, 3) g"},
		steps: []e2eStep{
			migrate(),
			onSource(`ALTER TABLE rn ADD COLUMN c int; INSERT INTO rn VALUES (4, 'val4', 4);
		ALTER TABLE rn RENAME COLUMN v TO vv; INSERT INTO rn VALUES (5, 'val5', 5); UPDATE rn SET c = 1 WHERE id = 1`),
			migrate(), compared(0),
		},
	},
	{
		// A composite type gains and loses attributes and a domain's CHECK
		// is relaxed, with pgrelay stopped and while it runs.
		name: "TypeChanges",
		source: []string{`CREATE TYPE tc_pair AS (x int, y text); CREATE DOMAIN tc_pos AS int CHECK (VALUE > 0);
		CREATE TABLE tc (id int PRIMARY KEY, p tc_pair, n tc_pos); INSERT INTO tc VALUES (1, ROW(1, 'q'), 1)`},
		steps: []e2eStep{
			migrate(),
			onSource(`ALTER TYPE tc_pair ADD ATTRIBUTE z numeric; INSERT INTO tc VALUES (2, ROW(2, 'r', 1.5), 2);
		ALTER DOMAIN tc_pos DROP CONSTRAINT tc_pos_check; ALTER DOMAIN tc_pos ADD CHECK (VALUE >= 0); INSERT INTO tc VALUES (3, NULL, 0)`),
			migrate(), compared(0),
			replicate(),
			onSource(`ALTER TYPE tc_pair DROP ATTRIBUTE y; INSERT INTO tc VALUES (4, ROW(4, 4.5), 4);
		ALTER DOMAIN tc_pos ADD CHECK (VALUE < 100); INSERT INTO tc VALUES (5, ROW(5, 5.5), 99)`),
			synced(), compared(0),
			targetHas("SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'public.tc_pair'::regclass AND attnum > 0 AND NOT attisdropped", "x,z"),
			stopReplicate(),
		},
	},
	{
		// A domain CHECK added NOT VALID holds only for new values on the
		// source, which keeps older ones that fail it: the target takes those
		// rows, in the copy and in updates; such a check is left out on the
		// target until the source validates it, and keeps its name.
		name: "DomainCheckNotValid",
		on:   onLastMajor,
		source: []string{`CREATE DOMAIN nv_dom AS text CONSTRAINT nv_nonempty CHECK (VALUE <> '');
		CREATE TABLE nv (id int PRIMARY KEY, v nv_dom); INSERT INTO nv VALUES (1, 'long value');
		ALTER DOMAIN nv_dom ADD CONSTRAINT nv_short CHECK (length(VALUE) < 5) NOT VALID`},
		steps: []e2eStep{
			migrate(), replicate(),
			onSource("INSERT INTO nv VALUES (2, 'abc')",
				"ALTER DOMAIN nv_dom ADD CONSTRAINT nv_tiny CHECK (length(VALUE) < 3) NOT VALID",
				"UPDATE nv SET id = 3 WHERE id = 1; UPDATE nv SET id = 4 WHERE id = 2"),
			synced(), compared(0),
			targetHas("SELECT string_agg(conname, ',' ORDER BY conname) FROM pg_constraint WHERE contypid = 'public.nv_dom'::regtype", "nv_nonempty"),
			stopReplicate(),
			// Validated on the source: they follow with the next Relation message.
			onSource(`DELETE FROM nv WHERE length(v) >= 3; ALTER DOMAIN nv_dom VALIDATE CONSTRAINT nv_short;
		ALTER DOMAIN nv_dom VALIDATE CONSTRAINT nv_tiny; INSERT INTO nv VALUES (5, 'x')`),
			migrate(), compared(0),
			targetHas("SELECT string_agg(conname, ',' ORDER BY conname) FROM pg_constraint WHERE contypid = 'public.nv_dom'::regtype", "nv_nonempty,nv_short,nv_tiny"),
		},
	},
	{
		// Stored generated columns, which pgoutput does not send, are
		// generated columns on the target with the same values, through the
		// snapshot, the stream, an added generated column and a DROP
		// EXPRESSION.
		name: "GeneratedColumns",
		source: []string{`CREATE TABLE boxes (id int PRIMARY KEY, label text GENERATED ALWAYS AS ('box ' || id) STORED, w int, h int,
			area int GENERATED ALWAYS AS (w * h) STORED);
		INSERT INTO boxes (id, w, h) VALUES (1, 2, 3), (2, 4, 5)`},
		steps: []e2eStep{
			migrate(),
			onSource("INSERT INTO boxes (id, w, h) VALUES (3, 6, 7); UPDATE boxes SET w = 10 WHERE id = 1"),
			replicate(),
			onSource(`ALTER TABLE boxes ADD COLUMN perimeter int GENERATED ALWAYS AS (2 * (w + h)) STORED;
		INSERT INTO boxes (id, w, h) VALUES (4, 1, 1)`,
				"ALTER TABLE boxes ALTER COLUMN area DROP EXPRESSION; UPDATE boxes SET area = -1 WHERE id = 2"),
			synced(), compared(0),
			targetHas("SELECT string_agg(attname || ':' || attgenerated::text, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'public.boxes'::regclass AND attnum > 0 AND NOT attisdropped",
				"id:,label:s,w:,h:,area:,perimeter:s"),
			stopReplicate(),
		},
	},
	{
		// OID alias values name objects schema-qualified whatever the
		// source's search_path: a regclass naming a table in public reaches
		// the target, in the copy and in the stream.
		name: "RegclassValues",
		on:   onFirstMajor,
		source: []string{`CREATE TYPE rv_mood AS ENUM ('a', 'b');
		CREATE TABLE rv (id int PRIMARY KEY, r regclass, ty regtype, p regproc, m rv_mood);
		INSERT INTO rv VALUES (1, 'rv', 'rv_mood', 'now', 'a'), (2, 'pg_class', 'int4', 'pg_catalog.int4pl', 'b')`},
		steps: []e2eStep{
			migrate(), compared(0),
			replicate(), synced(),
			onSource("INSERT INTO rv VALUES (3, 'rv', 'rv_mood[]', 'pg_catalog.int4mi', 'a'); UPDATE rv SET r = 'public.rv' WHERE id = 2"),
			synced(), compared(0), stopReplicate(),
			targetHas("SELECT count(*) FROM rv WHERE r = 'public.rv'::regclass", "3"),
		},
	},
	{
		// Defaults that are not immutable but call built-in functions only
		// (now(), CURRENT_USER, gen_random_uuid()) are on the target too, also
		// for a column added later: the application's inserts work there.
		name: "DefaultsKept",
		on:   onLastMajor,
		source: []string{`CREATE TABLE dk (id serial PRIMARY KEY, created timestamptz NOT NULL DEFAULT now(),
		who text NOT NULL DEFAULT CURRENT_USER, u uuid NOT NULL DEFAULT gen_random_uuid(), d date DEFAULT CURRENT_DATE);
		INSERT INTO dk DEFAULT VALUES`},
		steps: []e2eStep{
			migrate(),
			onSource("ALTER TABLE dk ADD COLUMN seen timestamptz NOT NULL DEFAULT now() - interval '1 day', ADD COLUMN at timestamptz DEFAULT now(); INSERT INTO dk DEFAULT VALUES"),
			migrate(), compared(0),
			// The application moves to the target.
			targetHas("INSERT INTO public.dk DEFAULT VALUES RETURNING (created IS NOT NULL AND who IS NOT NULL AND u IS NOT NULL AND d IS NOT NULL AND seen IS NOT NULL AND at IS NOT NULL)::text", "true"),
		},
	},
	{
		// Target tables made beforehand (pg_dump -s) with GENERATED ALWAYS
		// identity columns take the source's values: pgrelay makes them BY
		// DEFAULT, for a table the copy takes over and for one that first
		// appears in the stream.
		name: "PremadeIdentityAlways",
		on:   onFirstMajor,
		source: []string{"CREATE TABLE ia (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text); INSERT INTO ia (v) SELECT 'copied ' || g FROM generate_series(1, 5) g",
			"CREATE TABLE ia_other_0 (id int PRIMARY KEY); INSERT INTO ia_other_0 VALUES (1)",
			"CREATE TABLE ia_other_1 (id int PRIMARY KEY); INSERT INTO ia_other_1 VALUES (1)",
			"CREATE TABLE ia_other_2 (id int PRIMARY KEY); INSERT INTO ia_other_2 VALUES (1)",
			"CREATE TABLE ia_other_3 (id int PRIMARY KEY); INSERT INTO ia_other_3 VALUES (1)"},
		steps: []e2eStep{
			onTarget("CREATE TABLE public.ia (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)"),
			migrate(),
			targetHas("SELECT attidentity FROM pg_attribute WHERE attrelid = 'public.ia'::regclass AND attname = 'id'", "d"),
			replicate(),
			onTarget("CREATE TABLE public.ib (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)"),
			onSource("INSERT INTO ia (v) VALUES ('streamed'); UPDATE ia SET v = 'updated' WHERE id = 2",
				"CREATE TABLE ib (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text); INSERT INTO ib (v) VALUES ('streamed'), ('streamed too')"),
			synced(), stopReplicate(),
			sameOnBoth("SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM ia"),
			sameOnBoth("SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM ib"),
		},
	},
	{
		// REPLICA IDENTITY USING INDEX on a table that also has a primary
		// key: the target's key is on the identity columns, and the primary
		// key stays unique there too.
		name: "IdentityIndexAndPrimaryKey",
		on:   onFirstMajor,
		source: []string{`CREATE TABLE ri (id int PRIMARY KEY, code text NOT NULL, v text); CREATE UNIQUE INDEX ri_code ON ri (code);
		ALTER TABLE ri REPLICA IDENTITY USING INDEX ri_code; INSERT INTO ri VALUES (1, 'a', 'x'), (2, 'b', 'y')`},
		steps: []e2eStep{
			migrate(), compared(0),
			targetRefuses("23505", "INSERT INTO public.ri VALUES (1, 'c', 'dup')"),
		},
	},
	{
		// An attribute added to a composite type after rows of a table using
		// it were streamed in the same session: no new Relation message; the
		// row that uses it fails on the target, and a new session applies it.
		name:   "CompositeAttributeAddedWhileStreaming",
		on:     onFirstMajor,
		source: []string{"CREATE TYPE ca_pair AS (x int, y text); CREATE TABLE ca (id int PRIMARY KEY, p ca_pair)"},
		steps: []e2eStep{
			replicate(),
			onSource("INSERT INTO ca VALUES (1, ROW(1, 'a'))"), synced(),
			onSource("ALTER TYPE ca_pair ADD ATTRIBUTE z numeric; INSERT INTO ca VALUES (2, ROW(2, 'b', 2.5))"), synced(),
			compared(0), stopReplicate(),
		},
	},
	{
		// The first attribute of a composite type dropped while replicate
		// runs: the next row's value, which the target's stale type refuses,
		// makes a new session, which drops the attribute on the target.
		name:   "CompositeAttributeDroppedWhileStreaming",
		on:     onFirstMajor,
		source: []string{"CREATE TYPE cd_pair AS (a int, b text); CREATE TABLE cd (id int PRIMARY KEY, p cd_pair); INSERT INTO cd VALUES (1, ROW(1, 'x'))"},
		steps: []e2eStep{
			replicate(),
			onSource("INSERT INTO cd VALUES (2, ROW(2, 'z'))"), synced(),
			onSource("ALTER TYPE cd_pair DROP ATTRIBUTE a", "INSERT INTO cd VALUES (3, ROW('y'))"), synced(),
			compared(0),
			targetHas("SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'public.cd_pair'::regclass AND attnum > 0 AND NOT attisdropped", "b"),
			stopReplicate(),
		},
	},
	{
		// A table created after the snapshot copy gets its secondary and
		// unique indexes on the target with it.
		name:   "NewTableIndexes",
		on:     onFirstMajor,
		source: []string{"CREATE TABLE nt_first (id int PRIMARY KEY)"},
		steps: []e2eStep{
			replicate(),
			onSource(`CREATE TABLE nt (id int PRIMARY KEY, email text NOT NULL, v int); CREATE UNIQUE INDEX nt_email ON nt (email);
		CREATE INDEX nt_v ON nt (v) WHERE v > 0; INSERT INTO nt VALUES (1, 'a@x', 1)`),
			synced(), compared(0),
			targetHas("SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'nt'", "nt_email,nt_pkey,nt_v"),
			stopReplicate(),
		},
	},
	{
		// A column of another table's row type: in the copy, the used table
		// is created first (its CREATE TABLE makes the row type); while
		// streaming, both tables created and written at once (two target
		// sessions waited on each other for good).
		name: "TableRowTypeColumn",
		on:   onFirstMajor,
		source: []string{`CREATE TABLE rt_z (id int PRIMARY KEY, v text); INSERT INTO rt_z VALUES (1, 'z');
		CREATE TABLE rt_a (id int PRIMARY KEY, x rt_z); INSERT INTO rt_a VALUES (1, ROW(1, 'z')::rt_z);
		CREATE PUBLICATION {{pub}} FOR ALL TABLES`},
		steps: []e2eStep{
			migrate(), compared(0),
			targetHas("SELECT relkind FROM pg_class c JOIN pg_type t ON t.typrelid = c.oid WHERE t.typname = 'rt_z'", "r"),
			replicate(),
			onSource("CREATE TABLE rowt_a (id int PRIMARY KEY, v text); CREATE TABLE rowt_b (id int PRIMARY KEY, x rowt_a)",
				"INSERT INTO rowt_a VALUES (1, 'a')",
				"INSERT INTO rowt_b VALUES (1, ROW(1, 'a'))"),
			targetComesTo("rowt_b's row", "SELECT to_regclass('public.rowt_b') IS NOT NULL AND (SELECT count(*) FROM public.rowt_b) = 1"),
			compared(0), stopReplicate(),
		},
	},
	{
		// Columns with a collation of their own keep it on the target, in the
		// copy, in tables created from the stream, and when it changes on
		// the source.
		name: "ColumnCollations",
		on:   onFirstMajor,
		source: []string{`CREATE TABLE co_copied (id int PRIMARY KEY, v text COLLATE "C", w varchar(10) COLLATE "POSIX", plain text);
		INSERT INTO co_copied VALUES (1, 'a', 'b', 'c'), (2, 'C', 'D', 'E');
		CREATE PUBLICATION {{pub}} FOR ALL TABLES`},
		steps: []e2eStep{
			migrate(), replicate(),
			onSource(`CREATE TABLE co_streamed (id int PRIMARY KEY, v text COLLATE "C"); INSERT INTO co_streamed VALUES (1, 'x')`,
				`ALTER TABLE co_copied ALTER COLUMN w TYPE varchar(10) COLLATE "C", ALTER COLUMN v TYPE text COLLATE "default";
		UPDATE co_copied SET plain = 'changed' WHERE id = 1`),
			targetComesTo("the changes", "SELECT (SELECT count(*) FROM public.co_streamed) = 1 AND (SELECT plain FROM public.co_copied WHERE id = 1) = 'changed'"),
			compared(0),
			bothHave(`SELECT string_agg(c.relname || '.' || a.attname || '=' || coalesce(co.collname, '-'), ' ' ORDER BY c.relname, a.attnum)
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type ty ON ty.oid = a.atttypid
			LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> ty.typcollation
			WHERE c.relname IN ('co_copied', 'co_streamed') AND a.attnum > 0 AND NOT a.attisdropped`,
				"co_copied.id=- co_copied.v=- co_copied.w=C co_copied.plain=- co_streamed.id=- co_streamed.v=C"),
			stopReplicate(),
		},
	},
	{
		// A composite primary key (and a replica identity index) keeps the
		// source's column order on the target, not the table's.
		name: "KeyColumnOrder",
		on:   onFirstMajor,
		source: []string{`CREATE TABLE ko_copied (a int, b int, v text, PRIMARY KEY (b, a)); INSERT INTO ko_copied VALUES (1, 2, 'x');
		CREATE TABLE ko_ri (a int NOT NULL, b int NOT NULL, v text); CREATE UNIQUE INDEX ko_ri_ba ON ko_ri (b, a);
		ALTER TABLE ko_ri REPLICA IDENTITY USING INDEX ko_ri_ba; INSERT INTO ko_ri VALUES (1, 2, 'y');
		CREATE PUBLICATION {{pub}} FOR ALL TABLES`},
		steps: []e2eStep{
			migrate(),
			onSource(`CREATE TABLE ko_streamed (a int, b int, PRIMARY KEY (b, a)); INSERT INTO ko_streamed VALUES (1, 2);
		UPDATE ko_copied SET v = 'z' WHERE a = 1 AND b = 2; DELETE FROM ko_ri WHERE a = 1`),
			migrate(), compared(0),
			targetHas(`SELECT string_agg(c.relname || ' ' || regexp_replace(pg_get_indexdef(i.indexrelid), '^.* USING btree ', ''), '; ' ORDER BY c.relname)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE i.indisprimary AND c.relname LIKE 'ko\_%'`, "ko_copied (b, a); ko_ri (b, a); ko_streamed (b, a)"),
		},
	},
	{
		// Rows found by composite values (a primary key of a composite type,
		// of a domain over one and over that domain, of an array of a domain
		// over one, REPLICA IDENTITY FULL with such columns) are updated and
		// deleted, table by table and in source order.
		name: "CompositeRowLookup",
		source: []string{`CREATE TYPE crl_pair AS (a int, b text);
		CREATE DOMAIN crl_dpair AS crl_pair CHECK ((VALUE).a > 0);
		CREATE DOMAIN crl_ddpair AS crl_dpair;
		CREATE DOMAIN crl_pos AS int CHECK (VALUE > 0);
		CREATE TABLE crl_k (k crl_pair PRIMARY KEY, v int);
		CREATE TABLE crl_d (k crl_dpair PRIMARY KEY, v int);
		CREATE TABLE crl_dd (k crl_ddpair PRIMARY KEY, v int);
		CREATE TABLE crl_a (k crl_dpair[] PRIMARY KEY, v int);
		CREATE TABLE crl_f (k crl_pair, d crl_dpair, p crl_pos, a crl_pair[], v int);
		ALTER TABLE crl_f REPLICA IDENTITY FULL;
		INSERT INTO crl_k SELECT ROW(i, 'x' || i)::crl_pair, 0 FROM generate_series(1, 40) i;
		INSERT INTO crl_d SELECT ROW(i, 'x' || i)::crl_pair, 0 FROM generate_series(1, 40) i;
		INSERT INTO crl_dd SELECT ROW(i, 'x' || i)::crl_pair, 0 FROM generate_series(1, 40) i;
		INSERT INTO crl_a SELECT ARRAY[ROW(i, 'x' || i)::crl_pair::crl_dpair], 0 FROM generate_series(1, 40) i;
		INSERT INTO crl_f SELECT ROW(i, 'x' || i)::crl_pair, ROW(i, 'y')::crl_pair, i, ARRAY[ROW(i, 'z')::crl_pair], 0 FROM generate_series(1, 40) i`},
		steps: []e2eStep{
			migrate(),
			onSource(e2eCompositeRowChanges(1, 20)), migrate("PGRELAY_KEEP_ORDER=false"), compared(0),
			onSource(e2eCompositeRowChanges(21, 40)), migrate("PGRELAY_KEEP_ORDER=true"), compared(0),
		},
	},
	{
		// Tables that publish no column (none at all, only a stored
		// generated one, all dropped) are copied and streamed: a row of no
		// value is still a row. Under REPLICA IDENTITY FULL their updates and
		// deletes take any row, as all rows are alike.
		name: "NoPublishedColumns",
		source: []string{`CREATE TABLE npc_none (); INSERT INTO npc_none DEFAULT VALUES; INSERT INTO npc_none DEFAULT VALUES;
		CREATE TABLE npc_gen (g int GENERATED ALWAYS AS (7) STORED); ALTER TABLE npc_gen REPLICA IDENTITY FULL;
		INSERT INTO npc_gen SELECT FROM generate_series(1, 3);
		CREATE TABLE npc_full (); ALTER TABLE npc_full REPLICA IDENTITY FULL; INSERT INTO npc_full SELECT FROM generate_series(1, 3);
		CREATE TABLE npc_drop (a int, b text); INSERT INTO npc_drop VALUES (1, 'x')`},
		steps: []e2eStep{
			migrate(), compared(0),
			onSource(`CREATE TABLE npc_new (); INSERT INTO npc_new DEFAULT VALUES;
		INSERT INTO npc_new SELECT FROM generate_series(1, 100);
		INSERT INTO npc_none DEFAULT VALUES;
		INSERT INTO npc_gen DEFAULT VALUES;
		DELETE FROM npc_full WHERE ctid = '(0,1)'; INSERT INTO npc_full DEFAULT VALUES;
		ALTER TABLE npc_drop DROP COLUMN a, DROP COLUMN b; INSERT INTO npc_drop DEFAULT VALUES`),
			// From 18 the source itself refuses these: a FULL replica identity
			// must not hold generated columns the publication leaves out.
			beforeMajor(18, onSource(`UPDATE npc_gen SET g = DEFAULT WHERE ctid = '(0,1)'; DELETE FROM npc_gen WHERE ctid = '(0,2)'`)),
			migrate(), compared(5),
			targetHas("SELECT count(*) FROM public.npc_new", "101"),
			targetHas("SELECT count(*) FROM public.npc_none", "3"),
			beforeMajor(18, targetHas("SELECT count(*) FROM public.npc_gen", "3")),
			fromMajor(18, targetHas("SELECT count(*) FROM public.npc_gen", "4")),
			targetHas("SELECT count(*) FROM public.npc_full", "3"),
			targetHas("SELECT count(*) FROM public.npc_drop", "2"),
		},
	},
	{
		// An unlogged table, which no publication publishes, made SET LOGGED
		// while pgrelay was stopped joins a FOR ALL TABLES publication with
		// rows no stream carries: the next start copies it. A table created
		// meanwhile, empty or filled, is left to the stream. Source and
		// target share a server.
		name: "UnloggedTableMadeLogged",
		on:   onMajor15,
		source: []string{`CREATE TABLE ul_other (id int PRIMARY KEY);
		CREATE UNLOGGED TABLE ul (id int PRIMARY KEY, v text); INSERT INTO ul SELECT g, 'old' FROM generate_series(1, 3) g`},
		steps: []e2eStep{
			migrate(),
			targetHas("SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'ul'", "0"),
			onSource(`ALTER TABLE ul SET LOGGED; INSERT INTO ul VALUES (10, 'new'); CREATE TABLE ul_later (id int PRIMARY KEY);
		CREATE TABLE ul_filled (id int PRIMARY KEY); INSERT INTO ul_filled SELECT generate_series(1, 5)`),
			migrate(),
			logged("tables were added to the publication since the snapshot copy: copying them", "", ""),
			onSource("UPDATE ul SET v = 'upd' WHERE id = 1; INSERT INTO ul_later VALUES (1); DELETE FROM ul_filled WHERE id = 5"),
			migrate(), compared(0),
			targetHas("SELECT string_agg(id || v, ',' ORDER BY id) FROM public.ul", "1upd,2old,3old,10new"),
			targetHas("SELECT count(*) FROM public.ul_filled", "4"),
		},
	},
	{
		// Two tables swap names in one source transaction, then get rows:
		// each target table follows its source table (by OID), stopped and
		// running.
		name: "TablesSwapNames",
		on:   onMajor15,
		source: []string{`CREATE TABLE sw_a (id int PRIMARY KEY, v text); INSERT INTO sw_a VALUES (1, 'a1'), (2, 'a2');
		CREATE TABLE sw_b (id int PRIMARY KEY, v text); INSERT INTO sw_b VALUES (1, 'b1'), (2, 'b2')`},
		steps: []e2eStep{
			migrate(),
			// Stopped; the table now named b (a's rows) gets the first change.
			onSource("BEGIN; ALTER TABLE sw_a RENAME TO sw_tmp; ALTER TABLE sw_b RENAME TO sw_a; ALTER TABLE sw_tmp RENAME TO sw_b; COMMIT",
				"INSERT INTO sw_b VALUES (3, 'a3'); INSERT INTO sw_a VALUES (3, 'b3'); UPDATE sw_b SET v = 'a1x' WHERE id = 1"),
			migrate(),
			renamed("swapped while stopped", "public.sw_a,public.sw_b"),
			targetHas(renameRows("sw_a"), "1 b1,2 b2,3 b3"),
			// Running; swapped back, and the table now named a gets the first change.
			replicate(), synced(),
			onSource("BEGIN; ALTER TABLE sw_a RENAME TO sw_tmp; ALTER TABLE sw_b RENAME TO sw_a; ALTER TABLE sw_tmp RENAME TO sw_b; COMMIT",
				"INSERT INTO sw_a VALUES (4, 'a4'); INSERT INTO sw_b VALUES (4, 'b4'); UPDATE sw_b SET v = 'b2x' WHERE id = 2"),
			synced(),
			renamed("swapped back while running", "public.sw_a,public.sw_b"),
			targetHas(renameRows("sw_a"), "1 a1x,2 a2,3 a3,4 a4"),
			stopReplicate(),
		},
	},
	{
		// A table is renamed and a new one created under its old name: the
		// new one is created on the target, the old target table follows its
		// source table with its rows, also when the old table gets no change
		// and when the new table's columns have other types.
		name: "TableNameReused",
		on:   onMajor15,
		source: []string{`CREATE TABLE nr_b (id int PRIMARY KEY, v text); INSERT INTO nr_b VALUES (1, 'old1'), (2, 'old2');
		CREATE TABLE nr_c (id int PRIMARY KEY, v text); INSERT INTO nr_c VALUES (1, 'c1'), (2, 'c2')`},
		steps: []e2eStep{
			migrate(),
			// Stopped, the same columns; only the new table gets rows.
			onSource(`ALTER TABLE nr_b RENAME TO nr_b_old; CREATE TABLE nr_b (id int PRIMARY KEY, v text);
		INSERT INTO nr_b VALUES (3, 'new3'), (4, 'new4')`),
			migrate(),
			renamed("same columns, stopped", "public.nr_b,public.nr_b_old,public.nr_c"),
			// Running, other column types; the old table changes after the new one.
			replicate(), synced(),
			onSource(`ALTER TABLE nr_c RENAME TO nr_c_old; CREATE TABLE nr_c (id bigint PRIMARY KEY, v int, d date);
		INSERT INTO nr_c VALUES (1, 7, '2024-01-01'), (5, 8, NULL)`,
				"UPDATE nr_c_old SET v = 'c2x' WHERE id = 2; INSERT INTO nr_b_old VALUES (3, 'old3')"),
			synced(),
			renamed("other types, running", "public.nr_b,public.nr_b_old,public.nr_c,public.nr_c_old"),
			stopReplicate(),
		},
	},
	{
		// 100_bugs.pl, bug #15114: an index whose predicate calls a user
		// function, on a table copied and on one created while replicate
		// runs. The target has the function (pgrelay copies none): both
		// indexes are built there, and inserts apply.
		name:   "BugsIndexPredicateFunction",
		source: []string{e2eDoubleFunction + `; CREATE TABLE tab1 (a int PRIMARY KEY, b int); CREATE INDEX ON tab1 (b) WHERE a > double(1)`},
		steps: []e2eStep{
			onTarget(e2eDoubleFunction),
			migrate(), replicate(), synced(),
			onSource(`INSERT INTO tab1 VALUES (1, 2);
			CREATE TABLE tab2 (a int PRIMARY KEY, b int); CREATE INDEX ON tab2 (b) WHERE a > double(1); INSERT INTO tab2 VALUES (1, 2), (3, 4)`),
			synced(),
			sameOnBoth(`SELECT string_agg(indrelid::regclass || ':' || pg_get_expr(indpred, indrelid), ',' ORDER BY indrelid::regclass::text)
			FROM pg_index WHERE indrelid IN ('public.tab1'::regclass, 'public.tab2'::regclass) AND indpred IS NOT NULL`),
			synced(), compared(0), stopReplicate(),
		},
	},
	{
		// 100_bugs.pl: the replica identity moves from one unique index to
		// another, then the former key changes and a row is deleted, in one
		// transaction, while replicate runs (ri_run) and while it is stopped
		// (ri_stop).
		name:   "BugsReplicaIdentityIndexChanged",
		source: []string{e2eTwoUniqueIndexes("ri_run"), e2eTwoUniqueIndexes("ri_stop")},
		steps: []e2eStep{
			migrate(),
			onSource(e2eReplicaIdentityMoved("ri_stop")),
			replicate(), synced(),
			onSource(e2eReplicaIdentityMoved("ri_run")),
			synced(),
			targetHas("SELECT string_agg(a || '|' || b, ',') FROM ri_run", "-1|1"),
			targetHas("SELECT string_agg(a || '|' || b, ',') FROM ri_stop", "-1|1"),
			synced(), compared(0), stopReplicate(),
		},
	},
	{
		// 100_bugs.pl: under REPLICA IDENTITY FULL, updates of a table that
		// had a column dropped, and of one with a stored generated column,
		// find their rows. PostgreSQL 18 refuses such an update of the second
		// table while a publication leaves its generated column out: there
		// the publication publishes it.
		name: "BugsFullIdentityDroppedGeneratedColumns",
		source: []string{`CREATE TABLE dropped_cols (a int, b_drop int, c int); ALTER TABLE dropped_cols REPLICA IDENTITY FULL;
			CREATE TABLE generated_cols (a int, b_gen int GENERATED ALWAYS AS (5 * a) STORED, c int); ALTER TABLE generated_cols REPLICA IDENTITY FULL;
			INSERT INTO dropped_cols VALUES (1, 1, 1); INSERT INTO generated_cols (a, c) VALUES (1, 1)`},
		steps: []e2eStep{
			fromMajor(18, onSource("CREATE PUBLICATION {{pub}} FOR ALL TABLES WITH (publish_generated_columns = stored)")),
			migrate(), replicate(), synced(),
			onSource("ALTER TABLE dropped_cols DROP COLUMN b_drop",
				"UPDATE dropped_cols SET a = 100; UPDATE generated_cols SET a = 100"),
			synced(),
			targetHas("SELECT string_agg(a || '|' || c, ',') FROM dropped_cols", "100|1"),
			targetHas("SELECT string_agg(a || '|' || b_gen || '|' || c, ',') FROM generated_cols", "100|500|1"),
			synced(), compared(0), stopReplicate(),
		},
	},
	{
		// 100_bugs.pl: under REPLICA IDENTITY FULL, a row older than a column
		// added with a default (whose fast path stores no value) is updated:
		// its old tuple must carry the default for the target to find it.
		// Copied, and added while replicate runs.
		name: "BugsFullIdentityMissingAttribute",
		source: []string{`CREATE TABLE tab_default (a int); ALTER TABLE tab_default REPLICA IDENTITY FULL;
			INSERT INTO tab_default VALUES (1); ALTER TABLE tab_default ADD COLUMN b bool DEFAULT false NOT NULL;
			INSERT INTO tab_default VALUES (2, true);
			CREATE TABLE tab_later (a int); ALTER TABLE tab_later REPLICA IDENTITY FULL; INSERT INTO tab_later VALUES (1)`},
		steps: []e2eStep{
			migrate(),
			targetHas("SELECT string_agg(a || '|' || b, ',' ORDER BY a) FROM tab_default", "1|false,2|true"),
			replicate(), synced(),
			onSource("ALTER TABLE tab_later ADD COLUMN b bool DEFAULT false NOT NULL; INSERT INTO tab_later VALUES (2, true)",
				"UPDATE tab_default SET a = a + 1; UPDATE tab_later SET a = a + 1"),
			synced(),
			targetHas("SELECT string_agg(a || '|' || b, ',' ORDER BY a) FROM tab_default", "2|false,3|true"),
			targetHas("SELECT string_agg(a || '|' || b, ',' ORDER BY a) FROM tab_later", "2|false,3|true"),
			synced(), compared(0), stopReplicate(),
		},
	},
	{
		// A column renamed and renamed back while pgrelay is stopped: the
		// message between names the column by its middle name, which the
		// source's catalog no longer has. The column keeps its values.
		name:   "RenameAndBackWhileStopped",
		on:     onMajor15,
		source: []string{"CREATE TABLE rb (id int PRIMARY KEY, v text, w int); INSERT INTO rb VALUES (1, 'a', 1)"},
		steps: []e2eStep{
			migrate(),
			onSource("INSERT INTO rb VALUES (2, 'b', 2)", "ALTER TABLE rb RENAME COLUMN v TO v1", "INSERT INTO rb VALUES (3, 'c', 3)",
				"ALTER TABLE rb RENAME COLUMN v1 TO v", "INSERT INTO rb VALUES (4, 'd', 4)"),
			migrate(),
			targetHas("SELECT string_agg(id || v || w, ' ' ORDER BY id) FROM rb", "1a1 2b2 3c3 4d4"),
			compared(0),
		},
	},
	{
		// While pgrelay is stopped a column is added, then a is renamed b2
		// and d takes the name a. The first message names a and d, which the
		// catalog read later gives as d's number and none: matched by those,
		// d would be renamed a and the real a dropped with its values.
		name:   "NameReusedWhileStopped",
		on:     onMajor15,
		source: []string{"CREATE TABLE nr (id int PRIMARY KEY, a text, d text); INSERT INTO nr SELECT i, 'a' || i, 'd' || i FROM generate_series(1, 3) i"},
		steps: []e2eStep{
			migrate(),
			onSource("ALTER TABLE nr ADD COLUMN x int", "INSERT INTO nr VALUES (10, 'a10', 'd10', 1)",
				"ALTER TABLE nr RENAME COLUMN a TO b2", "ALTER TABLE nr RENAME COLUMN d TO a", "INSERT INTO nr VALUES (11, 'a11', 'd11', 2)"),
			migrate(),
			targetHas("SELECT string_agg(concat_ws(',', id, b2, a, x), ' ' ORDER BY id) FROM nr", "1,a1,d1 2,a2,d2 3,a3,d3 10,a10,d10,1 11,a11,d11,2"),
			compared(0),
		},
	},
}

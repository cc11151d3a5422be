package integration

// End-to-end tests of what a migration carries besides the tables' rows
// (apply/schemacopy): sequences no column owns, partitioned tables, foreign
// keys, checks, triggers, views, a materialized view, functions, a
// procedure, an aggregate, types and comments; the report migrate prints,
// the cut-over section of status, and `pgrelay sequences`.

import (
	"context"
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

// e2eOutcome is what a statement did on one side: its rows in text form,
// or its SQLSTATE.
func e2eOutcome(ctx context.Context, conn *pgx.Conn, sql string) string {
	results, err := conn.PgConn().Exec(ctx, sql).ReadAll()
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return "ERROR " + pgErr.Code
		}
		return "ERROR " + err.Error()
	}
	var b strings.Builder
	for _, r := range results {
		for _, row := range r.Rows {
			for i, v := range row {
				if i > 0 {
					b.WriteString("|")
				}
				if v == nil {
					b.WriteString("NULL")
				} else {
					b.Write(v)
				}
			}
			b.WriteString("\n")
		}
		b.WriteString(r.CommandTag.String() + "\n")
	}
	return b.String()
}

// e2eSameOutcomes runs each statement on the source and on the target, one
// after the other (each in a transaction of its own), and fails the test
// where the two behave differently.
func e2eSameOutcomes(t *testing.T, e *e2eEnv, stmts []string) {
	t.Helper()
	ctx := e2eCtx(t, 2*time.Minute)
	src, tgt := e2eConn(t, e.src), e2eConn(t, e.tgt)
	for _, c := range []*pgx.Conn{src, tgt} {
		e2eExec(t, ctx, c, "SET TimeZone = 'UTC'", "SET DateStyle = 'ISO, MDY'", "SET extra_float_digits = 3")
	}
	for _, sql := range stmts {
		s, g := e2eOutcome(ctx, src, sql), e2eOutcome(ctx, tgt, sql)
		if s != g {
			t.Errorf("%s\nsource: %q\ntarget: %q", sql, s, g)
		}
	}
}

// TestE2ESchemaPagila: a schema of pagila's shape migrated with the default
// PGRELAY_SCHEMA=all. Replicate then goes on applying changes with the
// target's foreign keys and triggers in place (they do not fire for
// replicated rows); after a last migrate, the application's statements —
// inserts without ids, inserts a trigger completes, inserts that break a
// foreign key, a check or a domain, queries on the partitioned table and
// the views, functions, a procedure, an aggregate — behave the same on
// both sides.
func TestE2ESchemaPagila(t *testing.T) { e2eEachMajor(t, testE2ESchemaPagila) }

func testE2ESchemaPagila(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, e2eWorkload(t, "pagila_schema.sql"))
	first := e.mustRun(3*time.Minute, "migrate")
	out := first.out.all()
	if len(out) == 0 || out[len(out)-1] != "ready to switch: yes (stop the application's writes on the source first, then run pgrelay migrate once more, or pgrelay sequences while replicate runs)" ||
		slices.ContainsFunc(out, func(l string) bool { return strings.Contains(l, "left out:") }) {
		t.Errorf("migrate printed:\n%s\nwant the report, nothing left out, ready to switch", strings.Join(out, "\n"))
	}
	if got := e.tgt.QueryString(t, `SELECT relkind::text || ':' || (SELECT string_agg(inhrelid::regclass::text, ',' ORDER BY inhrelid::regclass::text)
		FROM pg_inherits WHERE inhparent = 'public.payment'::regclass) FROM pg_class WHERE oid = 'public.payment'::regclass`); got != "p:payment_p2022_01,payment_p2022_02,payment_p2022_03" {
		t.Errorf("target public.payment: %s, want a partitioned table with its three partitions", got)
	}

	// Replicate goes on, with the foreign keys and triggers on the target.
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, `INSERT INTO public.film (title, description, language_id) VALUES ('BACK FILM', 'A streamed one', 2);
		UPDATE public.actor SET first_name = 'PENNY' WHERE actor_id = 1;
		INSERT INTO public.customer (store_id, first_name, last_name) VALUES (2, 'NEW', 'CUSTOMER');
		INSERT INTO public.rental (rental_date, film_id, customer_id) VALUES ('2022-02-20', 4, 6);
		INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES (6, 4, 3.50, '2022-03-15');
		UPDATE public.payment SET payment_date = '2022-01-20' WHERE payment_id = 2;
		DELETE FROM public.film_actor WHERE film_id = 2;
		INSERT INTO "Billing".invoice (customer_id, total) VALUES (6, 3.50)`)
	e2eSync(t, e, p, time.Minute)
	// last_update and fulltext as the source's triggers set them: the
	// target's did not fire again.
	e2eCompare(t, e)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
	}

	// The switch: writes stopped, a last migrate; the target is ready.
	e.mustRun(3*time.Minute, "migrate")
	st, raw := e.status(t)
	if st.Cutover == nil || !st.Cutover.Ready || len(st.Cutover.SequencesBehind) != 0 || len(st.Cutover.LeftOut) != 0 {
		t.Errorf("status after the last migrate: want the target ready to switch to; got %s", raw)
	}
	e2eSameOutcomes(t, e, []string{
		`INSERT INTO public.customer (store_id, first_name, last_name) VALUES (1, 'ANNA', 'BELL') RETURNING customer_id`,
		`INSERT INTO public.actor (first_name, last_name) VALUES ('CARL', 'DEAN') RETURNING actor_id`,
		`INSERT INTO public.film (title, description, language_id) VALUES ('ZEBRA ZOO', 'A zebra in a zoo', 1) RETURNING film_id, fulltext, rating, rental_rate`,
		`INSERT INTO "Billing".invoice (customer_id, total) VALUES (3, 1) RETURNING invoice_no`,
		`INSERT INTO public.language (name) VALUES ('French') RETURNING language_id`,
		`INSERT INTO public.rental (rental_date, film_id, customer_id) VALUES ('2022-03-03', 1, 3) RETURNING rental_id`,
		`INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES (3, 1, 5.00, '2022-02-15') RETURNING payment_id, tableoid::regclass`,
		// A foreign key, a check, a partition bound, a domain and an enum
		// refuse alike.
		`INSERT INTO public.rental (rental_date, film_id, customer_id) VALUES ('2022-03-03', 1, 999)`,
		`INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES (999, 1, 1, '2022-01-10')`,
		`INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES (3, 1, -1, '2022-01-10')`,
		`INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES (3, 1, 1, '2023-01-01')`,
		`INSERT INTO public.film (title, language_id, release_year) VALUES ('OLD', 1, 1800)`,
		`INSERT INTO public.film (title, language_id, rating) VALUES ('BAD', 1, 'X')`,
		`DELETE FROM public.film WHERE film_id = 1`,
		`UPDATE public.language SET language_id = 10 WHERE language_id = 2 RETURNING language_id`,
		`SELECT language_id, count(*) FROM public.film GROUP BY 1 ORDER BY 1`,
		// Queries on the partitioned table, the views, the functions.
		`SELECT tableoid::regclass::text, count(*), sum(amount) FROM public.payment GROUP BY 1 ORDER BY 1`,
		`SELECT * FROM public.film_list ORDER BY fid`,
		`SELECT * FROM public.sales_by_customer ORDER BY customer_id`,
		`SELECT * FROM public.customer_list ORDER BY id`,
		// Filled at the end of the migration, as REFRESH fills it.
		`REFRESH MATERIALIZED VIEW public.rental_by_film`,
		`SELECT * FROM public.rental_by_film ORDER BY title`,
		`SELECT public.customer_balance(3), public.film_in_stock(1)`,
		`SELECT public.group_concat(first_name ORDER BY first_name) FROM public.actor`,
		`SELECT (public.summary(f)).* FROM public.film f WHERE film_id = 1`,
		`CALL public.rename_customer(4, 'JONES')`,
		`SELECT last_name FROM public.customer WHERE customer_id = 4`,
		`UPDATE public.actor SET first_name = 'EVE' WHERE actor_id = 2 RETURNING last_update > '2020-01-01'`,
		`SELECT pg_catalog.obj_description('public.film'::regclass, 'pg_class'), pg_catalog.col_description('public.film'::regclass,
			(SELECT attnum FROM pg_attribute WHERE attrelid = 'public.film'::regclass AND attname = 'fulltext'))`,
		`SELECT pg_catalog.obj_description('public.customer_balance(integer)'::regprocedure, 'pg_proc')`,
	})
}

// TestE2ESchemaViaRoot: a partitioned table published through its root is
// created partitioned, with its partitions, before the copy, which loads
// into it. A partition added on the source later changes what the
// publication publishes of the table, which stops pgrelay until the tables
// are copied again: that copy's start creates the new partition.
func TestE2ESchemaViaRoot(t *testing.T) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, e2eWorkload(t, "pagila_schema.sql"))
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR ALL TABLES WITH (publish_via_partition_root = true)")
	e.mustRun(3*time.Minute, "migrate")
	perPartition := `SELECT string_agg(tableoid::regclass::text || ':' || payment_id, ',' ORDER BY payment_id) FROM public.payment`
	if src, tgt := e.src.QueryString(t, perPartition), e.tgt.QueryString(t, perPartition); src != tgt {
		t.Errorf("payment rows by partition:\nsource %s\ntarget %s", src, tgt)
	}
	e2eCompare(t, e)

	e.src.Exec(t, `CREATE TABLE public.payment_p2022_04 PARTITION OF public.payment FOR VALUES FROM ('2022-04-01 00:00:00+00') TO ('2022-05-01 00:00:00+00');
		INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES (4, 2, 7.50, '2022-04-02')`)
	if p, code := e.run(3*time.Minute, "migrate"); code == 0 {
		t.Fatalf("migrate exited 0 after a partition was added to a table published through its root, want 1; log:\n%s", p.logs())
	}
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	always.mustRun(3*time.Minute, "migrate")
	if src, tgt := e.src.QueryString(t, perPartition), e.tgt.QueryString(t, perPartition); src != tgt {
		t.Errorf("payment rows by partition after a partition was added:\nsource %s\ntarget %s", src, tgt)
	}
	e2eCompare(t, e)
	e2eSameOutcomes(t, e, []string{
		`INSERT INTO public.payment (customer_id, rental_id, amount, payment_date) VALUES (3, 1, 1.25, '2022-04-20') RETURNING payment_id, tableoid::regclass`,
		`SELECT count(*) FROM public.sales_by_customer`,
	})
}

// TestE2ESchemaLeftOut: what cannot be carried is listed, in migrate's
// report and in status, and the target is not called ready: a foreign key
// and a view on a table the publication does not publish, a function of a
// language whose code the target must have, a trigger set ENABLE ALWAYS
// (created disabled: it would fire again for each replicated row), an
// operator, a cast and a text search configuration (kinds not carried).
func TestE2ESchemaLeftOut(t *testing.T) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, `CREATE TABLE lo_other (id int PRIMARY KEY);
		CREATE TABLE lo_kept (id serial PRIMARY KEY, ref int REFERENCES lo_other);
		CREATE VIEW lo_view AS SELECT k.id FROM lo_kept k JOIN lo_other o ON o.id = k.ref;
		CREATE TABLE lo_audit (n serial PRIMARY KEY, id int);
		CREATE FUNCTION lo_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO lo_audit (id) VALUES (NEW.id); RETURN NEW; END $$;
		CREATE TRIGGER lo_always AFTER INSERT ON lo_kept FOR EACH ROW EXECUTE FUNCTION lo_note();
		ALTER TABLE lo_kept ENABLE ALWAYS TRIGGER lo_always;
		CREATE FUNCTION lo_add(int, int) RETURNS int LANGUAGE internal IMMUTABLE STRICT AS 'int4pl';
		CREATE TYPE lo_pair AS (a int, b int);
		CREATE FUNCTION lo_pair_sum(lo_pair) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT ($1).a + ($1).b';
		CREATE OPERATOR public.+ (RIGHTARG = lo_pair, FUNCTION = lo_pair_sum);
		CREATE CAST (lo_pair AS int) WITH FUNCTION lo_pair_sum(lo_pair);
		CREATE TEXT SEARCH CONFIGURATION lo_search (COPY = pg_catalog.simple);
		ALTER TABLE lo_audit ENABLE ROW LEVEL SECURITY; CREATE POLICY lo_mine ON lo_audit USING (id > 0);
		INSERT INTO lo_other VALUES (1); INSERT INTO lo_kept (ref) VALUES (1), (NULL)`)
	e.extra = append(e.extra, "PGRELAY_TABLES=public.lo_kept,public.lo_audit")
	leftOut := 8
	wants := []string{
		"left out: foreign key lo_kept_ref_fkey on public.lo_kept: references public.lo_other, which the publication does not publish",
		"left out: view public.lo_view: reads public.lo_other, which the publication does not publish",
		"left out: function public.lo_add(integer,integer): written in internal",
		// Kinds pgrelay does not carry are listed, not dropped in silence.
		"left out: operator public.+(NONE,public.lo_pair): pgrelay does not carry this kind of object",
		"left out: cast (public.lo_pair AS integer): pgrelay does not carry this kind of object",
		"left out: text search configuration public.lo_search: pgrelay does not carry this kind of object",
		"left out: policy lo_mine on public.lo_audit: row-level security is not carried",
		"left out: policy row level security on public.lo_audit: row-level security is not carried",
		"at the switch: trigger lo_always on public.lo_kept: created DISABLED",
	}
	if e.src.Major >= 18 && e.tgt.Major < 18 {
		// An extension that came with PostgreSQL 18: the target's server
		// does not have it.
		e.src.Exec(t, "CREATE EXTENSION pg_logicalinspect")
		wants = append(wants, "left out: extension pg_logicalinspect: the target server does not have extension pg_logicalinspect")
		leftOut++
	}
	wants = append(wants, fmt.Sprintf("ready to switch: no: %d schema objects left out (listed); 1 schema objects need a hand at the switch (listed)", leftOut))
	p := e.mustRun(3*time.Minute, "migrate")
	out := strings.Join(p.out.all(), "\n")
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("migrate's report lacks %q:\n%s", want, out)
		}
	}
	if got := e.tgt.QueryString(t, "SELECT tgenabled::text FROM pg_trigger WHERE tgname = 'lo_always'"); got != "D" {
		t.Errorf("target trigger lo_always tgenabled %s, want D (disabled)", got)
	}
	// Replicated rows do not fire it; the source's own audit rows arrive.
	e.src.Exec(t, "INSERT INTO lo_kept (ref) VALUES (1)")
	e.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
	st, raw := e.status(t)
	if st.Cutover == nil || st.Cutover.Ready || len(st.Cutover.LeftOut) != leftOut+1 {
		t.Errorf("status: want not ready with %d objects listed; got %s", leftOut+1, raw)
	}
	text := strings.Join(e.mustRun(time.Minute, "status").out.all(), "\n")
	if !strings.Contains(text, "cut-over") || !strings.Contains(text, "view public.lo_view: reads public.lo_other") {
		t.Errorf("status text lacks the cut-over section listing the view:\n%s", text)
	}
	// What the user makes on the target by hand, as the report says, the
	// next migrate finds there: no longer listed.
	e.tgt.Exec(t, `CREATE OPERATOR public.+ (RIGHTARG = lo_pair, FUNCTION = lo_pair_sum);
		CREATE CAST (lo_pair AS int) WITH FUNCTION lo_pair_sum(lo_pair);
		CREATE TEXT SEARCH CONFIGURATION lo_search (COPY = pg_catalog.simple);
		ALTER TABLE lo_audit ENABLE ROW LEVEL SECURITY; CREATE POLICY lo_mine ON lo_audit USING (id > 0)`)
	out = strings.Join(e.mustRun(3*time.Minute, "migrate").out.all(), "\n")
	for _, gone := range []string{"operator public.+", "cast (public.lo_pair", "lo_search", "policy lo_mine", "row level security on"} {
		if strings.Contains(out, "left out: "+gone) {
			t.Errorf("made by hand on the target, %s is still left out:\n%s", gone, out)
		}
	}
	if st, raw := e.status(t); st.Cutover == nil || len(st.Cutover.LeftOut) != leftOut+1-5 {
		t.Errorf("status after the objects were made by hand: want %d listed; got %s", leftOut+1-5, raw)
	}
}

// TestE2ESchemaTablesOnly: PGRELAY_SCHEMA=tables carries the tables and the
// sequences their columns use, also one no column owns, as both settings
// do; views and foreign keys only come with all.
func TestE2ESchemaTablesOnly(t *testing.T) {
	for _, mode := range []string{"tables", "all"} {
		t.Run(mode, func(t *testing.T) {
			e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
			e.src.Exec(t, `CREATE SEQUENCE s_unowned; CREATE TABLE t_unowned(id int DEFAULT nextval('s_unowned') PRIMARY KEY, v text);
				CREATE SCHEMA "Other"; CREATE SEQUENCE "Other"."Shared Seq" START 100;
				CREATE TABLE t_a (id bigint DEFAULT nextval('"Other"."Shared Seq"') PRIMARY KEY);
				CREATE TABLE t_b (id bigint DEFAULT nextval('"Other"."Shared Seq"') PRIMARY KEY, a bigint REFERENCES t_a);
				CREATE VIEW v_unowned AS SELECT id FROM t_unowned;
				INSERT INTO t_unowned (v) VALUES ('a'), ('b'), ('c'); INSERT INTO t_a DEFAULT VALUES; INSERT INTO t_b (a) VALUES (100)`)
			e.extra = append(e.extra, "PGRELAY_SCHEMA="+mode)
			p := e.mustRun(3*time.Minute, "migrate")
			if got := e.tgt.QueryString(t, "SELECT last_value || ',' || is_called FROM public.s_unowned"); got != "3,true" {
				t.Errorf("target s_unowned: %s, want 3,true", got)
			}
			e2eSameOutcomes(t, e, []string{
				`INSERT INTO public.t_unowned (v) VALUES ('x') RETURNING id`,
				`INSERT INTO public.t_a DEFAULT VALUES RETURNING id`,
				`INSERT INTO public.t_b DEFAULT VALUES RETURNING id`,
			})
			view := e.tgt.QueryString(t, "SELECT to_regclass('public.v_unowned') IS NOT NULL")
			fks := e.tgt.QueryString(t, "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid = 'public.t_b'::regclass")
			out := strings.Join(p.out.all(), "\n")
			switch mode {
			case "tables":
				if view != "f" || fks != "0" || !strings.Contains(out, "schema objects: not carried (PGRELAY_SCHEMA=tables") {
					t.Errorf("PGRELAY_SCHEMA=tables: view created %s, foreign keys %s; report:\n%s", view, fks, out)
				}
			case "all":
				if view != "t" || fks != "1" {
					t.Errorf("PGRELAY_SCHEMA=all: view created %s, foreign keys %s; report:\n%s", view, fks, out)
				}
			}
		})
	}
}

// TestE2ESequencesCommand: while replicate runs, the source's sequences move
// on and status says the target's are behind; `pgrelay sequences` sets them,
// and the target hands out the next id.
func TestE2ESequencesCommand(t *testing.T) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, `CREATE SEQUENCE sc_seq; CREATE TABLE sc (id int DEFAULT nextval('sc_seq') PRIMARY KEY, v text);
		INSERT INTO sc (v) VALUES ('a')`)
	e.mustRun(3*time.Minute, "migrate")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "INSERT INTO sc (v) SELECT 'b' FROM generate_series(1, 5)")
	e2eSync(t, e, p, time.Minute)
	st, raw := e.status(t)
	if st.Cutover == nil || st.Cutover.Ready || !slices.ContainsFunc(st.Cutover.SequencesBehind, func(s string) bool { return strings.HasPrefix(s, "public.sc_seq ") }) {
		t.Errorf("status while the source's sequence moved on: want public.sc_seq behind, not ready; got %s", raw)
	}
	seq := e.mustRun(time.Minute, "sequences")
	if out := strings.Join(seq.out.all(), "\n"); !strings.HasPrefix(out, "sequences: 1 set to the source's values") {
		t.Errorf("pgrelay sequences printed %q", out)
	}
	if st, raw := e.status(t); st.Cutover == nil || len(st.Cutover.SequencesBehind) != 0 {
		t.Errorf("status after pgrelay sequences: want no sequence behind; got %s", raw)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
	}
	if got := e.tgt.QueryString(t, "INSERT INTO public.sc (v) VALUES ('target') RETURNING id"); got != "7" {
		t.Errorf("next id on the target %s, want 7", got)
	}
}

// TestE2ESchemaGrants: with PGRELAY_SCHEMA_GRANTS=true the privileges on
// the carried tables, columns, views, sequences and functions come along,
// and EXECUTE revoked from PUBLIC on the source is revoked on the target.
// Source and target share a server (roles are a server's), so the grantee
// exists on both.
func TestE2ESchemaGrants(t *testing.T) {
	e := e2ePair(t, e2eTargetMajor)
	role := e.slot + "_reader"
	quoted := pgx.Identifier{role}.Sanitize()
	e.src.Exec(t, "CREATE ROLE "+quoted)
	t.Cleanup(func() {
		for _, pg := range []*harness.PG{e.src, e.tgt} {
			pg.Exec(t, "DROP OWNED BY "+quoted)
		}
		e.src.Exec(t, "DROP ROLE "+quoted)
	})
	e.src.Exec(t, `CREATE TABLE gr (id serial PRIMARY KEY, secret text, note text);
		CREATE VIEW gr_view AS SELECT id, note FROM gr;
		CREATE FUNCTION gr_count() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM public.gr';
		CREATE FUNCTION gr_open() RETURNS int LANGUAGE sql AS 'SELECT 1';
		GRANT SELECT ON gr_view TO `+quoted+`;
		GRANT SELECT (id, note), INSERT ON gr TO `+quoted+` WITH GRANT OPTION;
		GRANT USAGE ON SEQUENCE gr_id_seq TO `+quoted+`;
		REVOKE EXECUTE ON FUNCTION gr_count() FROM PUBLIC;
		GRANT EXECUTE ON FUNCTION gr_count() TO `+quoted)
	e.extra = append(e.extra, "PGRELAY_SCHEMA_GRANTS=true")
	p := e.mustRun(3*time.Minute, "migrate")
	if out := strings.Join(p.out.all(), "\n"); strings.Contains(out, "left out:") {
		t.Errorf("migrate left grants out:\n%s", out)
	}
	for _, q := range []string{
		`SELECT has_table_privilege('` + role + `', 'public.gr_view', 'SELECT')`,
		`SELECT has_table_privilege('` + role + `', 'public.gr', 'INSERT WITH GRANT OPTION')`,
		`SELECT has_column_privilege('` + role + `', 'public.gr', 'note', 'SELECT')`,
		`SELECT has_column_privilege('` + role + `', 'public.gr', 'secret', 'SELECT')`,
		`SELECT has_sequence_privilege('` + role + `', 'public.gr_id_seq', 'USAGE')`,
		`SELECT has_function_privilege('` + role + `', 'public.gr_count()', 'EXECUTE')`,
		`SELECT has_function_privilege('public', 'public.gr_count()', 'EXECUTE')`,
		`SELECT has_function_privilege('public', 'public.gr_open()', 'EXECUTE')`,
	} {
		if src, tgt := e.src.QueryString(t, q), e.tgt.QueryString(t, q); src != tgt {
			t.Errorf("%s: source %s, target %s", q, src, tgt)
		}
	}
}

// TestE2ESchemaPartitionedIdentity: a partitioned table whose partitions are
// published on their own, with an identity column and a generated one: the
// target's partitioned table, made at the end of the migration, hands out
// the next identity value for an insert through it, as the source's does;
// also through a sub-partitioned partition.
func TestE2ESchemaPartitionedIdentity(t *testing.T) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, `CREATE TABLE pi (id bigint GENERATED ALWAYS AS IDENTITY, k int NOT NULL, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
		CREATE TABLE pi_1 PARTITION OF pi FOR VALUES IN (1);
		CREATE TABLE pi_2 PARTITION OF pi FOR VALUES IN (2);
		INSERT INTO pi (k) VALUES (1), (2), (2), (2);
		CREATE TABLE pg_gen (a int, b int GENERATED ALWAYS AS (a * 2) STORED, k int NOT NULL) PARTITION BY LIST (k);
		CREATE TABLE pg_gen_1 PARTITION OF pg_gen FOR VALUES IN (1);
		INSERT INTO pg_gen (a, k) VALUES (1, 1);
		CREATE TABLE ps (id bigint GENERATED BY DEFAULT AS IDENTITY, k int NOT NULL, d int NOT NULL, PRIMARY KEY (id, k, d)) PARTITION BY LIST (k);
		CREATE TABLE ps_1 PARTITION OF ps FOR VALUES IN (1) PARTITION BY RANGE (d);
		CREATE TABLE ps_1_a PARTITION OF ps_1 FOR VALUES FROM (0) TO (10);
		INSERT INTO ps (k, d) VALUES (1, 1), (1, 2)`)
	if out := strings.Join(e.mustRun(3*time.Minute, "migrate").out.all(), "\n"); !strings.HasSuffix(out, "ready to switch: yes (stop the application's writes on the source first, then run pgrelay migrate once more, or pgrelay sequences while replicate runs)") {
		t.Errorf("migrate's report:\n%s", out)
	}
	e2eSameOutcomes(t, e, []string{
		`INSERT INTO public.pi (k) VALUES (2) RETURNING id, tableoid::regclass`,
		`INSERT INTO public.pg_gen (a, k) VALUES (5, 1) RETURNING b, tableoid::regclass`,
		`INSERT INTO public.pg_gen (a, k) VALUES (5, 2)`,
		// Sub-partitioned: PostgreSQL 17+ marks the middle level's column
		// identity too, taking the root's sequence.
		`INSERT INTO public.ps (k, d) VALUES (1, 3) RETURNING id, tableoid::regclass`,
		`INSERT INTO public.ps_1 (k, d) VALUES (1, 4) RETURNING id, tableoid::regclass`,
	})
}

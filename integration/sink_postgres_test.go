package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/postgres"
	"github.com/pgrelay/pgrelay/sink/sinktest"
	"github.com/pgrelay/pgrelay/source"
)

// pgSinkHarness runs the shared sink suite against PostgreSQL targets of one major.
type pgSinkHarness struct{ major int }

func (h pgSinkHarness) Target(t *testing.T) sinktest.Target {
	return &pgSinkTarget{pg: harness.Postgres(t, h.major)}
}

type pgSinkTarget struct {
	pg   *harness.PG
	opts postgres.Options
}

func (tg *pgSinkTarget) Open(t *testing.T) sink.Sink { return tg.open(t) }

func (tg *pgSinkTarget) open(t *testing.T) *postgres.Sink {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := postgres.New(ctx, tg.pg.URL(), tg.opts)
	if err != nil {
		t.Fatalf("postgres.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func (tg *pgSinkTarget) Rows(t *testing.T, table *schema.Table) [][]string {
	t.Helper()
	return pgRows(t, tg.pg, table)
}

// The abilities of sinktest's optional Target interfaces.
var (
	_ sinktest.TableMaker       = (*pgSinkTarget)(nil)
	_ sinktest.SessionKiller    = (*pgSinkTarget)(nil)
	_ sinktest.ReadOnlySwitch   = (*pgSinkTarget)(nil)
	_ sinktest.RestrictedOpener = (*pgSinkTarget)(nil)
	_ sinktest.SequenceReader   = (*pgSinkTarget)(nil)

	_ sinktest.PreparedCommitter = (*pgSinkTarget)(nil)
)

func (tg *pgSinkTarget) CommitPreparedBehind(t *testing.T, gid string) {
	t.Helper()
	tg.pg.Exec(t, "COMMIT PREPARED "+pgquote.Literal(gid))
}

func (tg *pgSinkTarget) MakeTable(t *testing.T, schemaName, name string, withRow bool) {
	t.Helper()
	q := pgx.Identifier{schemaName, name}.Sanitize()
	tg.pg.Exec(t, "CREATE TABLE "+q+" (id bigint PRIMARY KEY, name text)")
	if withRow {
		tg.pg.Exec(t, "INSERT INTO "+q+" VALUES (1, 'theirs')")
	}
}

func (tg *pgSinkTarget) KillSessions(t *testing.T) {
	t.Helper()
	tg.pg.Exec(t, `SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity
		WHERE datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()`)
}

func (tg *pgSinkTarget) SetReadOnly(t *testing.T, on bool) {
	t.Helper()
	tg.pg.Exec(t, fmt.Sprintf("ALTER DATABASE %s SET default_transaction_read_only = %t", pgx.Identifier{tg.pg.DB}.Sanitize(), on))
}

// OpenRestricted opens a sink as a role that may log in and act as a replica
// (GRANT SET ON PARAMETER, PostgreSQL 15+), and nothing more.
func (tg *pgSinkTarget) OpenRestricted(t *testing.T) sink.Sink {
	t.Helper()
	if tg.pg.Major < 15 {
		t.Skip("before PostgreSQL 15 only a superuser may set session_replication_role: no restricted role can open a sink")
	}
	role := "sinktest_plain_" + tg.pg.DB
	tg.pg.Exec(t, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'plain-pw'; GRANT SET ON PARAMETER session_replication_role TO %[1]s`, pgx.Identifier{role}.Sanitize()))
	t.Cleanup(func() {
		tg.pg.Exec(t, fmt.Sprintf("DROP OWNED BY %s; DROP ROLE %[1]s", pgx.Identifier{role}.Sanitize()))
	})
	u, err := url.Parse(tg.pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "plain-pw")
	s, err := postgres.New(t.Context(), u.String(), tg.opts)
	if err != nil {
		t.Fatalf("postgres.New as %s: %v", role, err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func (tg *pgSinkTarget) NextValue(t *testing.T, table *schema.Table, column string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(tg.pg.QueryString(t, "SELECT pg_catalog.nextval(pg_catalog.pg_get_serial_sequence($1, $2))",
		pgx.Identifier{table.Schema, table.Name}.Sanitize(), column), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pgRows reads a table's rows in text form on a connection of its own.
func pgRows(t *testing.T, pg *harness.PG, table *schema.Table) [][]string {
	t.Helper()
	cols := make([]string, len(table.Columns))
	for i, c := range table.Columns {
		cols[i] = pgx.Identifier{c.Name}.Sanitize()
	}
	sql := "SELECT " + strings.Join(cols, ", ") + " FROM " + pgx.Identifier{table.Schema, table.Name}.Sanitize()
	conn := pg.Conn(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, sql, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		t.Fatalf("read rows: %v", err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]string, len(raw))
		for i, v := range raw {
			if v == nil {
				row[i] = sinktest.Null
			} else {
				row[i] = string(v)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read rows: %v", err)
	}
	_ = conn.Close(ctx)
	return out
}

// TestSinkPostgres runs the shared sink suite on every tested major.
func TestSinkPostgres(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			sinktest.Run(t, pgSinkHarness{major: major})
		})
	}
	t.Run("pg15/statements-only", func(t *testing.T) {
		// The same suite with COPY off and tiny batches: every change is a
		// statement and batches split transactions in many round trips.
		sinktest.Run(t, optsHarness{major: 15, opts: postgres.Options{CopyThreshold: -1, BatchSize: 3}})
	})
}

type optsHarness struct {
	major int
	opts  postgres.Options
}

func (h optsHarness) Target(t *testing.T) sinktest.Target {
	return &pgSinkTarget{pg: harness.Postgres(t, h.major), opts: h.opts}
}

// pgTarget is a fresh PostgreSQL target with an open, set-up sink.
func pgTarget(t *testing.T, major int, opts postgres.Options) (*harness.PG, *postgres.Sink) {
	t.Helper()
	tg := &pgSinkTarget{pg: harness.Postgres(t, major), opts: opts}
	s := tg.open(t)
	if _, err := s.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return tg.pg, s
}

func pgApply(t *testing.T, s sink.Sink, at source.LSN, changes ...*sink.Change) error {
	t.Helper()
	ctx := t.Context()
	tx, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		if err := tx.Apply(ctx, ch); err != nil {
			_ = tx.Rollback(ctx)
			return err
		}
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: sinktest.Slot, LSN: at}); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return nil
}

func mustApply(t *testing.T, s sink.Sink, at source.LSN, changes ...*sink.Change) {
	t.Helper()
	if err := pgApply(t, s, at, changes...); err != nil {
		t.Fatalf("apply at %s: %v", at, err)
	}
}

func ensure(t *testing.T, s sink.Sink, tables ...*schema.Table) {
	t.Helper()
	for _, tb := range tables {
		if err := s.EnsureTable(t.Context(), tb, nil); err != nil {
			t.Fatalf("EnsureTable %s: %v", tb.QualifiedName(), err)
		}
	}
}

func wantQuery(t *testing.T, pg *harness.PG, want, sql string, args ...any) {
	t.Helper()
	if got := pg.QueryString(t, sql, args...); got != want {
		t.Fatalf("%s: got %q, want %q", sql, got, want)
	}
}

// TestSinkPostgresReplicaRole: the sink's session is a replica session, so a
// user trigger on the target does not fire and foreign keys are not checked
// (the source already did both).
func TestSinkPostgresReplicaRole(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	parent := sinktest.ItemsTable("public", "parent")
	child := sinktest.ItemsTable("public", "child")
	ensure(t, s, parent, child)
	pg.Exec(t, `CREATE TABLE public.trigger_log (msg text);
		CREATE FUNCTION public.log_it() RETURNS trigger LANGUAGE plpgsql AS
			$$BEGIN INSERT INTO public.trigger_log VALUES (TG_OP || ' ' || NEW.id); RETURN NEW; END$$;
		CREATE TRIGGER t BEFORE INSERT OR UPDATE ON public.parent FOR EACH ROW EXECUTE FUNCTION public.log_it();
		ALTER TABLE public.child ADD CONSTRAINT child_parent_fk FOREIGN KEY (id) REFERENCES public.parent (id)`)
	mustApply(t, s, 100,
		// The child row arrives before its parent (FK not checked) …
		sinktest.Ins(child, 1, sinktest.Row(sinktest.T("5"), sinktest.N(), sinktest.N())),
		sinktest.Ins(parent, 2, sinktest.Row(sinktest.T("1"), sinktest.T("p"), sinktest.N())),
		sinktest.Upd(parent, 3, sinktest.Row(sinktest.T("1"), sinktest.T("q"), sinktest.N())),
	)
	// … and the trigger did not fire for the sink's changes.
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.trigger_log")
	// The trigger itself works for ordinary sessions.
	pg.Exec(t, "INSERT INTO public.parent VALUES (2, 'direct', NULL)")
	wantQuery(t, pg, "1", "SELECT count(*) FROM public.trigger_log")
	wantQuery(t, pg, "1", "SELECT count(*) FROM public.child WHERE id = 5")
}

// TestSinkPostgresSessionSettings checks the settings of the sink's session as
// seen inside it, by an ENABLE ALWAYS trigger (which fires in replica sessions).
func TestSinkPostgresSessionSettings(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "settings")
	ensure(t, s, tb)
	pg.Exec(t, `CREATE TABLE public.seen (role text, path text, sync text);
		CREATE FUNCTION public.record_settings() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN
			INSERT INTO public.seen VALUES (current_setting('session_replication_role'),
				current_setting('search_path'), current_setting('synchronous_commit'));
			RETURN NEW; END$$;
		CREATE TRIGGER rec BEFORE INSERT ON public.settings FOR EACH ROW EXECUTE FUNCTION public.record_settings();
		ALTER TABLE public.settings ENABLE ALWAYS TRIGGER rec`)
	mustApply(t, s, 10, sinktest.Ins(tb, 1, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N())))
	wantQuery(t, pg, "replica|pg_catalog, pg_temp|on", "SELECT role || '|' || path || '|' || sync FROM public.seen")
}

// TestSinkPostgresNoReplicaRolePermission: a role that may not set
// session_replication_role gets a one-line error saying what to grant; after
// the grant (PostgreSQL 15+) it works.
func TestSinkPostgresNoReplicaRolePermission(t *testing.T) {
	pg := harness.Postgres(t, 15)
	pg.Exec(t, `CREATE ROLE sink_plain LOGIN PASSWORD 'plain-pw'`)
	t.Cleanup(func() { pg.Exec(t, "DROP OWNED BY sink_plain; DROP ROLE sink_plain") })
	pg.Exec(t, fmt.Sprintf(`GRANT CREATE ON DATABASE %s TO sink_plain`, pgx.Identifier{pg.DB}.Sanitize()))
	u, err := url.Parse(pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("sink_plain", "plain-pw")
	_, err = postgres.New(t.Context(), u.String(), postgres.Options{})
	if err == nil {
		t.Fatal("a role without permission to set session_replication_role connected")
	}
	for _, want := range []string{"session_replication_role", `GRANT SET ON PARAMETER session_replication_role TO "sink_plain"`, "superuser"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "plain-pw") {
		t.Fatalf("error is not one line or shows the password: %q", err)
	}
	pg.Exec(t, `GRANT SET ON PARAMETER session_replication_role TO "sink_plain"`)
	s, err := postgres.New(t.Context(), u.String(), postgres.Options{})
	if err != nil {
		t.Fatalf("after GRANT SET: %v", err)
	}
	defer s.Close(context.Background())
	if _, err := s.Setup(t.Context(), "plain"); err != nil {
		t.Fatalf("Setup as a plain role with CREATE on the database: %v", err)
	}
}

// TestSinkPostgresCopyPath: long insert runs go through COPY, short ones and
// runs with binary values through statements; both keep their order with the
// statements around them.
func TestSinkPostgresCopyPath(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "copies")
	ensure(t, s, tb)
	var chs []*sink.Change
	for i := range 63 {
		chs = append(chs, sinktest.Ins(tb, source.LSN(i+1), sinktest.Row(sinktest.T(fmt.Sprint(i)), sinktest.T("short"), sinktest.N())))
	}
	before := s.Stats()
	mustApply(t, s, 100, chs...)
	if st := s.Stats(); st.CopyRows != before.CopyRows {
		t.Fatalf("a run of 63 inserts went through COPY: %+v", st)
	}
	chs = chs[:0]
	for i := range 500 {
		chs = append(chs, sinktest.Ins(tb, source.LSN(1000+i), sinktest.Row(sinktest.T(fmt.Sprint(1000+i)), sinktest.T("long\trun"), sinktest.N())))
	}
	// An update of a row inserted by the run, right after it.
	chs = append(chs, sinktest.Upd(tb, 2000, sinktest.Row(sinktest.T("1499"), sinktest.T("updated"), sinktest.N())))
	before = s.Stats()
	mustApply(t, s, 3000, chs...)
	st := s.Stats()
	if st.CopyRows-before.CopyRows != 500 || st.CopyRuns-before.CopyRuns != 1 {
		t.Fatalf("a run of 500 inserts: %d rows in %d COPYs, want 500 in 1 (%+v)", st.CopyRows-before.CopyRows, st.CopyRuns-before.CopyRuns, st)
	}
	wantQuery(t, pg, "563", "SELECT count(*) FROM public.copies")
	wantQuery(t, pg, "updated", "SELECT name FROM public.copies WHERE id = 1499")
	wantQuery(t, pg, "long\trun", "SELECT name FROM public.copies WHERE id = 1000")

	// Binary values pass through as binary parameters for built-in types.
	be := func(v int32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
	bt := &schema.Table{RelationID: 20000, Schema: "public", Name: "bin", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{
			{Name: "id", TypeOID: 23, TypeMod: -1, TypeName: "integer", Key: true, NotNull: true, Attnum: 1},
			{Name: "v", TypeOID: 25, TypeMod: -1, TypeName: "text", Attnum: 2},
		}}
	ensure(t, s, bt)
	bin := func(b []byte) source.Value { return source.Value{Kind: source.ValueBinary, Data: b} }
	var bchs []*sink.Change
	for i := range 100 {
		bchs = append(bchs, sinktest.Ins(bt, source.LSN(5000+i), sinktest.Row(bin(be(int32(i))), sinktest.T("b"))))
	}
	bchs = append(bchs, sinktest.Upd(bt, 6000, sinktest.Row(bin(be(7)), bin([]byte("binary text")))))
	mustApply(t, s, 7000, bchs...)
	wantQuery(t, pg, "100", "SELECT count(*) FROM public.bin")
	wantQuery(t, pg, "binary text", "SELECT v FROM public.bin WHERE id = 7")
}

// TestSinkPostgresFullIdentityTypes: REPLICA IDENTITY FULL rows are matched
// NULL-safely by all old values, including types without an equality operator
// (json, point), duplicates touch one row.
func TestSinkPostgresFullIdentityTypes(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := &schema.Table{RelationID: 20001, Schema: "public", Name: "full_types", ReplicaIdentity: schema.IdentityFull,
		Columns: []schema.Column{
			{Name: "j", TypeOID: 114, TypeMod: -1, TypeName: "json", Attnum: 1},
			{Name: "p", TypeOID: 600, TypeMod: -1, TypeName: "point", Attnum: 2},
			{Name: "jb", TypeOID: 3802, TypeMod: -1, TypeName: "jsonb", Attnum: 3},
			{Name: "n", TypeOID: 1700, TypeMod: -1, TypeName: "numeric", Attnum: 4},
			{Name: "ts", TypeOID: 1184, TypeMod: -1, TypeName: "timestamp with time zone", Attnum: 5},
			{Name: "arr", TypeOID: 199, TypeMod: -1, TypeName: "json[]", Attnum: 6},
		}}
	ensure(t, s, tb)
	T, N := sinktest.T, sinktest.N
	row := func(j, p string) source.Tuple {
		return sinktest.Row(T(j), T(p), T(`{"b": 2, "a": 1}`), T("1.50"), T("2024-01-02 03:04:05.123456+00"), T(`{"{\"x\": 1}"}`))
	}
	mustApply(t, s, 10,
		sinktest.Ins(tb, 1, row(`{"k":  "v"}`, "(1.5,2)")),
		sinktest.Ins(tb, 2, row(`{"k":  "v"}`, "(1.5,2)")),
		sinktest.Ins(tb, 3, sinktest.Row(N(), N(), N(), N(), N(), N())),
	)
	mustApply(t, s, 20,
		sinktest.UpdOld(tb, 11, source.OldFull, row(`{"k":  "v"}`, "(1.5,2)"), row(`{"k":  "changed"}`, "(1.5,2)")),
		sinktest.UpdOld(tb, 12, source.OldFull, sinktest.Row(N(), N(), N(), N(), N(), N()), sinktest.Row(N(), T("(0,0)"), N(), N(), N(), N())),
	)
	wantQuery(t, pg, "1", `SELECT count(*) FROM public.full_types WHERE j::text = '{"k":  "changed"}'`)
	wantQuery(t, pg, "1", `SELECT count(*) FROM public.full_types WHERE j::text = '{"k":  "v"}'`)
	wantQuery(t, pg, "1", `SELECT count(*) FROM public.full_types WHERE p ~= '(0,0)' AND j IS NULL`)
	mustApply(t, s, 30, sinktest.Del(tb, 21, source.OldFull, row(`{"k":  "v"}`, "(1.5,2)")))
	wantQuery(t, pg, "2", `SELECT count(*) FROM public.full_types`)
	err := pgApply(t, s, 40, sinktest.Del(tb, 31, source.OldFull, row(`{"k":  "v"}`, "(1.5,2)")))
	if !errors.Is(err, sink.ErrRowNotFound) || !strings.Contains(err.Error(), `"public"."full_types"`) {
		t.Fatalf("deleting a missing row: %v", err)
	}
}

// TestSinkPostgresErrorFormat pins the error text of a failing change.
func TestSinkPostgresErrorFormat(t *testing.T) {
	_, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "t")
	ensure(t, s, tb)
	mustApply(t, s, 10, sinktest.Ins(tb, 1, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N())))
	lsn, _ := parseLSN("0/16B3748")
	err := pgApply(t, s, lsn+10, sinktest.Ins(tb, lsn, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N())))
	want := `sink/postgres: insert into "public"."t" at source LSN 0/16B3748: duplicate key value violates unique constraint "t_pkey" (SQLSTATE 23505): Key (id)=(1) already exists.`
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
	err = pgApply(t, s, lsn+10, sinktest.Upd(tb, lsn+1, sinktest.Row(sinktest.T("99"), sinktest.T("x"), sinktest.N())))
	want = `sink/postgres: update "public"."t" key (id)=(99) at source LSN 0/16B3749: row not found on the target (the target has diverged from the source: rows changed there, or the publication changed since the copy — a row filter, or a partition attached or detached under publish_via_partition_root; run pgrelay verify, and copy again with PGRELAY_SNAPSHOT=always)`
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
}

func parseLSN(s string) (source.LSN, error) {
	var hi, lo uint32
	if _, err := fmt.Sscanf(s, "%X/%X", &hi, &lo); err != nil {
		return 0, err
	}
	return source.LSN(uint64(hi)<<32 | uint64(lo)), nil
}

// TestSinkPostgresTruncateRestartIdentity: RESTART IDENTITY resets the target's
// sequences.
func TestSinkPostgresTruncateRestartIdentity(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "ident")
	ensure(t, s, tb)
	pg.Exec(t, "ALTER TABLE public.ident ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY")
	pg.Exec(t, "SELECT nextval(pg_get_serial_sequence('public.ident', 'id')) FROM generate_series(1, 5)")
	mustApply(t, s, 10, sinktest.Ins(tb, 1, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N())))
	tx, err := s.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Truncate(t.Context(), []*schema.Table{tb}, source.TruncateRestartIdentity); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context(), sink.Progress{Slot: sinktest.Slot, LSN: 20}); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.ident")
	wantQuery(t, pg, "1", "SELECT nextval(pg_get_serial_sequence('public.ident', 'id'))")
}

// TestSinkPostgresTruncateOwnRows: a streamed TRUNCATE empties the tables
// it lists and no more, as PostgreSQL's own apply does: a target-only table
// inheriting from one keeps its rows; a partitioned target table loses the
// rows of its partitions.
func TestSinkPostgresTruncateOwnRows(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "tr_parent")
	ensure(t, s, tb)
	mustApply(t, s, 10, sinktest.Ins(tb, 1, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N())))
	pg.Exec(t, `CREATE TABLE public.tr_archive () INHERITS (public.tr_parent);
		INSERT INTO public.tr_archive (id) SELECT i FROM generate_series(100, 109) i;
		CREATE TABLE public.tr_part (id int, v text) PARTITION BY RANGE (id);
		CREATE TABLE public.tr_part_1 PARTITION OF public.tr_part FOR VALUES FROM (0) TO (1000);
		INSERT INTO public.tr_part SELECT i, 'p' FROM generate_series(1, 10) i`)
	part := &schema.Table{Schema: "public", Name: "tr_part", Columns: []schema.Column{
		{Name: "id", TypeOID: 23, TypeName: "integer"}, {Name: "v", TypeOID: 25, TypeName: "text"}}}
	tx, err := s.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Truncate(t.Context(), []*schema.Table{tb, part}, 0); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context(), sink.Progress{Slot: sinktest.Slot, LSN: 20}); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, pg, "0 10 0", "SELECT (SELECT count(*) FROM ONLY public.tr_parent) || ' ' || (SELECT count(*) FROM public.tr_archive) || ' ' || (SELECT count(*) FROM public.tr_part)")
}

// TestSinkPostgresTwoPhaseResume covers the crash windows of two-phase
// transactions by finishing prepared transactions behind the sink's back.
func TestSinkPostgresTwoPhaseResume(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	if !s.CanPrepare() {
		t.Fatal("harness target has max_prepared_transactions = 0")
	}
	tb := sinktest.ItemsTable("public", "tpr")
	ensure(t, s, tb)
	prep := func(gid string, id string, at source.LSN) {
		t.Helper()
		tx, err := s.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Apply(t.Context(), sinktest.Ins(tb, at-1, sinktest.Row(sinktest.T(id), sinktest.N(), sinktest.N()))); err != nil {
			t.Fatal(err)
		}
		if err := s.Prepare(t.Context(), tx, gid, sink.Progress{Slot: sinktest.Slot, LSN: at}); err != nil {
			t.Fatal(err)
		}
	}
	// Committed before a crash, bookkeeping lost: CommitPrepared finishes it.
	prep("pgrelay_sinktest_1", "1", 100)
	if found, err := s.PreparedRow(t.Context(), "pgrelay_sinktest_1"); err != nil || found {
		t.Fatalf("PreparedRow of a still-prepared gid: %v, %v (want false: the row is not committed)", found, err)
	}
	pg.Exec(t, "COMMIT PREPARED 'pgrelay_sinktest_1'")
	if found, err := s.PreparedRow(t.Context(), "pgrelay_sinktest_1"); err != nil || !found {
		t.Fatalf("PreparedRow after COMMIT PREPARED: %v, %v", found, err)
	}
	if err := s.CommitPrepared(t.Context(), "pgrelay_sinktest_1", sink.Progress{Slot: sinktest.Slot, LSN: 110}); err != nil {
		t.Fatalf("CommitPrepared of an already committed gid: %v", err)
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM pgrelay.prepared")
	wantQuery(t, pg, "0/6E", "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1", sinktest.Slot)
	// Committed behind our back, then the source rolls it back: divergence.
	prep("pgrelay_sinktest_2", "2", 200)
	pg.Exec(t, "COMMIT PREPARED 'pgrelay_sinktest_2'")
	err := s.RollbackPrepared(t.Context(), "pgrelay_sinktest_2", sink.Progress{Slot: sinktest.Slot, LSN: 210})
	if err == nil || !strings.Contains(err.Error(), "already committed") {
		t.Fatalf("RollbackPrepared of a committed gid: %v", err)
	}
	// Rolled back before a crash: RollbackPrepared only records progress.
	prep("pgrelay_sinktest_3", "3", 300)
	pg.Exec(t, "ROLLBACK PREPARED 'pgrelay_sinktest_3'")
	if err := s.RollbackPrepared(t.Context(), "pgrelay_sinktest_3", sink.Progress{Slot: sinktest.Slot, LSN: 310}); err != nil {
		t.Fatalf("RollbackPrepared of an already rolled back gid: %v", err)
	}
	wantQuery(t, pg, "0/136", "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1", sinktest.Slot)
	// Rolled back, but the source commits it: the target is missing data.
	prep("pgrelay_sinktest_4", "4", 400)
	pg.Exec(t, "ROLLBACK PREPARED 'pgrelay_sinktest_4'")
	err = s.CommitPrepared(t.Context(), "pgrelay_sinktest_4", sink.Progress{Slot: sinktest.Slot, LSN: 410})
	if err == nil || !strings.Contains(err.Error(), "rolled back or never prepared") {
		t.Fatalf("CommitPrepared of a rolled back gid: %v", err)
	}
	wantQuery(t, pg, "1,2", "SELECT string_agg(id::text, ',' ORDER BY id) FROM public.tpr")
	// PreparedGIDs only lists this database's transactions.
	other := harness.Postgres(t, 15)
	other.Exec(t, "CREATE TABLE x (i int); BEGIN; INSERT INTO x VALUES (1); PREPARE TRANSACTION 'pgrelay_sinktest_other'")
	t.Cleanup(func() { other.Exec(t, "ROLLBACK PREPARED 'pgrelay_sinktest_other'") })
	if gids, err := s.PreparedGIDs(t.Context(), "pgrelay_"); err != nil || len(gids) != 0 {
		t.Fatalf("PreparedGIDs: %q, %v; want none", gids, err)
	}
}

// TestSinkPostgresReconnect: a session killed in the middle of a transaction
// gives a retryable error; the next Begin reconnects and the retry succeeds.
func TestSinkPostgresReconnect(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "reconn")
	ensure(t, s, tb)
	mustApply(t, s, 10, sinktest.Ins(tb, 1, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N())))
	ctx := t.Context()
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, sinktest.Upd(tb, 11, sinktest.Row(sinktest.T("1"), sinktest.T("lost"), sinktest.N()))); err != nil {
		t.Fatal(err)
	}
	pg.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
	err = tx.Commit(ctx, sink.Progress{Slot: sinktest.Slot, LSN: 20})
	if !errors.Is(err, sink.ErrRetryable) {
		t.Fatalf("commit on a killed session: %v, want a retryable error", err)
	}
	_ = tx.Rollback(ctx)
	mustApply(t, s, 20, sinktest.Upd(tb, 11, sinktest.Row(sinktest.T("1"), sinktest.T("retried"), sinktest.N())))
	wantQuery(t, pg, "retried", "SELECT name FROM public.reconn WHERE id = 1")
	wantQuery(t, pg, "0/14", "SELECT lsn::text FROM pgrelay.progress")
}

// TestSinkPostgresMigrations: concurrent Setups apply each version once; a
// target newer than the binary is refused.
func TestSinkPostgresMigrations(t *testing.T) {
	pg := harness.Postgres(t, 15)
	tg := &pgSinkTarget{pg: pg}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		s := tg.open(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Setup(t.Context(), fmt.Sprintf("slot%d", i))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Setup %d: %v", i, err)
		}
	}
	wantQuery(t, pg, "1,2,3,4,5,6,7,8", "SELECT string_agg(version::text, ',' ORDER BY version) FROM pgrelay.schema_migrations")
	wantQuery(t, pg, "1", "SELECT count(*) FROM pg_attribute WHERE attrelid = 'pgrelay.table_state'::regclass AND attname = 'sync_snapshot'")
	wantQuery(t, pg, "pgrelay.cutover,pgrelay.prepared,pgrelay.prepared_fill,pgrelay.progress,pgrelay.relation,pgrelay.schema_migrations,pgrelay.seed,pgrelay.table_state",
		"SELECT string_agg(oid::regclass::text, ',' ORDER BY oid::regclass::text) FROM pg_class WHERE relnamespace = 'pgrelay'::regnamespace AND relkind = 'r'")
	pg.Exec(t, "INSERT INTO pgrelay.schema_migrations (version, name) VALUES (999, 'future')")
	s := tg.open(t)
	_, err := s.Setup(t.Context(), "x")
	if err == nil || !strings.Contains(err.Error(), "upgrade pgrelay") {
		t.Fatalf("Setup on a newer target: %v", err)
	}
}

// TestSinkPostgresSeedStore covers the snapshot bookkeeping and teardown.
func TestSinkPostgresSeedStore(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	ctx := t.Context()
	var store sink.SeedStore = s
	if _, found, err := store.Seed(ctx, "a"); err != nil || found {
		t.Fatalf("Seed before any: %v, %v", found, err)
	}
	if err := store.StartSeed(ctx, "a", 0x1000); err != nil {
		t.Fatal(err)
	}
	for _, st := range []sink.TableState{
		{Schema: "public", Name: "b", State: sink.TablePending},
		{Schema: "public", Name: "a", State: sink.TableCopying},
		{Schema: "public", Name: "a", State: sink.TableCopied, Rows: 10, Bytes: 100},
		// A redone copy's snapshot, kept by the later states that do not name one.
		{Schema: "public", Name: "b", State: sink.TablePending, SyncLSN: 0x1800, SyncSnapshot: "700:705:702"},
		{Schema: "public", Name: "b", State: sink.TableCopying},
	} {
		if err := store.SetTableState(ctx, "a", st); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.SetTableState(ctx, "a", sink.TableState{Schema: "public", Name: "c", State: "weird"}); err == nil {
		t.Fatal("unknown state accepted")
	}
	states, err := store.TableStates(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0].Name != "a" || states[0].State != sink.TableCopied || states[0].Rows != 10 || states[0].Bytes != 100 || states[1].State != sink.TableCopying ||
		states[0].SyncLSN != 0 || states[0].SyncSnapshot != "" || states[1].SyncLSN != 0x1800 || states[1].SyncSnapshot != "700:705:702" {
		t.Fatalf("states: %+v", states)
	}
	// Many at once, as the copy marks every table pending: the same rules,
	// and a table listed twice gets its last state.
	if err := s.SetTableStates(ctx, "a", []sink.TableState{
		{Schema: "public", Name: "b", State: sink.TablePending},
		{Schema: "public", Name: "c", State: sink.TablePending},
		{Schema: "public", Name: "c", State: sink.TableCopied, Rows: 7, Bytes: 70, PublishedAs: "public.c_root"},
		{Schema: "s 1", Name: "D", State: sink.TablePending, SyncLSN: 0x1900, SyncSnapshot: "710:712:"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTableStates(ctx, "a", []sink.TableState{{Schema: "public", Name: "e", State: sink.TablePending}, {Schema: "public", Name: "f", State: "weird"}}); err == nil {
		t.Fatal("unknown state accepted in a batch")
	}
	wantQuery(t, pg, "public.a copied 10 - - -|public.b pending 0 0/1800 700:705:702 -|public.c copied 7 - - public.c_root|s 1.D pending 0 0/1900 710:712: -",
		`SELECT string_agg(concat_ws(' ', schema || '.' || name, state, rows, coalesce(sync_lsn::text, '-'), coalesce(sync_snapshot, '-'), coalesce(published_as, '-')), '|' ORDER BY schema, name)
			FROM pgrelay.table_state WHERE slot = 'a'`)
	if err := store.SetTableState(ctx, "a", sink.TableState{Schema: "public", Name: "a", State: sink.TableCopied, Rows: 10, Bytes: 100}); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkSeeded(ctx, "a", 0x2000); err == nil {
		t.Fatal("MarkSeeded at another consistent point accepted")
	}
	if err := store.MarkSeeded(ctx, "a", 0x1000); err != nil {
		t.Fatal(err)
	}
	seed, found, err := store.Seed(ctx, "a")
	if err != nil || !found || !seed.SnapshotDone || seed.ConsistentPoint != 0x1000 || seed.DoneAt.IsZero() {
		t.Fatalf("Seed: %+v %v %v", seed, found, err)
	}
	if p, err := s.Progress(ctx, "a"); err != nil || p.LSN != 0x1000 {
		t.Fatalf("progress after MarkSeeded: %+v %v", p, err)
	}
	// A new seed forgets the table states.
	if err := store.StartSeed(ctx, "a", 0x3000); err != nil {
		t.Fatal(err)
	}
	if states, _ := store.TableStates(ctx, "a"); len(states) != 0 {
		t.Fatalf("states after a new seed: %+v", states)
	}
	if err := store.StartSeed(ctx, "b", 0x1000); err != nil {
		t.Fatal(err)
	}
	if err := s.Teardown(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, pg, "b", "SELECT string_agg(slot, ',') FROM pgrelay.seed")
	if err := s.Teardown(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, pg, "f", "SELECT to_regnamespace('pgrelay') IS NOT NULL")
	if err := s.Teardown(ctx, "b"); err != nil {
		t.Fatalf("Teardown twice: %v", err)
	}
}

// TestSinkPostgresEmpty empties a table an unfinished copy loaded in part,
// before it is loaded again.
func TestSinkPostgresEmpty(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "clean")
	ensure(t, s, tb)
	if _, err := s.CopyFrom(t.Context(), tb, strings.NewReader("1\tpartial\t\\N\n2\tpartial\t\\N\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.Empty(t.Context(), tb); err != nil {
		t.Fatalf("Empty: %v", err)
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.clean")
	if n, err := s.CopyFrom(t.Context(), tb, strings.NewReader("1\tfull\t\\N\n2\tfull\t\\N\n3\tfull\t\\N\n")); err != nil || n != 3 {
		t.Fatalf("CopyFrom: %d, %v", n, err)
	}
	wantQuery(t, pg, "3 full", "SELECT count(*) || ' ' || min(name) FROM public.clean")

	// A table without rows keeps its file: nothing to truncate.
	filenode := func() string { return pg.QueryString(t, "SELECT pg_relation_filenode('public.clean')") }
	wantQuery(t, pg, "3", "SELECT count(*) FROM public.clean")
	before := filenode()
	if err := s.Empty(t.Context(), tb); err != nil {
		t.Fatalf("Empty: %v", err)
	}
	if after := filenode(); after == before {
		t.Fatalf("a table of 3 rows kept its file %s: not truncated", after)
	}
	before = filenode()
	if err := s.Empty(t.Context(), tb); err != nil {
		t.Fatalf("Empty of an empty table: %v", err)
	}
	if after := filenode(); after != before {
		t.Errorf("an empty table was truncated (file %s, then %s)", before, after)
	}

	// A load still running (of a pgrelay killed meanwhile) is waited for:
	// its rows, committed after Empty looked, are not left behind.
	ctx := t.Context()
	other := pg.Conn(t)
	if _, err := other.Exec(ctx, "BEGIN; INSERT INTO public.clean VALUES (9, 'late', NULL)"); err != nil {
		t.Fatal(err)
	}
	emptied := make(chan error, 1)
	go func() { emptied <- s.Empty(ctx, tb) }()
	harness.Eventually(t, 30*time.Second, "Empty to wait for the open load's lock", func() error {
		select {
		case err := <-emptied:
			return harness.Abort(fmt.Errorf("Empty returned (%v) while a load into the table was open", err))
		default:
		}
		if n := pg.QueryString(t, "SELECT count(*) FROM pg_catalog.pg_locks WHERE relation = 'public.clean'::regclass AND NOT granted"); n == "0" {
			return errors.New("nothing waits for a lock on public.clean")
		}
		return nil
	})
	if _, err := other.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-emptied; err != nil {
		t.Fatalf("Empty: %v", err)
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.clean")

	// Many at once: those with rows are truncated, the empty ones keep
	// their files; a missing table is named.
	var tables []*schema.Table
	for i := range 150 {
		tb := sinktest.ItemsTable("public", fmt.Sprintf("many_%d", i))
		ensure(t, s, tb)
		tables = append(tables, tb)
	}
	pg.Exec(t, "INSERT INTO public.many_3 VALUES (1, 'x', NULL); INSERT INTO public.many_120 VALUES (1, 'x', NULL)")
	files := func() string {
		return pg.QueryString(t, "SELECT string_agg(pg_relation_filenode(c.oid)::text, ',' ORDER BY c.relname) FROM pg_class c WHERE c.relname ~ '^many_[0-9]+$'")
	}
	before = files()
	if err := s.EmptyTables(ctx, tables); err != nil {
		t.Fatalf("EmptyTables: %v", err)
	}
	wantQuery(t, pg, "0", "SELECT (SELECT count(*) FROM public.many_3) + (SELECT count(*) FROM public.many_120)")
	changed := 0
	for i, f := range strings.Split(files(), ",") {
		if f != strings.Split(before, ",")[i] {
			changed++
		}
	}
	if changed != 2 {
		t.Errorf("%d tables got a new file, want the 2 that had rows", changed)
	}
	gone := sinktest.ItemsTable("public", "many_gone")
	if err := s.EmptyTables(ctx, append(tables[:5:5], gone)); err == nil || !strings.Contains(err.Error(), `"public"."many_gone"`) {
		t.Errorf("EmptyTables with a missing table: %v", err)
	}
}

// TestSinkPostgresEnsureTables: EnsureTables leaves the target as
// EnsureTable on each table would: plainly new tables are created on the
// bulk sessions, with their stored definitions; a table with an enum and one
// whose name holds a stored definition (to be altered) go through
// EnsureTable; a later EnsureTable of any of them finds nothing to do.
func TestSinkPostgresEnsureTables(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	ctx := t.Context()
	old := sinktest.ItemsTable("public", "ens_old")
	ensure(t, s, old)
	var tables []*schema.Table
	for i := range 8 {
		tb := sinktest.ItemsTable("ens s", fmt.Sprintf("plain %d", i))
		tb.Columns[1].Default, tb.Columns[1].NotNull = "'x'::text", true
		tables = append(tables, tb)
	}
	mood := &schema.Type{OID: 70100, Namespace: "public", Name: "ens_mood", Category: schema.CategoryEnum, EnumLabels: []string{"sad", "ok"}}
	withEnum := sinktest.ItemsTable("public", "ens_enum")
	withEnum.Columns = append(withEnum.Columns, schema.Column{Name: "m", TypeOID: 70100, TypeMod: -1, TypeName: "public.ens_mood", Type: mood, Attnum: 4})
	withEnum.Types = []*schema.Type{mood}
	altered := sinktest.ItemsTable("public", "ens_old")
	altered.Columns = append(altered.Columns, schema.Column{Name: "added", TypeOID: 23, TypeMod: -1, TypeName: "integer", Attnum: 4})
	tables = append(tables, withEnum, altered)
	if err := s.EnsureTables(ctx, tables); err != nil {
		t.Fatalf("EnsureTables: %v", err)
	}
	wantQuery(t, pg, "8 'x'::text", `SELECT count(*) || ' ' || min(pg_get_expr(d.adbin, d.adrelid)::text) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'name' AND a.attnotnull
		JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
		WHERE n.nspname = 'ens s' AND c.relname LIKE 'plain %'`)
	wantQuery(t, pg, "ens_mood added", `SELECT (SELECT atttypid::regtype::text FROM pg_attribute WHERE attrelid = 'public.ens_enum'::regclass AND attname = 'm') || ' ' ||
		(SELECT attname FROM pg_attribute WHERE attrelid = 'public.ens_old'::regclass AND attnum = 4)`)
	wantQuery(t, pg, "10 10", `SELECT count(*) || ' ' || count(*) FILTER (WHERE slot = $1 AND relation_oid IS NOT NULL) FROM pgrelay.relation`, sinktest.Slot)
	// The plain tables were created on the bulk sessions, which are kept:
	// besides the metadata and apply sessions, two more ended on a COMMIT.
	if got := pg.QueryString(t, `SELECT count(*) >= 3 FROM pg_catalog.pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND query = 'COMMIT'`); got != "t" {
		t.Errorf("fewer than 3 sessions ended on a COMMIT (%s), want the apply session and 2 bulk sessions", got)
	}
	stamp := pg.QueryString(t, "SELECT max(updated_at)::text FROM pgrelay.relation")
	for _, tb := range tables {
		if err := s.EnsureTable(ctx, tb, nil); err != nil {
			t.Fatalf("EnsureTable %s after EnsureTables: %v", tb.QualifiedName(), err)
		}
	}
	if got := pg.QueryString(t, "SELECT max(updated_at)::text FROM pgrelay.relation"); got != stamp {
		t.Errorf("EnsureTable after EnsureTables stored a definition again (%s, then %s): the tables were not left as EnsureTable leaves them", stamp, got)
	}
	if _, err := s.CopyFrom(ctx, tables[3], strings.NewReader("1\ty\t\\N\n")); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, pg, "1", `SELECT count(*) FROM "ens s"."plain 3"`)
}

// TestSinkPostgresBulkConnections: bulk loads reuse the connection of an
// earlier load that ended well (a snapshot of thousands of small tables
// opened one per table); one whose load failed is closed.
func TestSinkPostgresBulkConnections(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "bulk_conns")
	ensure(t, s, tb)
	// The sessions whose last statement was a COPY into the table, now idle.
	loaders := func() string {
		return pg.QueryString(t, `SELECT coalesce(string_agg(pid::text, ',' ORDER BY pid), '') FROM pg_catalog.pg_stat_activity
			WHERE datname = current_database() AND state = 'idle' AND query LIKE 'COPY %bulk_conns%'`)
	}
	var pids []string
	for i := range 4 {
		if _, err := s.CopyFrom(t.Context(), tb, strings.NewReader(fmt.Sprintf("%d\tx\t\\N\n", i+1))); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, loaders())
	}
	for _, p := range pids {
		if p == "" || strings.Contains(p, ",") || p != pids[0] {
			t.Fatalf("loading sessions after each of 4 loads: %q, want one and the same", pids)
		}
	}
	wantQuery(t, pg, "4", "SELECT count(*) FROM public.bulk_conns")
	// A failed load's connection is not kept.
	if _, err := s.CopyFrom(t.Context(), tb, strings.NewReader("not a number\tx\t\\N\n")); err == nil {
		t.Fatal("a bad row loaded")
	}
	if err := harness.Await(10*time.Second, 50*time.Millisecond, "the session of a failed load to end", func() error {
		if got := loaders(); got != "" {
			return fmt.Errorf("loading session %s", got)
		}
		return nil
	}); err != nil {
		t.Errorf("the session of a failed load is kept: %v", err)
	}
	if _, err := s.CopyFrom(t.Context(), tb, strings.NewReader("5\tx\t\\N\n")); err != nil {
		t.Fatal(err)
	}
	wantQuery(t, pg, "5", "SELECT count(*) FROM public.bulk_conns")

	// The primary key and secondary indexes are built on the pool's sessions
	// too (one each before, whose first catalog query took 5 ms).
	session := func(like string) string {
		return pg.QueryString(t, `SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_catalog.pg_stat_activity
			WHERE datname = current_database() AND state = 'idle' AND query LIKE $1`, like)
	}
	pool := loaders()
	if _, err := s.DropPrimaryKey(t.Context(), tb); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPrimaryKey(t.Context(), tb); err != nil {
		t.Fatal(err)
	}
	if got := session("%ALTER TABLE%bulk_conns%PRIMARY KEY%"); got != pool {
		t.Errorf("the key was added by session %q, the pool holds %q", got, pool)
	}
	if err := s.CreateIndexes(t.Context(), tb, []string{"CREATE INDEX bulk_conns_name ON public.bulk_conns (name)"}); err != nil {
		t.Fatal(err)
	}
	if got := session("CREATE INDEX%bulk_conns_name%"); got != pool {
		t.Errorf("the index was built by session %q, the pool holds %q", got, pool)
	}
	wantQuery(t, pg, "2", "SELECT count(*) FROM pg_catalog.pg_index WHERE indrelid = 'public.bulk_conns'::regclass")
}

// TestSinkPostgresPreconnect: the connections Preconnect opens ahead are
// the ones the metadata queries and the bulk loads then use: two loads at once
// after Preconnect(2) open no session more.
func TestSinkPostgresPreconnect(t *testing.T) {
	ctx := t.Context()
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "preconnected")
	ensure(t, s, tb)
	sessions := func() int {
		n, err := strconv.Atoi(pg.QueryString(t, `SELECT count(*) FROM pg_catalog.pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_catalog.pg_backend_pid()`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := sessions()
	s.Preconnect(ctx, 2)
	deadline := time.Now().Add(10 * time.Second)
	for sessions() != before+4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := sessions(); got != before+4 {
		t.Fatalf("%d sessions after Preconnect(2), %d before: want the metadata one, the lock's and two loaders", got, before)
	}
	if _, _, err := s.Seed(ctx, "preconnect_slot"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			_, errs[i] = s.CopyFrom(ctx, tb, strings.NewReader(fmt.Sprintf("%d\tx\t\\N\n", i+1)))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LockSlot(ctx, "preconnect_slot", func() { t.Error("LockSlot waited for a lock nobody holds") }); err != nil {
		t.Fatal(err)
	}
	if got := sessions(); got != before+4 {
		t.Errorf("%d sessions after a metadata query, a lock and two loads at once on the connections Preconnect(2) opened, %d before: want 4 more", got, before)
	}
	wantQuery(t, pg, "2", "SELECT count(*) FROM public.preconnected")
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSinkPostgresTakesBinary: the target takes COPY binary data only when
// every column is of exactly the source's type, of a type whose binary form
// is the same on both servers; CopyFromBinary then loads what a source's
// COPY (FORMAT binary) sends.
func TestSinkPostgresTakesBinary(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	ctx := t.Context()
	items := sinktest.ItemsTable("public", "bin_items")
	ensure(t, s, items)
	takes := func(tb *schema.Table, sourceMajor int) (bool, string) {
		t.Helper()
		ok, why, err := s.TakesBinary(ctx, tb, sourceMajor)
		if err != nil {
			t.Fatalf("TakesBinary %s: %v", tb.QualifiedName(), err)
		}
		if ok != (why == "") {
			t.Errorf("TakesBinary %s: ok %v, why %q", tb.QualifiedName(), ok, why)
		}
		return ok, why
	}
	if ok, why := takes(items, 15); !ok {
		t.Fatalf("a table pgrelay created: no binary: %s", why)
	}

	// Pre-created by a user: same names, other types.
	pg.Exec(t, "CREATE TABLE public.bin_other (id int4, name text, note varchar)")
	other := sinktest.ItemsTable("public", "bin_other")
	if ok, why := takes(other, 15); ok || !strings.Contains(why, `column "id" is of type bigint (OID 20) on the source, OID 23 on the target`) {
		t.Errorf("int4 target for an int8 source: ok %v, %q", ok, why)
	}
	pg.Exec(t, "ALTER TABLE public.bin_other ALTER id TYPE int8")
	if ok, why := takes(other, 15); ok || !strings.Contains(why, `column "note"`) {
		t.Errorf("varchar target for a text source: ok %v, %q", ok, why)
	}
	// A dropped column does not count; a missing one does.
	pg.Exec(t, "ALTER TABLE public.bin_other DROP note; ALTER TABLE public.bin_other ADD note text")
	if ok, why := takes(other, 15); !ok {
		t.Errorf("same types after a drop and add: %s", why)
	}
	pg.Exec(t, "ALTER TABLE public.bin_other RENAME note TO remark")
	if ok, why := takes(other, 15); ok || !strings.Contains(why, `no column "note"`) {
		t.Errorf("missing column: ok %v, %q", ok, why)
	}
	if ok, why := takes(sinktest.ItemsTable("public", "bin_missing"), 15); ok || !strings.Contains(why, "no target table") {
		t.Errorf("missing table: ok %v, %q", ok, why)
	}

	// Types off the list, and interval from a source that knows infinity into
	// this PostgreSQL 15 target.
	pg.Exec(t, "CREATE TABLE public.bin_reg (id int8, rel regclass); CREATE TABLE public.bin_span (id int8, span interval)")
	reg := &schema.Table{Schema: "public", Name: "bin_reg", Columns: []schema.Column{
		{Name: "id", TypeOID: 20, TypeName: "bigint"}, {Name: "rel", TypeOID: 2205, TypeName: "regclass"}}}
	if ok, why := takes(reg, 15); ok || !strings.Contains(why, `column "rel" is of type regclass`) {
		t.Errorf("regclass: ok %v, %q", ok, why)
	}
	span := &schema.Table{Schema: "public", Name: "bin_span", Columns: []schema.Column{
		{Name: "id", TypeOID: 20, TypeName: "bigint"}, {Name: "span", TypeOID: 1186, TypeName: "interval"}}}
	if ok, why := takes(span, 16); !ok {
		t.Errorf("interval from 16: %s", why)
	}
	if ok, why := takes(span, 17); ok || !strings.Contains(why, "PostgreSQL 17 source") {
		t.Errorf("interval from 17 into 15: ok %v, %q", ok, why)
	}

	// Many at once: the same answers as one at a time.
	batch := []*schema.Table{items, other, reg, span, sinktest.ItemsTable("public", "bin_missing"), items}
	oks, whys, err := s.TakesBinaryOf(ctx, batch, 17)
	if err != nil {
		t.Fatal(err)
	}
	for i, tb := range batch {
		ok, why := takes(tb, 17)
		if oks[i] != ok || whys[i] != why {
			t.Errorf("TakesBinaryOf %s: %v %q, TakesBinary %v %q", tb.QualifiedName(), oks[i], whys[i], ok, why)
		}
	}
	if !oks[0] || oks[1] || !oks[5] {
		t.Errorf("TakesBinaryOf: %v %q", oks, whys)
	}

	// CopyFromBinary loads a binary COPY made by the server itself.
	pg.Exec(t, "CREATE TABLE public.bin_src (id int8, name text, note text); INSERT INTO public.bin_src VALUES (1, 'a', NULL), (2, E'tab\\there', 'x')")
	var buf bytes.Buffer
	conn := pg.Conn(t)
	if _, err := conn.PgConn().CopyTo(ctx, &buf, "COPY public.bin_src TO STDOUT (FORMAT binary)"); err != nil {
		t.Fatal(err)
	}
	n, err := s.CopyFromBinary(ctx, items, &buf)
	if err != nil || n != 2 {
		t.Fatalf("CopyFromBinary: %d, %v", n, err)
	}
	wantQuery(t, pg, "(1,a,) (2,\"tab\there\",x)", "SELECT string_agg(i::text, ' ' ORDER BY id) FROM public.bin_items i")
	// Text is not binary: a clear error naming the table.
	if _, err := s.CopyFromBinary(ctx, items, strings.NewReader("3\tc\t\\N\n")); err == nil || !strings.Contains(err.Error(), `"public"."bin_items"`) {
		t.Errorf("CopyFromBinary of text: %v", err)
	}
}

// TestSinkPostgresBinaryBlankPadded: char(n) values reach the target without
// their trailing blanks, which the target pads back, so the stored values are
// the source's byte for byte and much less is sent. A bare bpchar keeps its
// blanks, and so does a char(n) column whose target column is a bare bpchar.
func TestSinkPostgresBinaryBlankPadded(t *testing.T) {
	ctx := t.Context()
	pg := harness.Postgres(t, 15)
	sent := countingProxy(t, pg)
	u, err := url.Parse(pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.Host = sent.addr
	s, err := postgres.New(ctx, u.String(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })

	pg.Exec(t, `CREATE TABLE public.chars_src (id int8, c char(200), mb char(5), b bpchar, v varchar(8), d char(4));
		INSERT INTO public.chars_src SELECT i, CASE i % 5 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN '  a  ' ELSE 'x' || i END,
			CASE i % 3 WHEN 0 THEN 'é' WHEN 1 THEN 'éé ü' ELSE NULL END, 'b' || repeat(' ', i % 4), 'v  ', 'd'
			FROM generate_series(1, 2000) i;
		CREATE TABLE public.chars_dst (id int8, c char(200), mb char(5), b bpchar, v varchar(8), d bpchar)`)
	tb := &schema.Table{Schema: "public", Name: "chars_dst", Columns: []schema.Column{
		{Name: "id", TypeOID: 20, TypeName: "bigint"}, {Name: "c", TypeOID: 1042, TypeName: "character(200)"},
		{Name: "mb", TypeOID: 1042, TypeName: "character(5)"}, {Name: "b", TypeOID: 1042, TypeName: "bpchar"},
		{Name: "v", TypeOID: 1043, TypeName: "character varying(8)"}, {Name: "d", TypeOID: 1042, TypeName: "character(4)"}}}
	if ok, why, err := s.TakesBinary(ctx, tb, 15); err != nil || !ok {
		t.Fatalf("TakesBinary: %v %s %v", ok, why, err)
	}
	var buf bytes.Buffer
	if _, err := pg.Conn(t).PgConn().CopyTo(ctx, &buf, "COPY public.chars_src TO STDOUT (FORMAT binary)"); err != nil {
		t.Fatal(err)
	}
	size := buf.Len()
	before := sent.n.Load()
	if n, err := s.CopyFromBinary(ctx, tb, &buf); err != nil || n != 2000 {
		t.Fatalf("CopyFromBinary: %d, %v", n, err)
	}
	// The blanks of c and mb stay behind (a bpchar's text form has none);
	// b's and d's go, and a few kB of protocol.
	var blanks int64
	if err := pg.Conn(t).QueryRow(ctx, "SELECT sum(octet_length(c) - octet_length(c::text)) + sum(octet_length(mb) - octet_length(mb::text)) FROM public.chars_src").Scan(&blanks); err != nil {
		t.Fatal(err)
	}
	if got := sent.n.Load() - before; got > int64(size)-blanks+4096 || blanks < 300_000 {
		t.Errorf("the target received %d bytes for %d bytes of COPY data with %d bytes of char(n) blanks", got, size, blanks)
	}
	text := func(table string) string {
		var out bytes.Buffer
		if _, err := pg.Conn(t).PgConn().CopyTo(ctx, &out, "COPY (SELECT * FROM "+table+" ORDER BY id) TO STDOUT"); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if src, dst := text("public.chars_src"), text("public.chars_dst"); src != dst {
		t.Errorf("target rows differ from the source's:\n%.300s\nwant\n%.300s", dst, src)
	}
	wantQuery(t, pg, "2000 2000 200 4", "SELECT count(*) FILTER (WHERE octet_length(b) = 1 + id % 4) || ' ' || count(*) || ' ' || max(octet_length(c)) || ' ' || max(octet_length(d)) FROM public.chars_dst")
}

// countingProxy forwards connections on a loopback port to pg's, counting the
// bytes clients send.
type byteCounter struct {
	addr string
	n    atomic.Int64
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func countingProxy(t *testing.T, pg *harness.PG) *byteCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &byteCounter{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", pg.Port))
			if err != nil {
				client.Close()
				continue
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(countingWriter{server, &c.n}, client)
				server.Close()
			}()
			go func() {
				defer wg.Done()
				_, _ = io.Copy(client, server)
				client.Close()
			}()
		}
	}()
	return c
}

// Benchmarks: rows per second through the sink on a local PostgreSQL 15.
// go test ./integration/ -run '^$' -bench SinkPostgres -benchtime 100000x

func benchSink(b *testing.B, opts postgres.Options) (*harness.PG, *postgres.Sink, *schema.Table) {
	pg := harness.Postgres(b, 15)
	s, err := postgres.New(b.Context(), pg.URL(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	if _, err := s.Setup(b.Context(), "bench"); err != nil {
		b.Fatal(err)
	}
	tb := sinktest.ItemsTable("public", "bench")
	if err := s.EnsureTable(b.Context(), tb, nil); err != nil {
		b.Fatal(err)
	}
	return pg, s, tb
}

// benchApply applies n changes made by mk in transactions of txSize changes.
func benchApply(b *testing.B, s *postgres.Sink, n, txSize int, mk func(i int) *sink.Change) {
	ctx := b.Context()
	b.ResetTimer()
	for start := 0; start < n; start += txSize {
		tx, err := s.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for i := start; i < min(start+txSize, n); i++ {
			if err := tx.Apply(ctx, mk(i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(ctx, sink.Progress{Slot: "bench", LSN: source.LSN(start + txSize)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
}

func benchRow(i int, name string) source.Tuple {
	return sinktest.Row(sinktest.T(fmt.Sprint(i)), sinktest.T(name), sinktest.T("some note text that is not short"))
}

func BenchmarkSinkPostgresCopyInserts(b *testing.B) {
	_, s, tb := benchSink(b, postgres.Options{})
	benchApply(b, s, b.N, 10000, func(i int) *sink.Change { return sinktest.Ins(tb, source.LSN(i), benchRow(i, "inserted")) })
}

func BenchmarkSinkPostgresInsertStatements(b *testing.B) {
	_, s, tb := benchSink(b, postgres.Options{CopyThreshold: -1})
	benchApply(b, s, b.N, 10000, func(i int) *sink.Change { return sinktest.Ins(tb, source.LSN(i), benchRow(i, "inserted")) })
}

func BenchmarkSinkPostgresUpdates(b *testing.B) {
	pg, s, tb := benchSink(b, postgres.Options{})
	const rows = 100000
	pg.Exec(b, fmt.Sprintf("INSERT INTO public.bench SELECT g, 'x', 'y' FROM generate_series(0, %d) g", rows-1))
	pg.Exec(b, "VACUUM ANALYZE public.bench")
	benchApply(b, s, b.N, 10000, func(i int) *sink.Change {
		return sinktest.Upd(tb, source.LSN(i), sinktest.Row(sinktest.T(fmt.Sprint(i%rows)), sinktest.T(fmt.Sprint("updated ", i)), sinktest.U()))
	})
}

// BenchmarkSinkPostgresSmallTransactions: one update per target commit, the
// worst case for round trips (group commit in apply avoids it under backlog).
func BenchmarkSinkPostgresSmallTransactions(b *testing.B) {
	pg, s, tb := benchSink(b, postgres.Options{})
	pg.Exec(b, "INSERT INTO public.bench SELECT g, 'x', 'y' FROM generate_series(0, 999) g")
	benchApply(b, s, b.N, 1, func(i int) *sink.Change {
		return sinktest.Upd(tb, source.LSN(i), sinktest.Row(sinktest.T(fmt.Sprint(i%1000)), sinktest.T("u"), sinktest.U()))
	})
}

// BenchmarkSinkPostgresRunLength compares COPY and INSERT statements for insert
// runs of a given length (two tables alternate), to place CopyThreshold.
func BenchmarkSinkPostgresRunLength(b *testing.B) {
	for _, run := range []int{8, 16, 32, 64, 512} {
		for _, mode := range []struct {
			name      string
			threshold int
		}{{"copy", 1}, {"statements", -1}} {
			b.Run(fmt.Sprintf("run%d/%s", run, mode.name), func(b *testing.B) {
				pg, s, tb := benchSink(b, postgres.Options{CopyThreshold: mode.threshold})
				other := sinktest.ItemsTable("public", "bench2")
				if err := s.EnsureTable(b.Context(), other, nil); err != nil {
					b.Fatal(err)
				}
				_ = pg
				benchApply(b, s, b.N, 10000, func(i int) *sink.Change {
					t := tb
					if (i/run)%2 == 1 {
						t = other
					}
					return sinktest.Ins(t, source.LSN(i), benchRow(i, "inserted"))
				})
			})
		}
	}
}

// TestSinkPostgresFailedEndsLeaveSessionClean: a failed Commit or Prepare
// rolls the target transaction back by itself, so the next transaction starts
// on a clean session even when the caller does not call Rollback.
func TestSinkPostgresFailedEndsLeaveSessionClean(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tb := sinktest.ItemsTable("public", "clean_end")
	ensure(t, s, tb)
	mustApply(t, s, 10, sinktest.Ins(tb, 1, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N())))
	ctx := t.Context()
	dup := sinktest.Ins(tb, 11, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N()))
	tx, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(ctx, dup); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx, sink.Progress{Slot: sinktest.Slot, LSN: 20}); err == nil {
		t.Fatal("duplicate committed")
	}
	tx, err = s.Begin(ctx)
	if err != nil {
		t.Fatalf("Begin after a failed Commit: %v", err)
	}
	if err := tx.Apply(ctx, dup); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(ctx, tx, "pgrelay_clean_1", sink.Progress{Slot: sinktest.Slot, LSN: 30}); err == nil {
		t.Fatal("duplicate prepared")
	}
	mustApply(t, s, 40, sinktest.Ins(tb, 31, sinktest.Row(sinktest.T("2"), sinktest.N(), sinktest.N())))
	wantQuery(t, pg, "1,2", "SELECT string_agg(id::text, ',' ORDER BY id) FROM public.clean_end")
	wantQuery(t, pg, "0", "SELECT count(*) FROM pg_prepared_xacts")
	wantQuery(t, pg, "0/28", "SELECT lsn::text FROM pgrelay.progress")
}

// TestSinkPostgresCannotPrepare: with max_prepared_transactions = 0 the sink
// says so at Setup (CanPrepare) and Prepare explains what to change.
func TestSinkPostgresCannotPrepare(t *testing.T) {
	pg := harness.Postgres(t, 15, harness.WithSetting("max_prepared_transactions", "0"))
	s := (&pgSinkTarget{pg: pg}).open(t)
	if _, err := s.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatal(err)
	}
	if s.CanPrepare() {
		t.Fatal("CanPrepare with max_prepared_transactions = 0")
	}
	tb := sinktest.ItemsTable("public", "np")
	ensure(t, s, tb)
	tx, err := s.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Apply(t.Context(), sinktest.Ins(tb, 1, sinktest.Row(sinktest.T("1"), sinktest.N(), sinktest.N()))); err != nil {
		t.Fatal(err)
	}
	err = s.Prepare(t.Context(), tx, "pgrelay_np", sink.Progress{Slot: sinktest.Slot, LSN: 10})
	if err == nil || !strings.Contains(err.Error(), "max_prepared_transactions") || !strings.Contains(err.Error(), "PGRELAY_TWO_PHASE=off") {
		t.Fatalf("Prepare without prepared transactions: %v", err)
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.np")
	mustApply(t, s, 20, sinktest.Ins(tb, 11, sinktest.Row(sinktest.T("2"), sinktest.N(), sinktest.N())))
}

// TestSinkPostgresFolding: within a target transaction, changes are applied
// table by table and repeated updates of a row fold into the last one — but
// not on a table with another unique index, where the intermediate values
// matter to its checks.
func TestSinkPostgresFolding(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	plain := sinktest.ItemsTable("public", "fold_plain")
	uniq := sinktest.ItemsTable("public", "fold_unique")
	ensure(t, s, plain, uniq)
	pg.Exec(t, "CREATE UNIQUE INDEX fold_unique_name ON public.fold_unique (name)")
	row := func(id, name string) source.Tuple {
		return sinktest.Row(sinktest.T(id), sinktest.T(name), sinktest.N())
	}
	mustApply(t, s, 100,
		sinktest.Ins(plain, 1, row("1", "a")),
		sinktest.Ins(uniq, 2, row("1", "a")), sinktest.Ins(uniq, 3, row("2", "b")))

	// 100 updates of one row of fold_plain, interleaved with fold_unique.
	var chs []*sink.Change
	for i := range 100 {
		chs = append(chs, sinktest.Upd(plain, source.LSN(1000+i), row("1", fmt.Sprint("v", i))))
	}
	// A name swap through a third value: sequentially valid; folded (1's
	// first update replaced by its last, ahead of 2's) it would collide.
	chs = append(chs,
		sinktest.Upd(uniq, 2000, row("1", "c")),
		sinktest.Upd(uniq, 2001, row("2", "a")),
		sinktest.Upd(uniq, 2002, row("1", "b")))
	before := s.Stats()
	mustApply(t, s, 3000, chs...)
	st := s.Stats()
	if got := st.Folded - before.Folded; got != 99 {
		t.Errorf("folded %d updates, want 99 (all but the last of fold_plain's, none of fold_unique's)", got)
	}
	if got := st.Statements - before.Statements; got > 10 {
		t.Errorf("%d statements for 103 changes, want a handful", got)
	}
	wantQuery(t, pg, "v99", "SELECT name FROM public.fold_plain WHERE id = 1")
	wantQuery(t, pg, "1:b,2:a", "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM public.fold_unique")
}

// TestSinkPostgresRelationResentMidTransaction: the source sends a Relation
// message again in the middle of a transaction (any publication change
// invalidates every relation), so the same table arrives as a new version
// while changes of the old one still wait to be sent. The old version's
// prepared statements must live until the transaction has ended.
func TestSinkPostgresRelationResentMidTransaction(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	v1 := sinktest.ItemsTable("public", "resent")
	ensure(t, s, v1)
	row := func(id string) source.Tuple { return sinktest.Row(sinktest.T(id), sinktest.T("x"), sinktest.N()) }
	mustApply(t, s, 100, sinktest.Ins(v1, 1, row("1")), sinktest.Upd(v1, 2, row("1")))
	v2 := *v1 // the same definition, a new version
	mustApply(t, s, 200,
		sinktest.Ins(v1, 101, row("2")), sinktest.Upd(v1, 102, row("2")),
		sinktest.Ins(&v2, 103, row("3")), sinktest.Upd(&v2, 104, row("3")))
	mustApply(t, s, 300, sinktest.Ins(&v2, 201, row("4")), sinktest.Ins(v1, 202, row("5")))
	wantQuery(t, pg, "1,2,3,4,5", "SELECT string_agg(id::text, ',' ORDER BY id) FROM public.resent")
}

// TestSinkPostgresSetStatements: runs of updates and deletes of distinct rows
// become one statement each (array parameters) for tables whose types allow
// it, with the same result as one statement per row; tables with an array
// column, another unique index or target column types other than the
// source's keep one statement per row.
func TestSinkPostgresSetStatements(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	T, N := sinktest.T, sinktest.N
	mood := &schema.Type{OID: 70000, Namespace: "public", Name: "mood", Category: schema.CategoryEnum, EnumLabels: []string{"sad", "ok", "happy"}}
	tb := &schema.Table{RelationID: 20010, Schema: "public", Name: "set_types", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{
			{Name: "id", TypeOID: 23, TypeMod: -1, TypeName: "integer", Key: true, NotNull: true, Attnum: 1},
			{Name: "c", TypeOID: 1042, TypeMod: 14, TypeName: "character(10)", Attnum: 2},
			{Name: "n", TypeOID: 1700, TypeMod: 655366, TypeName: "numeric(10,2)", Attnum: 3},
			{Name: "ts", TypeOID: 1184, TypeMod: -1, TypeName: "timestamp with time zone", Attnum: 4},
			{Name: "b", TypeOID: 17, TypeMod: -1, TypeName: "bytea", Attnum: 5},
			{Name: "m", TypeOID: 70000, TypeMod: -1, TypeName: "public.mood", Type: mood, Attnum: 6},
			{Name: "j", TypeOID: 3802, TypeMod: -1, TypeName: "jsonb", Attnum: 7},
		}, Types: []*schema.Type{mood}}
	ensure(t, s, tb)
	var chs []*sink.Change
	for i := range 100 {
		chs = append(chs, sinktest.Ins(tb, source.LSN(1+i), sinktest.Row(T(fmt.Sprint(i)), T("x"), T("1"), T("2024-01-01 00:00:00+00"), T(`\x00`), T("ok"), T(`{}`))))
	}
	mustApply(t, s, 1000, chs...)
	const dump = `SELECT string_agg(concat_ws('|', id, quote_nullable(c), n, ts, encode(b, 'hex'), m, j), E'\n' ORDER BY id) FROM public.set_types`
	want := func() string {
		t.Helper()
		// The same changes through one statement per row, on a second table.
		return pg.QueryString(t, `SELECT string_agg(concat_ws('|', id, quote_nullable(c), n, ts, encode(b, 'hex'), m, j), E'\n' ORDER BY id) FROM public.set_types_ref`)
	}
	pg.Exec(t, "CREATE TABLE public.set_types_ref (LIKE public.set_types INCLUDING ALL)")
	pg.Exec(t, "INSERT INTO public.set_types_ref SELECT * FROM public.set_types")

	chs = chs[:0]
	for i := range 100 {
		row := sinktest.Row(T(fmt.Sprint(i)), T(fmt.Sprintf(`a"b\c %d`, i)), T(fmt.Sprintf("%d.555", i)), T("2024-06-01 12:00:00.5+02"), T(fmt.Sprintf(`\x%02x5c22`, i)), T("happy"), T(`{"k": "v \"q\" \\ x"}`))
		if i%10 == 4 {
			row = sinktest.Row(T(fmt.Sprint(i)), N(), N(), N(), N(), N(), N())
		}
		chs = append(chs, sinktest.Upd(tb, source.LSN(2000+i), row))
		vals := []string{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL"}
		for j := 1; j < 7; j++ {
			if row[j].Kind == source.ValueText {
				vals[j-1] = "'" + strings.ReplaceAll(string(row[j].Data), "'", "''") + "'"
			}
		}
		pg.Exec(t, fmt.Sprintf("UPDATE public.set_types_ref SET c = %s, n = %s, ts = %s, b = %s, m = %s, j = %s WHERE id = %d", vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], i))
	}
	for i := 60; i < 90; i++ {
		chs = append(chs, sinktest.Del(tb, source.LSN(3000+i), source.OldKey, sinktest.Row(T(fmt.Sprint(i)), N(), N(), N(), N(), N(), N())))
	}
	pg.Exec(t, "DELETE FROM public.set_types_ref WHERE id >= 60 AND id < 90")
	before := s.Stats()
	mustApply(t, s, 4000, chs...)
	st := s.Stats()
	if st.SetStatements-before.SetStatements != 2 || st.SetRows-before.SetRows != 130 {
		t.Fatalf("100 updates and 30 deletes: %d set statements with %d rows, want 2 with 130 (%+v)", st.SetStatements-before.SetStatements, st.SetRows-before.SetRows, st)
	}
	if got, w := pg.QueryString(t, dump), want(); got != w {
		t.Fatalf("after set statements:\n%s\nwant (one statement per row):\n%s", got, w)
	}

	// Not for these tables: one statement per row, same results.
	arr := &schema.Table{RelationID: 20011, Schema: "public", Name: "set_array", ReplicaIdentity: schema.IdentityDefault,
		Columns: []schema.Column{
			{Name: "id", TypeOID: 23, TypeMod: -1, TypeName: "integer", Key: true, NotNull: true, Attnum: 1},
			{Name: "a", TypeOID: 1007, TypeMod: -1, TypeName: "integer[]", Attnum: 2},
		}}
	uniq := sinktest.ItemsTable("public", "set_unique")
	wide := sinktest.ItemsTable("public", "set_wide")
	pg.Exec(t, "CREATE TABLE public.set_wide (id numeric PRIMARY KEY, name text, note text)") // the source says bigint
	ensure(t, s, arr, uniq, wide)
	pg.Exec(t, "CREATE UNIQUE INDEX ON public.set_unique (name)")
	chs = chs[:0]
	for i := range 20 {
		chs = append(chs, sinktest.Ins(arr, source.LSN(5000+i), sinktest.Row(T(fmt.Sprint(i)), T("{1,2}"))))
		chs = append(chs, sinktest.Ins(uniq, source.LSN(5100+i), sinktest.Row(T(fmt.Sprint(i)), T(fmt.Sprint("u", i)), N())))
		chs = append(chs, sinktest.Ins(wide, source.LSN(5200+i), sinktest.Row(T(fmt.Sprint(i)), T("w"), N())))
	}
	mustApply(t, s, 6000, chs...)
	chs = chs[:0]
	for i := range 20 {
		chs = append(chs, sinktest.Upd(arr, source.LSN(7000+i), sinktest.Row(T(fmt.Sprint(i)), T(fmt.Sprintf("{%d,3}", i)))))
		// Each row takes the name the next one gives up: in this order only.
		chs = append(chs, sinktest.Upd(uniq, source.LSN(7100+i), sinktest.Row(T(fmt.Sprint(i)), T(fmt.Sprint("u", i-1)), N())))
		chs = append(chs, sinktest.Upd(wide, source.LSN(7200+i), sinktest.Row(T(fmt.Sprint(i)), T("ww"), T("n"))))
	}
	chs = append([]*sink.Change{sinktest.Upd(uniq, 7099, sinktest.Row(T("0"), T("first"), N()))}, chs...)
	before = s.Stats()
	mustApply(t, s, 8000, chs...)
	if st := s.Stats(); st.SetStatements != before.SetStatements {
		t.Fatalf("set statements for an array column, a second unique index or other target types: %+v", st)
	}
	wantQuery(t, pg, "20", "SELECT count(*) FROM public.set_array WHERE a[2] = 3 AND a[1] = id")
	wantQuery(t, pg, "u-1,u0,u1,u2", "SELECT string_agg(name, ',' ORDER BY id) FROM public.set_unique WHERE id < 4")
	wantQuery(t, pg, "20", "SELECT count(*) FROM public.set_wide WHERE name = 'ww' AND note = 'n'")

	// Deletes of the second-unique-index table may be one statement.
	chs = chs[:0]
	for i := range 20 {
		chs = append(chs, sinktest.Del(uniq, source.LSN(9000+i), source.OldKey, sinktest.Row(T(fmt.Sprint(i)), N(), N())))
	}
	before = s.Stats()
	mustApply(t, s, 9500, chs...)
	if st := s.Stats(); st.SetStatements-before.SetStatements != 1 {
		t.Fatalf("20 deletes: %d set statements, want 1", st.SetStatements-before.SetStatements)
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.set_unique")
}

// TestSinkPostgresCommitAsync: a commit sent by CommitAsync is outstanding
// while the next transaction queues; Settle tells its outcome, and a failed
// one fails every call until Settle handed it over, with nothing of it
// committed.
func TestSinkPostgresCommitAsync(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	ctx := t.Context()
	T, N := sinktest.T, sinktest.N
	tb := sinktest.ItemsTable("public", "async_items")
	ensure(t, s, tb)
	asyncCommit := func(at source.LSN, changes ...*sink.Change) {
		t.Helper()
		tx, err := s.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		for _, ch := range changes {
			if err := tx.Apply(ctx, ch); err != nil {
				t.Fatalf("Apply: %v", err)
			}
		}
		if err := tx.(sink.AsyncTx).CommitAsync(ctx, sink.Progress{Slot: sinktest.Slot, LSN: at}); err != nil {
			t.Fatalf("CommitAsync: %v", err)
		}
	}
	var chs []*sink.Change
	for i := range 100 {
		chs = append(chs, sinktest.Ins(tb, source.LSN(1+i), sinktest.Row(T(fmt.Sprint(i)), T("a"), N())))
	}
	asyncCommit(1000, chs...)
	chs = chs[:0]
	for i := range 100 {
		chs = append(chs, sinktest.Upd(tb, source.LSN(1001+i), sinktest.Row(T(fmt.Sprint(i)), T("b"), N())))
	}
	asyncCommit(2000, chs...) // queued behind the first
	if err := s.Settle(ctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	wantQuery(t, pg, "100", "SELECT count(*) FROM public.async_items WHERE name = 'b'")
	wantQuery(t, pg, "0/7D0", "SELECT lsn FROM pgrelay.progress")

	// A row missing among many updates: the commit fails, outstanding.
	chs = chs[:0]
	for i := range 50 {
		id := i
		if i == 17 {
			id = 777
		}
		chs = append(chs, sinktest.Upd(tb, source.LSN(3000+i), sinktest.Row(T(fmt.Sprint(id)), T("c"), N())))
	}
	asyncCommit(4000, chs...)
	// The next transaction queues, and fails with the commit before it.
	if err := pgApply(t, s, 4500, sinktest.Upd(tb, 4100, sinktest.Row(T("2"), T("c"), N()))); !errors.Is(err, sink.ErrRowNotFound) {
		t.Fatalf("a transaction after a failed outstanding commit: %v, want the commit's error", err)
	}
	err := s.Settle(ctx)
	if !errors.Is(err, sink.ErrRowNotFound) || !strings.Contains(err.Error(), "777") || !strings.Contains(err.Error(), source.LSN(3017).String()) {
		t.Fatalf("Settle: %v, want the missing row 777 at %s", err, source.LSN(3017))
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.async_items WHERE name = 'c'")
	wantQuery(t, pg, "0/7D0", "SELECT lsn FROM pgrelay.progress")
	// Handed over: the sink works again.
	mustApply(t, s, 5000, sinktest.Upd(tb, 4500, sinktest.Row(T("1"), T("d"), N())))
	wantQuery(t, pg, "d", "SELECT name FROM public.async_items WHERE id = 1")

	// Runs of inserts go out as COPY from the goroutine that sends, after the
	// statements before them: the next transaction's runs are encoded while
	// the previous COPY may still be on the wire (the race detector sees a
	// shared buffer), and a run keeps its place among the statements.
	run := func(from, n int, lsn source.LSN, name string) []*sink.Change {
		var out []*sink.Change
		for i := range n {
			out = append(out, sinktest.Ins(tb, lsn+source.LSN(i), sinktest.Row(T(fmt.Sprint(from+i)), T(name), N())))
		}
		return out
	}
	asyncCommit(6000, run(200, 100, 5001, "copy1")...)
	chs = append(run(300, 100, 6001, "copy2"), sinktest.Upd(tb, 6101, sinktest.Row(T("350"), T("after"), N())))
	asyncCommit(7000, append(chs, run(400, 100, 6102, "copy3")...)...)
	if err := s.Settle(ctx); err != nil {
		t.Fatalf("Settle after COPY runs: %v", err)
	}
	wantQuery(t, pg, "copy1 100,copy2 99,after 1,copy3 100", "SELECT string_agg(name || ' ' || n, ',' ORDER BY min) FROM (SELECT name, count(*) n, min(id) FROM public.async_items WHERE id >= 200 GROUP BY name) x")
	wantQuery(t, pg, "0/1B58", "SELECT lsn FROM pgrelay.progress")

	// A COPY that fails names its row, and nothing of the group commits.
	chs = run(500, 100, 7001, "copyfail")
	chs[40] = sinktest.Ins(tb, 7041, sinktest.Row(T("1"), T("copyfail"), N()))
	asyncCommit(8000, chs...)
	err = s.Settle(ctx)
	if err == nil || !strings.Contains(err.Error(), "async_items") || !strings.Contains(err.Error(), source.LSN(7041).String()) {
		t.Fatalf("Settle: %v, want the duplicate key of the COPY at %s", err, source.LSN(7041))
	}
	wantQuery(t, pg, "0", "SELECT count(*) FROM public.async_items WHERE name = 'copyfail'")
	wantQuery(t, pg, "0/1B58", "SELECT lsn FROM pgrelay.progress")
}

// TestSinkPostgresRenamedByRelationOID: after a restart, a table whose name is
// not stored is looked up by its source relation OID under its slot; found, the
// target table is renamed or moved with its rows and its definition stored
// under the new name only. Another slot's OIDs, and OIDs stored before a new
// seed, match nothing. Definitions stored before migration 3 get their OID.
func TestSinkPostgresRenamedByRelationOID(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{})
	tg := &pgSinkTarget{pg: pg}
	stored := "SELECT string_agg(schema || '.' || name || ' ' || coalesce(slot, '-') || ' ' || coalesce(relation_oid::text, '-'), ',' ORDER BY schema, name) FROM pgrelay.relation"
	tables := "SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY schemaname, tablename) FROM pg_tables WHERE schemaname IN ('public', 'moved')"
	version := func(schemaName, name string) *schema.Table {
		tb := sinktest.ItemsTable(schemaName, name)
		tb.RelationID = 30000
		return tb
	}
	row := func(id string) source.Tuple { return sinktest.Row(sinktest.T(id), sinktest.T("x"), sinktest.N()) }
	ra := version("public", "ra")
	ensure(t, s, ra)
	mustApply(t, s, 100, sinktest.Ins(ra, 1, row("1")), sinktest.Ins(ra, 2, row("2")))
	// Stored before migration 3: no slot nor OID columns yet.
	pg.Exec(t, "ALTER TABLE pgrelay.relation DROP COLUMN slot, DROP COLUMN relation_oid; DROP TABLE pgrelay.prepared_fill; ALTER TABLE pgrelay.table_state DROP COLUMN published_as; DELETE FROM pgrelay.schema_migrations WHERE version >= 3")

	s = tg.open(t) // a restart: nothing known in memory
	if _, err := s.Setup(t.Context(), sinktest.Slot); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	wantQuery(t, pg, "public.ra sinktest 30000", stored)
	rc := version("moved", "rc")
	ensure(t, s, rc)
	mustApply(t, s, 200, sinktest.Ins(rc, 101, row("3")), sinktest.Upd(rc, 102, row("1")))
	wantQuery(t, pg, "moved.rc", tables)
	wantQuery(t, pg, "1,2,3", "SELECT string_agg(id::text, ',' ORDER BY id) FROM moved.rc")
	wantQuery(t, pg, "moved.rc sinktest 30000", stored)

	other := tg.open(t)
	if _, err := other.Setup(t.Context(), "other_slot"); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	ensure(t, other, version("public", "rx"))
	wantQuery(t, pg, "moved.rc,public.rx", tables)

	if err := s.StartSeed(t.Context(), sinktest.Slot, 0x1000); err != nil {
		t.Fatal(err)
	}
	ensure(t, s, version("public", "rz"))
	wantQuery(t, pg, "moved.rc,public.rx,public.rz", tables)
	wantQuery(t, pg, "moved.rc sinktest -,public.rx other_slot 30000,public.rz sinktest 30000", stored)
}

// TestSinkPostgresCopyWhole: a table loaded in one piece is truncated and
// loaded with COPY FREEZE in one transaction, which an older snapshot shows:
// frozen rows are visible to it, rows of a plain load are not. A table the
// sink cannot truncate (referenced by a foreign key, or locked by another
// session) still loads, without FREEZE; a load that fails leaves the table as
// it was and the session usable.
func TestSinkPostgresCopyWhole(t *testing.T) {
	for _, major := range []int{15, 18} {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) { testSinkPostgresCopyWhole(t, major) })
	}
}

func testSinkPostgresCopyWhole(t *testing.T, major int) {
	ctx := t.Context()
	pg, s := pgTarget(t, major, postgres.Options{})
	pg.Exec(t, `CREATE TABLE public.whole_text (id int, v text);
		CREATE TABLE public.whole_bin (id int, v text);
		CREATE TABLE public.whole_ref (id int PRIMARY KEY, v text);
		CREATE TABLE public.whole_fk (id int REFERENCES public.whole_ref);
		CREATE TABLE public.whole_locked (id int, v text);
		CREATE TABLE public.whole_other (x int)`)
	table := func(name string) *schema.Table {
		return &schema.Table{Schema: "public", Name: name, Columns: []schema.Column{
			{Name: "id", TypeOID: 23, TypeName: "integer"}, {Name: "v", TypeOID: 25, TypeName: "text"}}}
	}
	var data strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&data, "%d\tv%d\n", i, i)
	}
	var bin bytes.Buffer
	conn := pg.Conn(t)
	if _, err := conn.Exec(ctx, "INSERT INTO public.whole_other SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.PgConn().CopyTo(ctx, &bin, "COPY (SELECT i, 'v' || i FROM generate_series(1, 1000) i) TO STDOUT (FORMAT binary)"); err != nil {
		t.Fatal(err)
	}

	// A snapshot older than every load below, which has not touched their
	// tables (a lock on one would stand in the way of its TRUNCATE).
	old := pg.Conn(t)
	if _, err := old.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ"); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, "SELECT count(*) FROM public.whole_other"); err != nil {
		t.Fatal(err)
	}
	// Another session reads whole_locked and keeps its lock.
	locker := pg.Conn(t)
	if _, err := locker.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Exec(ctx, "SELECT count(*) FROM public.whole_locked"); err != nil {
		t.Fatal(err)
	}

	load := func(name string, r io.Reader, binary bool) {
		t.Helper()
		if n, err := s.CopyWhole(ctx, table(name), r, binary); err != nil || n != 1000 {
			t.Fatalf("CopyWhole %s: %d rows, %v", name, n, err)
		}
	}
	load("whole_text", strings.NewReader(data.String()), false)
	load("whole_bin", &bin, true)
	load("whole_ref", strings.NewReader(data.String()), false)
	start := time.Now()
	load("whole_locked", strings.NewReader(data.String()), false)
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the load of a locked table waited %v for the lock", d)
	}
	if _, err := locker.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	seen := func(name string) string {
		var n int
		if err := old.QueryRow(ctx, "SELECT count(*) FROM public."+name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(n)
	}
	got := fmt.Sprintf("text %s, binary %s, referenced %s, locked %s", seen("whole_text"), seen("whole_bin"), seen("whole_ref"), seen("whole_locked"))
	if want := "text 1000, binary 1000, referenced 0, locked 0"; got != want {
		t.Errorf("rows an older snapshot sees: %s, want %s", got, want)
	}
	if _, err := old.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"whole_text", "whole_bin", "whole_ref", "whole_locked"} {
		wantQuery(t, pg, "1000 500500 v1000", "SELECT count(*) || ' ' || sum(id) || ' ' || max(v) FILTER (WHERE id = 1000) FROM public."+name)
	}

	// A load that fails is rolled back, TRUNCATE included: the rows of the
	// earlier load stay, and the next load on the same sessions works.
	if _, err := s.CopyWhole(ctx, table("whole_text"), strings.NewReader("1\tv1\nnot a number\tv\n"), false); err == nil {
		t.Fatal("CopyWhole of a bad row: no error")
	}
	wantQuery(t, pg, "1000", "SELECT count(*) FROM public.whole_text")
	for range 3 {
		load("whole_bin", strings.NewReader(data.String()), false)
	}
	wantQuery(t, pg, "1000", "SELECT count(*) FROM public.whole_bin")
}

// TestSinkPostgresEmptyOwnRows: emptying a table before its copy removes its
// own rows only — a target-only table inheriting from it keeps its rows — and
// a partitioned table's rows with its partitions. A table the sink cannot
// truncate (a foreign key references it, another session holds a lock on it)
// is emptied with DELETE, without waiting for the lock's holder.
func TestSinkPostgresEmptyOwnRows(t *testing.T) {
	ctx := t.Context()
	pg, s := pgTarget(t, 15, postgres.Options{})
	pg.Exec(t, `CREATE TABLE public.ev (id int PRIMARY KEY, v text);
		INSERT INTO public.ev SELECT i, 'own' FROM generate_series(1, 10) i;
		CREATE TABLE public.ev_archive () INHERITS (public.ev);
		INSERT INTO public.ev_archive SELECT i, 'archived' FROM generate_series(100, 199) i;
		CREATE TABLE public.part (id int, v text) PARTITION BY RANGE (id);
		CREATE TABLE public.part_1 PARTITION OF public.part FOR VALUES FROM (0) TO (100);
		CREATE TABLE public.part_2 PARTITION OF public.part FOR VALUES FROM (100) TO (200);
		INSERT INTO public.part SELECT i, 'p' FROM generate_series(1, 150) i;
		CREATE TABLE public.referenced (id int PRIMARY KEY, v text);
		INSERT INTO public.referenced SELECT i, 'r' FROM generate_series(1, 10) i;
		CREATE TABLE public.referencing (id int REFERENCES public.referenced);
		CREATE TABLE public.locked (id int PRIMARY KEY, v text);
		INSERT INTO public.locked SELECT i, 'l' FROM generate_series(1, 10) i`)
	table := func(name string) *schema.Table {
		return &schema.Table{Schema: "public", Name: name, Columns: []schema.Column{
			{Name: "id", TypeOID: 23, TypeName: "integer"}, {Name: "v", TypeOID: 25, TypeName: "text"}}}
	}
	// A reader keeps a lock on public.locked.
	reader := pg.Conn(t)
	if _, err := reader.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM public.locked"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.EmptyTables(ctx, []*schema.Table{table("ev"), table("part"), table("referenced"), table("locked")}); err != nil {
		t.Fatalf("EmptyTables: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("EmptyTables waited %v for a reader's lock", d)
	}
	wantQuery(t, pg, "0 100 0 0 0", `SELECT (SELECT count(*) FROM ONLY public.ev) || ' ' || (SELECT count(*) FROM public.ev_archive) || ' ' ||
		(SELECT count(*) FROM public.part) || ' ' || (SELECT count(*) FROM public.referenced) || ' ' || (SELECT count(*) FROM public.locked)`)
	if _, err := reader.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}

	// Empty, table by table, the same way.
	pg.Exec(t, `INSERT INTO public.ev VALUES (1, 'own');
		INSERT INTO public.part VALUES (5, 'p'), (150, 'p');
		INSERT INTO public.referenced VALUES (1, 'r')`)
	for _, name := range []string{"ev", "part", "referenced"} {
		if err := s.Empty(ctx, table(name)); err != nil {
			t.Fatalf("Empty %s: %v", name, err)
		}
	}
	wantQuery(t, pg, "0 100 0 0", `SELECT (SELECT count(*) FROM ONLY public.ev) || ' ' || (SELECT count(*) FROM public.ev_archive) || ' ' ||
		(SELECT count(*) FROM public.part) || ' ' || (SELECT count(*) FROM public.referenced)`)
}

// TestSinkPostgresPrimaryKeyLocks: a primary key that cannot be dropped
// before a load (a foreign key depends on it, a partition's key is its
// partitioned table's, another session holds a lock on the table) stays, and
// DropPrimaryKey reports it kept without an error or a long wait. Adding a
// key back waits for a lock another session holds, saying so, and goes on
// once it is released.
func TestSinkPostgresPrimaryKeyLocks(t *testing.T) {
	ctx := t.Context()
	var logs lockedBuffer
	pg, s := pgTarget(t, 15, postgres.Options{LockWait: 200 * time.Millisecond})
	s.LocateRelations(nil, slog.New(slog.NewTextHandler(&logs, nil)))
	pg.Exec(t, `CREATE TABLE public.parent (id int PRIMARY KEY, v text);
		CREATE TABLE public.child (id int REFERENCES public.parent);
		CREATE TABLE public.meas (id int, r int, PRIMARY KEY (id, r)) PARTITION BY LIST (r);
		CREATE TABLE public.meas_1 PARTITION OF public.meas FOR VALUES IN (1);
		CREATE TABLE public.held (id int PRIMARY KEY, v text)`)
	reader := pg.Conn(t)
	if _, err := reader.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM public.held"); err != nil {
		t.Fatal(err)
	}
	keyed := func(cols ...string) func(string) *schema.Table {
		return func(name string) *schema.Table {
			tb := &schema.Table{Schema: "public", Name: name, ReplicaIdentity: schema.IdentityDefault}
			for i, c := range cols {
				tb.Columns = append(tb.Columns, schema.Column{Name: c, TypeOID: 23, TypeName: "integer", Key: true, NotNull: true, Attnum: int16(i + 1)})
			}
			return tb
		}
	}
	start := time.Now()
	for _, tb := range []*schema.Table{keyed("id")("parent"), keyed("id", "r")("meas_1"), keyed("id")("held")} {
		dropped, err := s.DropPrimaryKey(ctx, tb)
		if err != nil || dropped {
			t.Errorf("DropPrimaryKey %s: dropped %v, %v; want kept without an error", tb.Name, dropped, err)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("DropPrimaryKey waited %v", d)
	}
	wantQuery(t, pg, "3", "SELECT count(*) FROM pg_constraint WHERE contype = 'p' AND conrelid IN ('public.parent'::regclass, 'public.meas_1'::regclass, 'public.held'::regclass)")
	if !strings.Contains(logs.String(), "loading the table with its primary key in place") {
		t.Errorf("no log line for the keys kept:\n%s", logs.String())
	}

	// Without its key, and read by a session that keeps its lock: adding the
	// key waits, and says so.
	if _, err := reader.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	pg.Exec(t, "ALTER TABLE public.held DROP CONSTRAINT held_pkey")
	if _, err := reader.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM public.held"); err != nil {
		t.Fatal(err)
	}
	added := make(chan error, 1)
	go func() { added <- s.AddPrimaryKey(ctx, keyed("id")("held")) }()
	if err := harness.Await(30*time.Second, 50*time.Millisecond, "AddPrimaryKey to say it waits for the lock", func() error {
		if !strings.Contains(logs.String(), "waiting for a lock on a target table") {
			return errors.New("no such log line")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v:\n%s", err, logs.String())
	}
	select {
	case err := <-added:
		t.Fatalf("AddPrimaryKey returned (%v) while the lock was held", err)
	default:
	}
	if _, err := reader.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-added:
		if err != nil {
			t.Fatalf("AddPrimaryKey: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("AddPrimaryKey did not finish after the lock was released")
	}
	wantQuery(t, pg, "1", "SELECT count(*) FROM pg_constraint WHERE contype = 'p' AND conrelid = 'public.held'::regclass")
}

// lockedBuffer is a strings.Builder for a logger that several goroutines use.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSinkPostgresLockWatch: a statement of the apply session that waits for
// a lock says, after Options.LockWait, what holds it: a session (with its
// application and query), a prepared transaction of someone else (by GID),
// or this slot's own prepared transaction, which apply cannot wait out (an
// error). Once the holder lets go, the change is applied.
func TestSinkPostgresLockWatch(t *testing.T) {
	pg, s := pgTarget(t, 15, postgres.Options{LockWait: 200 * time.Millisecond})
	var logs lockedBuffer
	s.LocateRelations(nil, slog.New(slog.NewTextHandler(&logs, nil)))
	tb := sinktest.ItemsTable("public", "watched")
	ensure(t, s, tb)
	ctx := t.Context()
	holder := pg.Conn(t)
	ownGID := sink.GID(sinktest.Slot, 4242)
	cases := []struct {
		name          string
		hold, release []string
		want          []string // in one log line
	}{
		{
			name:    "session",
			hold:    []string{"SET application_name = 'locker'", "BEGIN", "LOCK TABLE public.watched IN SHARE MODE"},
			release: []string{"COMMIT"},
			want:    []string{"level=WARN", "waiting for a lock", "sessions=", `application \"locker\"`, "LOCK TABLE public.watched", "table=", "watched"},
		},
		{
			name:    "other prepared",
			hold:    []string{"BEGIN", "LOCK TABLE public.watched IN SHARE MODE", "PREPARE TRANSACTION 'someone_elses'"},
			release: []string{"ROLLBACK PREPARED 'someone_elses'"},
			want:    []string{"level=WARN", "waiting for a lock", "prepared=", "someone_elses"},
		},
		{
			name:    "own prepared",
			hold:    []string{"BEGIN", "LOCK TABLE public.watched IN SHARE MODE", "PREPARE TRANSACTION '" + ownGID + "'"},
			release: []string{"ROLLBACK PREPARED '" + ownGID + "'"},
			want:    []string{"level=ERROR", "apply is stalled", ownGID},
		},
	}
	for i, c := range cases {
		for _, q := range c.hold {
			if _, err := holder.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %s: %v", c.name, q, err)
			}
		}
		at := source.LSN(100 * (i + 1))
		id := strconv.Itoa(i + 1)
		done := make(chan error, 1)
		go func() {
			done <- pgApply(t, s, at, sinktest.Ins(tb, at, sinktest.Row(sinktest.T(id), sinktest.N(), sinktest.N())))
		}()
		if err := harness.Await(30*time.Second, 50*time.Millisecond, fmt.Sprintf("%s: a log line with %q", c.name, c.want), func() error {
			if !logHas(logs.String(), c.want) {
				return errors.New("none")
			}
			return nil
		}); err != nil {
			t.Fatalf("%v:\n%s", err, logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("%s: the change was applied (%v) while the lock was held", c.name, err)
		default:
		}
		for _, q := range c.release {
			if _, err := holder.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %s: %v", c.name, q, err)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: apply after the lock was released: %v", c.name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: apply did not finish after the lock was released", c.name)
		}
		wantQuery(t, pg, id, "SELECT max(id)::text FROM public.watched")
	}
	// A snapshot copy's COPY into a table a session holds says so too.
	logs.mu.Lock()
	logs.b.Reset()
	logs.mu.Unlock()
	for _, q := range []string{"BEGIN", "LOCK TABLE public.watched IN SHARE MODE"} {
		if _, err := holder.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	copied := make(chan error, 1)
	go func() {
		_, err := s.CopyFrom(ctx, tb, strings.NewReader("50\tcopied\t\\N\n"))
		copied <- err
	}()
	want := []string{"level=WARN", "waiting for a lock", `application \"locker\"`, "watched"}
	if err := harness.Await(30*time.Second, 50*time.Millisecond, fmt.Sprintf("copy: a log line with %q", want), func() error {
		if !logHas(logs.String(), want) {
			return errors.New("none")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v:\n%s", err, logs.String())
	}
	if _, err := holder.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-copied:
		if err != nil {
			t.Fatalf("copy after the lock was released: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("copy did not finish after the lock was released")
	}
	wantQuery(t, pg, "copied", "SELECT name FROM public.watched WHERE id = 50")

	// A batch that runs longer than LockWait without waiting for a lock (a
	// trigger that sleeps) is looked at, and not reported.
	pg.Exec(t, `CREATE FUNCTION public.slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NEW; END $$;
		CREATE TRIGGER slow BEFORE INSERT ON public.watched FOR EACH ROW EXECUTE FUNCTION public.slow();
		ALTER TABLE public.watched ENABLE ALWAYS TRIGGER slow`)
	logs.mu.Lock()
	logs.b.Reset()
	logs.mu.Unlock()
	if err := pgApply(t, s, 1000, sinktest.Ins(tb, 1000, sinktest.Row(sinktest.T("99"), sinktest.N(), sinktest.N()))); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); got != "" {
		t.Fatalf("a batch that waited for no lock was reported:\n%s", got)
	}
	wantQuery(t, pg, "99", "SELECT max(id)::text FROM public.watched")
}

// logHas reports whether one line of logs holds every string of want.
func logHas(logs string, want []string) bool {
	for line := range strings.SplitSeq(logs, "\n") {
		all := true
		for _, w := range want {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

package integration

// End-to-end tests of pgrelay from PostgreSQL to PostgreSQL: the built binary
// runs against a source of each tested major and a PostgreSQL 15 target, and
// the tables are compared byte for byte afterwards (e2e_helpers_test.go).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
)

// e2eTargetMajor is the target server's major.
const e2eTargetMajor = 15

// e2eEachMajor runs f as a parallel subtest per source major.
func e2eEachMajor(t *testing.T, f func(t *testing.T, major int)) {
	e2eBinary(t) // once, before the subtests run in parallel
	for _, major := range harness.Majors() {
		t.Run(e2eMajorName(major), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			f(t, major)
			t.Logf("%s took %v", t.Name(), time.Since(start).Round(time.Millisecond))
		})
	}
}

// e2ePair makes a fresh source of major and a fresh target, and the set-up
// replicating between them.
func e2ePair(t *testing.T, major int) *e2eEnv {
	src := harness.Postgres(t, major)
	tgt := harness.Postgres(t, e2eTargetMajor)
	return e2eNewEnv(t, src, tgt)
}

// e2eNewestPairFrom15 is e2ePair on the newest major under test, for a
// feature of PostgreSQL 15+ (needs names it: "row filters need"); the test is
// skipped when that major is older.
func e2eNewestPairFrom15(t *testing.T, needs string) *e2eEnv {
	return e2ePair(t, e2eNewestFrom15(t, needs))
}

// e2eNewestDedicatedPairFrom15 is e2eNewestPairFrom15 with a source server of
// the test's own: a prepared transaction held on a shared one holds up every
// other test's slot creation, and other tests' transactions move the phases
// of a slot's creation.
func e2eNewestDedicatedPairFrom15(t *testing.T, needs string) *e2eEnv {
	return e2eNewEnv(t, harness.Postgres(t, e2eNewestFrom15(t, needs), harness.Dedicated()), harness.Postgres(t, e2eTargetMajor))
}

// e2eNewestFrom15 is the newest major under test, skipping the test when it
// is older than 15.
func e2eNewestFrom15(t *testing.T, needs string) int {
	major := harness.Majors()[len(harness.Majors())-1]
	if major < 15 {
		t.Skipf("%s PostgreSQL 15+, the newest major here is %d", needs, major)
	}
	return major
}

// TestE2EMigrateConnections: a migrate opens each connection it needs once,
// up front, and for its short checks uses those it holds. A connection costs
// the server a process and an authentication (20-30 ms each on a small
// machine); a fresh migrate of two tables with two copy workers opened six
// to the source and eight to the target, one after the other, and spent more than half a second on
// them before the first row was copied. pg_stat_database.sessions counts the
// plain sessions of each database (not replication ones).
func TestE2EMigrateConnections(t *testing.T) {
	e2eEachMajor(t, testE2EMigrateConnections)
}

func testE2EMigrateConnections(t *testing.T, major int) {
	if major < 14 {
		t.Skip("pg_stat_database.sessions is PostgreSQL 14+")
	}
	e := e2ePair(t, major)
	e.extra = append(e.extra, "PGRELAY_COPY_WORKERS=2")
	// A serial column: its sequence is set at the end, on a session
	// migrate holds.
	e.src.Exec(t, `CREATE TABLE cn_a (id serial PRIMARY KEY, v text);
		CREATE TABLE cn_b (id int PRIMARY KEY, v text);
		INSERT INTO cn_a SELECT g, 'a' FROM generate_series(1, 1000) g;
		INSERT INTO cn_b SELECT g, 'b' FROM generate_series(1, 1000) g`)
	// Each harness query is a session of its own: two in a row tell how
	// many a reading adds.
	sessions := func(pg *harness.PG) int {
		v, err := strconv.Atoi(pg.QueryString(t, "SELECT sessions FROM pg_catalog.pg_stat_database WHERE datname = pg_catalog.current_database()"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	idle := func(pg *harness.PG) {
		harness.Eventually(t, time.Minute, "the sessions of database "+pg.DB+" to end", func() error {
			if n := pg.QueryString(t, "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()"); n != "0" {
				return fmt.Errorf("%s other sessions", n)
			}
			return nil
		})
	}
	idle(e.src)
	idle(e.tgt)
	s0, t0 := sessions(e.src), sessions(e.tgt)
	s1, t1 := sessions(e.src), sessions(e.tgt)
	e.mustRun(3*time.Minute, "migrate")
	idle(e.src)
	idle(e.tgt)
	s2, t2 := sessions(e.src), sessions(e.tgt)
	src, tgt := s2-s1-(s1-s0), t2-t1-(t1-t0)
	t.Logf("migrate opened %d plain sessions on the source, %d on the target", src, tgt)
	// The source: the session's, and one per copy worker (the plan reads on
	// one of them). The target: the apply and metadata connections, the one
	// holding the slot's lock, and one per copy worker.
	if src > 3 || tgt > 5 {
		t.Errorf("migrate opened %d plain sessions on the source (want at most 3) and %d on the target (want at most 5)", src, tgt)
	}
	if n := e2eCompare(t, e); n != 2 {
		t.Fatalf("compared %d tables, want 2", n)
	}
}

// TestE2EMigrate: a snapshot of many types, then a catch-up migrate.
func TestE2EMigrate(t *testing.T) {
	e2eEachMajor(t, testE2EMigrate)
}

func testE2EMigrate(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, e2eWorkload(t, "types_schema.sql"))

	first := e.mustRun(3*time.Minute, "migrate")
	// A "caught up" line naming an LSN, then the report (e2e_schema_test.go).
	if out := first.out.all(); len(out) == 0 || !strings.HasPrefix(out[0], "caught up: ") || !e2eLSNPattern.MatchString(out[0]) ||
		!strings.HasPrefix(out[len(out)-1], "ready to switch: ") {
		t.Errorf("migrate stdout = %q, want a \"caught up: …\" line naming an LSN, then the report ending \"ready to switch: …\"", out)
	}
	first.waitLog(t, "created slot", 0)
	if n := e2eCompare(t, e); n != 6 {
		t.Errorf("compared %d tables, want 6", n)
	}
	// The secondary index of child was built on the target.
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'child' AND indexdef LIKE '%(parent_id)%'"); got != "1" {
		t.Errorf("target indexes on child(parent_id): %s, want 1", got)
	}
	// Primary keys are added after the load: the source's, plus the replica
	// identity index of index_ident as its key.
	keyed := "SELECT string_agg(conrelid::regclass::text || ':' || pg_get_constraintdef(oid), ',' ORDER BY conrelid::regclass::text) FROM pg_constraint WHERE contype = 'p' AND connamespace = 'public'::regnamespace"
	const wantKeys = "child:PRIMARY KEY (id),index_ident:PRIMARY KEY (code, region),parent:PRIMARY KEY (id),types_all:PRIMARY KEY (id)"
	if got := e.tgt.QueryString(t, keyed); got != wantKeys {
		t.Errorf("target primary keys %q, want %q (source: %q)", got, wantKeys, e.src.QueryString(t, keyed))
	}
	st, raw := e.status(t)
	if !st.Seeded || !st.Slot.Exists || st.Slot.Active || st.Slot.Name != e.slot || len(st.Tables) != 6 {
		t.Errorf("status after migrate: %s", raw)
	}
	for _, tb := range st.Tables {
		if tb.State != "indexed" {
			t.Errorf("table %s state %s after migrate, want indexed", tb.Table, tb.State)
		}
	}

	// More changes: the second migrate streams them, copying nothing.
	e.src.Exec(t, e2eWorkload(t, "types_dml.sql"))
	second := e.mustRun(3*time.Minute, "migrate")
	if l, ok := second.findLog("created slot"); ok {
		t.Errorf("second migrate created the slot again: %v", l)
	}
	if l, ok := second.findLog("resuming an interrupted copy"); ok {
		t.Errorf("second migrate copied again: %v", l)
	}
	second.waitLog(t, "caught up", 0)
	e2eCompare(t, e)

	// Nothing to do: a third migrate catches up at once.
	third := e.mustRun(time.Minute, "migrate")
	third.waitLog(t, "caught up", 0)
	e2eCompare(t, e)
}

// TestE2ESnapshotCopyFormat: the snapshot copy moves a table in COPY binary
// format only when each column is of a type whose binary form means the same
// on both servers and the target table has exactly those types; every other
// table goes in text. Either way the target ends up with the source's values.
func TestE2ESnapshotCopyFormat(t *testing.T) {
	e2eEachMajor(t, testE2ESnapshotCopyFormat)
}

func testE2ESnapshotCopyFormat(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, e2eWorkload(t, "copyformat_schema.sql"))
	if major >= 15 {
		// A "char" with the high bit set; PostgreSQL 14 prints it as the raw
		// byte, which is not UTF-8, where 15+ print \ooo.
		e.src.Exec(t, `UPDATE bin_types SET ch = '\303' WHERE id = 1000002`)
	}
	// Tables a user made on the target beforehand: binary data of the
	// source's types would fail in the first, load wrong values into the
	// second, and fit the third.
	e.tgt.Exec(t, `CREATE TABLE public.bin_widened (id int8 PRIMARY KEY, small int8, label varchar(10));
		CREATE TABLE public.bin_retyped (id int8 PRIMARY KEY, big float8, label text);
		CREATE TABLE public.bin_reordered (label varchar(10), small int4, id int8 PRIMARY KEY)`)

	p := e.mustRun(3*time.Minute, "migrate")
	p.waitLog(t, "caught up", 0)

	// An infinite interval (PostgreSQL 17) would reach this PostgreSQL 15
	// target as a finite one in binary form.
	span := "binary"
	if major >= 17 && e2eTargetMajor < 17 {
		span = "text"
	}
	want := map[string]string{
		"public.bin_types":     "binary",
		"public.bin_span":      span,
		"public.bin_user":      "text", // enum, domain, enum[]
		"public.bin_widened":   "text",
		"public.bin_retyped":   "text",
		"public.bin_reordered": "binary",
	}
	got := map[string]string{}
	for _, l := range p.logLines() {
		if l.str("msg") == "table copied" {
			got[l.str("table")] = l.str("format")
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("copy formats %v, want %v", got, want)
	}

	// Equal in COPY text form, except the tables whose types differ on
	// purpose: their values are compared as numbers and text.
	diffs, n := e2eDiff(t, e)
	if n != len(want) {
		t.Errorf("compared %d tables, want %d", n, len(want))
	}
	for _, d := range diffs {
		if !strings.HasPrefix(d, "table public.bin_widened: columns differ: ") && !strings.HasPrefix(d, "table public.bin_retyped: columns differ: ") {
			t.Error(d)
		}
	}
	for table, value := range map[string]string{"bin_widened": "small", "bin_retyped": "big"} {
		q := fmt.Sprintf(`SELECT count(*) || ' ' || string_agg(concat_ws('|', id, %s::numeric, label::text), ',' ORDER BY id) FROM public.%s`, value, table)
		if src, tgt := e.src.QueryString(t, q), e.tgt.QueryString(t, q); src != tgt {
			t.Errorf("%s differs:\n source %s\n target %s", table, e2eShorten(src), e2eShorten(tgt))
		}
	}
}

// TestE2EMigrateConcurrentWrites: writes go on while migrate copies and
// catches up; a final migrate after they stop leaves the target equal.
func TestE2EMigrateConcurrentWrites(t *testing.T) {
	e2eEachMajor(t, testE2EMigrateConcurrentWrites)
}

func testE2EMigrateConcurrentWrites(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, e2eChurnSchema(300000))
	w := e2eStartWriter(t, e.src, e2eRand(t), 300001)
	p := e.start("migrate")
	code := p.wait(t, 5*time.Minute)
	ops := w.stop(t)
	if code != 0 {
		t.Fatalf("migrate with concurrent writes exited %d; log:\n%s", code, p.logs())
	}
	if ops < 20 {
		t.Errorf("only %d writer transactions ran during migrate; want the copy to overlap writes", ops)
	}
	t.Logf("%d writer transactions during the first migrate", ops)
	// churn_log has no key: its UPDATEs and DELETEs would now fail on the
	// source, which pgrelay says.
	if l, ok := p.findLog("published tables without a replica identity: UPDATE and DELETE on them now FAIL ON THE SOURCE (cannot update table because it does not have a replica identity and publishes updates); give each a primary key or run ALTER TABLE … REPLICA IDENTITY FULL, or leave them out with PGRELAY_TABLES"); !ok || l.str("tables") != "public.churn_log" {
		t.Errorf("no warning naming public.churn_log as published without a replica identity; log:\n%s", p.logs())
	}
	e.mustRun(2*time.Minute, "migrate")
	e2eCompare(t, e)
}

// e2eChurnSchema creates the tables e2eStartWriter writes to, churn with rows
// rows. churn_log has no key at all, so a transaction applied twice leaves
// duplicate rows there.
func e2eChurnSchema(rows int) string {
	return fmt.Sprintf(`CREATE TABLE churn (id int PRIMARY KEY, v int NOT NULL, note text);
		INSERT INTO churn SELECT i, 0, 'row ' || i FROM generate_series(1, %d) i;
		CREATE TABLE churn_log (seq bigserial, id int, op text);
		CREATE TABLE churn_small (k text PRIMARY KEY, n int);
		INSERT INTO churn_small SELECT 'k' || i, i FROM generate_series(1, 100) i`, rows)
}

// e2eWriter runs small transactions against the churn tables until stopped.
type e2eWriter struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	err    error
	txns   int
}

// e2eStartWriter starts a writer inserting ids from nextID up, updating and
// deleting rows of churn, logging each insert in churn_log (a growing table
// a lost or doubled transaction shows up in), in transactions of one to five
// statements.
func e2eStartWriter(t testing.TB, pg *harness.PG, rng *rand.Rand, nextID int) *e2eWriter {
	t.Helper()
	conn := pg.Conn(t)
	w := &e2eWriter{stopCh: make(chan struct{}), done: make(chan struct{})}
	seed := rng.Uint64()
	go func() {
		defer close(w.done)
		r := rand.New(rand.NewPCG(seed, seed))
		ctx := context.Background()
		next := nextID
		for {
			select {
			case <-w.stopCh:
				return
			default:
			}
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				for range 1 + r.IntN(5) {
					var err error
					switch op := r.IntN(10); {
					case op < 4:
						_, err = tx.Exec(ctx, "INSERT INTO churn VALUES ($1, 0, $2)", next, fmt.Sprintf("new %d\t✓", next))
						if err == nil {
							_, err = tx.Exec(ctx, "INSERT INTO churn_log (id, op) VALUES ($1, 'insert')", next)
						}
						next++
					case op < 7:
						_, err = tx.Exec(ctx, "UPDATE churn SET v = v + 1, note = note || '+' WHERE id = $1", 1+r.IntN(next-1))
					case op < 9:
						_, err = tx.Exec(ctx, "DELETE FROM churn WHERE id = $1", 1+r.IntN(next-1))
					default:
						_, err = tx.Exec(ctx, "UPDATE churn_small SET n = n + 1 WHERE k = $1", fmt.Sprintf("k%d", 1+r.IntN(100)))
					}
					if err != nil {
						return err
					}
				}
				return nil
			})
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				return
			}
			w.txns++
			w.mu.Unlock()
			time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		select {
		case <-w.stopCh:
		default:
			close(w.stopCh)
		}
		<-w.done
	})
	return w
}

// committed is how many transactions the writer has committed so far.
func (w *e2eWriter) committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.txns
}

// stop ends the writer and returns how many transactions it committed.
func (w *e2eWriter) stop(t testing.TB) int {
	t.Helper()
	select {
	case <-w.stopCh:
	default:
		close(w.stopCh)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("writer: %v", w.err)
	}
	return w.txns
}

// TestE2EReplicate: replicate in the background through a series of
// workloads, status, SIGTERM and teardown.
func TestE2EReplicate(t *testing.T) {
	e2eEachMajor(t, testE2EReplicate)
}

func testE2EReplicate(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, e2eWorkload(t, "replicate_schema.sql"))
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)
	e2eCompare(t, e)

	for _, step := range []string{"replicate_mixed.sql", "replicate_identity.sql", "replicate_toast.sql", "replicate_truncate.sql", "replicate_alter.sql", "replicate_big.sql"} {
		e.src.Exec(t, e2eWorkload(t, step))
		e2eSync(t, e, p, 2*time.Minute)
		if diffs, _ := e2eDiff(t, e); len(diffs) > 0 {
			t.Errorf("after %s:\n%s", step, strings.Join(diffs, "\n"))
		}
	}
	// A table created while streaming arrives with its first rows.
	e.src.Exec(t, "CREATE TABLE late (id int PRIMARY KEY, v text); INSERT INTO late VALUES (1, 'late')")
	e2eSync(t, e, p, time.Minute)
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.big_txn WHERE part = 'rolled-back' OR part = 'rolled-back-update'"); got != "0" {
		t.Errorf("%s rows of the rolled-back savepoint on the target", got)
	}

	if major >= 15 {
		e2eReplicateTwoPhase(t, e, p)
	}
	e2eCompare(t, e)

	// status, text and JSON.
	st, raw := e.status(t)
	applied := e2eLSN(t, "applied_lsn", st.AppliedLSN)
	wal := e2eLSN(t, "source_wal_lsn", st.SourceWALLSN)
	if st.Slot.Name != e.slot || !st.Slot.Exists || !st.Slot.Active || st.Slot.ActivePID == 0 || st.Slot.BeingCreated || !st.Seeded ||
		applied == 0 || applied > wal || st.LagBytes != int64(wal-applied) || st.LagSeconds < 0 || st.LastCommitTime == nil ||
		st.Slot.TwoPhase != (major >= 15) || st.SnapshotLSN == "" {
		t.Errorf("pgrelay status --json is not sane:\n%s", raw)
	}
	if confirmed := e2eLSN(t, "confirmed_flush_lsn", st.Slot.ConfirmedFlushLSN); confirmed > applied {
		t.Errorf("slot confirmed %s past the applied %s (feedback before durability)", confirmed, applied)
	}
	indexed := 0
	for _, tb := range st.Tables {
		if tb.State == "indexed" {
			indexed++
		}
	}
	if indexed < 7 {
		t.Errorf("status lists %d indexed tables, want the 7 copied ones:\n%s", indexed, raw)
	}
	text := strings.Join(e.mustRun(time.Minute, "status").out.all(), "\n")
	for _, want := range []string{e.slot, "streaming to pid", "applied", "lag", "seeded", "yes", "public.items", "indexed"} {
		if !strings.Contains(text, want) {
			t.Errorf("pgrelay status lacks %q:\n%s", want, text)
		}
	}
	// The position may have moved on since --json (idle progress): any LSN.
	if !regexp.MustCompile(`(?m)^applied\s+[0-9A-F]+/[0-9A-F]+$`).MatchString(text) {
		t.Errorf("pgrelay status has no applied LSN line:\n%s", text)
	}

	// teardown refuses while the slot streams.
	if busy, code := e.run(time.Minute, "teardown"); code == 0 {
		t.Errorf("teardown while replicating exited 0; log:\n%s", busy.logs())
	}

	// SIGTERM: exit 0, the log names the final durable LSN, which is what the
	// target stores and not behind what the source was told.
	e.src.Exec(t, "INSERT INTO items VALUES (424242, 'last before stop')")
	e2eWaitTarget(t, e, p, time.Minute, "the last row", "SELECT count(*) = 1 FROM public.items WHERE id = 424242")
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM, want 0; log:\n%s", code, p.logs())
	}
	stopped := p.waitLog(t, "stopped cleanly", 0)
	durable := e2eLSN(t, "durable_lsn of the stop line", stopped.str("durable_lsn"))
	stored := e2eLSN(t, "pgrelay.progress", e.tgt.QueryString(t, "SELECT lsn::text FROM pgrelay.progress WHERE slot = $1", e.slot))
	confirmed := e2eLSN(t, "confirmed_flush_lsn", e.src.QueryString(t, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", e.slot))
	if durable != stored || confirmed > durable || durable < applied {
		t.Errorf("after SIGTERM: logged durable %s, target stores %s, slot confirmed %s, applied before %s", durable, stored, confirmed, applied)
	}
	if confirmed != durable {
		t.Errorf("after SIGTERM the slot confirmed %s, the target holds %s: a clean stop confirms what is durable", confirmed, durable)
	}
	for _, l := range p.errOut.all() {
		if strings.Contains(l, e.src.Password) || strings.Contains(l, e.tgt.Password) {
			t.Errorf("log shows a password: %s", l)
		}
	}

	// teardown removes the slot, the publication pgrelay made and the target
	// metadata, and keeps the replicated tables.
	e.mustRun(time.Minute, "teardown")
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "0" {
		t.Errorf("slot still exists after teardown")
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); got != "0" {
		t.Errorf("publication still exists after teardown")
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pg_namespace WHERE nspname = 'pgrelay'"); got != "0" {
		t.Errorf("schema pgrelay still exists on the target after teardown")
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) > 0 FROM public.items"); got != "t" {
		t.Errorf("teardown removed replicated rows")
	}
	// A second teardown finds nothing to do and succeeds.
	e.mustRun(time.Minute, "teardown")
}

// e2eReplicateTwoPhase: prepared transactions become prepared transactions
// on the target under pgrelay's GID, without blocking later transactions.
func e2eReplicateTwoPhase(t *testing.T, e *e2eEnv, p *e2eProc) {
	t.Helper()
	conn := e.src.Conn(t)
	ctx := e2eCtx(t, 5*time.Minute)
	prepare := func(gid, insert string) uint32 {
		t.Helper()
		e2eExec(t, ctx, conn, "BEGIN", insert, "PREPARE TRANSACTION '"+gid+"'")
		xid, err := strconv.ParseUint(e.src.QueryString(t, "SELECT transaction::text FROM pg_prepared_xacts WHERE gid = $1", gid), 10, 32)
		if err != nil {
			t.Fatalf("xid of prepared %s: %v", gid, err)
		}
		want := fmt.Sprintf("pgrelay_%s_%d", e.slot, xid)
		e2eWaitTarget(t, e, p, time.Minute, "prepared transaction "+want, "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE gid = $1 AND database = current_database()", want)
		if got := e2eTargetPrepared(t, e); got != want {
			t.Errorf("target prepared transactions %q, want exactly %q", got, want)
		}
		return uint32(xid)
	}

	gid := "e2e_src_" + e.slot + "_a"
	prepare(gid, "INSERT INTO prepared_rows VALUES (1, 'committed'), (2, 'committed')")
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = $1", gid); got != "1" {
		t.Fatalf("source no longer holds %s prepared", gid)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.prepared_rows"); got != "0" {
		t.Errorf("rows of a prepared transaction visible on the target before COMMIT PREPARED: %s", got)
	}
	// Later transactions apply while the prepared one waits (invariant 4).
	e.src.Exec(t, "INSERT INTO items VALUES (7000, 'while prepared')")
	e2eSync(t, e, p, time.Minute)
	e.src.Exec(t, "COMMIT PREPARED '"+gid+"'")
	e2eWaitTarget(t, e, p, time.Minute, "committed prepared rows", "SELECT count(*) = 2 FROM public.prepared_rows")
	e2eWaitTarget(t, e, p, time.Minute, "no prepared transaction", "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE database = current_database()")

	gid = "e2e_src_" + e.slot + "_b"
	prepare(gid, "INSERT INTO prepared_rows VALUES (3, 'rolled back')")
	e.src.Exec(t, "ROLLBACK PREPARED '"+gid+"'")
	e2eWaitTarget(t, e, p, time.Minute, "no prepared transaction", "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE database = current_database()")
	e2eSync(t, e, p, time.Minute)
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.prepared_rows WHERE id = 3"); got != "0" {
		t.Errorf("a rolled-back prepared transaction's row is on the target")
	}

	// A prepared transaction large enough to be streamed (Stream Prepare).
	gid = "e2e_src_" + e.slot + "_c"
	prepare(gid, "INSERT INTO prepared_rows SELECT i, repeat('s', 200) FROM generate_series(100, 3100) i")
	e.src.Exec(t, "COMMIT PREPARED '"+gid+"'")
	e2eWaitTarget(t, e, p, time.Minute, "committed streamed prepared rows", "SELECT count(*) = 3003 FROM public.prepared_rows")
	e2eSync(t, e, p, time.Minute)
	if got := e2eTargetPrepared(t, e); got != "" {
		t.Errorf("prepared transactions left on the target: %s", got)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pgrelay.prepared WHERE slot = $1", e.slot); got != "0" {
		t.Errorf("pgrelay.prepared keeps %s rows after every prepared transaction finished", got)
	}
}

// TestE2ETwoInstances: a second replicate on the same slot waits, and takes
// over when the first is killed.
func TestE2ETwoInstances(t *testing.T) {
	e2eEachMajor(t, testE2ETwoInstances)
}

func testE2ETwoInstances(t *testing.T, major int) {
	e := e2ePair(t, major)
	// The user's own publication: pgrelay uses it and teardown keeps it.
	e.src.Exec(t, "CREATE TABLE pairs (id int PRIMARY KEY, who text); INSERT INTO pairs VALUES (1, 'before'); CREATE PUBLICATION "+e.pub+" FOR ALL TABLES")
	first := e.start("replicate")
	first.waitLog(t, "streaming", 2*time.Minute)
	second := e.start("replicate")
	second.waitLog(t, "waiting", time.Minute)

	e.src.Exec(t, "INSERT INTO pairs VALUES (2, 'first')")
	e2eSync(t, e, first, time.Minute)
	if second.exited() {
		t.Fatalf("the waiting instance exited: %v; log:\n%s", second.err, second.logs())
	}
	if _, ok := second.findLog("streaming"); ok {
		t.Fatalf("two instances stream from one slot; second log:\n%s", second.logs())
	}

	first.kill()
	e.src.Exec(t, "INSERT INTO pairs VALUES (3, 'second'); UPDATE pairs SET who = 'updated' WHERE id = 1")
	second.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, second, time.Minute)
	e2eCompare(t, e)
	if code := second.term(t, time.Minute); code != 0 {
		t.Errorf("second instance exited %d after SIGTERM; log:\n%s", code, second.logs())
	}
	if _, ok := first.findLog("created publication"); ok {
		t.Errorf("pgrelay claims to have created the user's publication")
	}
	e.mustRun(time.Minute, "teardown")
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); got != "1" {
		t.Errorf("teardown dropped the user's publication")
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "0" {
		t.Errorf("teardown left the slot")
	}
}

// TestE2ECompareDetectsDifferences checks the comparison itself: equal
// tables pass; a changed value, a missing row, a duplicated row, a type and
// an extra column are each reported.
func TestE2ECompareDetectsDifferences(t *testing.T) {
	major := harness.Majors()[0]
	e := e2ePair(t, major)
	ddl := "CREATE TABLE cmp (id int, v text, f float8, b bytea); INSERT INTO cmp VALUES (1, E'a\\tb', 0.1, '\\x00'), (2, NULL, 'NaN', NULL), (3, 'ü', -0, '\\x5c')"
	e.src.Exec(t, ddl+"; CREATE PUBLICATION "+e.pub+" FOR TABLE cmp")
	e.tgt.Exec(t, ddl)
	if diffs, n := e2eDiff(t, e); len(diffs) != 0 || n != 1 {
		t.Fatalf("equal tables: %d tables, diffs %v", n, diffs)
	}
	for _, tc := range []struct{ change, want, undo string }{
		{"UPDATE cmp SET v = 'A' WHERE id = 1", `- source only: "1\ta\\tb`, "UPDATE cmp SET v = E'a\\tb' WHERE id = 1"},
		{"DELETE FROM cmp WHERE id = 2", "source 3 rows, target 2 rows", "INSERT INTO cmp VALUES (2, NULL, 'NaN', NULL)"},
		{"INSERT INTO cmp SELECT * FROM cmp WHERE id = 3", "+ target only: \"3\\tü", "DELETE FROM cmp WHERE id = 3 AND ctid <> (SELECT min(ctid) FROM cmp WHERE id = 3)"},
		{"ALTER TABLE cmp ALTER COLUMN f TYPE numeric USING 0", "f is double precision on the source, numeric on the target", "ALTER TABLE cmp ALTER COLUMN f TYPE float8 USING 0"},
		{"ALTER TABLE cmp ADD COLUMN extra int", "extra integer only on the target", "ALTER TABLE cmp DROP COLUMN extra"},
	} {
		e.tgt.Exec(t, tc.change)
		diffs, _ := e2eDiff(t, e)
		if got := strings.Join(diffs, "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("after %s: diff\n%s\nlacks %q", tc.change, got, tc.want)
		}
		e.tgt.Exec(t, tc.undo)
	}
}

// TestE2ETwoPhaseOff: with PGRELAY_TWO_PHASE=off a prepared source
// transaction reaches the target only when committed, as a plain one.
func TestE2ETwoPhaseOff(t *testing.T) {
	e2eEachMajor(t, testE2ETwoPhaseOff)
}

func testE2ETwoPhaseOff(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.extra = append(e.extra, "PGRELAY_TWO_PHASE=off")
	e.src.Exec(t, "CREATE TABLE tp_off (id int PRIMARY KEY, v text)")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	conn := e.src.Conn(t)
	ctx := e2eCtx(t, 2*time.Minute)
	for i, tc := range []struct {
		insert string
		commit bool
	}{
		{"INSERT INTO tp_off VALUES (1, 'a'), (2, 'b')", true},
		{"INSERT INTO tp_off VALUES (3, 'rolled back')", false},
		{"INSERT INTO tp_off SELECT i, repeat('s', 200) FROM generate_series(100, 3100) i", true}, // streamed
	} {
		gid := fmt.Sprintf("e2e_off_%s_%d", e.slot, i)
		e2eExec(t, ctx, conn, "BEGIN", tc.insert, "PREPARE TRANSACTION '"+gid+"'")
		e2eSync(t, e, p, time.Minute)
		if got := e2eTargetPrepared(t, e); got != "" {
			t.Errorf("PGRELAY_TWO_PHASE=off, yet the target holds prepared transactions %s", got)
		}
		if tc.commit {
			e.src.Exec(t, "COMMIT PREPARED '"+gid+"'")
		} else {
			e.src.Exec(t, "ROLLBACK PREPARED '"+gid+"'")
		}
		e2eSync(t, e, p, time.Minute)
		e2eCompare(t, e)
	}
	st, raw := e.status(t)
	if st.Slot.TwoPhase {
		t.Errorf("PGRELAY_TWO_PHASE=off, yet the slot decodes two-phase:\n%s", raw)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}

// TestE2EStatusTables: status lists every published table: those the
// snapshot copied with their copy state, a table created later and written
// to as replicated, one not written to yet as waiting.
func TestE2EStatusTables(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, `CREATE TABLE st_copied (id int PRIMARY KEY); INSERT INTO st_copied VALUES (1), (2); CREATE TABLE st_gone (id int PRIMARY KEY);
		CREATE TABLE "St.Odd Name" (id int PRIMARY KEY)`)
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "CREATE TABLE st_later (id int PRIMARY KEY); INSERT INTO st_later VALUES (1); CREATE TABLE st_empty (id int PRIMARY KEY)")
	e2eSync(t, e, p, time.Minute)
	st, raw := e.status(t)
	got := map[string]string{}
	for _, tb := range st.Tables {
		got[tb.Table] = fmt.Sprintf("%s/%t/%d", tb.State, tb.Copied, tb.Rows)
	}
	want := map[string]string{"public.st_copied": "indexed/true/2", "public.st_later": "replicated/false/0", "public.st_empty": "waiting/false/0"}
	for table, w := range want {
		if got[table] != w {
			t.Errorf("status of %s: %q, want %q; status:\n%s", table, got[table], w, raw)
		}
	}
	// A name with a dot and capitals: its parts in JSON, quoted in the text.
	odd := false
	for _, tb := range st.Tables {
		odd = odd || tb.Schema == "public" && tb.Name == "St.Odd Name" && tb.Table == "public.St.Odd Name"
	}
	if !odd {
		t.Errorf("status --json does not give public.\"St.Odd Name\" its schema and name:\n%s", raw)
	}
	text := e.mustRun(time.Minute, "status")
	if out := strings.Join(text.out.all(), "\n"); !strings.Contains(out, "public.st_later") || !strings.Contains(out, "replicated") {
		t.Errorf("status text does not list public.st_later as replicated:\n%s", out)
	} else if !strings.Contains(out, `public."St.Odd Name"`) {
		t.Errorf("status text does not quote public.\"St.Odd Name\":\n%s", out)
	}
	// A copied table the publication no longer publishes says so.
	e.src.Exec(t, "DROP TABLE st_gone")
	st, raw = e.status(t)
	for _, tb := range st.Tables {
		got[tb.Table] = tb.State
	}
	if got["public.st_gone"] != "unpublished" || got["public.st_copied"] != "indexed" {
		t.Errorf("status after public.st_gone was dropped on the source: %q and %q, want unpublished and indexed; status:\n%s", got["public.st_gone"], got["public.st_copied"], raw)
	}
	// A slot with nothing applied has no lag to report, not the whole WAL,
	// and not 0 either, which would read as caught up.
	other := *e
	other.slot = e.slot + "_none"
	if st, raw := other.status(t); st.Slot.Exists || !strings.Contains(raw, `"applied_lsn": null`) ||
		!strings.Contains(raw, `"lag_bytes": null`) || !strings.Contains(raw, `"lag_seconds": null`) {
		t.Errorf("status of a slot with nothing applied:\n%s", raw)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	// Killed while creating the target tables (bb15): the seed unfinished,
	// tables created without copy states yet. They are pending, not
	// replicated: nothing was copied into them.
	e.tgt.Exec(t, "UPDATE pgrelay.seed SET snapshot_done = false, done_at = NULL WHERE slot = $1", e.slot)
	e.tgt.Exec(t, "DELETE FROM pgrelay.table_state WHERE slot = $1 AND name = 'st_copied'", e.slot)
	st, raw = e.status(t)
	for _, tb := range st.Tables {
		got[tb.Table] = fmt.Sprintf("%s/%t", tb.State, tb.Copied)
	}
	if st.Seeded || got["public.st_copied"] != "pending/false" || got["public.st_empty"] != "pending/false" {
		t.Errorf("status of an interrupted copy: st_copied %q, st_empty %q, want pending/false for both; status:\n%s", got["public.st_copied"], got["public.st_empty"], raw)
	}
}

// TestE2EEncodingsAndMoneyLocale: databases in LATIN1 on either side hold the
// same characters as their UTF8 peer, through the copy and the stream (pgrelay
// talks UTF8 to both, and each server converts), and verify compares them as
// characters, not bytes. money keeps its stored amount when lc_monetary
// differs between the databases (de_DE writes "1.234,56 €", C "$1,234.56").
func TestE2EEncodingsAndMoneyLocale(t *testing.T) {
	major := harness.Majors()[0]
	for _, c := range []struct {
		name         string
		srcEnc       string // "" = the server's UTF8
		tgtEnc       string
		srcLC, tgtLC string // lc_monetary
	}{
		{name: "latin1 source", srcEnc: "LATIN1", srcLC: "C", tgtLC: "de_DE.UTF-8"},
		{name: "latin1 target", tgtEnc: "LATIN1", srcLC: "de_DE.UTF-8", tgtLC: "C"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var srcOpts, tgtOpts []harness.PGOption
			if c.srcEnc != "" {
				srcOpts = append(srcOpts, harness.WithEncoding(c.srcEnc))
			}
			if c.tgtEnc != "" {
				tgtOpts = append(tgtOpts, harness.WithEncoding(c.tgtEnc))
			}
			src := harness.Postgres(t, major, srcOpts...)
			tgt := harness.Postgres(t, e2eTargetMajor, tgtOpts...)
			e := e2eNewEnv(t, src, tgt)
			for _, side := range []struct {
				pg *harness.PG
				lc string
			}{{src, c.srcLC}, {tgt, c.tgtLC}} {
				side.pg.Exec(t, "ALTER DATABASE "+pgx.Identifier{side.pg.DB}.Sanitize()+" SET lc_monetary = '"+side.lc+"'")
			}
			// chr() makes the character of that code point in the database's
			// encoding; chr(195) || chr(169) is "Ã©", whose LATIN1 bytes are
			// UTF8's for "é": passed on as bytes, it would turn into "é".
			const rows = `INSERT INTO enc VALUES ($1, chr(233) || 't' || chr(252), chr(233), ($1 * 100000 + 1234.56)::numeric::money),
				($1 + 1, chr(195) || chr(169), chr(216), (-$1 - 0.01)::numeric::money)`
			src.Exec(t, "CREATE TABLE enc (id int PRIMARY KEY, t text, c char(2), m money)")
			src.Exec(t, rows, 1)
			e.mustRun(3*time.Minute, "migrate")
			src.Exec(t, rows, 10)
			src.Exec(t, "UPDATE enc SET m = m + 1::numeric::money, t = t || chr(241) WHERE id = 1")
			e.mustRun(3*time.Minute, "migrate")
			// Each character as its code point, money as its amount.
			const q = `SELECT string_agg(id || ':' || (SELECT string_agg(ascii(ch)::text, ' ') FROM regexp_split_to_table(t || '|' || c, '') ch) || ':' || (m::numeric)::text, ', ' ORDER BY id) FROM public.enc`
			want := "1:233 116 252 241 124 233:101235.56, 2:195 169 124 216:-1.01, 10:233 116 252 124 233:1001234.56, 11:195 169 124 216:-10.01"
			if got := src.QueryString(t, q); got != want {
				t.Fatalf("source holds %s, want %s", got, want)
			}
			if got := tgt.QueryString(t, q); got != want {
				t.Errorf("target holds %s\nsource holds %s", got, want)
			}
			if r, p, code := e.verify(t, 2*time.Minute); code != 0 {
				t.Errorf("verify exited %d, want 0 (equal): %+v; log:\n%s", code, r, p.logs())
			}
		})
	}
}

// TestE2ESlotWaitsForPrepared: a prepared transaction left open on the source
// holds up the creation of the slot; migrate says so, naming it, and goes on
// once it is rolled back.
func TestE2ESlotWaitsForPrepared(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, "CREATE TABLE waits (id int PRIMARY KEY)")
	e.src.Exec(t, "BEGIN; INSERT INTO waits VALUES (1); PREPARE TRANSACTION 'left_behind'")
	// The source server is shared: a prepared transaction left there would
	// hold up every test's slot creation.
	t.Cleanup(func() {
		if e.src.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'left_behind'") != "0" {
			e.src.Exec(t, "ROLLBACK PREPARED 'left_behind'")
		}
	})
	p := e.start("migrate")
	l := p.waitLog(t, "creating the slot is waiting for the source's open transactions to end (commit or roll back prepared transactions left behind; one named pgrelay_… is held by a pgrelay replicating into a database of this server and ends when its source's does)", time.Minute)
	if !strings.Contains(fmt.Sprint(l["prepared"]), "left_behind") {
		t.Errorf("the wait does not name the prepared transaction: %v", l)
	}
	// status says the slot is being created, not streaming.
	sp := e.mustRun(time.Minute, "status")
	if out := strings.Join(sp.out.all(), "\n"); !strings.Contains(out, "being created by pid") ||
		strings.Contains(out, "streaming to") || strings.Contains(out, "confirmed 0/0") || !strings.Contains(out, "nothing yet") {
		t.Errorf("status while the slot is being created:\n%s\n%s", out, sp.logs())
	}
	// And so does status --json, with no confirmed position yet.
	if st, raw := e.status(t); !st.Slot.BeingCreated || !st.Slot.Active || st.Slot.ActivePID == 0 ||
		strings.Contains(raw, "confirmed_flush_lsn") || st.AppliedLSN != "" {
		t.Errorf("status --json while the slot is being created:\n%s", raw)
	} else if len(st.Tables) != 1 || st.Tables[0].State != "pending" {
		t.Errorf("status --json while the slot of the first copy is being created: want the table pending:\n%s", raw)
	}
	e.src.Exec(t, "ROLLBACK PREPARED 'left_behind'")
	p.waitLog(t, "caught up", 2*time.Minute)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("migrate exited %d; log:\n%s", code, p.logs())
	}
}

// TestE2EPreparedAcrossSlotCreation: a transaction prepared while the slot is
// being created, after the point from which the slot decodes every
// transaction whole and before its consistent point (where the snapshot copy
// is taken), and committed after the copy. The copy does not see it (it was
// not committed), and the source does not send it at its PREPARE (before the
// slot's two_phase_at) but whole, right before its COMMIT PREPARED, with a
// prepare position before the copy's. pgrelay skipped it as applied before
// the copy: its row was missing on the target.
//
// The slot's creation goes through its phases on transactions the test
// holds prepared: it waits for those running when it started (pc_a), then,
// decoding whole every transaction that starts from there, for those
// running once pc_a ended (pc_b); pc_t starts while it waits for pc_b.
// A server of its own: another test's transactions would move the phases.
func TestE2EPreparedAcrossSlotCreation(t *testing.T) {
	e := e2eNewestDedicatedPairFrom15(t, "slots created with two_phase need")
	e.src.Exec(t, "CREATE TABLE pc (id int PRIMARY KEY, v text); INSERT INTO pc VALUES (1, 'seed')")
	e.src.Exec(t, "BEGIN; INSERT INTO pc VALUES (2, 'a'); PREPARE TRANSACTION 'pc_a'")
	// waitedFor waits until a session waits for the prepared transaction gid
	// to end: the walsender creating the slot.
	waitedFor := func(gid string) {
		t.Helper()
		harness.Eventually(t, time.Minute, "a session to wait for prepared transaction "+gid, func() error {
			if e.src.QueryString(t, `SELECT count(*) FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_prepared_xacts p ON l.transactionid = p.transaction
				WHERE p.gid = $1 AND l.locktype = 'transactionid' AND NOT l.granted`, gid) == "0" {
				return errors.New("nothing waits for it")
			}
			return nil
		})
	}
	p := e.start("migrate")
	waitedFor("pc_a")
	e.src.Exec(t, "BEGIN; INSERT INTO pc VALUES (3, 'b'); PREPARE TRANSACTION 'pc_b'")
	e.src.Exec(t, "COMMIT PREPARED 'pc_a'")
	waitedFor("pc_b")
	e.src.Exec(t, "BEGIN; INSERT INTO pc VALUES (4, 't'); UPDATE pc SET v = 'seed, t' WHERE id = 1; PREPARE TRANSACTION 'pc_t'")
	e.src.Exec(t, "COMMIT PREPARED 'pc_b'")
	p.waitLog(t, "caught up", 2*time.Minute)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("migrate exited %d; log:\n%s", code, p.logs())
	}
	e.src.Exec(t, "COMMIT PREPARED 'pc_t'")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	if got := e.tgt.QueryString(t, "SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM pc"); got != "1:seed, t,2:a,3:b,4:t" {
		t.Errorf("target rows %s, want 1:seed, t,2:a,3:b,4:t", got)
	}
	e2eCompare(t, e)
}

// TestE2EEnumLabelBehindPrepared: a label added to an enum reaches the target
// with the next Relation message of a table using it; a row using it first
// is refused, and a new session's Relation messages add it. When the table's
// first Relation message in that session came in the body of a prepared
// transaction the target already held (not applied again), the label never
// came, and every new session was refused the row again until pgrelay gave
// up (found by a black-box run under kills, PG18 source).
func TestE2EEnumLabelBehindPrepared(t *testing.T) {
	e := e2eNewestDedicatedPairFrom15(t, "slots created with two_phase need")
	e.src.Exec(t, "CREATE TYPE mood_bp AS ENUM ('a'); CREATE TABLE ebp (id int PRIMARY KEY, m mood_bp, v text); INSERT INTO ebp VALUES (0, 'a', 'x')")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	// The table's Relation message is sent in this session before the label
	// is added, and not again for the rows after it.
	e.src.Exec(t, "INSERT INTO ebp VALUES (1, 'a', 'y')")
	e2eSync(t, e, p, time.Minute)
	e.src.Exec(t, "ALTER TYPE mood_bp ADD VALUE 'c'")
	e.src.Exec(t, "BEGIN; INSERT INTO ebp VALUES (3, 'a', 'p2'); PREPARE TRANSACTION 'ebp_p2'")
	e.src.Exec(t, "INSERT INTO ebp VALUES (4, 'c', 'after')")
	e2eWaitTarget(t, e, p, 2*time.Minute, "the row using the new label", "SELECT count(*) = 1 FROM public.ebp WHERE id = 4")
	e.src.Exec(t, "COMMIT PREPARED 'ebp_p2'")
	e2eSyncCompareStop(t, e, p)
}

// TestE2EPreparedCommittedDDLOutside: a change of a table's definition
// committed on the source on its own (no row changed with it), whose Relation
// message first comes in a prepared transaction, is applied on the target in
// a transaction of its own, not inside the prepared one: there the
// ALTER TABLE held the table's lock until COMMIT PREPARED, and the insert of a
// transaction committed in between waited for it for ever (found by a
// black-box replicate, PG18 source).
func TestE2EPreparedCommittedDDLOutside(t *testing.T) {
	e := e2eNewestDedicatedPairFrom15(t, "slots created with two_phase need")
	e.src.Exec(t, "CREATE TABLE pdo (id int PRIMARY KEY, v text); INSERT INTO pdo VALUES (1, 'a')")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "INSERT INTO pdo VALUES (2, 'b')")
	e2eSync(t, e, p, time.Minute)
	e.src.Exec(t, "ALTER TABLE pdo ALTER COLUMN v TYPE varchar(50)")
	e.src.Exec(t, "BEGIN; INSERT INTO pdo VALUES (10, 'x'); PREPARE TRANSACTION 'pdo_p3'")
	e2eDDLOutsidePrepared(t, e, p, "pdo", "pdo_p3")
}

// e2eDDLOutsidePrepared checks, while the source holds prepared transaction
// gid and replicate p streams, that a row committed into table (id, v) after
// it reaches the target, whose column v has become varchar(50), while the
// target holds gid prepared; then commits gid and compares.
func e2eDDLOutsidePrepared(t *testing.T, e *e2eEnv, p *e2eProc, table, gid string) {
	t.Helper()
	e.src.Exec(t, "INSERT INTO "+table+" VALUES (11, 'y')")
	e2eWaitTarget(t, e, p, time.Minute, "the row committed after the prepared transaction", "SELECT count(*) = 1 FROM public."+table+" WHERE id = 11")
	if got := e.tgt.QueryString(t, "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'v'", "public."+table); got != "character varying(50)" {
		t.Errorf("target column %s.v is %s, want character varying(50)", table, got)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts"); got != "1" {
		t.Errorf("the target holds %s prepared transactions, want the one the source holds", got)
	}
	e.src.Exec(t, "COMMIT PREPARED '"+gid+"'")
	e2eSyncCompareStop(t, e, p)
	if strings.Contains(p.logs(), "applied inside a prepared transaction") {
		t.Errorf("the change of definition joined the prepared transaction; log:\n%s", p.logs())
	}
}

// TestE2EPreparedCommittedDDLAfterOtherTable: as TestE2EPreparedCommittedDDLOutside,
// but the prepared transaction changed another table before the one whose
// definition changed, so its target transaction is open when the Relation
// message comes: the table is altered in a target transaction of its own on
// another session all the same. Inside the prepared one, the insert committed
// in between waited for COMMIT PREPARED for ever.
func TestE2EPreparedCommittedDDLAfterOtherTable(t *testing.T) {
	e := e2eNewestDedicatedPairFrom15(t, "slots created with two_phase need")
	e.src.Exec(t, `CREATE TABLE pdu (id int PRIMARY KEY); CREATE TABLE pdt (id int PRIMARY KEY, v text);
		INSERT INTO pdt VALUES (1, 'a')`)
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	// The session knows the table's definition before the change.
	e.src.Exec(t, "INSERT INTO pdt VALUES (2, 'b')")
	e2eSync(t, e, p, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held := e.src.Conn(t)
	if _, err := held.Exec(ctx, "BEGIN; INSERT INTO pdu VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// Committed while the transaction is open: it has not touched pdt.
	e.src.Exec(t, "ALTER TABLE pdt ALTER COLUMN v TYPE varchar(50)")
	if _, err := held.Exec(ctx, "INSERT INTO pdt VALUES (10, 'x'); PREPARE TRANSACTION 'pdt_p'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if e.src.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'pdt_p'") != "0" {
			e.src.Exec(t, "ROLLBACK PREPARED 'pdt_p'")
		}
	})
	e2eDDLOutsidePrepared(t, e, p, "pdt", "pdt_p")
}

// TestE2EUnreachableTargetCreatesNothing: a target database that does not
// exist stops migrate with one line, before anything is created on the source.
func TestE2EUnreachableTargetCreatesNothing(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, "CREATE TABLE untouched (id int PRIMARY KEY)")
	u := strings.Replace(e.tgt.URL(), "/"+e.tgt.DB, "/no_such_database_here", 1)
	if u == e.tgt.URL() {
		t.Fatalf("cannot make a URL to a missing database from %s", e.tgt.URL())
	}
	e.extra = append(e.extra, "PGRELAY_TARGET_URL="+u)
	p, code := e.run(time.Minute, "migrate")
	if code != 1 || !strings.Contains(p.logs(), "no_such_database_here") {
		t.Errorf("migrate to a missing target database exited %d; log:\n%s", code, p.logs())
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); got != "0" {
		t.Errorf("the source has publication %s although the target was unreachable", e.pub)
	}
	// teardown with that target URL drops nothing on the source either.
	e.extra = nil
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e.extra = append(e.extra, "PGRELAY_TARGET_URL="+u)
	if p, code := e.run(time.Minute, "teardown"); code != 1 {
		t.Errorf("teardown with a missing target database exited %d; log:\n%s", code, p.logs())
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "1" {
		t.Errorf("teardown with an unreachable target dropped the slot")
	}
	e.extra = nil
	e.mustRun(time.Minute, "teardown")
}

// TestE2EMigrateSequences: migrate ends by giving the target the sequences of
// serial and identity columns with the source's values, so that rows inserted
// on the target after a cutover get the next values, not duplicates. That
// includes sequences whose next value is not last_value + increment (is_called
// false: ALTER SEQUENCE … RESTART, setval(…, false)).
func TestE2EMigrateSequences(t *testing.T) {
	e2eEachMajor(t, testE2EMigrateSequences)
}

func testE2EMigrateSequences(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, `CREATE TABLE sq_serial (id serial PRIMARY KEY, v text);
		CREATE TABLE sq_ident (id bigint GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10) PRIMARY KEY, v text);
		CREATE TABLE sq_unused (id bigserial PRIMARY KEY);
		INSERT INTO sq_serial (v) SELECT 'a' FROM generate_series(1, 5);
		INSERT INTO sq_ident (v) VALUES ('a'), ('b');
		CREATE TABLE sq_restart (id serial PRIMARY KEY, v text);
		INSERT INTO sq_restart (id, v) SELECT g, 'a' FROM generate_series(1, 99) g;
		ALTER SEQUENCE sq_restart_id_seq RESTART WITH 100;
		CREATE TABLE sq_setval (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY);
		INSERT INTO sq_setval SELECT g FROM generate_series(1, 20) g;
		SELECT setval(pg_get_serial_sequence('sq_setval', 'id'), 21, false);
		CREATE TABLE sq_part (id bigserial, k int NOT NULL, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
		CREATE TABLE sq_part_1 PARTITION OF sq_part FOR VALUES IN (1);
		CREATE TABLE sq_part_2 PARTITION OF sq_part FOR VALUES IN (2);
		INSERT INTO sq_part (k) VALUES (1), (2), (1)`)
	if major >= 17 {
		// Partitions of a partitioned table's identity column share its
		// sequence from PostgreSQL 17 on.
		e.src.Exec(t, `CREATE TABLE sq_part_ident (id bigint GENERATED ALWAYS AS IDENTITY, k int NOT NULL, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
			CREATE TABLE sq_part_ident_1 PARTITION OF sq_part_ident FOR VALUES IN (1);
			CREATE TABLE sq_part_ident_2 PARTITION OF sq_part_ident FOR VALUES IN (2);
			INSERT INTO sq_part_ident (k) VALUES (1), (2), (2), (2)`)
	}
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "sequences set", 0)
	// Published partition by partition, the partitions are tables of their
	// own on the target, each taking its ids from the one sequence.
	partNext := func(table string, k int) string {
		return e.tgt.QueryString(t, fmt.Sprintf("INSERT INTO public.%s (k) VALUES (%d) RETURNING id::text", table, k))
	}
	if got := partNext("sq_part_2", 2) + "," + partNext("sq_part_1", 1); got != "4,5" {
		t.Errorf("next sq_part_2 and sq_part_1 ids on the target %s, want 4,5 (their partitioned table's sequence)", got)
	}
	e.tgt.Exec(t, "DELETE FROM public.sq_part_1 WHERE id = 5; DELETE FROM public.sq_part_2 WHERE id = 4")
	if major >= 17 {
		if got := partNext("sq_part_ident_1", 1); got != "5" {
			t.Errorf("next sq_part_ident_1 id on the target %s, want 5", got)
		}
		e.tgt.Exec(t, "DELETE FROM public.sq_part_ident_1 WHERE id = 5")
	}
	next := func(table string) string {
		return e.tgt.QueryString(t, "INSERT INTO public."+table+" DEFAULT VALUES RETURNING id::text")
	}
	if got := next("sq_restart"); got != "100" {
		t.Errorf("next sq_restart id on the target %s, want 100 (ALTER SEQUENCE … RESTART WITH 100 on the source)", got)
	}
	if got := next("sq_setval"); got != "21" {
		t.Errorf("next sq_setval id on the target %s, want 21 (setval(…, 21, false) on the source)", got)
	}
	e.tgt.Exec(t, "DELETE FROM public.sq_restart WHERE id = 100; DELETE FROM public.sq_setval WHERE id = 21")
	if got := next("sq_serial"); got != "6" {
		t.Errorf("next sq_serial id on the target %s, want 6", got)
	}
	if got := next("sq_ident"); got != "120" {
		t.Errorf("next sq_ident id on the target %s, want 120", got)
	}
	if got := next("sq_unused"); got != "1" {
		t.Errorf("next sq_unused id on the target %s, want 1", got)
	}
	// Target rows of our own are in the way of a compare: take them out.
	e.tgt.Exec(t, "DELETE FROM public.sq_serial WHERE id = 6; DELETE FROM public.sq_ident WHERE id = 120; DELETE FROM public.sq_unused")
	// A second migrate moves them on.
	e.src.Exec(t, "INSERT INTO sq_serial (v) SELECT 'b' FROM generate_series(1, 10); INSERT INTO sq_ident (v) VALUES ('c')")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "sequences set", 0)
	e2eCompare(t, e)
	if got := next("sq_serial"); got != "16" {
		t.Errorf("after the second migrate, next sq_serial id on the target %s, want 16", got)
	}
	if got := next("sq_ident"); got != "130" {
		t.Errorf("after the second migrate, next sq_ident id on the target %s, want 130", got)
	}
}

// TestE2EPreparedDDLRestart: pgrelay is killed while the target holds a
// prepared transaction that altered and truncated a table (which holds the
// table's lock until COMMIT PREPARED, on both servers). The restart reads the
// table's facts and gets the prepared transaction's body again: neither may
// wait for that lock.
func TestE2EPreparedDDLRestart(t *testing.T) {
	e2eEachMajor(t, testE2EPreparedDDLRestart)
}

func testE2EPreparedDDLRestart(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, "CREATE TABLE pr (id int PRIMARY KEY, v text DEFAULT 'x', g int GENERATED ALWAYS AS (id * 2) STORED); INSERT INTO pr SELECT g, 'v' || g FROM generate_series(1, 5) g")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)
	conn := e.src.Conn(t)
	ctx := e2eCtx(t, 5*time.Minute)
	e2eExec(t, ctx, conn, "BEGIN", "ALTER TABLE pr ADD COLUMN n int", "INSERT INTO pr (id, n) VALUES (6, 6)",
		"PREPARE TRANSACTION 'pr1'")
	e2eWaitTarget(t, e, p, 2*time.Minute, "the prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	// status answers meanwhile (PostgreSQL 18's pg_publication_tables waits
	// for the lock; status says what it could not list instead).
	if st, code := e.run(time.Minute, "status"); code != 0 {
		t.Errorf("status while a prepared transaction holds a table's lock: exit %d; log:\n%s", code, st.logs())
	}
	p.kill()
	e.src.Exec(t, "CREATE TABLE other (id int PRIMARY KEY); INSERT INTO other VALUES (1)")
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "COMMIT PREPARED 'pr1'")
	e2eSync(t, e, p, time.Minute)
	e2eCompare(t, e)
	// TRUNCATE in a prepared transaction, killed in between.
	e2eExec(t, ctx, conn, "BEGIN", "TRUNCATE pr", "INSERT INTO pr (id) VALUES (7)", "PREPARE TRANSACTION 'pr2'")
	e2eWaitTarget(t, e, p, 2*time.Minute, "the prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	p.kill()
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "COMMIT PREPARED 'pr2'")
	e2eSyncCompareStop(t, e, p)
}

// TestE2EPreparedAddColumn: a column added with a default inside a prepared
// transaction. The source catalog shows the default (and what older rows
// hold) only after COMMIT PREPARED, while the target prepares the transaction
// long before: the older target rows get the value when it commits, also when
// pgrelay is killed in between, and also for a prepared transaction large
// enough to be streamed.
func TestE2EPreparedAddColumn(t *testing.T) {
	e2eEachMajor(t, testE2EPreparedAddColumn)
}

// TestE2EPreparedRenameColumn: a column renamed inside a prepared transaction
// cannot be applied as prepared (the source catalog shows the rename only at
// COMMIT PREPARED): pgrelay stops saying which transaction it is and what to
// do, and after COMMIT PREPARED a new run catches up.
func TestE2EPreparedRenameColumn(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE pr (id int PRIMARY KEY, v text); INSERT INTO pr VALUES (1, 'a')")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)
	e.src.Exec(t, "BEGIN; ALTER TABLE pr RENAME COLUMN v TO vv; INSERT INTO pr VALUES (2, 'p'); PREPARE TRANSACTION 'pr_ren'")
	if code := p.wait(t, 2*time.Minute); code != 1 {
		t.Fatalf("replicate exited %d, want 1; log:\n%s", code, p.logs())
	}
	if out := p.logs(); !strings.Contains(out, `prepared transaction "pr_ren"`) || !strings.Contains(out, "PGRELAY_TWO_PHASE=off") {
		t.Errorf("the error does not name the prepared transaction and the way out; log:\n%s", out)
	}
	e.src.Exec(t, "COMMIT PREPARED 'pr_ren'")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
}

func testE2EPreparedAddColumn(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, "CREATE TABLE pa (id int PRIMARY KEY, v text); INSERT INTO pa SELECT g, 'v' || g FROM generate_series(1, 5) g")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)
	conn := e.src.Conn(t)
	ctx := e2eCtx(t, 5*time.Minute)
	prepare := func(gid string, stmts ...string) {
		t.Helper()
		e2eExec(t, ctx, conn, append(append([]string{"BEGIN"}, stmts...), "PREPARE TRANSACTION '"+gid+"'")...)
		e2eWaitTarget(t, e, p, 2*time.Minute, "the prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	}

	// Rows the transaction writes before the ALTER are older than the column too.
	prepare("pa1", "UPDATE pa SET v = 'pre' WHERE id = 3", "INSERT INTO pa VALUES (9, 'pre')",
		"ALTER TABLE pa ADD COLUMN c int NOT NULL DEFAULT 7, ADD COLUMN d text DEFAULT 'dflt', ADD COLUMN n int",
		"INSERT INTO pa VALUES (6, 'v6', 8, NULL, 1)", "UPDATE pa SET v = 'u' WHERE id = 1", "ALTER TABLE pa ALTER COLUMN n SET DEFAULT 3")
	// Another table's transactions apply meanwhile.
	e.src.Exec(t, "CREATE TABLE other (id int PRIMARY KEY); INSERT INTO other VALUES (1)")
	e.src.Exec(t, "COMMIT PREPARED 'pa1'")
	e2eSync(t, e, p, time.Minute)
	e2eCompare(t, e)

	// Killed between PREPARE and COMMIT PREPARED, once the slot has passed
	// the PREPARE: the next session's stream starts after it and sends only
	// the COMMIT PREPARED, so its first Relation message of pa comes inside
	// pa3, which must still fill the column pa3 adds (it did not: a flake).
	// pgrelay acknowledges the ends of transactions: the first after before
	// is pa2's PREPARE.
	before := e2eLSN(t, "WAL position", e.src.QueryString(t, "SELECT pg_current_wal_lsn()::text"))
	prepare("pa2", "ALTER TABLE pa ADD COLUMN e numeric DEFAULT 1.50", "DELETE FROM pa WHERE id = 2")
	e2eAwaitConfirmedPast(t, e, before, "the PREPARE")
	p.kill()
	e.src.Exec(t, "COMMIT PREPARED 'pa2'")
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, time.Minute)
	e2eCompare(t, e)

	// Streamed: Stream Prepare replays the whole transaction at once.
	prepare("pa3", "ALTER TABLE pa ADD COLUMN f timestamptz DEFAULT '2026-01-02 03:04:05+00'",
		"INSERT INTO pa (id, v) SELECT g, repeat('s', 200) FROM generate_series(100, 3100) g")
	e.src.Exec(t, "COMMIT PREPARED 'pa3'")
	e2eSync(t, e, p, time.Minute)
	e2eCompare(t, e)

	// Renamed on the source after COMMIT PREPARED, before pgrelay applies
	// it: the fill value is the renamed table's, found by its OID.
	before = e2eLSN(t, "WAL position", e.src.QueryString(t, "SELECT pg_current_wal_lsn()::text"))
	prepare("pa4", "ALTER TABLE pa ADD COLUMN g2 text DEFAULT 'g2'", "UPDATE pa SET v = 'pa4' WHERE id = 4")
	e2eAwaitConfirmedPast(t, e, before, "the PREPARE")
	p.kill()
	e.src.Exec(t, "COMMIT PREPARED 'pa4'")
	e.src.Exec(t, "ALTER TABLE pa RENAME TO pa_r; UPDATE pa_r SET v = 'r' WHERE id = 5")
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSyncCompareStop(t, e, p)
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pa_r WHERE g2 IS DISTINCT FROM 'g2'"); got != "0" {
		t.Errorf("%s target rows of pa_r do not hold the fill value g2", got)
	}
}

// TestE2EMigrateInterrupted: a migrate stopped by SIGTERM, during the copy or
// while catching up, exits 1 (a job runner must not take it for done); the
// next run resumes and exits 0.
func TestE2EMigrateInterrupted(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE mi (id int PRIMARY KEY, v text); INSERT INTO mi SELECT g, repeat('x', 100) FROM generate_series(1, 200000) g")
	p := e.start("migrate")
	p.waitLog(t, "created slot", 2*time.Minute)
	if code := p.term(t, 2*time.Minute); code != 1 || !strings.Contains(p.logs(), "run pgrelay migrate again") {
		t.Errorf("migrate stopped by SIGTERM during the copy: exit %d, want 1 with advice; log:\n%s", code, p.logs())
	}
	// status says the copy is unfinished, not that an older slot's position
	// is in the way.
	sp := e.mustRun(time.Minute, "status")
	if out := strings.Join(sp.out.all(), "\n"); !strings.Contains(out, "nothing yet: the snapshot copy is not finished") || strings.Contains(out, "older slot") {
		t.Errorf("status after the first copy was interrupted:\n%s\n%s", out, sp.logs())
	}
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
}

// TestE2EStatusSlotWithoutSeed: a first copy stopped after creating its slot
// but before recording it on the target: status says the copy is unfinished
// and the tables pending, and the next migrate copies them under a new slot.
func TestE2EStatusSlotWithoutSeed(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE sws (id int PRIMARY KEY, v text); INSERT INTO sws SELECT g, 'v' FROM generate_series(1, 100) g")
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE sws")
	// A run sets the target's metadata up before it creates its slot.
	migrationsApplied(t, e.tgt)
	e.src.Exec(t, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", e.slot)
	sp := e.mustRun(time.Minute, "status")
	if out := strings.Join(sp.out.all(), "\n"); !strings.Contains(out, "nothing yet: the snapshot copy is not finished (it was stopped before it began") {
		t.Errorf("status of a slot the target holds no seed for:\n%s\n%s", out, sp.logs())
	}
	if st, raw := e.status(t); len(st.Tables) != 1 || st.Tables[0].State != "pending" || st.AppliedLSN != "" {
		t.Errorf("status --json of a slot the target holds no seed for:\n%s", raw)
	}
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
}

// TestE2EPreparedLeftOnTarget: the target holds a prepared transaction of
// the slot (the source's is still prepared) when the slot is replaced
// (PGRELAY_SNAPSHOT=always) or torn down: pgrelay rolls it back rather than
// wait for ever on the locks it holds.
func TestE2EPreparedLeftOnTarget(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE pl (id int PRIMARY KEY, v text); INSERT INTO pl VALUES (1, 'a')")
	conn := e.src.Conn(t)
	ctx := e2eCtx(t, 5*time.Minute)
	prepare := func(gid string) {
		t.Helper()
		e2eExec(t, ctx, conn, "BEGIN", "TRUNCATE pl", "INSERT INTO pl VALUES (2, 'b')", "PREPARE TRANSACTION '"+gid+"'")
	}
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	prepare("pl1")
	e2eWaitTarget(t, e, p, 2*time.Minute, "the prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	e.src.Exec(t, "ROLLBACK PREPARED 'pl1'")

	// A new copy under a new slot.
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	always.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	if got := e2eTargetPrepared(t, e); got != "" {
		t.Errorf("prepared transactions left on the target after PGRELAY_SNAPSHOT=always: %s", got)
	}
	e2eCompare(t, e)

	// Teardown.
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	prepare("pl2")
	e2eWaitTarget(t, e, p, 2*time.Minute, "the prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	e.mustRun(2*time.Minute, "teardown")
	if got := e2eTargetPrepared(t, e); got != "" {
		t.Errorf("prepared transactions left on the target after teardown: %s", got)
	}
	if got := e.tgt.QueryString(t, "SELECT to_regnamespace('pgrelay') IS NULL"); got != "t" {
		t.Errorf("teardown left the pgrelay schema")
	}
	e.src.Exec(t, "ROLLBACK PREPARED 'pl2'")
}

// TestE2EIdentityColumnAdded: an identity column added to a table with rows
// gave them values from its sequence on the source, which the stream does not
// carry. pgrelay stops naming the column and the fix (no NULLs on the target),
// and the fix it names, a new copy with PGRELAY_SNAPSHOT=always, works.
func TestE2EIdentityColumnAdded(t *testing.T) {
	for _, kind := range []string{"ALWAYS", "BY DEFAULT"} {
		t.Run(strings.ReplaceAll(kind, " ", "_"), func(t *testing.T) {
			e := e2ePair(t, harness.Majors()[0])
			e.src.Exec(t, "CREATE TABLE ic (id int PRIMARY KEY, v text); INSERT INTO ic SELECT g, 'v' || g FROM generate_series(1, 5) g")
			e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
			e.src.Exec(t, "ALTER TABLE ic ADD COLUMN n bigint GENERATED "+kind+" AS IDENTITY; INSERT INTO ic (id, v) VALUES (6, 'v6')")
			p, code := e.run(3*time.Minute, "migrate")
			if code == 0 || !strings.Contains(p.logs(), "identity column") || !strings.Contains(p.logs(), "PGRELAY_SNAPSHOT=always") {
				t.Errorf("migrate exited %d after an identity column was added to a table with rows; want a refusal naming it and the fix; log:\n%s", code, p.logs())
			}
			if got := e.tgt.QueryString(t, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'ic' AND column_name = 'n'"); got != "0" {
				t.Errorf("the identity column was added on the target")
			}
			always := *e
			always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
			if p, code := always.run(3*time.Minute, "migrate"); code != 0 {
				t.Fatalf("migrate with PGRELAY_SNAPSHOT=always exited %d; log:\n%s", code, p.logs())
			}
			e2eCompare(t, e)
		})
	}
}

// TestE2ETargetTableInTheWay: a first copy into a target table that already
// holds rows pgrelay did not put there is refused before anything is created
// on the source; an empty one (a schema loaded beforehand) is used.
func TestE2ETargetTableInTheWay(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE tw (id int PRIMARY KEY, v text); INSERT INTO tw VALUES (1, 'source')")
	e.tgt.Exec(t, "CREATE TABLE public.tw (id int PRIMARY KEY, v text); INSERT INTO public.tw SELECT g, 'mine' FROM generate_series(1, 1000) g")
	// Eleven more in the way: the error names ten and counts the others.
	for i := range 11 {
		e.src.Exec(t, fmt.Sprintf("CREATE TABLE tw_more_%02d (id int PRIMARY KEY)", i))
		e.tgt.Exec(t, fmt.Sprintf("CREATE TABLE public.tw_more_%02d (id int PRIMARY KEY); INSERT INTO public.tw_more_%02[1]d VALUES (1)", i))
	}
	p, code := e.run(3*time.Minute, "migrate")
	if code != 1 || !strings.Contains(p.logs(), `public.tw, public.tw_more_00,`) || !strings.Contains(p.logs(), "and 2 more already hold rows") {
		t.Errorf("migrate into target tables holding other rows: exit %d, want 1 naming public.tw and 9 more, counting 2; log:\n%s", code, p.logs())
	}
	// The publication pgrelay created for the refused copy is gone again.
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); got != "0" {
		t.Errorf("the publication created for the refused copy stays on the source")
	}
	for i := range 11 {
		e.tgt.Exec(t, fmt.Sprintf("TRUNCATE public.tw_more_%02d", i))
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.tw"); got != "1000" {
		t.Errorf("the target table's own rows were touched: %s rows left of 1000", got)
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "0" {
		t.Errorf("a slot was created although the copy was refused")
	}
	e.tgt.Exec(t, "TRUNCATE public.tw")
	// Rows of a target-only table inheriting from tw are not in the way, and
	// the copy leaves them alone.
	e.tgt.Exec(t, "CREATE TABLE public.tw_archive () INHERITS (public.tw); INSERT INTO public.tw_archive SELECT g, 'archived' FROM generate_series(100, 149) g")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.tw_archive"); got != "50" {
		t.Errorf("the target-only table inheriting from public.tw has %s rows of 50", got)
	}
	e.tgt.Exec(t, "DROP TABLE public.tw_archive")
	e2eCompare(t, e)
}

// TestE2ETargetTableLacksColumns: an empty target table made beforehand
// without a published column is refused before anything is created on the
// source, naming the table and the columns; once they are added, migrate
// copies into it.
func TestE2ETargetTableLacksColumns(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE tl (id int PRIMARY KEY, a text, "B c" int, g int GENERATED ALWAYS AS (id * 2) STORED);
		INSERT INTO tl (id, a, "B c") SELECT g, 'x' || g, g FROM generate_series(1, 50) g;
		CREATE TABLE tl_ok (id int PRIMARY KEY, v text); INSERT INTO tl_ok VALUES (1, 'v')`)
	e.src.Exec(t, "CREATE TABLE tl_rows (id int PRIMARY KEY)")
	e.tgt.Exec(t, `CREATE TABLE public.tl (id int PRIMARY KEY); CREATE TABLE public.tl_ok (id int PRIMARY KEY, v text, extra int);
		CREATE TABLE public.tl_rows (id int PRIMARY KEY); INSERT INTO public.tl_rows VALUES (7)`)
	p, code := e.run(3*time.Minute, "migrate")
	// Both problems in one refusal.
	if code != 1 || !strings.Contains(p.logs(), `public.tl lacks a, "B c"`) || strings.Contains(p.logs(), "tl_ok") || !strings.Contains(p.logs(), "target tables public.tl_rows already hold rows") {
		t.Errorf("migrate into a target table without published columns and one with rows: exit %d, want 1 naming public.tl and its columns a, \"B c\", and public.tl_rows; log:\n%s", code, p.logs())
	}
	e.tgt.Exec(t, "TRUNCATE public.tl_rows")
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "0" {
		t.Errorf("a slot was created although the copy was refused")
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); got != "0" {
		t.Errorf("the publication created for the refused copy stays on the source")
	}
	e.tgt.Exec(t, `ALTER TABLE public.tl ADD COLUMN a text, ADD COLUMN "B c" int, ADD COLUMN g int`)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	if got := e.tgt.QueryString(t, `SELECT count(*) || ' ' || sum("B c") FROM public.tl`); got != "50 1275" {
		t.Errorf("target rows after the columns were added: %s, want 50 1275", got)
	}
}

// TestE2ETablesPartitioned: a partitioned table listed in PGRELAY_TABLES is
// published through its leaf partitions (pg_publication_tables lists those,
// not it); preflight takes it as published and its partitions are copied and
// streamed (bb15).
func TestE2ETablesPartitioned(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE pt (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY LIST (k);
		CREATE TABLE pt_1 PARTITION OF pt FOR VALUES IN (1); CREATE TABLE pt_2 PARTITION OF pt FOR VALUES IN (2);
		INSERT INTO pt SELECT g, 1 + g % 2, 'copied' FROM generate_series(1, 20) g;
		CREATE TABLE not_listed (id int PRIMARY KEY); INSERT INTO not_listed VALUES (1)`)
	e.extra = append(e.extra, "PGRELAY_TABLES=public.pt")
	first := e.mustRun(3*time.Minute, "migrate")
	first.waitLog(t, "caught up", 0)
	// The log says when it creates the target tables, and how many (bb15).
	if l, ok := first.findLog("preparing the copy: creating the target tables"); !ok || l["tables"] != float64(2) {
		t.Errorf("no log line before creating the 2 target tables; log:\n%s", first.logs())
	}
	e.src.Exec(t, "INSERT INTO pt VALUES (21, 2, 'streamed'); UPDATE pt SET v = 'updated' WHERE id = 3")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	for _, leaf := range []string{"pt_1", "pt_2"} {
		q := "SELECT string_agg(id || ':' || k || ':' || v, ',' ORDER BY id) FROM " + leaf
		if src, tgt := e.src.QueryString(t, q), e.tgt.QueryString(t, q); src != tgt || src == "" {
			t.Errorf("%s:\nsource %s\ntarget %s", leaf, src, tgt)
		}
	}
	if got := e.tgt.QueryString(t, "SELECT to_regclass('public.not_listed') IS NULL"); got != "t" {
		t.Errorf("a table left out of PGRELAY_TABLES was created on the target")
	}
}

// TestE2EReplicateSignalDuringCopy: SIGTERM to replicate while the snapshot
// copy runs ends it with exit 0 and a line saying it stopped before
// streaming and how to go on (bb15: it ended silently); the next run
// resumes and the tables end up equal.
func TestE2EReplicateSignalDuringCopy(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE sig_big (id int PRIMARY KEY, pad text);
		INSERT INTO sig_big SELECT g, repeat('x', 200) FROM generate_series(1, 1000000) g`)
	p := e.start("replicate")
	if err := harness.Await(2*time.Minute, 20*time.Millisecond, "the copy of sig_big on the target", func() error {
		if e.tgt.QueryString(t, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE 'COPY %sig_big%'") != "0" {
			return nil
		}
		if p.exited() {
			return harness.Abort(fmt.Errorf("replicate exited (%v)", p.err))
		}
		return errors.New("no COPY runs")
	}); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM during the copy, want 0; log:\n%s", code, p.logs())
	}
	if _, ok := p.findLog("stopped by a signal before streaming"); !ok {
		t.Errorf("replicate stopped during the copy without saying so; log:\n%s", p.logs())
	}
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
}

// TestE2ETargetRolePrivileges: a target role with CREATE on the database but
// not on schema public (the default from PostgreSQL 15) is told what to grant
// before anything is created on the source; after the grant, migrate works.
func TestE2ETargetRolePrivileges(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	role := "e2e_plain_" + e.slot
	e.tgt.Exec(t, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'plain-pw'; GRANT CREATE ON DATABASE %s TO %[1]s;
		GRANT SET ON PARAMETER session_replication_role TO %[1]s`, role, pgx.Identifier{e.tgt.DB}.Sanitize()))
	t.Cleanup(func() { e.tgt.Exec(t, fmt.Sprintf("DROP OWNED BY %s; DROP ROLE %[1]s", role)) })
	u, err := url.Parse(e.tgt.URL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "plain-pw")
	e.extra = append(e.extra, "PGRELAY_TARGET_URL="+u.String())
	e.src.Exec(t, "CREATE TABLE tp (id int PRIMARY KEY); INSERT INTO tp VALUES (1)")
	p, code := e.run(3*time.Minute, "migrate")
	if want := fmt.Sprintf(`GRANT CREATE ON SCHEMA "public" TO %s`, role); code != 1 || !strings.Contains(p.logs(), want) {
		t.Errorf("migrate with a target role that may not create tables in public: exit %d, want 1 with %q; log:\n%s", code, want, p.logs())
	}
	if got := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); got != "0" {
		t.Errorf("a slot was created although the target role lacks a privilege")
	}
	e.tgt.Exec(t, "GRANT CREATE ON SCHEMA public TO "+role)
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e2eCompare(t, e)
}

// TestE2EPreparedRolledBackBeforeDecoding: a large prepared transaction
// (beyond logical_decoding_work_mem, with a savepoint) that is rolled back
// before the decoder reaches it. PostgreSQL may then send part of its body
// (18 sends the changes after the savepoint without the inserts before it):
// updates of rows that were never inserted. pgrelay asks the source, finds the
// transaction aborted, and leaves it out instead of stopping for good.
func TestE2EPreparedRolledBackBeforeDecoding(t *testing.T) {
	e2eEachMajor(t, testE2EPreparedRolledBackBeforeDecoding)
}

func testE2EPreparedRolledBackBeforeDecoding(t *testing.T, major int) {
	e := e2ePair(t, major)
	e.src.Exec(t, "CREATE TABLE rbd (id int PRIMARY KEY, v text, n int)")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	conn := e.src.Conn(t)
	ctx := e2eCtx(t, 5*time.Minute)
	e2eExec(t, ctx, conn, "BEGIN", "INSERT INTO rbd SELECT g, md5(g::text), 1 FROM generate_series(1, 40000) g",
		"SAVEPOINT a", "UPDATE rbd SET v = 'pp' WHERE id BETWEEN 1 AND 100", "PREPARE TRANSACTION 'rbd1'", "ROLLBACK PREPARED 'rbd1'")
	e.src.Exec(t, "INSERT INTO rbd VALUES (1, 'after', 2)")
	p = e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eSync(t, e, p, 2*time.Minute)
	e2eCompare(t, e)
	if got := e2eTargetPrepared(t, e); got != "" {
		t.Errorf("prepared transactions left on the target: %s", got)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}

// TestE2ETableAddedToPublication: a table added to a publication that lists
// its tables, holding rows from before: the next start copies it under a new
// snapshot, and its changes after that snapshot follow.
func TestE2ETableAddedToPublication(t *testing.T) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, `CREATE TABLE ap_one (id int PRIMARY KEY, v text); INSERT INTO ap_one VALUES (1, 'a');
		CREATE TABLE ap_two (id int PRIMARY KEY, v text); INSERT INTO ap_two SELECT g, 'old' FROM generate_series(1, 500) g`)
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE ap_one")
	e.mustRun(3*time.Minute, "migrate").waitLog(t, "caught up", 0)
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" ADD TABLE ap_two")
	e.src.Exec(t, "UPDATE ap_two SET v = 'new' WHERE id <= 10; DELETE FROM ap_two WHERE id > 490; INSERT INTO ap_one VALUES (2, 'b')")
	p := e.mustRun(3*time.Minute, "migrate")
	p.waitLog(t, "tables were added to the publication since the snapshot copy: copying them", 0)
	e2eCompare(t, e)
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.ap_two"); got != "490" {
		t.Errorf("target ap_two holds %s rows, want 490", got)
	}
	// Later changes follow, and the next start copies nothing more.
	e.src.Exec(t, "UPDATE ap_two SET v = 'newer' WHERE id = 1")
	p = e.mustRun(3*time.Minute, "migrate")
	if _, ok := p.findLog("tables were added to the publication since the snapshot copy: copying them"); ok {
		t.Errorf("a table already copied was copied again")
	}
	e2eCompare(t, e)

	// Added while replicate runs: its first change makes a new session,
	// which copies it.
	e.src.Exec(t, "CREATE TABLE ap_three (id int PRIMARY KEY, v text); INSERT INTO ap_three SELECT g, 'old' FROM generate_series(1, 300) g")
	r := e.start("replicate")
	r.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" ADD TABLE ap_three")
	e.src.Exec(t, "UPDATE ap_three SET v = 'new' WHERE id = 5")
	r.waitLog(t, "tables were added to the publication since the snapshot copy: copying them", 2*time.Minute)
	// (e2eSync's table is not in this publication.)
	e2eWaitTarget(t, e, r, 2*time.Minute, "ap_three copied and updated", "SELECT count(*) = 300 AND count(*) FILTER (WHERE v = 'new') = 1 FROM public.ap_three WHERE to_regclass('public.ap_three') IS NOT NULL")
	e2eCompare(t, e)
	if code := r.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, r.logs())
	}
}

// TestE2EFullIdentityTwinPrepared: two identical rows of a REPLICA IDENTITY
// FULL table; a prepared transaction changes one, a later plain one the other.
// On the target the prepared transaction holds one of the twins until its
// COMMIT PREPARED, later in the stream: the plain change must take the other
// twin, not wait for that lock for ever.
func TestE2EFullIdentityTwinPrepared(t *testing.T) {
	e := e2eNewestPairFrom15(t, "two-phase decoding needs")
	e.src.Exec(t, "CREATE TABLE twin (a int, b text); ALTER TABLE twin REPLICA IDENTITY FULL; INSERT INTO twin VALUES (1, 'x'), (1, 'x')")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "BEGIN; UPDATE twin SET b = 'prepared' WHERE ctid = '(0,1)'; PREPARE TRANSACTION 'twin_p1'")
	e2eWaitTarget(t, e, p, time.Minute, "prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	e.src.Exec(t, "UPDATE twin SET b = 'plain' WHERE ctid = '(0,2)'")
	e.src.Exec(t, "DELETE FROM twin WHERE b = 'plain'; INSERT INTO twin VALUES (1, 'x')")
	e2eSync(t, e, p, time.Minute)
	e.src.Exec(t, "COMMIT PREPARED 'twin_p1'")
	e2eSyncCompareStop(t, e, p)
}

// TestE2ECatalogAheadOfPrepared: pgrelay restarts while the target holds a
// prepared transaction on a table; by then the source has committed it and
// dropped a column default, so the catalog pgrelay reads is ahead of the
// stream. Altering the table at its first change would wait for the
// prepared transaction, whose COMMIT PREPARED comes later in the stream, for
// ever; the default follows at the table's next schema message instead.
func TestE2ECatalogAheadOfPrepared(t *testing.T) {
	e := e2eNewestPairFrom15(t, "two-phase decoding needs")
	e.src.Exec(t, "CREATE TABLE ahead (id int PRIMARY KEY, v int, c int DEFAULT 5); INSERT INTO ahead (id, v) SELECT g, g FROM generate_series(1, 10) g")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "BEGIN; UPDATE ahead SET v = -1 WHERE id = 1; PREPARE TRANSACTION 'ahead_p1'")
	e2eWaitTarget(t, e, p, time.Minute, "prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	e.src.Exec(t, "UPDATE ahead SET v = -2 WHERE id = 2")
	e.src.Exec(t, "COMMIT PREPARED 'ahead_p1'")
	e.src.Exec(t, "ALTER TABLE ahead ALTER COLUMN c DROP DEFAULT")
	e.src.Exec(t, "UPDATE ahead SET v = -3 WHERE id = 3")
	p = e.start("replicate")
	e2eSync(t, e, p, time.Minute)
	e2eCompare(t, e)
	e2eWaitTarget(t, e, p, time.Minute, "the default of ahead.c dropped", "SELECT column_default IS NULL FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'ahead' AND column_name = 'c'")
	if code := p.term(t, time.Minute); code != 0 {
		t.Errorf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
}

// TestE2ETableRewrittenDuringCopy: a table rewritten (ALTER TABLE … TYPE)
// after the copy's snapshot was taken has a new file whose rows the snapshot
// does not see, and the stream carries no rows for a rewrite: read as it is,
// the copy held 0 rows and migrate said caught up. The copy finds the
// rewrite and a new session copies the table under a new snapshot.
func TestE2ETableRewrittenDuringCopy(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE rw (id int PRIMARY KEY, v int); INSERT INTO rw SELECT g, g FROM generate_series(1, 1000) g")
	// Waits for pgrelay's slot, rewrites the table and holds its lock a while,
	// so the copy, which reads under the slot's snapshot, comes after it.
	conn := e.src.Conn(t)
	rewrote := make(chan error, 1)
	go func() {
		_, err := conn.Exec(e2eCtx(t, 3*time.Minute), `DO $$ BEGIN
			WHILE NOT EXISTS (SELECT FROM pg_catalog.pg_replication_slots WHERE slot_name = '`+e.slot+`' AND confirmed_flush_lsn IS NOT NULL) LOOP
				PERFORM pg_catalog.pg_sleep(0.01);
			END LOOP;
			ALTER TABLE rw ALTER COLUMN v TYPE bigint;
			PERFORM pg_catalog.pg_sleep(2);
		END $$`)
		rewrote <- err
	}()
	p := e.mustRun(3*time.Minute, "migrate")
	if err := <-rewrote; err != nil {
		t.Fatalf("rewrite the table: %v", err)
	}
	if _, ok := p.findLog("will retry"); !ok {
		t.Errorf("migrate did not retry after the rewrite; log:\n%s", p.logs())
	}
	e2eCompare(t, e)
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.rw"); got != "1000" {
		t.Errorf("the target holds %s rows of rw, want 1000", got)
	}
}

// TestE2ECopiedTableOlderRelation: a table copied under a later snapshot than
// the slot's (here one added to the publication; an interrupted copy redone
// is the same) gained a column before that snapshot. The stream still holds
// its changes from before, under the older definition: their Relation
// message must not alter the target table, which has the later one (it was
// taken for a column left out of the column list, and stopped every start).
func TestE2ECopiedTableOlderRelation(t *testing.T) {
	e := e2ePair(t, harness.Majors()[len(harness.Majors())-1])
	e.src.Exec(t, `CREATE TABLE ol_one (id int PRIMARY KEY); CREATE TABLE ol_two (id int PRIMARY KEY, v int);
		INSERT INTO ol_two SELECT g, g FROM generate_series(1, 10) g;
		CREATE PUBLICATION `+e.pub+` FOR TABLE ol_one`)
	e.mustRun(3*time.Minute, "migrate")
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" ADD TABLE ol_two")
	e.src.Exec(t, "UPDATE ol_two SET v = v + 1 WHERE id = 1")
	e.src.Exec(t, "ALTER TABLE ol_two ADD COLUMN c int DEFAULT 5; INSERT INTO ol_two VALUES (100, 1, 7)")
	p := e.mustRun(3*time.Minute, "migrate")
	p.waitLog(t, "tables were added to the publication since the snapshot copy: copying them", 0)
	e.src.Exec(t, "UPDATE ol_two SET c = 6 WHERE id = 2")
	e.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
}

// A publication of the user's own that publishes a partitioned table through
// its root (publish_via_partition_root) and another table with a row filter
// (15+): the snapshot copies the root's rows from its partitions and only the
// filtered table's published rows, the partitions' Relation messages (which
// pgoutput sends after the root's) make no target tables, rows that enter and
// leave the filter follow, and verify compares what the publication publishes.
func TestE2EPublicationViaRootAndRowFilter(t *testing.T) {
	e := e2eNewestPairFrom15(t, "row filters need")
	e.src.Exec(t, `CREATE TABLE vr_parts (id int PRIMARY KEY, k int, v text) PARTITION BY RANGE (id);
		CREATE TABLE vr_low PARTITION OF vr_parts FOR VALUES FROM (0) TO (1000);
		CREATE TABLE vr_high PARTITION OF vr_parts FOR VALUES FROM (1000) TO (MAXVALUE);
		INSERT INTO vr_parts SELECT g, g % 10, 'p' || g FROM generate_series(1, 1999) g;
		CREATE TABLE vr_filtered (id int PRIMARY KEY, k int, v text);
		ALTER TABLE vr_filtered REPLICA IDENTITY FULL;
		INSERT INTO vr_filtered SELECT g, g % 10, 'f' || g FROM generate_series(1, 300) g`)
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE vr_parts, vr_filtered WHERE (k > 4) WITH (publish_via_partition_root = true)")
	e.mustRun(3*time.Minute, "migrate")
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.vr_parts"); got != "1999" {
		t.Fatalf("target vr_parts holds %s rows after the copy, want 1999", got)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.vr_filtered"); got != "150" {
		t.Fatalf("target vr_filtered holds %s rows after the copy, want the 150 the filter publishes", got)
	}
	e2eCompare(t, e)

	// Changes: across partitions, in and out of the filter, and a column
	// added to the root (its Relation message and its partitions' again).
	e.src.Exec(t, `INSERT INTO vr_parts VALUES (2500, 1, 'new high'), (0, 2, 'new low');
		DELETE FROM vr_parts WHERE id BETWEEN 100 AND 120;
		UPDATE vr_parts SET id = 3500 WHERE id = 5;
		UPDATE vr_parts SET v = 'moved down', id = 110 WHERE id = 1200;
		UPDATE vr_filtered SET k = 9 WHERE id = 10;
		UPDATE vr_filtered SET k = 0 WHERE id = 9;
		UPDATE vr_filtered SET v = 'still in' WHERE id = 8;
		UPDATE vr_filtered SET v = 'still out' WHERE id = 1;
		INSERT INTO vr_filtered VALUES (301, 7, 'in'), (302, 1, 'out')`)
	e.src.Exec(t, `ALTER TABLE vr_parts ADD COLUMN w int; UPDATE vr_parts SET w = id WHERE id < 50`)
	e.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
	// The partitions are the target's vr_parts's (PGRELAY_SCHEMA=all), not
	// tables of their own.
	if got := e.tgt.QueryString(t, `SELECT coalesce(string_agg(relname, ', ' ORDER BY relname), '') FROM pg_class
		WHERE relname IN ('vr_low', 'vr_high') AND relkind = 'r' AND NOT relispartition`); got != "" {
		t.Errorf("the target has tables of their own for the partitions, published through their root: %s", got)
	}
	if p, code := e.run(2*time.Minute, "verify"); code != 0 {
		t.Errorf("verify exited %d, want 0 (equal); output:\n%s", code, p.logs())
	}
	// verify sees a row the filter does not publish, were it on the target.
	e.tgt.Exec(t, "INSERT INTO public.vr_filtered VALUES (9999, 1, 'not published')")
	if p, code := e.run(2*time.Minute, "verify"); code != 1 {
		t.Errorf("verify exited %d with an unpublished row on the target, want 1; output:\n%s", code, p.logs())
	}
}

// A row the target rejects, reported when the next table's DDL makes the round
// trip: the error names the row's table and statement, not the table whose
// DDL happened to report it.
func TestE2ERejectedRowBeforeDDL(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE ep_iv (id int PRIMARY KEY, v text); CREATE TABLE ep_other (id int PRIMARY KEY);
		INSERT INTO ep_iv VALUES (1, 'ok'); INSERT INTO ep_other VALUES (1);
		CREATE PUBLICATION `+e.pub+` FOR ALL TABLES`)
	e.mustRun(3*time.Minute, "migrate")
	e.tgt.Exec(t, "ALTER TABLE public.ep_iv ADD CONSTRAINT ep_no_bad CHECK (v <> 'bad')")
	// One backlog, applied as one group: the insert is queued, the DDL of
	// ep_other flushes it.
	e.src.Exec(t, "INSERT INTO ep_iv VALUES (2, 'bad')")
	e.src.Exec(t, "ALTER TABLE ep_other ADD COLUMN c int")
	e.src.Exec(t, "INSERT INTO ep_other VALUES (2, 2)")
	p, code := e.run(2*time.Minute, "migrate")
	if code == 0 {
		t.Fatalf("migrate exited 0 although the target rejects a row; log:\n%s", p.logs())
	}
	out := p.logs()
	if !strings.Contains(out, `insert into "public"."ep_iv"`) || !strings.Contains(out, "ep_no_bad") {
		t.Errorf("the error does not name the rejected insert and the constraint; log:\n%s", out)
	}
	if strings.Contains(out, "create or alter target table for public.ep_other") {
		t.Errorf("the error blames ep_other's DDL for ep_iv's row; log:\n%s", out)
	}
	if !strings.Contains(out, "the target refused this change: make it take it") {
		t.Errorf("the error does not say what to do; log:\n%s", out)
	}
}

// With PGRELAY_KEEP_ORDER=true, a run of inserts that the target refuses is
// reported when the next change goes out: the error names the refused row,
// not that next change.
func TestE2ERejectedRowKeepOrder(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.extra = append(e.extra, "PGRELAY_KEEP_ORDER=true")
	e.src.Exec(t, `CREATE TABLE ko_u (id int PRIMARY KEY, v int); INSERT INTO ko_u VALUES (1, 1);
		CREATE PUBLICATION `+e.pub+` FOR ALL TABLES`)
	e.mustRun(3*time.Minute, "migrate")
	e.tgt.Exec(t, "CREATE UNIQUE INDEX ko_u_v_target ON public.ko_u (v)")
	e.src.Exec(t, `BEGIN;
		INSERT INTO ko_u SELECT i, i FROM generate_series(1000, 1099) i;
		INSERT INTO ko_u VALUES (2000, 1);
		INSERT INTO ko_u SELECT i, i FROM generate_series(3000, 3099) i;
		UPDATE ko_u SET v = -1 WHERE id = 1000;
		COMMIT`)
	p, code := e.run(2*time.Minute, "migrate")
	if code == 0 {
		t.Fatalf("migrate exited 0 although the target rejects a row; log:\n%s", p.logs())
	}
	out := p.logs()
	if !strings.Contains(out, "ko_u_v_target") || !strings.Contains(out, `"public"."ko_u"`) {
		t.Errorf("the error does not name the table and the target's index; log:\n%s", out)
	}
	if strings.Contains(out, "apply: U on") {
		t.Errorf("the error blames the update after the refused insert; log:\n%s", out)
	}
}

// An enum label renamed on the source while pgrelay was behind rows that use
// it: the target, renamed to the source's labels, refuses the old label in
// those rows. pgrelay retries (a type change is usually what a new session
// fixes), then stops with the error instead of retrying for ever.
func TestE2ERefusedValueStops(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TYPE rv_mood AS ENUM ('sad', 'ok', 'happy'); CREATE TABLE rv (id int PRIMARY KEY, m rv_mood);
		INSERT INTO rv VALUES (1, 'ok'); CREATE PUBLICATION `+e.pub+` FOR ALL TABLES`)
	e.mustRun(3*time.Minute, "migrate")
	e.src.Exec(t, "UPDATE rv SET m = 'sad' WHERE id = 1")
	e.src.Exec(t, "ALTER TYPE rv_mood RENAME VALUE 'sad' TO 'blue'")
	p, code := e.run(3*time.Minute, "replicate")
	if code == 0 || !strings.Contains(p.logs(), "it does not go away by itself") {
		t.Fatalf("replicate exited %d, want 1 with the refused value's error; log:\n%s", code, p.logs())
	}
	if n := strings.Count(p.logs(), "will retry"); n != 4 {
		t.Errorf("replicate retried %d times, want 4 (5 sessions); log:\n%s", n, p.logs())
	}
	if !strings.Contains(p.logs(), "the target refused this change: make it take it") {
		t.Errorf("the error does not say what to do; log:\n%s", p.logs())
	}
}

// The source stopped (immediate) and started again during the first copy:
// migrate retries like after any server that went away, resumes the copy,
// and ends equal; it used to exit 1 at once.
func TestE2ESourceCrashDuringCopy(t *testing.T) {
	src := harness.Postgres(t, harness.Majors()[0], harness.Dedicated())
	e := e2eNewEnv(t, src, harness.Postgres(t, harness.Majors()[0]))
	e.src.Exec(t, `CREATE TABLE sc_big (id int PRIMARY KEY, v text);
		INSERT INTO sc_big SELECT g, repeat('x', 200) FROM generate_series(1, 1500000) g;
		CREATE PUBLICATION `+e.pub+` FOR ALL TABLES`)
	p := e.start("migrate")
	if err := harness.Await(2*time.Minute, 5*time.Millisecond, "the copy to run on the source", func() error {
		if p.exited() {
			return harness.Abort(fmt.Errorf("migrate ended (%v) before the copy could be interrupted", p.err))
		}
		if e.src.QueryString(t, "SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE 'COPY (SELECT%' AND state = 'active'") != "t" {
			return errors.New("no COPY runs")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.logs())
	}
	e.src.Crash(t)
	// Down until migrate has found it gone and waits to retry (it used to
	// exit 1 at once).
	p.waitLog(t, "will retry", 2*time.Minute)
	e.src.Start(t)
	if code := p.wait(t, 5*time.Minute); code != 0 {
		t.Fatalf("migrate exited %d after the source came back, want 0; log:\n%s", code, p.logs())
	}
	if !strings.Contains(p.logs(), "will retry") {
		t.Errorf("migrate did not retry; log:\n%s", p.logs())
	}
	e2eCompare(t, e)
}

// Faults a person must fix are not retried: TLS required by the settings but
// not offered by the server, and a spill directory pgrelay cannot write.
func TestE2EUnretryableSettings(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE us_t (id int PRIMARY KEY, v text); CREATE PUBLICATION `+e.pub+` FOR ALL TABLES`)
	tls := *e
	tls.extra = append(slices.Clone(e.extra), "PGRELAY_SOURCE_URL="+strings.Replace(e.src.URL(), "sslmode=disable", "sslmode=require", 1))
	p, code := tls.run(2*time.Minute, "replicate")
	if code == 0 || strings.Contains(p.logs(), "will retry") || !strings.Contains(p.logs(), "TLS") {
		t.Errorf("replicate with sslmode=require against a server without TLS exited %d, want 1 at once, naming TLS; log:\n%s", code, p.logs())
	}

	e.mustRun(3*time.Minute, "migrate")
	file := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.extra = append(e.extra, "PGRELAY_SPILL_DIR="+file)
	e.src.Exec(t, "INSERT INTO us_t SELECT g, repeat('x', 100) FROM generate_series(1, 400000) g")
	p, code = e.run(2*time.Minute, "migrate")
	if code == 0 || strings.Contains(p.logs(), "will retry") || !strings.Contains(p.logs(), "PGRELAY_SPILL_DIR") {
		t.Errorf("migrate with an unwritable spill directory exited %d, want 1 at once, naming PGRELAY_SPILL_DIR; log:\n%s", code, p.logs())
	}
}

// After a migrate that applied no transaction (caught up at its marker), the
// target is current as of then: while pgrelay is not running and the source
// commits, status shows the lag in seconds growing, not 0.
func TestE2EStatusLagSecondsAfterIdleCatchUp(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE ls_t (id int PRIMARY KEY); CREATE PUBLICATION `+e.pub+` FOR ALL TABLES`)
	e.mustRun(3*time.Minute, "migrate")
	time.Sleep(2 * time.Second) // the time the target falls behind, which status must show
	e.src.Exec(t, "INSERT INTO ls_t VALUES (1)")
	st, raw := e.status(t)
	if st.LagBytes <= 0 || st.LagSeconds < 2 || st.LastCommitTime == nil {
		t.Errorf("status after 2 s behind: lag %d bytes, %.1f s, last commit time %v; want bytes > 0, seconds >= 2, a time:\n%s", st.LagBytes, st.LagSeconds, st.LastCommitTime, raw)
	}
}

// URLs whose host is a percent-encoded Unix-socket directory, as libpq and
// psql take them, work for every command.
func TestE2EUnixSocketURLs(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE ux_t (id int PRIMARY KEY); INSERT INTO ux_t VALUES (1); CREATE PUBLICATION `+e.pub+` FOR ALL TABLES`)
	e.extra = append(e.extra, "PGRELAY_SOURCE_URL="+e.src.SocketURL(), "PGRELAY_TARGET_URL="+e.tgt.SocketURL())
	e.mustRun(3*time.Minute, "migrate")
	e.mustRun(time.Minute, "status")
	e2eCompare(t, e)
}

// A publication's column list changed while replicating (15+): the column
// the publication stops publishing is not dropped on the target, nor is one it
// starts publishing added empty; pgrelay stops, saying how to go on.
func TestE2EColumnListChanged(t *testing.T) {
	e := e2eNewestPairFrom15(t, "column lists need")
	e.src.Exec(t, `CREATE TABLE cl (id int PRIMARY KEY, a text, b int NOT NULL DEFAULT 5, d text);
		INSERT INTO cl SELECT g, 'a' || g, g, 'd' || g FROM generate_series(1, 20) g;
		CREATE PUBLICATION `+e.pub+` FOR TABLE cl (id, a, d)`)
	e.mustRun(3*time.Minute, "migrate")

	// Narrowed while replicate runs, between publication checks: apply stops
	// before the target drops the column.
	unwatched := *e
	unwatched.extra = append(slices.Clone(e.extra), "PGRELAY_PUBLICATION_CHECK_INTERVAL=0s")
	p := unwatched.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" SET TABLE cl (id, a)")
	e.src.Exec(t, "UPDATE cl SET a = 'changed' WHERE id = 1")
	if code := p.wait(t, 2*time.Minute); code == 0 || !strings.Contains(p.logs(), "no longer publishes d") || !strings.Contains(p.logs(), "PGRELAY_SNAPSHOT=always") {
		t.Fatalf("replicate exited %d after the column list lost d, want 1 naming it; log:\n%s", code, p.logs())
	}
	if got := e.tgt.QueryString(t, "SELECT count(d) FROM public.cl"); got != "20" {
		t.Errorf("the target kept %s values of d, want all 20", got)
	}
	// At a start, the publication check names the change first.
	p, code := e.run(2*time.Minute, "migrate")
	if code == 0 || !strings.Contains(p.logs(), "public.cl (copied with filter: ; column list: attnums 1, 2, 4; now filter: ; column list: attnums 1, 2)") {
		t.Fatalf("migrate exited %d after the column list lost d, want 1 naming the change; log:\n%s", code, p.logs())
	}

	// Widened: b's values were never copied, and the stream would leave them
	// at the default. The start refuses, and a new copy brings them.
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	always.mustRun(3*time.Minute, "migrate")
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" SET TABLE cl (id, a, b)")
	p, code = e.run(2*time.Minute, "migrate")
	if code == 0 || !strings.Contains(p.logs(), "public.cl (copied with filter: ; column list: attnums 1, 2; now filter: ; column list: attnums 1, 2, 3)") {
		t.Fatalf("migrate exited %d after the column list gained b, want 1 naming the change; log:\n%s", code, p.logs())
	}
	always.mustRun(3*time.Minute, "migrate")
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM public.cl WHERE b = id"); got != "20" {
		t.Errorf("%s rows of the target have the source's b, want all 20", got)
	}
}

// A publication that publishes a copied table otherwise than when it was
// copied (another row filter, a partition detached from a table published
// through its root) stops the next start with what changed, instead of
// catching up on a target that holds other rows than the publication
// publishes; a new copy (PGRELAY_SNAPSHOT=always) takes the new definition.
func TestE2EPublicationChangedSinceCopy(t *testing.T) {
	e := e2eNewestPairFrom15(t, "row filters need")
	e.src.Exec(t, `CREATE TABLE pc_parts (id int PRIMARY KEY, k int) PARTITION BY RANGE (id);
		CREATE TABLE pc_low PARTITION OF pc_parts FOR VALUES FROM (0) TO (100);
		CREATE TABLE pc_high PARTITION OF pc_parts FOR VALUES FROM (100) TO (200);
		INSERT INTO pc_parts SELECT g, g % 10 FROM generate_series(1, 199) g;
		CREATE TABLE pc_f (id int PRIMARY KEY, k int); INSERT INTO pc_f SELECT g, g % 10 FROM generate_series(1, 50) g`)
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE pc_parts, pc_f WHERE (k > 4) WITH (publish_via_partition_root = true)")
	e.mustRun(3*time.Minute, "migrate")

	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" SET TABLE pc_parts, pc_f WHERE (k > 6)")
	p, code := e.run(2*time.Minute, "migrate")
	if code == 0 || !strings.Contains(p.logs(), "public.pc_f (copied with filter: (k > 4); column list: none; now filter: (k > 6); column list: none)") {
		t.Fatalf("migrate exited %d after the row filter changed, want 1 naming the change; log:\n%s", code, p.logs())
	}
	always := *e
	always.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=always")
	always.mustRun(3*time.Minute, "migrate")
	e2eCompare(t, e)
	e.mustRun(3*time.Minute, "migrate")

	// Renamed, then its filter changed: the same table, found by its OID.
	e.src.Exec(t, "ALTER TABLE pc_f RENAME TO pc_g")
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" SET TABLE pc_parts, pc_g WHERE (k > 5)")
	p, code = e.run(2*time.Minute, "migrate")
	if code == 0 || !strings.Contains(p.logs(), "public.pc_g (copied with filter: (k > 6); column list: none; now filter: (k > 5); column list: none)") {
		t.Fatalf("migrate exited %d after a renamed table's row filter changed, want 1 naming the change; log:\n%s", code, p.logs())
	}
	e.src.Exec(t, "ALTER TABLE pc_g RENAME TO pc_f")
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" SET TABLE pc_parts, pc_f WHERE (k > 6)")

	e.src.Exec(t, "ALTER TABLE pc_parts DETACH PARTITION pc_high")
	p, code = e.run(2*time.Minute, "migrate")
	if code == 0 || !strings.Contains(p.logs(), "public.pc_parts (copied with filter: ; partitions: public.pc_high, public.pc_low; column list: none; now filter: ; partitions: public.pc_low; column list: none)") {
		t.Errorf("migrate exited %d after a partition was detached, want 1 naming the change; log:\n%s", code, p.logs())
	}

	// A running replicate finds such a change by itself, within
	// PGRELAY_PUBLICATION_CHECK_INTERVAL, rather than diverge until its
	// next start.
	e.src.Exec(t, "ALTER TABLE pc_parts ATTACH PARTITION pc_high FOR VALUES FROM (100) TO (200)")
	always.mustRun(3*time.Minute, "migrate")
	watched := *e
	watched.extra = append(slices.Clone(e.extra), "PGRELAY_PUBLICATION_CHECK_INTERVAL=1s")
	p = watched.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eAwaitPublicationChecks(t, e, p, 2) // checks that find nothing keep it running
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" SET TABLE pc_parts, pc_f WHERE (k > 2)")
	if code := p.wait(t, time.Minute); code == 0 || !strings.Contains(p.logs(), "public.pc_f (copied with filter: (k > 6); column list: none; now filter: (k > 2); column list: none)") {
		t.Errorf("replicate exited %d after the row filter changed while it ran, want 1 naming the change; log:\n%s", code, p.logs())
	}
}

// TestE2EPublicationTableLeft: a copied table dropped from the publication is
// said to have left it, once by a running replicate's check and at each
// start: its changes no longer come, and nothing would say so when it is
// added back (docs/limitations.md).
func TestE2EPublicationTableLeft(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, `CREATE TABLE pl_a (id int PRIMARY KEY); CREATE TABLE pl_b (id int PRIMARY KEY); INSERT INTO pl_a VALUES (1)`)
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE pl_a, pl_b")
	e.mustRun(3*time.Minute, "migrate")
	watched := *e
	watched.extra = append(slices.Clone(e.extra), "PGRELAY_PUBLICATION_CHECK_INTERVAL=1s")
	p := watched.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e2eAwaitPublicationChecks(t, e, p, 1)
	if strings.Contains(p.logs(), "no longer published") {
		t.Fatalf("said before the table left:\n%s", p.logs())
	}
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" DROP TABLE pl_a")
	p.waitLog(t, "no longer published", time.Minute)
	e2eAwaitPublicationChecks(t, e, p, 2)
	if n := strings.Count(p.logs(), "no longer published"); n != 1 || !strings.Contains(p.logs(), `"table":"public.pl_a"`) {
		t.Errorf("replicate said %d times that a table left the publication, want once naming public.pl_a; log:\n%s", n, p.logs())
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d; log:\n%s", code, p.logs())
	}
	if again := e.mustRun(3*time.Minute, "migrate"); !strings.Contains(again.logs(), "no longer published") {
		t.Errorf("migrate's start does not say public.pl_a left the publication; log:\n%s", again.logs())
	}
}

// TestE2EAddedTableSameServerPrepared: source and target are two databases of
// one server, and the target holds pgrelay's prepared transaction (its source
// twin committed while pgrelay was stopped) when pgrelay restarts to copy a
// table added to the publication. The copy's snapshot came from a temporary
// slot, whose creation waits for every transaction open on the server: the
// target's prepared one too, which ends only once pgrelay streams. It waited
// for ever.
func TestE2EAddedTableSameServerPrepared(t *testing.T) {
	major := harness.Majors()[len(harness.Majors())-1]
	if major < 15 {
		t.Skipf("two-phase decoding needs PostgreSQL 15+, the newest major here is %d", major)
	}
	// Two databases of the one server of that major.
	e := e2eNewEnv(t, harness.Postgres(t, major), harness.Postgres(t, major))
	e.src.Exec(t, `CREATE TABLE sp_one (id int PRIMARY KEY, v text); INSERT INTO sp_one VALUES (1, 'a');
		CREATE TABLE sp_two (id int PRIMARY KEY, v text); INSERT INTO sp_two SELECT g, 'old' FROM generate_series(1, 500) g`)
	e.src.Exec(t, "CREATE PUBLICATION "+e.pub+" FOR TABLE sp_one")
	p := e.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	e.src.Exec(t, "BEGIN; UPDATE sp_one SET v = 'prepared' WHERE id = 1; PREPARE TRANSACTION 'sp_p1'")
	e2eWaitTarget(t, e, p, time.Minute, "prepared transaction on the target", "SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = current_database()")
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	e.src.Exec(t, "COMMIT PREPARED 'sp_p1'")
	e.src.Exec(t, "ALTER PUBLICATION "+e.pub+" ADD TABLE sp_two")
	e.src.Exec(t, "UPDATE sp_two SET v = 'new' WHERE id <= 10; DELETE FROM sp_two WHERE id > 490")
	m := e.mustRun(2*time.Minute, "migrate")
	m.waitLog(t, "tables were added to the publication since the snapshot copy: copying them", 0)
	e2eCompare(t, e)
	if got := e.tgt.QueryString(t, "SELECT count(*) || ' ' || count(*) FILTER (WHERE v = 'new') FROM public.sp_two"); got != "490 10" {
		t.Errorf("target sp_two: %s rows, of them new, want 490 10", got)
	}
	if got := e.tgt.QueryString(t, "SELECT v FROM public.sp_one WHERE id = 1"); got != "prepared" {
		t.Errorf("target sp_one row 1 = %q, want the prepared transaction's \"prepared\"", got)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()"); got != "0" {
		t.Errorf("the target still holds %s prepared transactions", got)
	}
}

// TestE2EMigrateSequencesWhilePrepared: migrate while a source transaction
// is prepared. The target holds it prepared too, with its tables' locks,
// until a COMMIT PREPARED that comes after the caught-up marker; setting a
// serial column's default took an ACCESS EXCLUSIVE lock behind it and waited
// for ever. A default already set is left alone, one not set yet waits for the
// next migrate, with a warning, and the sequences get their values either way.
func TestE2EMigrateSequencesWhilePrepared(t *testing.T) {
	e := e2eNewestPairFrom15(t, "two-phase decoding needs")
	e.src.Exec(t, "CREATE TABLE sq (id serial PRIMARY KEY, v text); INSERT INTO sq (v) SELECT 'a' FROM generate_series(1, 5)")
	e.mustRun(3*time.Minute, "migrate")
	e.src.Exec(t, "CREATE TABLE sq2 (id serial PRIMARY KEY); INSERT INTO sq2 SELECT FROM generate_series(1, 3)")
	conn := e.src.Conn(t)
	e2eExec(t, e2eCtx(t, time.Minute), conn, "BEGIN", "INSERT INTO sq (v) VALUES ('p')", "INSERT INTO sq2 DEFAULT VALUES", "PREPARE TRANSACTION 'sq_p'")
	p := e.mustRun(2*time.Minute, "migrate")
	if _, ok := p.findLog("a column's default or identity is not set on the target"); !ok {
		t.Errorf("no warning about sq2's default; log:\n%s", p.logs())
	}
	// The report lists it, and the target is not ready to switch to.
	if out := strings.Join(p.out.all(), "\n"); !strings.Contains(out, "left out: default public.sq2.id: not created: a prepared transaction holds its table on the target") ||
		!strings.Contains(out, "ready to switch: no") {
		t.Errorf("migrate's report does not list sq2's default:\n%s", out)
	}
	if got := e.tgt.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()"); got != "1" {
		t.Errorf("the target holds %s prepared transactions, want 1", got)
	}
	for _, q := range []string{"SELECT last_value FROM sq_id_seq", "SELECT last_value FROM sq2_id_seq"} {
		if got, want := e.tgt.QueryString(t, q), e.src.QueryString(t, q); got != want {
			t.Errorf("%s: target %s, source %s", q, got, want)
		}
	}
	e.src.Exec(t, "COMMIT PREPARED 'sq_p'")
	e.mustRun(2*time.Minute, "migrate")
	e2eCompare(t, e)
	const def = "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name IN ('sq', 'sq2') AND column_name = 'id' AND column_default LIKE 'nextval(%'"
	if got := e.tgt.QueryString(t, def); got != "2" {
		t.Errorf("%s of 2 serial columns have their default on the target", got)
	}
}

// TestE2ESeededWithoutCopyThenAuto: a target loaded by the user (here a
// copy of the table's rows), seeded with PGRELAY_SNAPSHOT=never, then run
// with the default auto, as BenchmarkDrain does. Under FOR ALL TABLES a start
// copies unknown tables that hold rows (an unlogged table made SET LOGGED);
// it took every user-loaded table for one and refused to replace its rows.
func TestE2ESeededWithoutCopyThenAuto(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	e.src.Exec(t, "CREATE TABLE seeded (id int PRIMARY KEY, v text); INSERT INTO seeded SELECT g, 'old' FROM generate_series(1, 100) g")
	e.tgt.Exec(t, "CREATE TABLE seeded (id int PRIMARY KEY, v text); INSERT INTO seeded SELECT g, 'old' FROM generate_series(1, 100) g")
	never := *e
	never.extra = append(slices.Clone(e.extra), "PGRELAY_SNAPSHOT=never")
	p := never.start("replicate")
	p.waitLog(t, "streaming", 2*time.Minute)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	e.src.Exec(t, "UPDATE seeded SET v = 'new' WHERE id <= 10")
	m := e.mustRun(2*time.Minute, "migrate")
	if _, ok := m.findLog("tables were added to the publication since the snapshot copy: copying them"); ok {
		t.Errorf("a user-loaded table was taken for one added; log:\n%s", m.logs())
	}
	e2eCompare(t, e)
}

// TestE2EUnusableTargetCreatesNoPublication: a target pgrelay cannot set up
// (its database read-only) stops migrate, after its bounded attempts, with an
// error naming the database and the setting, and leaves the source as it
// was: the publication is not created (it used to be created, then dropped
// again), nor the slot. Once the target is fixed, migrate creates it and
// copies.
func TestE2EUnusableTargetCreatesNoPublication(t *testing.T) {
	e := e2ePair(t, 15)
	e.src.Exec(t, "CREATE TABLE ro (id int PRIMARY KEY); INSERT INTO ro VALUES (1)")
	db := pgx.Identifier{e.tgt.DB}.Sanitize()
	e.tgt.Exec(t, "ALTER DATABASE "+db+" SET default_transaction_read_only = on")
	p, code := e.run(2*time.Minute, "migrate")
	logs := p.logs()
	want := "target database " + db + " takes no writes: default_transaction_read_only is on for the database: run ALTER DATABASE " + db + " RESET default_transaction_read_only (gave up after 5 attempts)"
	if code == 0 || !strings.Contains(logs, want) {
		t.Fatalf("migrate into a read-only target exited %d, want an error saying so, after its attempts: %s; log:\n%s", code, want, logs)
	}
	if n := e.src.QueryString(t, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", e.slot); n != "0" {
		t.Errorf("slot %s made on the source for a read-only target", e.slot)
	}
	if strings.Contains(logs, "created publication") {
		t.Errorf("migrate created the publication before it knew the target could not take the data; log:\n%s", logs)
	}
	if n := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); n != "0" {
		t.Fatalf("publication %s left on the source after a failed start", e.pub)
	}
	if _, err := e.tgt.Conn(t).Exec(t.Context(), "BEGIN READ WRITE; ALTER DATABASE "+db+" RESET default_transaction_read_only; COMMIT"); err != nil {
		t.Fatal(err)
	}
	e.mustRun(3*time.Minute, "migrate")
	if n := e.src.QueryString(t, "SELECT count(*) FROM pg_publication WHERE pubname = $1", e.pub); n != "1" {
		t.Fatalf("publication %s not created by the migrate after the fix", e.pub)
	}
	e2eCompare(t, e)
}

// TestE2EPreparedDecodedAfterLaterDDL: a prepared transaction that pgrelay
// reaches only after the source has committed it and, queued behind it, an
// ALTER TABLE of its table (pgrelay was stopped meanwhile; lagging behind
// does the same). The source's catalog then disagrees with the
// transaction's schema message (a column's type changed since), which read
// as the prepared transaction's own DDL, and the table's definition differs
// from the target's (a default added since): the target altered the table
// inside the prepared transaction, whose lock then held up, for ever, the
// insert committed on the source while the transaction was prepared (after
// it in the stream, before its COMMIT PREPARED). Such a transaction is now
// held and applied at its COMMIT PREPARED.
func TestE2EPreparedDecodedAfterLaterDDL(t *testing.T) {
	e := e2eNewestDedicatedPairFrom15(t, "slots created with two_phase need")
	e.src.Exec(t, "CREATE TABLE pld (id int PRIMARY KEY, a int, b int); INSERT INTO pld VALUES (0, 0, 0)")
	e.mustRun(3*time.Minute, "migrate")

	// With pgrelay stopped: prepared, a plain insert while it is prepared, an
	// ALTER queued behind it, committed (and so the ALTER), another insert.
	e.src.Exec(t, "BEGIN; INSERT INTO pld VALUES (1, 1, 1); PREPARE TRANSACTION 'pld_p'")
	t.Cleanup(func() {
		if e.src.QueryString(t, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'pld_p'") != "0" {
			e.src.Exec(t, "ROLLBACK PREPARED 'pld_p'")
		}
	})
	e.src.Exec(t, "INSERT INTO pld VALUES (2, 2, 2)")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alterer := e.src.Conn(t)
	altered := make(chan error, 1)
	go func() {
		_, err := alterer.Exec(ctx, "ALTER TABLE pld ALTER COLUMN b TYPE bigint, ALTER COLUMN a SET DEFAULT 5")
		altered <- err
	}()
	harness.Eventually(t, time.Minute, "the ALTER TABLE to queue behind the prepared transaction", func() error {
		if e.src.QueryString(t, "SELECT count(*) FROM pg_locks WHERE relation = 'pld'::regclass AND NOT granted") == "0" {
			return errors.New("no lock on pld is waited for")
		}
		return nil
	})
	e.src.Exec(t, "COMMIT PREPARED 'pld_p'")
	if err := <-altered; err != nil {
		t.Fatal(err)
	}
	e.src.Exec(t, "INSERT INTO pld VALUES (3, 3, 3)")

	p, code := e.run(2*time.Minute, "migrate")
	if code != 0 {
		t.Fatalf("migrate exited %d; log:\n%s", code, p.logs())
	}
	p.waitLog(t, "the source committed or rolled back this prepared transaction before pgrelay reached it: it is applied at its COMMIT PREPARED, or dropped at its ROLLBACK PREPARED", 0)
	if got := e.tgt.QueryString(t, "SELECT string_agg(id || ':' || a || ':' || b, ' ' ORDER BY id) FROM pld"); got != "0:0:0 1:1:1 2:2:2 3:3:3" {
		t.Errorf("target rows: %s", got)
	}
	e2eCompare(t, e)
}

package integration

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/source"
)

// knownMessageTypes are the first bytes of every pgoutput message.
const knownMessageTypes = "BCORYIUDTMSEcAbPKrp"

// runningStream is a Stream whose Run loop runs in the background.
type runningStream struct {
	*source.Stream
	rc     *source.ReplConn
	cancel context.CancelFunc
	done   chan error // receives Run's result once
	dec    *source.Decoder
}

// startStream connects, starts replication and runs the loop; everything stops
// when the test ends.
func startStream(t *testing.T, pg *harness.PG, slot string, start source.LSN, o source.StreamOptions) *runningStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := source.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if o.Proto == 0 {
		o.Proto = rc.ProtoVersion()
	}
	s, err := rc.StartReplication(ctx, slot, start, o)
	if err != nil {
		_ = rc.Close(ctx)
		t.Fatalf("start replication: %v", err)
	}
	runCtx, runCancel := context.WithCancel(context.Background())
	rs := &runningStream{Stream: s, rc: rc, cancel: runCancel, done: make(chan error, 1), dec: source.NewDecoder(o.Proto)}
	finished := make(chan struct{})
	go func() {
		rs.done <- s.Run(runCtx)
		close(finished)
	}()
	t.Cleanup(func() {
		runCancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return within 10s of cancel")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rc.Close(ctx)
	})
	return rs
}

// stop cancels Run, checks it ended because of that, and closes the connection.
func (rs *runningStream) stop(t *testing.T) {
	t.Helper()
	rs.cancel()
	select {
	case err := <-rs.done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.rc.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// got is a decoded message reduced to what the tests compare.
type got struct {
	typ      source.MessageType
	walStart source.LSN
	endLSN   source.LSN // Commit, Prepare, CommitPrepared, StreamCommit
	values   []string   // Insert: the new tuple's text values
	prefix   string     // Message
	lsn      source.LSN // Message
}

// next reads and decodes one frame.
func (rs *runningStream) next(t *testing.T, within time.Duration) got {
	t.Helper()
	select {
	case f, ok := <-rs.Frames():
		if !ok {
			t.Fatalf("Frames closed: Run returned %v", <-rs.done)
		}
		if len(f.Data) == 0 || !strings.ContainsRune(knownMessageTypes, rune(f.Data[0])) {
			t.Fatalf("frame at %v starts with unknown type %q", f.WALStart, f.Data)
		}
		m, err := rs.dec.Decode(f.Data)
		if err != nil {
			t.Fatalf("decode frame at %v: %v", f.WALStart, err)
		}
		g := got{typ: m.Type(), walStart: f.WALStart}
		switch m := m.(type) {
		case *source.Commit:
			g.endLSN = m.EndLSN
		case *source.Prepare:
			g.endLSN = m.EndLSN
		case *source.CommitPrepared:
			g.endLSN = m.EndLSN
		case *source.StreamCommit:
			g.endLSN = m.EndLSN
		case *source.Insert:
			for _, v := range m.New {
				g.values = append(g.values, string(v.Data))
			}
		case *source.LogicalMessage:
			g.prefix, g.lsn = m.Prefix, m.LSN
		}
		return g
	case err := <-rs.done:
		t.Fatalf("Run returned %v while a frame was expected", err)
	case <-time.After(within):
		t.Fatalf("no frame within %v", within)
	}
	return got{}
}

// expect reads frames and checks their types, returning them.
func (rs *runningStream) expect(t *testing.T, types string) []got {
	t.Helper()
	var out []got
	for i := range len(types) {
		g := rs.next(t, 15*time.Second)
		if g.typ != source.MessageType(types[i]) {
			t.Fatalf("message %d is %q, want %q (sequence %q)", i, byte(g.typ), types[i], types)
		}
		out = append(out, g)
	}
	return out
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitConfirmed polls the slot until confirmed_flush_lsn equals want.
func waitConfirmed(t *testing.T, conn *pgx.Conn, slot string, want source.LSN) {
	t.Helper()
	harness.Eventually(t, 10*time.Second, fmt.Sprintf("slot %s to confirm %v", slot, want), func() error {
		st, err := source.ReadSlot(withTimeout(t, 5*time.Second), conn, slot)
		if err != nil {
			t.Fatal(err)
		}
		if st.ConfirmedFlushLSN > want {
			t.Fatalf("confirmed_flush_lsn %v passed the acked %v", st.ConfirmedFlushLSN, want)
		}
		if st.ConfirmedFlushLSN != want {
			return fmt.Errorf("confirmed_flush_lsn is %v", st.ConfirmedFlushLSN)
		}
		return nil
	})
}

// awaitReplyAfter waits until the walsender streaming from slot holds a
// standby status update the client sent after the time after (a timestamptz;
// the client stamps each with its clock, and runs on this machine) and
// returns that update's time. It fails the test if rs's Run returns first.
func awaitReplyAfter(t *testing.T, pg *harness.PG, slot, after string, rs *runningStream) string {
	t.Helper()
	var at string
	harness.Eventually(t, 30*time.Second, fmt.Sprintf("a status update of slot %s's client sent after %s", slot, after), func() error {
		select {
		case err := <-rs.done:
			return harness.Abort(fmt.Errorf("Run returned %v", err))
		default:
		}
		at = pg.QueryString(t, `SELECT coalesce((SELECT r.reply_time::text FROM pg_catalog.pg_stat_replication r
			JOIN pg_catalog.pg_replication_slots s ON s.active_pid = r.pid
			WHERE s.slot_name = $1 AND r.reply_time > $2::timestamptz), '')`, slot, after)
		if at == "" {
			return errors.New("none yet")
		}
		return nil
	})
	return at
}

// awaitStatusUpdates waits until the walsender streaming from slot has taken
// in a standby status update the client sent from now on, and confirmed
// what it says: the confirmation follows the update's arrival, and is done
// before the walsender takes in the next one, which this also waits for.
func awaitStatusUpdates(t *testing.T, pg *harness.PG, slot string, rs *runningStream) {
	t.Helper()
	first := awaitReplyAfter(t, pg, slot, pg.QueryString(t, "SELECT clock_timestamp()::text"), rs)
	awaitReplyAfter(t, pg, slot, first, rs)
}

func TestConnStreamEndToEnd(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, 2*time.Minute)
			conn := pg.Conn(t)
			pg.Exec(t, `CREATE TABLE items (id int PRIMARY KEY, note text);
				INSERT INTO items VALUES (1, 'one'), (2, 'two'), (3, 'three')`)

			created, err := source.EnsurePublication(ctx, conn, "pub", []string{"public.items"})
			if err != nil || !created {
				t.Fatalf("EnsurePublication = %v, %v; want created", created, err)
			}
			if created, err := source.EnsurePublication(ctx, conn, "pub", []string{"public.items"}); err != nil || created {
				t.Fatalf("second EnsurePublication = %v, %v; want exists", created, err)
			}

			rc, err := source.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close(ctx)
			if rc.ServerMajor() != major || rc.ProtoVersion() != source.ProtoVersionFor(major) || rc.System().DBName != pg.DB {
				t.Fatalf("connect: major %d proto %d system %+v", rc.ServerMajor(), rc.ProtoVersion(), rc.System())
			}
			twoPhase := major >= 15
			info, err := rc.CreateSlot(ctx, "s1", source.SlotOptions{TwoPhase: twoPhase, Snapshot: "export"})
			if err != nil {
				t.Fatal(err)
			}
			if info.Name != "s1" || info.SnapshotName == "" || info.ConsistentPoint == 0 || info.TwoPhase != twoPhase {
				t.Fatalf("SlotInfo %+v", info)
			}
			// A second slot of the same name is refused, recognizably.
			if _, err := rc.CreateSlot(ctx, "s1", source.SlotOptions{}); !errors.Is(err, source.ErrSlotExists) {
				t.Fatalf("duplicate slot: %v, want ErrSlotExists", err)
			}
			// That command ended the exported snapshot; make a fresh one to import.
			rc2, err := source.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer rc2.Close(ctx)
			info2, err := rc2.CreateSlot(ctx, "s2", source.SlotOptions{Temporary: true, Snapshot: "export"})
			if err != nil {
				t.Fatal(err)
			}
			// A commit after the consistent point is not in the snapshot.
			pg.Exec(t, "INSERT INTO items VALUES (4, 'four')")
			snap := pg.Conn(t)
			tx, err := snap.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+info2.SnapshotName+"'"); err != nil {
				t.Fatalf("import exported snapshot: %v", err)
			}
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != 3 {
				t.Fatalf("rows in the snapshot = %d (%v), want 3", n, err)
			}
			_ = tx.Rollback(ctx)
			_ = rc2.Close(ctx)

			st, err := source.ReadSlot(ctx, conn, "s1")
			if err != nil {
				t.Fatal(err)
			}
			if !st.Exists || st.Plugin != "pgoutput" || st.Type != "logical" || st.Database != pg.DB || st.Temporary || st.TwoPhase != twoPhase || st.Invalidated() {
				t.Fatalf("slot state %+v", st)
			}
			if st.ConfirmedFlushLSN != info.ConsistentPoint {
				t.Fatalf("confirmed_flush_lsn %v, consistent point %v", st.ConfirmedFlushLSN, info.ConsistentPoint)
			}
			if major >= 13 && st.WALStatus != "reserved" {
				t.Fatalf("wal_status %q", st.WALStatus)
			}
			if missing, _ := source.ReadSlot(ctx, conn, "nope"); missing.Exists {
				t.Fatal("a missing slot exists")
			}
			_ = rc.Close(ctx)

			o := source.StreamOptions{Publication: "pub", TwoPhase: twoPhase, Messages: major >= 14, StatusInterval: 100 * time.Millisecond}
			if major >= 14 {
				o.Streaming = "on"
			}
			rs := startStream(t, pg, "s1", 0, o)

			// Transaction A: the insert of row 4 (committed after the consistent
			// point). Transaction B: an update.
			a := rs.expect(t, "BRIC")
			if got := strings.Join(a[2].values, ","); got != "4,four" {
				t.Fatalf("insert values %q", got)
			}
			pg.Exec(t, "UPDATE items SET note = 'uno' WHERE id = 1")
			b := rs.expect(t, "BUC")
			aEnd, bEnd := a[3].endLSN, b[2].endLSN
			if !(info.ConsistentPoint < aEnd && aEnd < bEnd) || rs.Received() < b[2].walStart {
				t.Fatalf("positions: consistent %v, A end %v, B end %v, received %v", info.ConsistentPoint, aEnd, bEnd, rs.Received())
			}

			// Nothing acked: the slot stays at the consistent point, status
			// updates come and go.
			awaitStatusUpdates(t, pg, "s1", rs)
			waitConfirmed(t, conn, "s1", info.ConsistentPoint)
			// Ack A: confirmed_flush_lsn moves to exactly A's end, not to B's
			// end nor to the received position.
			rs.Ack(aEnd)
			waitConfirmed(t, conn, "s1", aEnd)
			awaitStatusUpdates(t, pg, "s1", rs)
			waitConfirmed(t, conn, "s1", aEnd)
			rs.Ack(bEnd)
			waitConfirmed(t, conn, "s1", bEnd)

			if major >= 14 {
				before, err := source.CurrentWALLSN(ctx, conn)
				if err != nil {
					t.Fatal(err)
				}
				at, err := source.EmitMarker(ctx, conn, "pgrelay.test", []byte("marker"))
				if err != nil {
					t.Fatal(err)
				}
				if at < before {
					t.Fatalf("marker at %v before the WAL position %v read earlier", at, before)
				}
				m := rs.expect(t, "M")[0]
				if m.prefix != "pgrelay.test" || m.lsn != at {
					t.Fatalf("marker message %+v, emitted at %v", m, at)
				}
				// A big transaction is streamed before it commits
				// (logical_decoding_work_mem is 64kB in the harness).
				pg.Exec(t, "INSERT INTO items SELECT g, repeat('x', 100) FROM generate_series(100, 3100) g")
				sawStart := false
				for {
					g := rs.next(t, 30*time.Second)
					if g.typ == source.MsgStreamStart {
						sawStart = true
					}
					if g.typ == source.MsgStreamCommit || g.typ == source.MsgCommit {
						if !sawStart || g.typ != source.MsgStreamCommit {
							t.Fatalf("big transaction ended with %q, streamed: %v", byte(g.typ), sawStart)
						}
						break
					}
				}
			}
			if twoPhase {
				pg.Exec(t, "BEGIN; INSERT INTO items VALUES (5, 'five'); PREPARE TRANSACTION 'pgrelay_t1'")
				rs.expect(t, "bIP")
				pg.Exec(t, "COMMIT PREPARED 'pgrelay_t1'")
				rs.expect(t, "K")
			}
			rs.stop(t)
		})
	}
}

func TestStreamKeepaliveWhileConsumerIsNotReading(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			// The server drops a client that has not replied for 2s.
			pg := harness.Postgres(t, major, harness.WithSetting("wal_sender_timeout", "2s"))
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server log:\n%s", pg.ServerLog())
				}
			})
			ctx := withTimeout(t, 2*time.Minute)
			conn := pg.Conn(t)
			pg.Exec(t, "CREATE TABLE big (id int PRIMARY KEY, pad text)")
			if _, err := source.EnsurePublication(ctx, conn, "pub", nil); err != nil {
				t.Fatal(err)
			}
			rc, err := source.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			info, err := rc.CreateSlot(ctx, "ka", source.SlotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_ = rc.Close(ctx)

			// Idle, with no periodic status updates: only answering the server's
			// keepalives (it asks after half the timeout) keeps the stream alive.
			// A reply more than twice the timeout after the start shows the
			// stream lived through it.
			later := pg.QueryString(t, "SELECT (clock_timestamp() + interval '5 seconds')::text")
			rs := startStream(t, pg, "ka", 0, source.StreamOptions{Publication: "pub", StatusInterval: time.Hour})
			awaitReplyAfter(t, pg, "ka", later, rs)
			rs.stop(t)

			// Back-pressure: the consumer reads nothing while a large transaction
			// arrives. Run stops reading the socket but its status updates keep the
			// server from timing out; then every change arrives.
			const rows = 20000
			pg.Exec(t, fmt.Sprintf("INSERT INTO big SELECT g, repeat('p', 200) FROM generate_series(1, %d) g", rows))
			rs = startStream(t, pg, "ka", info.ConsistentPoint, source.StreamOptions{
				Publication: "pub", StatusInterval: 200 * time.Millisecond, BufferFrames: 4,
			})
			if err := harness.Await(10*time.Second, 5*time.Millisecond, "the buffer to fill", func() error {
				if n := len(rs.Frames()); n < 4 {
					return fmt.Errorf("%d frames", n)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			pid := pg.QueryString(t, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'ka'")
			// Status updates go on while nobody reads, and keep the stream
			// alive past twice the timeout.
			awaitReplyAfter(t, pg, "ka", pg.QueryString(t, "SELECT (clock_timestamp() + interval '5 seconds')::text"), rs)
			if len(rs.Frames()) != 4 {
				t.Fatalf("buffer changed while nobody read: %d frames", len(rs.Frames()))
			}
			if again := pg.QueryString(t, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = 'ka'"); again != pid || pid == "" {
				t.Fatalf("walsender pid %q, then %q: the stream was restarted", pid, again)
			}
			gotRows := 0
			for {
				g := rs.next(t, 30*time.Second)
				if g.typ == source.MsgInsert {
					gotRows++
				}
				if g.typ == source.MsgCommit {
					rs.Ack(g.endLSN)
					break
				}
			}
			if gotRows != rows {
				t.Fatalf("received %d inserts, want %d", gotRows, rows)
			}
			rs.stop(t)
			// The final status update carried the ack (the walsender reads it
			// before it sees the connection end).
			waitConfirmed(t, conn, "ka", rs.Acked())
			if strings.Contains(pg.ServerLog(), "replication timeout") {
				t.Fatalf("server timed the stream out:\n%s", pg.ServerLog())
			}
		})
	}
}

func TestSlotInUseTakeover(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, time.Minute)
			conn := pg.Conn(t)
			if _, err := source.EnsurePublication(ctx, conn, "pub", nil); err != nil {
				t.Fatal(err)
			}
			rc, err := source.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rc.CreateSlot(ctx, "shared", source.SlotOptions{}); err != nil {
				t.Fatal(err)
			}
			_ = rc.Close(ctx)

			first := startStream(t, pg, "shared", 0, source.StreamOptions{Publication: "pub", StatusInterval: 100 * time.Millisecond})
			second, err := source.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close(ctx)
			_, err = second.StartReplication(ctx, "shared", 0, source.StreamOptions{Publication: "pub"})
			if !errors.Is(err, source.ErrSlotInUse) {
				t.Fatalf("second StartReplication: %v, want ErrSlotInUse", err)
			}
			if err := source.DropSlot(ctx, conn, "shared"); !errors.Is(err, source.ErrSlotInUse) || !strings.Contains(err.Error(), "pg_terminate_backend") {
				t.Fatalf("drop of an active slot: %v, want ErrSlotInUse with the fix", err)
			}
			st, err := source.ReadSlot(ctx, conn, "shared")
			if err != nil || !st.Active || st.ActivePID == 0 {
				t.Fatalf("active slot state %+v %v", st, err)
			}

			// The first instance goes away; the second, retrying on the same
			// connection, takes over.
			first.stop(t)
			var s *source.Stream
			harness.Eventually(t, 15*time.Second, "the second connection to take the slot over", func() error {
				s, err = second.StartReplication(ctx, "shared", 0, source.StreamOptions{Publication: "pub"})
				if err != nil && !errors.Is(err, source.ErrSlotInUse) {
					return harness.Abort(err)
				}
				return err
			})
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- s.Run(runCtx) }()
			pg.Exec(t, "CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)")
			select {
			case f := <-s.Frames():
				if f.Data[0] != 'B' {
					t.Fatalf("first frame after takeover %q", f.Data[0])
				}
			case err := <-done:
				t.Fatalf("Run: %v", err)
			case <-time.After(15 * time.Second):
				t.Fatal("no frame after takeover")
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v", err)
			}
			_ = second.Close(ctx)

			// Stopped: the slot can be dropped.
			harness.Eventually(t, 10*time.Second, "the slot to be dropped", func() error {
				err := source.DropSlot(ctx, conn, "shared")
				if err != nil && !errors.Is(err, source.ErrSlotInUse) {
					return harness.Abort(err)
				}
				return err
			})
			if err := source.DropSlot(ctx, conn, "shared"); !errors.Is(err, source.ErrSlotNotFound) {
				t.Fatalf("drop of a missing slot: %v, want ErrSlotNotFound", err)
			}
			if err := source.DropPublication(ctx, conn, "pub"); err != nil {
				t.Fatal(err)
			}
			if ok, err := source.PublicationExists(ctx, conn, "pub"); err != nil || ok {
				t.Fatalf("publication still exists: %v %v", ok, err)
			}
		})
	}
}

func userURL(pg *harness.PG, user, password string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(user, password),
		Host:     fmt.Sprintf("127.0.0.1:%d", pg.Port),
		Path:     "/" + pg.DB,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// createRole makes a login role for this test (roles are cluster-wide) and
// drops it at the end.
func createRole(t *testing.T, pg *harness.PG, suffix, attrs string) (name, password string) {
	t.Helper()
	name = strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	name = "r_" + name + "_" + suffix
	password = "pw-" + name
	pg.Exec(t, fmt.Sprintf("CREATE ROLE %s LOGIN %s PASSWORD '%s'", pgx.Identifier{name}.Sanitize(), attrs, password))
	t.Cleanup(func() {
		pg.Exec(t, "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	})
	return name, password
}

func TestPreflightHappyPath(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, time.Minute)
			pg.Exec(t, "CREATE TABLE a (id int PRIMARY KEY)")
			r, err := source.Preflight(ctx, pg.URL(), source.ConnConfig{})
			if err != nil {
				t.Fatalf("preflight: %v", err)
			}
			if r.ServerMajor != major || r.ProtoVersion != source.ProtoVersionFor(major) || r.MaxPreparedTransactions != 20 ||
				r.WALLevel != "logical" || !r.Superuser || !r.Replication || !r.PublicationCreated || r.Slot.Exists || r.MaxReplicationSlots != 20 {
				t.Fatalf("result %+v", r)
			}
			// Run again: the publication now exists.
			r, err = source.Preflight(ctx, pg.URL(), source.ConnConfig{})
			if err != nil || r.PublicationCreated || !r.PublicationExists {
				t.Fatalf("second preflight: %+v %v", r, err)
			}
		})
	}
}

func TestPreflightRoleWithoutReplicationOrPublicationRights(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, time.Minute)
			pg.Exec(t, "CREATE TABLE orders (id int PRIMARY KEY)")
			user, pw := createRole(t, pg, "norepl", "NOREPLICATION")
			r, err := source.Preflight(ctx, userURL(pg, user, pw), source.ConnConfig{Publication: "needed", Tables: []string{"public.orders"}})
			if err == nil {
				t.Fatal("preflight passed for a role without REPLICATION")
			}
			t.Logf("preflight error:\n%s", err)
			if !errors.Is(err, source.ErrNoReplicationRole) || !strings.Contains(err.Error(), fmt.Sprintf(`ALTER ROLE "%s" REPLICATION;`, user)) {
				t.Errorf("no actionable REPLICATION problem in %q", err)
			}
			want := `CREATE PUBLICATION "needed" FOR TABLE "public"."orders";`
			if !errors.Is(err, source.ErrPublicationMissing) || !strings.Contains(err.Error(), want) {
				t.Errorf("no publication SQL %q in %q", want, err)
			}
			if errors.Is(err, source.ErrWALLevel) || errors.Is(err, source.ErrNoFreeSlot) {
				t.Errorf("spurious problems in %q", err)
			}
			if want := fmt.Sprintf(`GRANT SELECT ON "public"."orders" TO "%s";`, user); !errors.Is(err, source.ErrCannotRead) || !strings.Contains(err.Error(), want) {
				t.Errorf("no %q in %q", want, err)
			}
			if r == nil || r.Replication || r.Superuser || r.User != user || r.PublicationExists || len(r.Problems) != 3 {
				t.Errorf("result %+v", r)
			}
			for _, p := range r.Problems {
				if strings.Contains(p.Error(), "\n") || strings.Contains(p.Error(), pw) {
					t.Errorf("problem not one line or leaks the password: %q", p)
				}
			}
			// FOR ALL TABLES needs a superuser: the SQL says so.
			_, err = source.Preflight(ctx, userURL(pg, user, pw), source.ConnConfig{Publication: "all_of_it"})
			if !strings.Contains(err.Error(), `run as a superuser: CREATE PUBLICATION "all_of_it" FOR ALL TABLES;`) {
				t.Errorf("FOR ALL TABLES: %q", err)
			}

			// A role with REPLICATION passes that check.
			repl, rpw := createRole(t, pg, "repl", "REPLICATION")
			r, err = source.Preflight(ctx, userURL(pg, repl, rpw), source.ConnConfig{Publication: "needed", Tables: []string{"public.orders"}})
			if errors.Is(err, source.ErrNoReplicationRole) || r == nil || !r.Replication {
				t.Errorf("REPLICATION role: %+v %v", r, err)
			}

			// Wrong password: one line, no password.
			_, err = source.Preflight(ctx, userURL(pg, user, "wrong-Secret"), source.ConnConfig{})
			if err == nil || !strings.Contains(err.Error(), "password authentication failed") || strings.Contains(err.Error(), "wrong-Secret") {
				t.Errorf("bad password: %v", err)
			}
		})
	}
}

// TestPreflightRoleCannotReadTables: a role that may not read a published
// table (SELECT on it, USAGE on its schema) passed preflight, got its slot
// created, and then the copy failed with "permission denied" and no GRANT
// to run. Preflight now names the GRANTs, before anything is created.
func TestPreflightRoleCannotReadTables(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, time.Minute)
			pg.Exec(t, `CREATE SCHEMA sales; CREATE TABLE sales.orders (id int PRIMARY KEY); CREATE TABLE public.u (id int PRIMARY KEY);
				CREATE PUBLICATION readable FOR TABLE sales.orders, public.u`)
			user, pw := createRole(t, pg, "reader", "REPLICATION")
			t.Cleanup(func() { pg.Exec(t, "DROP OWNED BY "+pgx.Identifier{user}.Sanitize()) }) // its privileges, before the role
			pg.Exec(t, "GRANT SELECT ON sales.orders TO "+pgx.Identifier{user}.Sanitize())
			for _, cfg := range []source.ConnConfig{
				{Publication: "readable"},
				// Not created yet: the tables it would publish.
				{Publication: "not_yet", Tables: []string{"sales.orders", "public.u"}},
			} {
				_, err := source.Preflight(ctx, userURL(pg, user, pw), cfg)
				t.Logf("preflight error:\n%s", err)
				for _, want := range []string{fmt.Sprintf(`GRANT USAGE ON SCHEMA "sales" TO "%s";`, user), fmt.Sprintf(`GRANT SELECT ON "public"."u" TO "%s";`, user)} {
					if !errors.Is(err, source.ErrCannotRead) || !strings.Contains(err.Error(), want) {
						t.Errorf("publication %s: no %q in %v", cfg.Publication, want, err)
					}
				}
				if err != nil && strings.Contains(err.Error(), `"sales"."orders" TO`) {
					t.Errorf("publication %s: a GRANT of a table the role may read: %v", cfg.Publication, err)
				}
			}
			if got := pg.QueryString(t, "SELECT count(*) FROM pg_catalog.pg_replication_slots WHERE database = current_database()"); got != "0" {
				t.Errorf("%s slots exist after preflight failed", got)
			}
			pg.Exec(t, fmt.Sprintf("GRANT USAGE ON SCHEMA sales TO %[1]s; GRANT SELECT ON public.u TO %[1]s", pgx.Identifier{user}.Sanitize()))
			if _, err := source.Preflight(ctx, userURL(pg, user, pw), source.ConnConfig{Publication: "readable"}); err != nil {
				t.Errorf("preflight after the GRANTs: %v", err)
			}
		})
	}
}

func TestPreflightPublicationMissesTable(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, time.Minute)
			pg.Exec(t, `CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE "B" (id int PRIMARY KEY); CREATE PUBLICATION p FOR TABLE a`)
			_, err := source.Preflight(ctx, pg.URL(), source.ConnConfig{Publication: "p", Tables: []string{"public.a", `public."B"`}})
			want := `ALTER PUBLICATION "p" ADD TABLE "public"."B";`
			if !errors.Is(err, source.ErrPublicationMissing) || !strings.Contains(err.Error(), want) {
				t.Fatalf("preflight: %v, want %q", err, want)
			}
			// A table the source lacks, or one PostgreSQL never publishes, in
			// a FOR ALL TABLES publication: no ALTER PUBLICATION advice.
			pg.Exec(t, `CREATE UNLOGGED TABLE scratch (id int); CREATE PUBLICATION everything FOR ALL TABLES`)
			_, err = source.Preflight(ctx, pg.URL(), source.ConnConfig{Publication: "everything", Tables: []string{"public.a", "public.nosuch", "public.scratch"}})
			for _, want := range []string{"public.nosuch (in PGRELAY_TABLES) does not exist on the source", "public.scratch (in PGRELAY_TABLES) cannot be published"} {
				if !errors.Is(err, source.ErrPublicationMissing) || !strings.Contains(err.Error(), want) {
					t.Errorf("preflight: %v, want %q", err, want)
				}
			}
			if err != nil && strings.Contains(err.Error(), "ALTER PUBLICATION") {
				t.Errorf("preflight advises ALTER PUBLICATION for tables it cannot add: %v", err)
			}
			// A publication of inserts only: what it leaves out is reported.
			pg.Exec(t, `CREATE PUBLICATION inserts FOR TABLE a WITH (publish = 'insert')`)
			r, err := source.Preflight(ctx, pg.URL(), source.ConnConfig{Publication: "inserts"})
			if err != nil || r == nil || strings.Join(r.Unpublished, ",") != "update,delete,truncate" {
				t.Errorf("publish = 'insert': unpublished %v, err %v", r, err)
			}
			// A slot of that name in another database.
			other := harness.Postgres(t, major)
			other.Exec(t, "SELECT pg_create_logical_replication_slot('elsewhere', 'pgoutput')")
			_, err = source.Preflight(ctx, pg.URL(), source.ConnConfig{Publication: "p", Slot: "elsewhere", Tables: []string{"public.a"}})
			if !errors.Is(err, source.ErrSlotOtherDatabase) || errors.Is(err, source.ErrPublicationMissing) {
				t.Fatalf("slot of another database: %v", err)
			}
			// Unreachable: one line naming host and port.
			_, err = source.Preflight(ctx, fmt.Sprintf("postgres://u:hidden-pw@127.0.0.1:1/%s?sslmode=disable", pg.DB), source.ConnConfig{})
			if err == nil || !strings.Contains(err.Error(), "cannot reach 127.0.0.1:1") || strings.Contains(err.Error(), "hidden-pw") {
				t.Fatalf("unreachable: %v", err)
			}
		})
	}
}

func TestPreflightWALLevelAndSlots(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major,
				harness.WithSetting("wal_level", "replica"),
				harness.WithSetting("max_replication_slots", "2"))
			ctx := withTimeout(t, time.Minute)
			pg.Exec(t, `SELECT pg_create_physical_replication_slot('phys_a'); SELECT pg_create_physical_replication_slot('phys_b')`)

			r, err := source.Preflight(ctx, pg.URL(), source.ConnConfig{Slot: "ours"})
			if err == nil {
				t.Fatal("preflight passed with wal_level=replica")
			}
			t.Logf("preflight error:\n%s", err)
			if !errors.Is(err, source.ErrWALLevel) || !strings.Contains(err.Error(), "ALTER SYSTEM SET wal_level = logical; then restart") {
				t.Errorf("no actionable wal_level problem: %q", err)
			}
			if !errors.Is(err, source.ErrNoFreeSlot) || !strings.Contains(err.Error(), "max_replication_slots = 2") {
				t.Errorf("no free-slot problem: %q", err)
			}
			if r == nil || r.WALLevel != "replica" || r.UsedReplicationSlots != 2 || len(r.Problems) != 2 {
				t.Errorf("result %+v", r)
			}
			// Nothing is created on a source that cannot serve us.
			if got := pg.QueryString(t, "SELECT count(*) FROM pg_publication"); got != "0" {
				t.Errorf("preflight with problems created a publication (%s)", got)
			}
			// Our slot name taken by a physical slot: no free-slot problem (it
			// exists) but the wrong kind.
			_, err = source.Preflight(ctx, pg.URL(), source.ConnConfig{Slot: "phys_a"})
			if !errors.Is(err, source.ErrSlotPlugin) || errors.Is(err, source.ErrNoFreeSlot) || !strings.Contains(err.Error(), "pg_drop_replication_slot('phys_a')") {
				t.Errorf("physical slot: %v", err)
			}
			// Creating a logical slot fails recognizably too.
			rc, err := source.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close(ctx)
			if _, err := rc.CreateSlot(ctx, "ours", source.SlotOptions{}); !errors.Is(err, source.ErrWALLevel) && !errors.Is(err, source.ErrNoFreeSlot) {
				t.Errorf("CreateSlot: %v", err)
			}
		})
	}
}

func TestSlotInvalidated(t *testing.T) {
	for _, major := range harness.Majors() {
		if major < 13 {
			continue // max_slot_wal_keep_size and wal_status exist from 13
		}
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			pg := harness.Postgres(t, major, harness.WithSetting("max_slot_wal_keep_size", "1MB"))
			ctx := withTimeout(t, 2*time.Minute)
			conn := pg.Conn(t)
			pg.Exec(t, "CREATE TABLE w (id serial PRIMARY KEY, pad text)")
			if _, err := source.EnsurePublication(ctx, conn, "pub", nil); err != nil {
				t.Fatal(err)
			}
			pg.Exec(t, "SELECT pg_create_logical_replication_slot('doomed', 'pgoutput')")
			// Move the WAL several segments past the slot, then checkpoint: the
			// checkpoint invalidates it.
			for range 4 {
				pg.Exec(t, "INSERT INTO w (pad) VALUES ('x')")
				pg.Exec(t, "SELECT pg_switch_wal()")
			}
			pg.Exec(t, "CHECKPOINT")
			st, err := source.ReadSlot(ctx, conn, "doomed")
			if err != nil {
				t.Fatal(err)
			}
			if !st.Invalidated() || st.WALStatus != "lost" {
				t.Fatalf("slot not invalidated: %+v", st)
			}
			_, err = source.Preflight(ctx, pg.URL(), source.ConnConfig{Slot: "doomed", Publication: "pub"})
			t.Logf("preflight error:\n%s", err)
			if !errors.Is(err, source.ErrSlotInvalidated) || !strings.Contains(err.Error(), "PGRELAY_SNAPSHOT=always") {
				t.Fatalf("preflight: %v", err)
			}
			// PGRELAY_SNAPSHOT=always replaces it: no problem then.
			if _, err := source.Preflight(ctx, pg.URL(), source.ConnConfig{Slot: "doomed", Publication: "pub", ReplaceSlot: true}); errors.Is(err, source.ErrSlotInvalidated) {
				t.Fatalf("preflight for a run that replaces the slot: %v", err)
			}
			// Streaming from it fails recognizably as well.
			rc, err := source.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close(ctx)
			_, err = rc.StartReplication(ctx, "doomed", 0, source.StreamOptions{Publication: "pub"})
			if !errors.Is(err, source.ErrSlotInvalidated) {
				t.Fatalf("StartReplication on an invalidated slot: %v", err)
			}
			if err := source.DropSlot(ctx, conn, "doomed"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// publishedSlot creates a table by ddl, a publication pub of it (table is its
// qualified name) and a slot, and returns what CREATE_REPLICATION_SLOT said.
func publishedSlot(t *testing.T, ctx context.Context, pg *harness.PG, ddl, table, pub, slot string) source.SlotInfo {
	t.Helper()
	pg.Exec(t, ddl)
	if _, err := source.EnsurePublication(ctx, pg.Conn(t), pub, []string{table}); err != nil {
		t.Fatal(err)
	}
	rc, err := source.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close(ctx)
	info, err := rc.CreateSlot(ctx, slot, source.SlotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// An idle stream reports an ack with its next periodic status update: the
// receive loop wakes up for it although no message arrives, and a cancelled
// Run returns at once, not at the next status period.
func TestStreamStatusWhileIdle(t *testing.T) {
	major := harness.Majors()[0]
	pg := harness.Postgres(t, major)
	ctx := withTimeout(t, 2*time.Minute)
	info := publishedSlot(t, ctx, pg, "CREATE TABLE idle_items (id int PRIMARY KEY)", "public.idle_items", "idle_pub", "idle_slot")
	pg.Exec(t, "INSERT INTO idle_items VALUES (1)")

	rs := startStream(t, pg, "idle_slot", info.ConsistentPoint, source.StreamOptions{Publication: "idle_pub", StatusInterval: 300 * time.Millisecond})
	var commit got
	for commit.typ != source.MsgCommit {
		commit = rs.next(t, 15*time.Second)
	}
	rs.Ack(commit.endLSN)
	harness.Eventually(t, 10*time.Second, "the ack of "+commit.endLSN.String()+" to reach the server while the stream is idle", func() error {
		if got := pg.QueryString(t, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'idle_slot'"); e2eLSN(t, "confirmed_flush_lsn", got) < commit.endLSN {
			return fmt.Errorf("the slot confirmed %s", got)
		}
		return nil
	})

	// A long status period: cancelling must not wait for it. Cancelled once
	// Run is in its loop (its first status update has come).
	rs.stop(t)
	started := pg.QueryString(t, "SELECT clock_timestamp()::text")
	rs = startStream(t, pg, "idle_slot", commit.endLSN, source.StreamOptions{Publication: "idle_pub", StatusInterval: time.Hour})
	awaitReplyAfter(t, pg, "idle_slot", started, rs)
	start := time.Now()
	rs.stop(t)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Run took %v to return after its context was cancelled", took)
	}
}

// A clean stop while the walsender is busy decoding a backlog leaves the slot
// at the acked position. Closing the connection right after the final status
// update lost it whenever the walsender's next write found the socket closed
// before it had read the update: the slot stayed where the last periodic
// update had put it.
func TestStreamCleanStopWhileServerDecodes(t *testing.T) {
	major := harness.Majors()[0]
	pg := harness.Postgres(t, major)
	ctx := withTimeout(t, 3*time.Minute)
	info := publishedSlot(t, ctx, pg, "CREATE TABLE busy_items (id int PRIMARY KEY, v text)", "public.busy_items", "busy_pub", "busy_slot")
	// A backlog of 600 transactions of ~48 kB of TOASTed text each: decoding
	// keeps the walsender busy and its socket unread.
	pg.Exec(t, `DO $$
		BEGIN
			FOR i IN 1..600 LOOP
				INSERT INTO busy_items VALUES (i, (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 1500)));
				COMMIT;
			END LOOP;
		END $$`)

	for round := range 14 {
		start := source.LSN(0)
		if round == 0 {
			start = info.ConsistentPoint
		}
		// The last round's walsender exits a moment after its client is
		// gone (later on a loaded machine): the slot is free once it has.
		harness.Eventually(t, time.Minute, "the last round's walsender to let go of busy_slot", func() error {
			if pid := pg.QueryString(t, "SELECT coalesce(active_pid::text, '') FROM pg_replication_slots WHERE slot_name = 'busy_slot'"); pid != "" {
				return fmt.Errorf("active for pid %s", pid)
			}
			return nil
		})
		// The status period is long: only the final update can move the slot.
		rs := startStream(t, pg, "busy_slot", start, source.StreamOptions{Publication: "busy_pub", StatusInterval: time.Hour})
		var acked source.LSN
		for commits := 0; commits < 25; {
			if g := rs.next(t, 30*time.Second); g.typ == source.MsgCommit {
				acked = g.endLSN
				commits++
			}
		}
		rs.Ack(acked)
		// The consumer keeps taking frames, as apply does, while Run stops.
		go func() {
			for range rs.Frames() {
			}
		}()
		rs.stop(t)
		if got := pg.QueryString(t, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'busy_slot'"); got != acked.String() {
			t.Fatalf("round %d: after a clean stop the slot's confirmed_flush_lsn is %s, want the acked %s", round, got, acked)
		}
	}
}

// TestXactAborted: source.XactAborted on a transaction still in progress, the
// newest (its xid at or past the snapshot's xmax, where a prepared one that
// failed to apply often is: taken for the epoch before, at epoch 0 a
// wrapped-around 64-bit id "in the future"), then rolled back, and on a
// committed one. Not parallel: no other transaction ends meanwhile.
func TestXactAborted(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			pg := harness.Postgres(t, major)
			ctx := withTimeout(t, time.Minute)
			open, other := pg.Conn(t), pg.Conn(t)
			pg.Exec(t, "CREATE TABLE xa (id int)")
			var xid uint32
			if _, err := open.Exec(ctx, "BEGIN; INSERT INTO xa VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			if err := open.QueryRow(ctx, "SELECT pg_current_xact_id()::text::bigint").Scan(&xid); err != nil {
				t.Fatal(err)
			}
			if aborted, err := source.XactAborted(ctx, other, xid); err != nil || aborted {
				t.Fatalf("in progress: aborted %v, err %v", aborted, err)
			}
			if _, err := open.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			if aborted, err := source.XactAborted(ctx, other, xid); err != nil || !aborted {
				t.Fatalf("rolled back: aborted %v, err %v", aborted, err)
			}
			if err := open.QueryRow(ctx, "INSERT INTO xa VALUES (2) RETURNING pg_current_xact_id()::text::bigint").Scan(&xid); err != nil {
				t.Fatal(err)
			}
			if aborted, err := source.XactAborted(ctx, other, xid); err != nil || aborted {
				t.Fatalf("committed: aborted %v, err %v", aborted, err)
			}
		})
	}
}

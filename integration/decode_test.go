package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/integration/harness"
	"github.com/pgrelay/pgrelay/source"
)

// The decode tests drive real DML on each tested major and assert the exact
// pgoutput message sequence the decoder produces: the order is the point.

const decMarkerPrefix = "pgrelay-test-marker"

// decMsg is one message of the stream with the WAL start of its XLogData.
type decMsg struct {
	lsn source.LSN
	msg source.Message
}

// decStream is a pgoutput stream from a temporary slot of its own.
type decStream struct {
	pg      *harness.PG
	dec     *source.Decoder
	stream  *source.Stream
	runErr  chan error
	proto   int
	options source.StreamOptions
}

type decStreamConfig struct {
	streaming string // "", "on", "off", "parallel"
	twoPhase  bool
}

// decOpenStream creates a temporary slot and starts streaming the publication
// "pub" of pg's database. Everything is torn down when the test ends.
func decOpenStream(t *testing.T, pg *harness.PG, sc decStreamConfig) *decStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	conn, err := source.Connect(ctx, pg.URL())
	if err != nil {
		cancel()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	t.Cleanup(cancel)

	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	slot := "test_" + hex.EncodeToString(rnd[:])
	info, err := conn.CreateSlot(ctx, slot, source.SlotOptions{Temporary: true, TwoPhase: sc.twoPhase})
	if err != nil {
		t.Fatalf("create slot: %v", err)
	}
	opts := source.StreamOptions{
		Publication:    "pub",
		Proto:          conn.ProtoVersion(),
		Streaming:      sc.streaming,
		TwoPhase:       sc.twoPhase,
		Messages:       true,
		StatusInterval: time.Second,
	}
	stream, err := conn.StartReplication(ctx, slot, info.ConsistentPoint, opts)
	if err != nil {
		t.Fatalf("start replication (%+v): %v", opts, err)
	}
	r := &decStream{pg: pg, dec: source.NewDecoder(opts.Proto), stream: stream, runErr: make(chan error, 1), proto: opts.Proto, options: opts}
	go func() { r.runErr <- stream.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range stream.Frames() {
		}
		<-r.runErr
	})
	return r
}

// collect emits a non-transactional marker message and returns every message
// decMsg before it arrives.
func (r *decStream) collect(t *testing.T) []decMsg {
	t.Helper()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	marker := hex.EncodeToString(rnd[:])
	r.pg.Exec(t, "SELECT pg_logical_emit_message(false, $1, $2::text)", decMarkerPrefix, marker)

	var out []decMsg
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for {
		select {
		case f, ok := <-r.stream.Frames():
			if !ok {
				t.Fatalf("stream ended before the marker: %v; got %s", <-r.runErr, decSummary(out))
			}
			msg, err := r.dec.Decode(f.Data)
			if err != nil {
				t.Fatalf("decode at %s: %v; so far %s", f.WALStart, err, decSummary(out))
			}
			if m, ok := msg.(*source.LogicalMessage); ok && !m.Transactional() && m.Prefix == decMarkerPrefix && string(m.Content) == marker {
				r.stream.Ack(f.WALStart)
				return out
			}
			out = append(out, decMsg{lsn: f.WALStart, msg: decClone(msg)})
			r.stream.Ack(f.WALStart)
		case <-timeout.C:
			t.Fatalf("no marker after 1m; got %s", decSummary(out))
		}
	}
}

// decClone copies the messages the decoder reuses.
func decClone(m source.Message) source.Message {
	switch x := m.(type) {
	case *source.Insert:
		return x.Clone()
	case *source.Update:
		return x.Clone()
	case *source.Delete:
		return x.Clone()
	case *source.Truncate:
		return x.Clone()
	case *source.LogicalMessage:
		return x.Clone()
	}
	return m
}

// decSummary renders the type sequence with runs collapsed: "Begin Relation Insert*3 Commit".
func decSummary(msgs []decMsg) string {
	var parts []string
	for i := 0; i < len(msgs); {
		j := i
		for j < len(msgs) && msgs[j].msg.Type() == msgs[i].msg.Type() {
			j++
		}
		name := strings.ReplaceAll(msgs[i].msg.Type().String(), " ", "")
		if j-i > 1 {
			name += "*" + strconv.Itoa(j-i)
		}
		parts = append(parts, name)
		i = j
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// decExpectSeq fails unless the collapsed type sequence is want.
func decExpectSeq(t *testing.T, msgs []decMsg, want string) {
	t.Helper()
	if got := decSummary(msgs); got != want {
		t.Fatalf("message sequence\n got %s\nwant %s", got, want)
	}
}

// decVals renders a tuple: text as is, NULL as <null>, unchanged TOAST as <unchanged>.
func decVals(tu source.Tuple) []string {
	out := make([]string, len(tu))
	for i, v := range tu {
		switch v.Kind {
		case source.ValueNull:
			out[i] = "<null>"
		case source.ValueUnchanged:
			out[i] = "<unchanged>"
		case source.ValueBinary:
			out[i] = "b:" + hex.EncodeToString(v.Data)
		default:
			out[i] = string(v.Data)
		}
	}
	return out
}

func decExpectTuple(t *testing.T, what string, tu source.Tuple, want ...string) {
	t.Helper()
	if got := decVals(tu); !slices.Equal(got, want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

// as returns msgs[i] as *T or fails.
func decAt[T any](t *testing.T, msgs []decMsg, i int) *T {
	t.Helper()
	if i >= len(msgs) {
		t.Fatalf("message %d missing in %s", i, decSummary(msgs))
	}
	m, ok := any(msgs[i].msg).(*T)
	if !ok {
		t.Fatalf("message %d is %s, want %T; sequence %s", i, msgs[i].msg.Type(), (*T)(nil), decSummary(msgs))
	}
	return m
}

// decExec runs each statement on conn in order.
func decExec(t *testing.T, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// decCurrentXid is the 32-bit xid of conn's open transaction.
func decCurrentXid(t *testing.T, conn *pgx.Conn) uint32 {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), "SELECT (pg_current_xact_id()::text::bigint % 4294967296)::text").Scan(&s); err != nil {
		t.Fatal(err)
	}
	x, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(x)
}

func decRelOID(t *testing.T, pg *harness.PG, name string) uint32 {
	t.Helper()
	x, err := strconv.ParseUint(pg.QueryString(t, "SELECT $1::regclass::oid::text", name), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(x)
}

// decSetup gives a fresh database with the publication "pub" for all tables,
// after running ddl.
func decSetup(t *testing.T, major int, ddl string) *harness.PG {
	t.Helper()
	pg := harness.Postgres(t, major)
	if ddl != "" {
		pg.Exec(t, ddl)
	}
	pg.Exec(t, "CREATE PUBLICATION pub FOR ALL TABLES")
	return pg
}

func TestDecode(t *testing.T) {
	for _, major := range harness.Majors() {
		t.Run(fmt.Sprintf("pg%d", major), func(t *testing.T) {
			t.Parallel()
			twoPhase := major >= 15
			t.Run("DML", func(t *testing.T) { testDecodeDML(t, major) })
			t.Run("PrepareCommit", func(t *testing.T) { testDecodePrepared(t, major, twoPhase, true) })
			t.Run("PrepareRollback", func(t *testing.T) { testDecodePrepared(t, major, twoPhase, false) })
			t.Run("StreamedSavepoint", func(t *testing.T) { testDecodeStreamed(t, major, "on") })
			if major >= 16 {
				t.Run("StreamedParallel", func(t *testing.T) { testDecodeStreamed(t, major, "parallel") })
			}
			t.Run("StreamedRollback", func(t *testing.T) { testDecodeStreamedRollback(t, major) })
			t.Run("StreamedPrepare", func(t *testing.T) { testDecodeStreamedPrepare(t, major, twoPhase) })
			t.Run("Messages", func(t *testing.T) { testDecodeMessages(t, major) })
			t.Run("Truncate", func(t *testing.T) { testDecodeTruncate(t, major) })
			t.Run("ReplicaIdentityFull", func(t *testing.T) { testDecodeIdentityFull(t, major) })
			t.Run("UnchangedToast", func(t *testing.T) { testDecodeUnchangedToast(t, major) })
			t.Run("KeyChange", func(t *testing.T) { testDecodeKeyChange(t, major) })
		})
	}
}

func testDecodeDML(t *testing.T, major int) {
	pg := decSetup(t, major, `CREATE TYPE mood AS ENUM ('sad', 'happy');
		CREATE TABLE items (id int PRIMARY KEY, name text, m mood, n int)`)
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: major >= 15})
	conn := pg.Conn(t)
	decExec(t, conn, "BEGIN")
	xid := decCurrentXid(t, conn)
	decExec(t, conn,
		"INSERT INTO items VALUES (1, 'one', 'happy', NULL), (2, 'two', 'sad', 5)",
		"UPDATE items SET name = 'uno' WHERE id = 1",
		"DELETE FROM items WHERE id = 2",
		"COMMIT")
	msgs := r.collect(t)
	decExpectSeq(t, msgs, "[Begin Type Relation Insert*2 Update Delete Commit]")

	begin := decAt[source.Begin](t, msgs, 0)
	commit := decAt[source.Commit](t, msgs, 7)
	if begin.Xid != xid {
		t.Errorf("begin xid %d, want %d", begin.Xid, xid)
	}
	if begin.FinalLSN != commit.CommitLSN || !(commit.CommitLSN < commit.EndLSN) {
		t.Errorf("begin final_lsn %s, commit %s..%s: want final_lsn = commit_lsn < end_lsn", begin.FinalLSN, commit.CommitLSN, commit.EndLSN)
	}
	if !begin.CommitTime.Equal(commit.CommitTime) || time.Since(commit.CommitTime) > time.Minute || time.Since(commit.CommitTime) < -time.Minute {
		t.Errorf("commit times %v / %v", begin.CommitTime, commit.CommitTime)
	}
	// The WAL start of each change's XLogData does not go backwards within a
	// transaction. (Schema messages are left out: the server sends Relation
	// and Type messages with a WAL start of 0.)
	var prev source.LSN
	for _, d := range msgs {
		switch d.msg.(type) {
		case *source.TypeMessage, *source.Relation:
			continue
		}
		if d.lsn < prev {
			t.Errorf("XLogData starts go backwards: %s at %s after %s in %s", d.msg.Type(), d.lsn, prev, decSummary(msgs))
		}
		prev = d.lsn
	}

	typ := decAt[source.TypeMessage](t, msgs, 1)
	if typ.Namespace != "public" || typ.Name != "mood" || typ.Xid != 0 {
		t.Errorf("type message %+v", typ)
	}
	rel := decAt[source.Relation](t, msgs, 2)
	if rel.RelationID != decRelOID(t, pg, "items") || rel.Namespace != "public" || rel.Name != "items" || rel.ReplicaIdentity != 'd' || len(rel.Columns) != 4 {
		t.Fatalf("relation %+v", rel)
	}
	for i, want := range []struct {
		name string
		key  bool
	}{{"id", true}, {"name", false}, {"m", false}, {"n", false}} {
		c := rel.Columns[i]
		if c.Name != want.name || c.IsKey() != want.key {
			t.Errorf("column %d: %+v, want %s key=%v", i, c, want.name, want.key)
		}
	}
	if rel.Columns[0].TypeOID != 23 || rel.Columns[1].TypeOID != 25 || rel.Columns[2].TypeOID != typ.TypeOID || rel.Columns[3].TypeMod != -1 {
		t.Errorf("column types %+v (enum oid %d)", rel.Columns, typ.TypeOID)
	}

	ins1 := decAt[source.Insert](t, msgs, 3)
	ins2 := decAt[source.Insert](t, msgs, 4)
	if ins1.RelationID != rel.RelationID || ins1.Xid != 0 {
		t.Errorf("insert %+v", ins1)
	}
	decExpectTuple(t, "insert 1", ins1.New, "1", "one", "happy", "<null>")
	decExpectTuple(t, "insert 2", ins2.New, "2", "two", "sad", "5")
	upd := decAt[source.Update](t, msgs, 5)
	if upd.OldKind != source.OldNone || upd.Old != nil {
		t.Errorf("update without key change sent an old tuple: kind %q %v", upd.OldKind, decVals(upd.Old))
	}
	decExpectTuple(t, "update new", upd.New, "1", "uno", "happy", "<null>")
	del := decAt[source.Delete](t, msgs, 6)
	if del.OldKind != source.OldKey {
		t.Errorf("delete old kind %q, want 'K'", del.OldKind)
	}
	decExpectTuple(t, "delete old", del.Old, "2", "<null>", "<null>", "<null>")
}

func testDecodePrepared(t *testing.T, major int, twoPhase, commit bool) {
	pg := decSetup(t, major, "CREATE TABLE tp (id int PRIMARY KEY, v text)")
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: twoPhase})
	conn := pg.Conn(t)
	gid := "gid_" + strconv.FormatBool(commit)
	decExec(t, conn, "BEGIN")
	xid := decCurrentXid(t, conn)
	decExec(t, conn, "INSERT INTO tp VALUES (1, 'a')", "PREPARE TRANSACTION '"+gid+"'")
	// Wait until the prepare is decoded: a transaction already rolled back when
	// the walsender decodes its PREPARE has its changes skipped.
	msgs := r.collect(t)
	if commit {
		decExec(t, conn, "COMMIT PREPARED '"+gid+"'")
	} else {
		decExec(t, conn, "ROLLBACK PREPARED '"+gid+"'")
	}
	msgs = append(msgs, r.collect(t)...)

	if !twoPhase {
		// Without two-phase decoding (PostgreSQL 14) a prepared transaction is
		// sent as an ordinary one when COMMIT PREPARED is decMsg, and not at all
		// when it is rolled back.
		if !commit {
			decExpectSeq(t, msgs, "[]")
			return
		}
		decExpectSeq(t, msgs, "[Begin Relation Insert Commit]")
		if b := decAt[source.Begin](t, msgs, 0); b.Xid != xid {
			t.Errorf("begin xid %d, want %d", b.Xid, xid)
		}
		decExpectTuple(t, "insert", decAt[source.Insert](t, msgs, 2).New, "1", "a")
		return
	}

	if commit {
		decExpectSeq(t, msgs, "[BeginPrepare Relation Insert Prepare CommitPrepared]")
	} else {
		decExpectSeq(t, msgs, "[BeginPrepare Relation Insert Prepare RollbackPrepared]")
	}
	bp := decAt[source.BeginPrepare](t, msgs, 0)
	p := decAt[source.Prepare](t, msgs, 3)
	if bp.Xid != xid || p.Xid != xid || bp.GID != gid || p.GID != gid {
		t.Errorf("begin prepare %+v / prepare %+v: want xid %d gid %s", bp, p, xid, gid)
	}
	if bp.PrepareLSN != p.PrepareLSN || bp.EndLSN != p.EndLSN || !(p.PrepareLSN < p.EndLSN) || !bp.PrepareTime.Equal(p.PrepareTime) {
		t.Errorf("begin prepare %+v / prepare %+v: want equal LSNs and time, prepare_lsn < end_lsn", bp, p)
	}
	decExpectTuple(t, "insert", decAt[source.Insert](t, msgs, 2).New, "1", "a")
	if commit {
		cp := decAt[source.CommitPrepared](t, msgs, 4)
		if cp.Xid != xid || cp.GID != gid || !(cp.CommitLSN < cp.EndLSN) || cp.CommitLSN < p.EndLSN || cp.CommitTime.Before(p.PrepareTime) {
			t.Errorf("commit prepared %+v after prepare %+v", cp, p)
		}
		return
	}
	rp := decAt[source.RollbackPrepared](t, msgs, 4)
	if rp.Xid != xid || rp.GID != gid || rp.PrepareEndLSN != p.EndLSN || !(rp.PrepareEndLSN < rp.RollbackEndLSN) ||
		!rp.PrepareTime.Equal(p.PrepareTime) || rp.RollbackTime.Before(rp.PrepareTime) {
		t.Errorf("rollback prepared %+v after prepare %+v", rp, p)
	}
}

// decStreamedTx checks the shape of a streamed transaction: chunks of
// Stream Start (xid) ... Stream Stop, the first one with first_segment set,
// changes only inside chunks, Stream Abort only between chunks. It returns
// the messages after the last Stream Stop.
func decStreamedTx(t *testing.T, msgs []decMsg, xid uint32) (tail []decMsg) {
	t.Helper()
	in := false
	chunks := 0
	last := -1
	for i, d := range msgs {
		switch m := d.msg.(type) {
		case *source.StreamStart:
			if in {
				t.Fatalf("message %d: Stream Start inside a chunk: %s", i, decSummary(msgs))
			}
			if m.Xid != xid || m.FirstSegment != (chunks == 0) {
				t.Fatalf("message %d: %+v, want xid %d first_segment %v", i, m, xid, chunks == 0)
			}
			in = true
			chunks++
		case *source.StreamStop:
			if !in {
				t.Fatalf("message %d: Stream Stop outside a chunk: %s", i, decSummary(msgs))
			}
			in = false
			last = i
		case *source.Relation, *source.TypeMessage, *source.Insert, *source.Update, *source.Delete, *source.Truncate:
			if !in {
				t.Fatalf("message %d: %s outside a chunk: %s", i, d.msg.Type(), decSummary(msgs))
			}
		case *source.StreamAbort, *source.StreamCommit, *source.StreamPrepare, *source.CommitPrepared:
			if in {
				t.Fatalf("message %d: %s inside a chunk: %s", i, d.msg.Type(), decSummary(msgs))
			}
		default:
			t.Fatalf("message %d: unexpected %s in a streamed transaction: %s", i, d.msg.Type(), decSummary(msgs))
		}
	}
	if in || chunks < 2 {
		t.Fatalf("want at least 2 closed chunks (the transaction is far above logical_decoding_work_mem), got %d: %s", chunks, decSummary(msgs))
	}
	return msgs[last+1:]
}

// decInsertsByPart groups the streamed inserts of table big by their part column,
// checking each carries the xid expected for its part.
func decInsertsByPart(t *testing.T, msgs []decMsg, xidOf func(part string) uint32) map[string]int {
	t.Helper()
	parts := map[string]int{}
	seen := map[string]bool{}
	for _, d := range msgs {
		ins, ok := d.msg.(*source.Insert)
		if !ok {
			continue
		}
		v := decVals(ins.New)
		if len(v) != 3 || seen[v[0]] {
			t.Fatalf("insert %q: want 3 columns, ids once", v)
		}
		seen[v[0]] = true
		parts[v[1]]++
		if want := xidOf(v[1]); ins.Xid != want {
			t.Fatalf("insert %q carries xid %d, want %d", v[:2], ins.Xid, want)
		}
	}
	return parts
}

const decBigDDL = "CREATE TABLE big (id int PRIMARY KEY, part text, pad text)"

func testDecodeStreamed(t *testing.T, major int, streaming string) {
	pg := decSetup(t, major, decBigDDL)
	r := decOpenStream(t, pg, decStreamConfig{streaming: streaming, twoPhase: major >= 15})
	conn := pg.Conn(t)
	decExec(t, conn, "BEGIN")
	xid := decCurrentXid(t, conn)
	decExec(t, conn,
		"INSERT INTO big SELECT g, 'top1', repeat('x', 200) FROM generate_series(1, 1000) g",
		"SAVEPOINT s1",
		"INSERT INTO big SELECT g, 'sub', repeat('y', 200) FROM generate_series(1001, 2000) g")
	// Let the walsender decode (and so stream) the subtransaction's changes
	// before it aborts: changes of a transaction already aborted when they are
	// decoded are skipped, which would make the test depend on timing.
	msgs := r.collect(t)
	decExec(t, conn,
		"ROLLBACK TO SAVEPOINT s1",
		"RELEASE SAVEPOINT s1",
		"INSERT INTO big SELECT g, 'top2', repeat('z', 200) FROM generate_series(2001, 2100) g",
		"COMMIT")
	msgs = append(msgs, r.collect(t)...)
	tail := decStreamedTx(t, msgs, xid)

	var abort *source.StreamAbort
	abortAt := -1
	for i, d := range msgs {
		if a, ok := d.msg.(*source.StreamAbort); ok {
			if abort != nil {
				t.Fatalf("two Stream Abort messages: %s", decSummary(msgs))
			}
			abort, abortAt = a, i
		}
	}
	if abort == nil {
		t.Fatalf("no Stream Abort for the rolled-back savepoint: %s", decSummary(msgs))
	}
	if abort.Xid != xid || abort.SubXid == xid || abort.SubXid == 0 {
		t.Fatalf("stream abort %+v: want xid %d and the subtransaction's own xid", abort, xid)
	}
	parts := decInsertsByPart(t, msgs, func(part string) uint32 {
		if part == "sub" {
			return abort.SubXid
		}
		return xid
	})
	// Every change of the top transaction arrives; the subtransaction was big
	// enough to be streamed before its abort, and none of it comes after.
	if parts["top1"] != 1000 || parts["top2"] != 100 || parts["sub"] == 0 || parts["sub"] > 1000 {
		t.Fatalf("inserts per part %v: want top1=1000 top2=100 and some sub", parts)
	}
	for _, d := range msgs[abortAt:] {
		if ins, ok := d.msg.(*source.Insert); ok && ins.Xid == abort.SubXid {
			t.Fatalf("insert of the aborted subtransaction after its Stream Abort: %s", decSummary(msgs))
		}
	}

	if len(tail) != 1 {
		t.Fatalf("after the last chunk want only Stream Commit, got %s", decSummary(tail))
	}
	sc := decAt[source.StreamCommit](t, tail, 0)
	if sc.Xid != xid || !(sc.CommitLSN < sc.EndLSN) {
		t.Fatalf("stream commit %+v: want xid %d, commit_lsn < end_lsn", sc, xid)
	}
	if streaming == "parallel" {
		if !abort.HasAbortInfo || abort.AbortLSN == 0 || abort.AbortLSN >= sc.CommitLSN || abort.AbortTime.After(sc.CommitTime) || abort.AbortTime.IsZero() {
			t.Fatalf("parallel streaming: stream abort %+v: want abort_lsn and abort_time before the commit %+v", abort, sc)
		}
	} else if abort.HasAbortInfo {
		t.Fatalf("streaming=on: stream abort %+v carries abort info", abort)
	}
}

func testDecodeStreamedRollback(t *testing.T, major int) {
	pg := decSetup(t, major, decBigDDL)
	streaming := "on"
	if major >= 16 {
		streaming = "parallel"
	}
	r := decOpenStream(t, pg, decStreamConfig{streaming: streaming, twoPhase: major >= 15})
	conn := pg.Conn(t)
	decExec(t, conn, "BEGIN")
	xid := decCurrentXid(t, conn)
	decExec(t, conn, "INSERT INTO big SELECT g, 'top', repeat('x', 200) FROM generate_series(1, 1000) g")
	msgs := r.collect(t) // streamed before the rollback (see testDecodeStreamed)
	decExec(t, conn, "ROLLBACK")
	msgs = append(msgs, r.collect(t)...)
	tail := decStreamedTx(t, msgs, xid)
	if parts := decInsertsByPart(t, msgs, func(string) uint32 { return xid }); parts["top"] == 0 {
		t.Fatalf("no streamed insert before the abort: %s", decSummary(msgs))
	}
	if len(tail) != 1 {
		t.Fatalf("after the last chunk want only Stream Abort, got %s", decSummary(tail))
	}
	a := decAt[source.StreamAbort](t, tail, 0)
	if a.Xid != xid || a.SubXid != xid {
		t.Fatalf("stream abort %+v: want xid = sub_xid = %d", a, xid)
	}
	if a.HasAbortInfo != (streaming == "parallel") || (a.HasAbortInfo && (a.AbortLSN == 0 || a.AbortTime.IsZero())) {
		t.Fatalf("streaming=%s: stream abort %+v", streaming, a)
	}
}

func testDecodeStreamedPrepare(t *testing.T, major int, twoPhase bool) {
	pg := decSetup(t, major, decBigDDL)
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: twoPhase})
	conn := pg.Conn(t)
	decExec(t, conn, "BEGIN")
	xid := decCurrentXid(t, conn)
	decExec(t, conn,
		"INSERT INTO big SELECT g, 'top', repeat('x', 200) FROM generate_series(1, 1000) g",
		"PREPARE TRANSACTION 'big_gid'",
		"COMMIT PREPARED 'big_gid'")
	msgs := r.collect(t)
	tail := decStreamedTx(t, msgs, xid)
	if parts := decInsertsByPart(t, msgs, func(string) uint32 { return xid }); parts["top"] != 1000 {
		t.Fatalf("streamed inserts %v, want 1000", parts)
	}
	if !twoPhase {
		// PostgreSQL 14 decodes the prepared transaction as an ordinary one.
		decExpectSeq(t, tail, "[StreamCommit]")
		if sc := decAt[source.StreamCommit](t, tail, 0); sc.Xid != xid || !(sc.CommitLSN < sc.EndLSN) {
			t.Fatalf("stream commit %+v", sc)
		}
		return
	}
	decExpectSeq(t, tail, "[StreamPrepare CommitPrepared]")
	sp := decAt[source.StreamPrepare](t, tail, 0)
	cp := decAt[source.CommitPrepared](t, tail, 1)
	if sp.Xid != xid || sp.GID != "big_gid" || !(sp.PrepareLSN < sp.EndLSN) {
		t.Fatalf("stream prepare %+v: want xid %d gid big_gid", sp, xid)
	}
	if cp.Xid != xid || cp.GID != "big_gid" || cp.CommitLSN < sp.EndLSN || !(cp.CommitLSN < cp.EndLSN) {
		t.Fatalf("commit prepared %+v after stream prepare %+v", cp, sp)
	}
}

func testDecodeMessages(t *testing.T, major int) {
	pg := decSetup(t, major, "CREATE TABLE m (id int PRIMARY KEY)")
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: major >= 15})
	conn := pg.Conn(t)
	decExec(t, conn,
		"BEGIN",
		"INSERT INTO m VALUES (1)",
		"SELECT pg_logical_emit_message(true, 'app', 'in-tx')",
		"COMMIT",
		`SELECT pg_logical_emit_message(false, 'app', '\x00ff01'::bytea)`)
	msgs := r.collect(t)
	decExpectSeq(t, msgs, "[Begin Relation Insert Message Commit Message]")
	commit := decAt[source.Commit](t, msgs, 4)
	tx := decAt[source.LogicalMessage](t, msgs, 3)
	if !tx.Transactional() || tx.Prefix != "app" || string(tx.Content) != "in-tx" || tx.Xid != 0 || tx.LSN == 0 || tx.LSN > commit.CommitLSN {
		t.Fatalf("transactional message %+v (commit at %s)", tx, commit.CommitLSN)
	}
	nt := decAt[source.LogicalMessage](t, msgs, 5)
	if nt.Transactional() || nt.Prefix != "app" || !slices.Equal(nt.Content, []byte{0, 0xff, 1}) || nt.LSN < commit.EndLSN {
		t.Fatalf("non-transactional message %+v (previous commit ends at %s)", nt, commit.EndLSN)
	}
}

func testDecodeTruncate(t *testing.T, major int) {
	pg := decSetup(t, major, `CREATE TABLE parent (id serial PRIMARY KEY);
		CREATE TABLE child (id int PRIMARY KEY, pid int REFERENCES parent);
		CREATE TABLE solo (v int);
		INSERT INTO parent VALUES (1); INSERT INTO child VALUES (1, 1); INSERT INTO solo VALUES (1)`)
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: major >= 15})
	pg.Exec(t, "TRUNCATE parent CASCADE")
	pg.Exec(t, "TRUNCATE parent RESTART IDENTITY CASCADE")
	pg.Exec(t, "TRUNCATE solo")
	msgs := r.collect(t)

	// Relation messages come before a relation's first change and again after
	// its definition changed; a TRUNCATE may count as such a change, so only the
	// other messages are compared as a sequence.
	var rest []decMsg
	for _, d := range msgs {
		if _, ok := d.msg.(*source.Relation); !ok {
			rest = append(rest, d)
		}
	}
	decExpectSeq(t, rest, "[Begin Truncate Commit Begin Truncate Commit Begin Truncate Commit]")
	parent, child, solo := decRelOID(t, pg, "parent"), decRelOID(t, pg, "child"), decRelOID(t, pg, "solo")
	for i, want := range []struct {
		opts uint8
		ids  []uint32
	}{
		{source.TruncateCascade, []uint32{parent, child}},
		{source.TruncateCascade | source.TruncateRestartIdentity, []uint32{parent, child}},
		{0, []uint32{solo}},
	} {
		tr := decAt[source.Truncate](t, rest, 3*i+1)
		ids := slices.Clone(tr.RelationIDs)
		slices.Sort(ids)
		wantIDs := slices.Clone(want.ids)
		slices.Sort(wantIDs)
		if tr.Options != want.opts || !slices.Equal(ids, wantIDs) || tr.Xid != 0 {
			t.Errorf("truncate %d: %+v, want options %d relations %v", i, tr, want.opts, want.ids)
		}
	}
}

func testDecodeIdentityFull(t *testing.T, major int) {
	pg := decSetup(t, major, `CREATE TABLE rf (id int, v text, n int);
		ALTER TABLE rf REPLICA IDENTITY FULL;
		INSERT INTO rf VALUES (1, 'a', NULL)`)
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: major >= 15})
	pg.Exec(t, "UPDATE rf SET v = 'b' WHERE id = 1")
	pg.Exec(t, "DELETE FROM rf WHERE id = 1")
	msgs := r.collect(t)
	decExpectSeq(t, msgs, "[Begin Relation Update Commit Begin Delete Commit]")
	rel := decAt[source.Relation](t, msgs, 1)
	if rel.ReplicaIdentity != 'f' {
		t.Errorf("replica identity %q, want 'f'", rel.ReplicaIdentity)
	}
	for _, c := range rel.Columns {
		if !c.IsKey() {
			t.Errorf("REPLICA IDENTITY FULL: column %s not flagged as key", c.Name)
		}
	}
	upd := decAt[source.Update](t, msgs, 2)
	if upd.OldKind != source.OldFull {
		t.Fatalf("update old kind %q, want 'O'", upd.OldKind)
	}
	decExpectTuple(t, "update old", upd.Old, "1", "a", "<null>")
	decExpectTuple(t, "update new", upd.New, "1", "b", "<null>")
	del := decAt[source.Delete](t, msgs, 5)
	if del.OldKind != source.OldFull {
		t.Fatalf("delete old kind %q, want 'O'", del.OldKind)
	}
	decExpectTuple(t, "delete old", del.Old, "1", "b", "<null>")
}

func testDecodeUnchangedToast(t *testing.T, major int) {
	pg := decSetup(t, major, `CREATE TABLE toasty (id int PRIMARY KEY, big text, n int);
		ALTER TABLE toasty ALTER COLUMN big SET STORAGE EXTERNAL`)
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: major >= 15})
	pg.Exec(t, "INSERT INTO toasty VALUES (1, repeat('abcdefghij', 1000), 1)")
	pg.Exec(t, "UPDATE toasty SET n = 2 WHERE id = 1")
	pg.Exec(t, "UPDATE toasty SET big = 'short', n = 3 WHERE id = 1")
	msgs := r.collect(t)
	decExpectSeq(t, msgs, "[Begin Relation Insert Commit Begin Update Commit Begin Update Commit]")
	decExpectTuple(t, "insert", decAt[source.Insert](t, msgs, 2).New, "1", strings.Repeat("abcdefghij", 1000), "1")
	upd := decAt[source.Update](t, msgs, 5)
	if upd.OldKind != source.OldNone {
		t.Errorf("update old kind %q, want none", upd.OldKind)
	}
	decExpectTuple(t, "update keeping the TOASTed value", upd.New, "1", "<unchanged>", "2")
	decExpectTuple(t, "update replacing it", decAt[source.Update](t, msgs, 8).New, "1", "short", "3")
}

func testDecodeKeyChange(t *testing.T, major int) {
	pg := decSetup(t, major, `CREATE TABLE pk (id int PRIMARY KEY, v text);
		INSERT INTO pk VALUES (1, 'a')`)
	r := decOpenStream(t, pg, decStreamConfig{streaming: "on", twoPhase: major >= 15})
	pg.Exec(t, "UPDATE pk SET id = 10 WHERE id = 1")
	msgs := r.collect(t)
	decExpectSeq(t, msgs, "[Begin Relation Update Commit]")
	upd := decAt[source.Update](t, msgs, 2)
	if upd.OldKind != source.OldKey {
		t.Fatalf("update old kind %q, want 'K'", upd.OldKind)
	}
	decExpectTuple(t, "old key", upd.Old, "1", "<null>")
	decExpectTuple(t, "new", upd.New, "10", "a")
}

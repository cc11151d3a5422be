package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// opKind tells what a queued statement is, to name it in errors.
type opKind byte

const (
	opBegin opKind = iota
	opInsert
	opUpdate
	opDelete
	opTruncate
	opProgress
	opPreparedRow
	opPreparedFill
	opPrepare
	opCommit
	opDDL
	opDeallocate
)

func (k opKind) String() string {
	switch k {
	case opBegin:
		return "begin"
	case opInsert:
		return "insert into"
	case opUpdate:
		return "update"
	case opDelete:
		return "delete from"
	case opTruncate:
		return "truncate"
	case opProgress:
		return "record progress in pgrelay.progress"
	case opPreparedRow:
		return "record prepared transaction in pgrelay.prepared"
	case opPreparedFill:
		return "fill the older rows of a column added by a prepared transaction in"
	case opPrepare:
		return "prepare transaction"
	case opCommit:
		return "commit"
	case opDDL:
		return sink.OpChangeSchema
	default:
		return "deallocate"
	}
}

// op is one queued statement, kept to map a result or an error back to the
// change it came from.
type op struct {
	kind     opKind
	table    string // quoted target name
	lsn      source.LSN
	keyStart int // the row's identity in Tx.keys, for updates and deletes
	keyEnd   int
	detail   string   // for DDL: the statement
	set      *setRows // a set statement: many rows (setop.go)
}

// Tx is one target transaction on the apply connection. BEGIN is sent with the
// first batch; statements are queued and sent Options.BatchSize at a time.
type Tx struct {
	s     *Sink
	batch *pgconn.Batch
	ops   []op
	bytes int
	keys  []byte // rendered row identities of queued updates and deletes
	begun bool   // BEGIN is queued or sent
	sent  bool   // a batch reached the server: there is a transaction to roll back
	err   error  // the first failure: the transaction can only be rolled back
	done  bool
	// inflight receives the result of the batch sent by sendAsync, nil when
	// none is on the wire. The apply connection is not touched again until it
	// is taken (wait).
	inflight chan error

	// Changes waiting to become statements, per table (see reorder.go).
	queues     map[*tableStatements]*tableQueue
	queueOrder []*tableQueue
	pending    int
	key        []byte // scratch: row key
	run        insertRun

	// Scratch of set statements (setop.go).
	setShape []byte
	setSeen  map[string]struct{}
	setBuf   []byte
	setEnds  []int

	// relocated undoes the entries of Sink.located that DDL queued in this
	// transaction set, should it roll back.
	relocated []relocation

	shape  []byte   // scratch: shape key
	values [][]byte // scratch: parameter values
	format []int16  // scratch: parameter formats
}

// Begin starts a target transaction. A lost connection is re-established here,
// so the apply layer's retry of a whole transaction starts on a live session.
func (s *Sink) Begin(ctx context.Context) (sink.Tx, error) {
	return s.begin(ctx)
}

func (s *Sink) begin(ctx context.Context) (*Tx, error) {
	if s.cur != nil {
		return nil, errors.New("sink/postgres: begin: the previous transaction is still open (commit or roll it back first)")
	}
	if s.asyncErr != nil {
		return nil, s.asyncErr
	}
	// While a commit is outstanding its goroutine has the connection: the
	// new transaction only queues until then (its first send waits).
	if s.pending == nil {
		if _, err := s.applyConn(ctx); err != nil {
			return nil, err
		}
	}
	tx := &Tx{s: s, batch: &pgconn.Batch{}}
	s.cur = tx
	return tx, nil
}

// queueBegin makes BEGIN the first statement of the transaction's first batch.
func (tx *Tx) queueBegin() {
	if tx.begun {
		return
	}
	tx.begun = true
	tx.batch.ExecParams("BEGIN", nil, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opBegin})
	// Deferrable unique and exclusion constraints are checked at COMMIT: the
	// source checked them at the end of a statement (or at commit) that
	// changed many rows, which arrive here one by one.
	tx.batch.ExecParams("SET CONSTRAINTS ALL DEFERRED", nil, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opBegin})
	for _, name := range tx.s.deallocate {
		tx.batch.ExecParams("DEALLOCATE "+tx.s.dialect.QuoteIdent(name), nil, nil, nil, nil)
		tx.ops = append(tx.ops, op{kind: opDeallocate, detail: name})
	}
	tx.s.deallocate = nil
}

func (tx *Tx) usable() error {
	if tx.done {
		return errors.New("sink/postgres: transaction already finished")
	}
	return tx.err
}

// fail records the first failure; the transaction can only be rolled back.
func (tx *Tx) fail(err error) error {
	if tx.err == nil {
		tx.err = err
	}
	return err
}

// Apply queues one change.
func (tx *Tx) Apply(ctx context.Context, ch *sink.Change) error {
	if err := tx.usable(); err != nil {
		return err
	}
	if ch == nil || ch.Table == nil {
		return tx.fail(errors.New("sink/postgres: apply: change without a table"))
	}
	ts := tx.s.statementsFor(ch.Table)
	if tx.s.charsAsBytes && len(ts.chars) > 0 {
		ch = legacyChars(ts, ch)
	}
	var err error
	if !tx.s.opts.KeepOrder {
		err = tx.queue(ctx, ts, ch)
	} else {
		err = tx.applyNow(ctx, ts, ch)
	}
	return earlierChange(err, ch.LSN)
}

// earlierChange marks err as an earlier change's when it names another source
// LSN than lsn, the change at hand: sending it (or the insert run before it)
// brought back the result of statements queued before it.
func earlierChange(err error, lsn source.LSN) error {
	var ce *sink.ChangeError
	if err == nil || !errors.As(err, &ce) || ce.LSN == 0 {
		return err
	}
	if ce.LSN == lsn || ce.LastLSN != 0 && ce.LSN <= lsn && lsn <= ce.LastLSN {
		return err
	}
	return &sink.EarlierChangeError{Err: err}
}

// applyNow turns one change into a statement or a row of an insert run.
func (tx *Tx) applyNow(ctx context.Context, ts *tableStatements, ch *sink.Change) error {
	if ch.Kind == sink.Insert {
		if len(ch.New) != len(ts.columns) {
			return tx.fail(changeError(sink.ChangeError{Op: "insert into", Table: ts.qname, LSN: ch.LSN,
				Err: fmt.Errorf("row has %d values, table has %d columns", len(ch.New), len(ts.columns))}))
		}
		if tx.s.opts.CopyThreshold > 0 {
			if tx.run.ts != nil && tx.run.ts != ts {
				if err := tx.flushRun(ctx); err != nil {
					return err
				}
			}
			if tx.run.add(ts, ch) {
				if tx.run.full(tx.s.opts) {
					return tx.flushRun(ctx)
				}
				return nil
			}
		}
	}
	if err := tx.flushRun(ctx); err != nil {
		return err
	}
	switch ch.Kind {
	case sink.Insert:
		return tx.queueInsert(ctx, ts, ch.New, ch.LSN)
	case sink.Update, sink.Delete:
		return tx.queueUpdateDelete(ctx, ts, ch)
	default:
		return tx.fail(fmt.Errorf("sink/postgres: apply to %s at source LSN %s: unknown change kind %q", ts.qname, ch.LSN, byte(ch.Kind)))
	}
}

func (tx *Tx) queueInsert(ctx context.Context, ts *tableStatements, row source.Tuple, lsn source.LSN) error {
	st := ts.insertStatement()
	if st.name == "" {
		// The batch on the wire first: its error belongs to its own change.
		if err := tx.wait(); err != nil {
			return err
		}
		if err := tx.s.prepare(ctx, ts, st, true); err != nil {
			return tx.fail(classify(changeError(sink.ChangeError{Op: "insert into", Table: ts.qname, LSN: lsn, Err: err}), tx.s.conn.IsClosed()))
		}
	}
	if err := tx.bind(ts, st, row, nil); err != nil {
		return tx.fail(changeError(sink.ChangeError{Op: "insert into", Table: ts.qname, LSN: lsn, Err: err}))
	}
	tx.ops = append(tx.ops, op{kind: opInsert, table: ts.qname, lsn: lsn})
	return tx.maybeSend(ctx)
}

func (tx *Tx) queueUpdateDelete(ctx context.Context, ts *tableStatements, ch *sink.Change) error {
	kind, opName := opUpdate, "update"
	if ch.Kind == sink.Delete {
		kind, opName = opDelete, "delete from"
	}
	// Under REPLICA IDENTITY FULL, a table with no published column has no
	// identity column either; its rows are all alike, and any one will do.
	if len(ts.identity) == 0 && !ts.full {
		return tx.fail(changeError(sink.ChangeError{Op: opName, Table: ts.qname, LSN: ch.LSN,
			Err: fmt.Errorf("%w: it has REPLICA IDENTITY NOTHING or no key, so its rows cannot be located; set one on the source (ALTER TABLE %s REPLICA IDENTITY FULL, or add a primary key)", sink.ErrNoIdentity, ts.table.QualifiedName())}))
	}
	// The row is located by the old tuple when one was sent (key change, FULL,
	// every delete), else by the new tuple's key columns.
	locate := ch.Old
	if ch.OldKind == source.OldNone || ch.Old == nil {
		locate = ch.New
	}
	var err error
	tx.shape, err = ts.shapeKey(tx.shape, ch, locate)
	if err != nil {
		return tx.fail(changeError(sink.ChangeError{Op: opName, Table: ts.qname, LSN: ch.LSN, Err: err}))
	}
	st := ts.byShape[string(tx.shape)]
	if st == nil {
		if err := tx.wait(); err != nil {
			return err
		}
		st = ts.buildShape(tx.shape)
		if err := tx.s.prepare(ctx, ts, st, len(ts.byShape) < maxStatementsPerTable); err != nil {
			return tx.fail(classify(changeError(sink.ChangeError{Op: opName, Table: ts.qname, LSN: ch.LSN, Err: err}), tx.s.conn.IsClosed()))
		}
		if st.name != "" {
			ts.byShape[string(tx.shape)] = st
		}
	}
	if err := tx.bind(ts, st, ch.New, locate); err != nil {
		return tx.fail(changeError(sink.ChangeError{Op: opName, Table: ts.qname, LSN: ch.LSN, Err: err}))
	}
	start := len(tx.keys)
	tx.keys = ts.keyText(tx.keys, locate)
	tx.ops = append(tx.ops, op{kind: kind, table: ts.qname, lsn: ch.LSN, keyStart: start, keyEnd: len(tx.keys)})
	return tx.maybeSend(ctx)
}

// bind queues st with values taken from the tuples as they are: text values as
// text parameters, binary ones as binary parameters, NULL as nil.
func (tx *Tx) bind(ts *tableStatements, st *statement, newRow, oldRow source.Tuple) error {
	tx.queueBegin()
	tx.values = tx.values[:0]
	binary := false
	for _, p := range st.params {
		row := newRow
		if p.old {
			row = oldRow
		}
		v := row[p.col]
		switch v.Kind {
		case source.ValueNull:
			tx.values = append(tx.values, nil)
		case source.ValueText:
			tx.values = append(tx.values, nonNil(v.Data))
		case source.ValueBinary:
			c := &ts.table.Columns[p.col]
			if !binaryOK(c) {
				return fmt.Errorf("column %q (%s): a binary value cannot be passed through for this type: use text mode (binary off) on the source", c.Name, c.TypeName)
			}
			binary = true
			tx.values = append(tx.values, nonNil(v.Data))
		case source.ValueUnchanged:
			return fmt.Errorf("column %q: unchanged TOAST value where a value is needed", ts.columns[p.col])
		default:
			return fmt.Errorf("column %q: unknown value kind %q", ts.columns[p.col], v.Kind)
		}
		tx.bytes += len(v.Data)
	}
	var formats []int16
	if binary {
		tx.format = tx.format[:0]
		for _, p := range st.params {
			row := newRow
			if p.old {
				row = oldRow
			}
			if row[p.col].Kind == source.ValueBinary {
				tx.format = append(tx.format, 1)
			} else {
				tx.format = append(tx.format, 0)
			}
		}
		formats = tx.format
	}
	if st.name != "" {
		tx.batch.ExecPrepared(st.name, tx.values, formats, nil)
	} else {
		tx.batch.ExecParams(st.sql, tx.values, st.paramOIDs, formats, nil)
	}
	return nil
}

// nonNil keeps an empty text value from being sent as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (tx *Tx) maybeSend(ctx context.Context) error {
	if len(tx.ops) >= tx.s.opts.BatchSize || tx.bytes >= tx.s.opts.BatchBytes {
		return tx.sendAsync(ctx)
	}
	return nil
}

// wait takes the result of the batch on the wire, if any. Everything that uses
// the apply connection calls it first.
func (tx *Tx) wait() error {
	if err := tx.s.settle(); err != nil {
		return tx.fail(err)
	}
	if tx.inflight == nil {
		return nil
	}
	err := <-tx.inflight
	tx.inflight = nil
	if err != nil {
		return tx.fail(err)
	}
	return nil
}

// sendAsync sends the queued statements and returns at once: the next batch
// is built while the target executes this one (one batch on the wire at a
// time). Its result, and any error mapped to its change, is taken by the next
// wait: at the next send, at Commit, or before any other use of the
// connection, so nothing is committed past a failed statement.
func (tx *Tx) sendAsync(ctx context.Context) error {
	return tx.sendAsyncThen(ctx, nil)
}

// sendAsyncThen is sendAsync followed, on the same goroutine, by the COPY of
// an insert run (nil: none). The copy's outcome is taken like the batch's.
func (tx *Tx) sendAsyncThen(ctx context.Context, c *copyJob) error {
	if err := tx.wait(); err != nil {
		return err
	}
	if len(tx.ops) == 0 && c == nil {
		return nil
	}
	conn, ops, batch, keys := tx.take()
	done := make(chan error, 1)
	tx.inflight = done
	s := tx.s
	go func() {
		if len(ops) > 0 {
			if err := s.exec(ctx, conn, ops, batch, keys); err != nil {
				done <- err
				return
			}
		}
		if c != nil {
			done <- s.copyRun(ctx, conn, c)
			return
		}
		done <- nil
	}()
	return nil
}

// take hands the queued statements over for sending.
func (tx *Tx) take() (*pgx.Conn, []op, *pgconn.Batch, []byte) {
	ops, batch, keys := tx.ops, tx.batch, tx.keys
	tx.ops, tx.batch, tx.bytes, tx.keys = tx.ops[:0:0], &pgconn.Batch{}, 0, nil
	tx.sent = true
	return tx.s.conn, ops, batch, keys
}

// Truncate queues TRUNCATE of tables. CASCADE is never used: the source lists
// every relation it truncated, as PostgreSQL's own apply does; and, as it
// does, only those: each table is truncated ONLY, so a target-only table
// that inherits from one keeps its rows, except a partitioned target table,
// whose rows are all in its partitions.
func (tx *Tx) Truncate(ctx context.Context, tables []*schema.Table, options uint8) error {
	if err := tx.usable(); err != nil {
		return err
	}
	if len(tables) == 0 {
		return nil
	}
	if err := tx.drain(ctx); err != nil {
		return err
	}
	if err := tx.flushRun(ctx); err != nil {
		return err
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = quotedTable(tx.s.dialect, tx.s.located.target(t))
	}
	var kinds []byte
	if err := tx.s.withMeta(ctx, func(conn *pgx.Conn) (err error) {
		kinds, err = relkinds(ctx, conn, names)
		return err
	}); err != nil {
		return changeError(sink.ChangeError{Op: "truncate", Table: strings.Join(names, ", "), Err: err})
	}
	owns := make([]string, len(names))
	for i, name := range names {
		owns[i] = ownRows(kinds[i], name)
	}
	sql := "TRUNCATE " + strings.Join(owns, ", ")
	if options&source.TruncateRestartIdentity != 0 {
		sql += " RESTART IDENTITY"
	}
	tx.queueBegin()
	tx.batch.ExecParams(sql, nil, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opTruncate, table: strings.Join(names, ", ")})
	return tx.maybeSend(ctx)
}

// queueProgress queues the upsert of the slot's position; it never moves back.
func (tx *Tx) queueProgress(p sink.Progress) {
	tx.queueBegin()
	tx.batch.ExecParams(progressSQL, progressArgs(tx.s.slotFor(p), p), nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opProgress, lsn: p.LSN})
}

const progressSQL = `INSERT INTO pgrelay.progress AS p (slot, lsn, commit_time, updated_at)
VALUES ($1, $2::text::pg_lsn, $3::text::timestamptz, now())
ON CONFLICT (slot) DO UPDATE SET
  lsn = GREATEST(p.lsn, excluded.lsn),
  commit_time = CASE WHEN excluded.lsn >= p.lsn THEN excluded.commit_time ELSE p.commit_time END,
  updated_at = now()`

// Commit flushes what is queued, records p in pgrelay.progress and commits, all
// in one round trip when nothing else is pending.
func (tx *Tx) Commit(ctx context.Context, p sink.Progress) error {
	return tx.end(ctx, p, tx.commit)
}

// end runs a commit variant; a failed one leaves nothing open, so Rollback
// after it is a no-op.
func (tx *Tx) end(ctx context.Context, p sink.Progress, commit func(context.Context, sink.Progress) error) error {
	if tx.done {
		return errors.New("sink/postgres: commit: transaction already finished")
	}
	err := commit(ctx, p)
	if err != nil && !tx.done {
		_ = tx.Rollback(ctx)
	}
	return err
}

// queueEnd flushes what is queued and queues the record of p: everything of
// the transaction but its COMMIT.
func (tx *Tx) queueEnd(ctx context.Context, p sink.Progress) error {
	if tx.err != nil {
		return tx.err
	}
	if err := tx.drain(ctx); err != nil {
		return err
	}
	if err := tx.flushRun(ctx); err != nil {
		return err
	}
	tx.queueProgress(p)
	return nil
}

func (tx *Tx) commit(ctx context.Context, p sink.Progress) error {
	if err := tx.queueEnd(ctx, p); err != nil {
		return err
	}
	if err := tx.sendChecked(ctx); err != nil {
		return err
	}
	tx.batch.ExecParams("COMMIT", nil, nil, nil, nil)
	tx.ops = append(tx.ops, op{kind: opCommit, lsn: p.LSN})
	err := tx.send(ctx)
	if err == nil {
		tx.finish()
		return nil
	}
	var se *sendError
	if errors.As(err, &se) && se.commitUnknown {
		// The connection died with COMMIT on the wire: look at the target.
		tx.finish()
		return tx.s.resolveCommit(ctx, p, err)
	}
	return err
}

// Rollback abandons the transaction. It is a no-op after Commit.
func (tx *Tx) Rollback(ctx context.Context) error {
	if tx.done {
		return nil
	}
	defer tx.finish()
	tx.s.located.undo(tx.relocated)
	_ = tx.wait() // the batch on the wire; its error no longer matters
	conn := tx.s.conn
	if !tx.sent || conn == nil || conn.IsClosed() {
		// Nothing reached the server, or the session is gone and with it the
		// transaction.
		return nil
	}
	if _, err := conn.PgConn().Exec(ctx, "ROLLBACK").ReadAll(); err != nil {
		_ = conn.Close(ctx)
		return nil // the server rolls back a transaction whose session ends
	}
	return nil
}

func (tx *Tx) finish() {
	tx.done = true
	tx.relocated = nil
	tx.queues, tx.queueOrder, tx.pending = nil, nil, 0
	tx.s.retire()
	tx.ops = nil
	tx.batch = nil
	tx.run.reset()
	if tx.s.cur == tx {
		tx.s.cur = nil
	}
}

// sendChecked sends the queued statements ahead of the COMMIT or PREPARE
// TRANSACTION that ends the transaction when some of them are updates or
// deletes: their row counts are only known from the results, and the
// transaction must not end before they were checked. Otherwise (inserts, COPY,
// DDL, bookkeeping: failures are server errors, which abort the transaction
// by themselves) the end joins the same round trip.
func (tx *Tx) sendChecked(ctx context.Context) error {
	if tx.hasRowChecks() {
		return tx.send(ctx)
	}
	return nil
}

// hasRowChecks reports whether queued statements are updates or deletes,
// whose row counts must be checked before the transaction ends.
func (tx *Tx) hasRowChecks() bool {
	for _, o := range tx.ops {
		if o.kind == opUpdate || o.kind == opDelete {
			return true
		}
	}
	return false
}

// sendError is a failure of a sent batch.
type sendError struct {
	err error
	// commitUnknown: the connection was lost after COMMIT was sent, so the
	// transaction may or may not have committed.
	commitUnknown bool
}

func (e *sendError) Error() string { return e.err.Error() }
func (e *sendError) Unwrap() error { return e.err }

// send executes the queued statements in one round trip and maps every result
// and error back to its change.
func (tx *Tx) send(ctx context.Context) error {
	if err := tx.wait(); err != nil {
		return err
	}
	if len(tx.ops) == 0 {
		return nil
	}
	conn, ops, batch, keys := tx.take()
	if err := tx.s.exec(ctx, conn, ops, batch, keys); err != nil {
		return tx.fail(err)
	}
	return nil
}

// exec runs one batch on conn and maps every result and error back to its
// change. It touches no Tx state: sendAsync runs it on another goroutine.
func (s *Sink) exec(ctx context.Context, conn *pgx.Conn, ops []op, batch *pgconn.Batch, keys []byte) error {
	s.stats.batches.Add(1)
	s.stats.statements.Add(int64(len(ops)))
	table, lsn := batchSubject(ops)
	defer s.watchLocks(conn, table, lsn)()
	mrr := conn.PgConn().ExecBatch(ctx, batch)
	done := 0
	missing := -1
	var removed []bool // the rows a set DELETE returned, when one missed a row
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		var o *op
		if done < len(ops) {
			o = &ops[done]
		}
		var returned []bool
		if o != nil && o.set != nil && o.set.returned {
			returned = make([]bool, o.set.rows)
			for rr.NextRow() {
				if v := rr.Values(); len(v) == 1 {
					if i, err := strconv.Atoi(string(v[0])); err == nil && i >= 1 && i <= len(returned) {
						returned[i-1] = true
					}
				}
			}
		}
		tag, err := rr.Close()
		if err != nil {
			break
		}
		if o != nil && (o.kind == opUpdate || o.kind == opDelete) && missing < 0 {
			want := int64(1)
			if o.set != nil {
				want = int64(o.set.rows)
			}
			if tag.RowsAffected() != want {
				missing, removed = done, returned
			}
		}
		done++
	}
	err := mrr.Close()
	if missing >= 0 && (err == nil || missing < done) {
		o := ops[missing]
		ce := changeError(sink.ChangeError{Op: o.kind.String(), Table: o.table, LSN: o.lsn, Key: string(keys[o.keyStart:o.keyEnd]), Err: sink.ErrRowNotFound})
		if o.set != nil {
			r := o.set.missingRow(ctx, conn, removed, err == nil)
			ce.LSN = o.set.lsns[r]
			start := o.keyStart
			if r > 0 {
				start = o.set.keyEnds[r-1]
			}
			ce.Key = string(keys[start:o.set.keyEnds[r]])
		}
		return ce
	}
	if err == nil {
		return nil
	}
	err = cutBy(ctx, err)
	lost := conn.IsClosed()
	failed := done
	if failed >= len(ops) {
		failed = len(ops) - 1
	}
	o := ops[failed]
	ce := changeError(sink.ChangeError{Op: o.kind.String(), Table: o.table, LSN: o.lsn, Err: err})
	if o.set != nil {
		// Which of the rows failed is not known: the error is among them.
		ce.LastLSN = o.set.lsns[len(o.set.lsns)-1]
	} else if o.kind == opUpdate || o.kind == opDelete {
		ce.Key = string(keys[o.keyStart:o.keyEnd])
	}
	if o.kind == opDDL {
		ce.Table = o.detail
	}
	if lost && sqlState(err) == "" {
		// The failing statement is unknown once the session is gone.
		ce = changeError(sink.ChangeError{Op: "send batch", Table: o.table, LSN: ops[len(ops)-1].lsn, Err: err})
		if last := ops[len(ops)-1].kind; last == opCommit || last == opPrepare {
			return &sendError{err: ce, commitUnknown: true}
		}
	}
	return classify(ce, lost)
}

// flushRun sends the pending run of inserts: as COPY when long enough, else as
// INSERT statements.
func (tx *Tx) flushRun(ctx context.Context) error {
	r := &tx.run
	if r.ts == nil {
		return nil
	}
	defer r.reset()
	if r.rows < tx.s.opts.CopyThreshold {
		ncol := len(r.ts.columns)
		row := make(source.Tuple, ncol)
		for i := 0; i < r.rows; i++ {
			for c := range ncol {
				ref := r.vals[i*ncol+c]
				if ref.null {
					row[c] = source.Value{Kind: source.ValueNull}
				} else {
					row[c] = source.Value{Kind: source.ValueText, Data: r.arena[ref.off:ref.end]}
				}
			}
			if err := tx.queueInsert(ctx, r.ts, row, r.lsns[i]); err != nil {
				return err
			}
		}
		return nil
	}
	tx.queueBegin()
	// The COPY follows the statements queued before it on the goroutine
	// that sends them: the target works through both while the caller goes
	// on (a group's last run of inserts used to hold up the applier until
	// the target had executed the whole group). Its encoding goes to the
	// buffer the previous COPY, possibly still on the wire, does not use.
	s := tx.s
	s.copyFlip ^= 1
	data := r.encode(s.copyScratch[s.copyFlip][:0])
	s.copyScratch[s.copyFlip] = data[:0]
	c := &copyJob{sql: r.ts.copySQL, table: r.ts.qname, data: data, lsns: append([]source.LSN(nil), r.lsns[:r.rows]...)}
	return tx.sendAsyncThen(ctx, c)
}

// copyJob is the COPY of an insert run, sent after the statements queued
// before it.
type copyJob struct {
	sql, table string
	data       []byte
	lsns       []source.LSN // of the rows, in order
}

// copyRun runs c on conn and maps a failure to the row it names. It touches no
// Tx state: sendAsyncThen runs it on another goroutine.
func (s *Sink) copyRun(ctx context.Context, conn *pgx.Conn, c *copyJob) error {
	defer s.watchLocks(conn, c.table, c.lsns[0])()
	if _, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(c.data), c.sql); err != nil {
		ce := changeError(sink.ChangeError{Op: "copy into", Table: c.table, LSN: c.lsns[0], LastLSN: c.lsns[len(c.lsns)-1], Err: cutBy(ctx, err)})
		line, column := copyLine(err)
		if line >= 1 && line <= len(c.lsns) {
			ce.LSN, ce.LastLSN = c.lsns[line-1], 0
			refusedColumn(ce, column)
		}
		return classify(ce, conn.IsClosed())
	}
	s.stats.copyRuns.Add(1)
	s.stats.copyRows.Add(int64(len(c.lsns)))
	return nil
}

// cutBy marks err as ctx's end when ctx ended and the target did not answer
// with an error of its own: pgconn reports a COPY that a cancelled context cut
// short as the read error of the connection it closed ("use of closed network
// connection"), which would read as a fault rather than a stop.
func cutBy(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) && !errors.As(err, &pgErr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

// resolveTimeout bounds the check of a commit or prepare whose outcome was lost.
const resolveTimeout = 15 * time.Second

var copyLineRE = regexp.MustCompile(`COPY [^,]*, line (\d+)(?:, column (.*?)(?:: "|$))?`)

// copyLine returns the 1-based input line a COPY error names in its context,
// and the column when it names one.
func copyLine(err error) (line int, column string) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return 0, ""
	}
	m := copyLineRE.FindStringSubmatch(pgErr.Where)
	if m == nil {
		return 0, ""
	}
	n, _ := strconv.Atoi(m[1])
	return n, m[2]
}

// resolveCommit settles a commit whose outcome was lost with the connection: the
// progress row, written in the same transaction, says whether it committed.
func (s *Sink) resolveCommit(ctx context.Context, p sink.Progress, sendErr error) error {
	// Settle it even when ctx is what cut the commit off (shutdown).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	conn, err := s.applyConn(ctx)
	if err != nil {
		return fmt.Errorf("sink/postgres: commit at source LSN %s: outcome unknown (%v) and the target cannot be reached to check; restarting resumes from the stored progress: %w", p.LSN, sendErr, err)
	}
	stored, err := readProgress(ctx, conn, s.slotFor(p))
	if err != nil {
		return fmt.Errorf("sink/postgres: commit at source LSN %s: outcome unknown (%v); restarting resumes from the stored progress: %w", p.LSN, sendErr, err)
	}
	if stored.LSN >= p.LSN {
		return nil
	}
	// Not committed: the transaction can be retried as a whole.
	return sink.Retryable(sendErr)
}

// slotFor is the slot a progress record is for: p.Slot, else the Setup slot.
func (s *Sink) slotFor(p sink.Progress) string {
	if p.Slot != "" {
		return p.Slot
	}
	return s.slot
}

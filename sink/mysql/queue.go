package mysql

import (
	"context"
	"strconv"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Changes wait in per-table queues before they become statements, so that a
// group of source transactions reaches each target table in one stretch:
// long runs of inserts (multi-row INSERT), of deletes (DELETE … IN) and of
// updates (one UPDATE of many rows by key), and repeated updates of one row
// folded into the last of them. pgbench-like workloads interleave a few
// tables in every transaction; in arrival order each change was a run of
// one.
//
// What may move (as in sink/postgres, whose rules these are):
//   - Changes to different tables swap places inside one target
//     transaction. Sessions run with foreign_key_checks = 0, and every other
//     check concerns one table; the transaction commits (or prepares) the
//     same final state. A trigger on the target that reads other tables
//     would see another order; Options.KeepOrder turns the queues off.
//   - Within a table nothing moves, except that an update of a row the
//     queue already updates (same key, no key change, the same columns set,
//     no unchanged-TOAST value) replaces that update in place, when the
//     target table has no unique index besides its primary key (whose
//     checks could depend on the values in between).
//
// TRUNCATE, COMMIT and XA PREPARE drain the queues first; DDL comes with no
// transaction open (DDLCommits).

// pendingLimit bounds the changes held in the queues.
const pendingLimit = 4096

// updateRunRows bounds the rows of one UPDATE of many rows: each row's new
// values are picked by a CASE over the run's keys, which MySQL evaluates
// branch by branch.
const updateRunRows = 200

type tableQueue struct {
	tm      *tableMap
	changes []*sink.Change
	// lastUpdate maps a row's key to the index in changes of its pending
	// foldable update, while nothing else touched that row since.
	lastUpdate map[string]int
}

// queue holds ch until the next drain, draining when the queues are full.
func (tx *Tx) queue(ctx context.Context, tm *tableMap, ch *sink.Change) error {
	if tx.queues == nil {
		tx.queues = map[*tableMap]*tableQueue{}
	}
	q := tx.queues[tm]
	if q == nil {
		q = &tableQueue{tm: tm, lastUpdate: map[string]int{}}
		tx.queues[tm] = q
		tx.queueOrder = append(tx.queueOrder, q)
	}
	if key, ok := tx.foldKey(ctx, tm, ch); ok {
		if i, found := q.lastUpdate[key]; found && sameShape(q.changes[i], ch) {
			q.changes[i] = ch
			tx.s.stats.folded.Add(1)
			return nil
		}
		q.lastUpdate[key] = len(q.changes)
	} else if len(q.lastUpdate) > 0 {
		// Nothing folds across another change of the same row: forget the
		// row's pending update (both keys of a key change).
		for _, tuple := range []source.Tuple{ch.New, ch.Old} {
			if tuple == nil {
				continue
			}
			key, ok := rowKey(tm, tuple)
			if !ok {
				clear(q.lastUpdate)
				break
			}
			delete(q.lastUpdate, key)
		}
	}
	q.changes = append(q.changes, ch)
	tx.pending++
	if tx.pending >= pendingLimit {
		return tx.drain(ctx)
	}
	return nil
}

// drain turns the queued changes into statements, table by table.
func (tx *Tx) drain(ctx context.Context) error {
	if tx.pending == 0 {
		return nil
	}
	order := tx.queueOrder
	tx.queues, tx.queueOrder, tx.pending = nil, nil, 0
	for _, q := range order {
		for _, ch := range q.changes {
			if err := tx.applyNow(ctx, q.tm, ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowKey is the identity of the row tuple names: its key columns' text, each
// with its length; ok is false when a key value is missing.
func rowKey(tm *tableMap, tuple source.Tuple) (string, bool) {
	if len(tm.key) == 0 {
		return "", false
	}
	var b []byte
	for _, i := range tm.key {
		if i >= len(tuple) || tuple[i].Kind != source.ValueText {
			return "", false
		}
		b = strconv.AppendInt(b, int64(len(tuple[i].Data)), 10)
		b = append(b, ':')
		b = append(b, tuple[i].Data...)
	}
	return string(b), true
}

// foldKey returns the row key of an update that may fold into an earlier
// one of the same row, or replace it.
func (tx *Tx) foldKey(ctx context.Context, tm *tableMap, ch *sink.Change) (string, bool) {
	if ch.Kind != sink.Update || ch.OldKind != source.OldNone || tm.full || len(tm.key) == 0 || len(ch.New) != len(tm.t.Columns) {
		return "", false
	}
	for _, v := range ch.New {
		if v.Kind == source.ValueUnchanged {
			return "", false
		}
	}
	if !tx.s.foldable(ctx, tm) {
		return "", false
	}
	return rowKey(tm, ch.New)
}

// sameShape reports whether update b sets the same columns as a.
func sameShape(a, b *sink.Change) bool {
	if len(a.New) != len(b.New) {
		return false
	}
	for i := range a.New {
		if (a.New[i].Kind == source.ValueUnchanged) != (b.New[i].Kind == source.ValueUnchanged) {
			return false
		}
	}
	return true
}

// foldable reports whether tm's target table has no unique index besides
// its primary key, asked once per table version and session; false when
// the target cannot say.
func (s *Sink) foldable(ctx context.Context, tm *tableMap) bool {
	if tm.foldChecked {
		return tm.foldOK
	}
	tm.foldChecked = true
	sch, name := s.dialect.TargetTable(tm.t)
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY'`, sch, name).Scan(&n)
	tm.foldOK = err == nil && n == 0
	return tm.foldOK
}

// runColumns returns, for an update that may join an UPDATE of many rows,
// the columns it sets: those that are not key columns and not unchanged
// TOAST values; nil when it may not (no key, REPLICA IDENTITY FULL, a key
// change, nothing to set, or a unique index besides the key, which MySQL
// checks row by row in an order of its own).
func (tx *Tx) runColumns(ctx context.Context, tm *tableMap, ch *sink.Change) []int {
	if len(tm.key) == 0 || tm.full || ch.OldKind != source.OldNone || len(ch.New) != len(tm.t.Columns) || !tx.s.foldable(ctx, tm) {
		return nil
	}
	var cols []int
	for i, v := range ch.New {
		if v.Kind == source.ValueUnchanged || isKey(tm, i) {
			continue
		}
		cols = append(cols, i)
	}
	return cols
}

func isKey(tm *tableMap, i int) bool {
	for _, k := range tm.key {
		if k == i {
			return true
		}
	}
	return false
}

// updateRun is the UPDATE of many rows being built: per column set, the
// branches of its CASE; the key tuples for the WHERE … IN.
type updateRun struct {
	cols  []int
	cases [][]byte // " WHEN <key> THEN <value>" for each row, per column
	keys  []byte   // the IN list's key tuples, comma-separated
	size  int
}

func sameColumns(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// addToUpdateRun adds an update by key that sets cols to the run of such
// updates of its table, closing the run being built when it cannot continue
// it (another table, other columns, a row already in it, the run or the
// batch full).
func (tx *Tx) addToUpdateRun(ctx context.Context, tm *tableMap, ch *sink.Change, cols []int) error {
	key, err := tx.s.keyTuple(tm, ch, ch.New)
	if err != nil {
		return tx.fail(err)
	}
	cond, err := tx.s.where(tm, opUpdate, ch, ch.New)
	if err != nil {
		return tx.fail(err)
	}
	vals := make([][]byte, len(cols))
	size := len(key) + 2
	for j, i := range cols {
		if vals[j], err = tx.s.appendValue(nil, tm, i, ch.New[i], opUpdate, ch); err != nil {
			return tx.fail(err)
		}
		size += len(cond) + len(vals[j]) + 12
	}
	if err := tx.s.fitsPacket(size+len(tm.qname)+64, opUpdate, tm, ch); err != nil {
		return tx.fail(err)
	}
	r := &tx.upd
	if tx.runUnit.kind != opUpdate || tx.runUnit.tm != tm || !sameColumns(r.cols, cols) || tx.runKeys[string(key)] ||
		len(tx.runUnit.changes) >= updateRunRows || !tx.fits(r.size+size) {
		if err := tx.closeRun(ctx); err != nil {
			return err
		}
		if !tx.fits(size + len(tm.qname) + 64) {
			if err := tx.flush(ctx, ""); err != nil {
				return err
			}
		}
		tx.runUnit = unit{kind: opUpdate, tm: tm}
		tx.runKeys = map[string]bool{}
		*r = updateRun{cols: cols, cases: make([][]byte, len(cols))}
	} else {
		r.keys = append(r.keys, ", "...)
	}
	r.keys = append(r.keys, key...)
	for j := range cols {
		r.cases[j] = append(append(append(append(r.cases[j], " WHEN "...), cond...), " THEN "...), vals[j]...)
	}
	r.size += size
	tx.runKeys[string(key)] = true
	tx.runUnit.changes = append(tx.runUnit.changes, ch)
	return nil
}

// updateRunStatement renders the run u: one UPDATE statement for one row,
// UPDATE … SET c = CASE WHEN <key> THEN <value> … END … WHERE <key> IN (…)
// for several, which finds (CLIENT_FOUND_ROWS) as many rows as the run has
// exactly when each of its rows is there: its keys are distinct.
func (tx *Tx) updateRunStatement(u unit) ([]byte, error) {
	r := &tx.upd
	defer func() { *r = updateRun{} }()
	if len(u.changes) == 1 {
		return tx.s.updateStatement(u.tm, u.changes[0])
	}
	tm := u.tm
	stmt := make([]byte, 0, r.size+len(tm.qname)+64)
	stmt = append(stmt, "UPDATE "+tm.qname+" SET "...)
	for j, i := range r.cols {
		if j > 0 {
			stmt = append(stmt, ", "...)
		}
		stmt = append(stmt, tm.cols[i]...)
		stmt = append(stmt, " = CASE"...)
		stmt = append(stmt, r.cases[j]...)
		// Every row the WHERE finds has its branch; ELSE keeps a value
		// should one not.
		stmt = append(stmt, " ELSE "...)
		stmt = append(stmt, tm.cols[i]...)
		stmt = append(stmt, " END"...)
	}
	stmt = append(stmt, " WHERE "...)
	stmt = append(stmt, keyIn(tm)...)
	stmt = append(stmt, r.keys...)
	stmt = append(stmt, ')')
	tx.s.stats.setStatements.Add(1)
	tx.s.stats.setRows.Add(int64(len(u.changes)))
	return stmt, nil
}

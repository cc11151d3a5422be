package postgres

import (
	"context"
	"encoding/binary"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Changes wait in per-table queues before they become statements, so that the
// changes of a group of source transactions reach the target table by table:
// runs of inserts into one table long enough for COPY, and repeated updates of
// one row folded into the last of them. pgbench-like workloads interleave a few
// tables in every transaction; applied in arrival order each change was a
// statement of its own.
//
// What may move:
//   - Changes to different tables swap places inside one target transaction.
//     Target sessions run with session_replication_role = replica, so foreign
//     keys and ordinary triggers do not fire, and every constraint that is
//     checked concerns one table; the transaction commits (or prepares) the
//     same final state. A trigger the user set ENABLE ALWAYS or ENABLE REPLICA
//     and that reads other tables would see another order; Options.KeepOrder
//     turns the queues off.
//   - Within a table nothing moves, except that an update of a row that the
//     queue already updates (same key, no key change, the same columns set, no
//     unchanged-TOAST value) replaces that update in place, when the target
//     table has no unique index or exclusion constraint besides its primary key
//     (whose checks could depend on the intermediate values).
//
// A drained queue's runs of updates or deletes of distinct rows become one
// statement each where the table allows (setop.go).
//
// DDL, TRUNCATE, COMMIT and PREPARE TRANSACTION drain the queues first.

// pendingLimit bounds the changes held in the queues.
const pendingLimit = 4096

type tableQueue struct {
	ts      *tableStatements
	changes []*sink.Change
	// lastUpdate maps a row's key to the index in changes of its pending
	// foldable update, while nothing else touched that row since.
	lastUpdate map[string]int
}

// queue holds ch until the next drain. It reports whether the queues are full.
func (tx *Tx) queue(ctx context.Context, ts *tableStatements, ch *sink.Change) error {
	if tx.queues == nil {
		tx.queues = map[*tableStatements]*tableQueue{}
	}
	q := tx.queues[ts]
	if q == nil {
		q = &tableQueue{ts: ts, lastUpdate: map[string]int{}}
		tx.queues[ts] = q
		tx.queueOrder = append(tx.queueOrder, q)
	}
	if key, ok := tx.foldKey(ctx, ts, ch); ok {
		if i, found := q.lastUpdate[string(key)]; found && sameShape(q.changes[i], ch) {
			q.changes[i] = ch
			tx.s.stats.folded.Add(1)
			return nil
		}
		q.lastUpdate[string(key)] = len(q.changes)
	} else if len(q.lastUpdate) > 0 {
		// Nothing folds across another change of the same row: forget the
		// row's pending update (both keys of a key change).
		key, ok := rowKey(tx.key[:0], ts, ch, false)
		tx.key = key
		if !ok {
			clear(q.lastUpdate)
		} else {
			delete(q.lastUpdate, string(key))
			if ch.Kind == sink.Update && ch.OldKind != source.OldNone {
				key, _ = rowKey(tx.key[:0], ts, ch, true)
				tx.key = key
				delete(q.lastUpdate, string(key))
			}
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
		changes := q.changes
		for len(changes) > 0 {
			n, err := tx.setRun(ctx, q.ts, changes)
			if err != nil {
				return err
			}
			if n == 0 {
				if err := tx.applyNow(ctx, q.ts, changes[0]); err != nil {
					return err
				}
				n = 1
			}
			changes = changes[n:]
		}
	}
	return nil
}

// foldKey returns the row key of an update that may fold into an earlier one
// of the same row.
func (tx *Tx) foldKey(ctx context.Context, ts *tableStatements, ch *sink.Change) ([]byte, bool) {
	if ch.Kind != sink.Update || ch.OldKind != source.OldNone || ts.full || len(ts.identity) == 0 || len(ch.New) != len(ts.columns) {
		return nil, false
	}
	for _, v := range ch.New {
		if v.Kind == source.ValueUnchanged {
			return nil, false
		}
	}
	if !tx.s.foldable(ctx, ts) {
		return nil, false
	}
	key, ok := rowKey(tx.key[:0], ts, ch, true)
	tx.key = key
	return key, ok
}

// rowKey encodes the key of the row ch changes: of the new tuple when
// fromNew, else of the old one when there is one. False when the table has no
// key or the tuple is not whole.
func rowKey(dst []byte, ts *tableStatements, ch *sink.Change, fromNew bool) ([]byte, bool) {
	if ts.full || len(ts.identity) == 0 {
		return dst, false
	}
	row := ch.New
	if !fromNew && ch.Old != nil && (ch.Kind == sink.Delete || ch.OldKind != source.OldNone) {
		row = ch.Old
	}
	if len(row) != len(ts.columns) {
		return dst, false
	}
	for _, i := range ts.identity {
		v := row[i]
		dst = append(dst, v.Kind)
		dst = binary.AppendUvarint(dst, uint64(len(v.Data)))
		dst = append(dst, v.Data...)
	}
	return dst, true
}

// sameShape reports whether two updates set the same columns the same way
// (text or binary), so that the later one fully replaces the earlier.
func sameShape(a, b *sink.Change) bool {
	if len(a.New) != len(b.New) {
		return false
	}
	for i := range a.New {
		ka, kb := a.New[i].Kind, b.New[i].Kind
		if ka == source.ValueNull {
			ka = source.ValueText
		}
		if kb == source.ValueNull {
			kb = source.ValueText
		}
		if ka != kb {
			return false
		}
	}
	return true
}

// foldable reports whether updates of t's target table may fold: no unique
// index or exclusion constraint but the primary key. Asked once per table
// version, on the apply connection (the table may be new in this transaction).
func (s *Sink) foldable(ctx context.Context, ts *tableStatements) bool {
	if ts.foldable != 0 {
		return ts.foldable > 0
	}
	ts.foldable = -1
	if s.ready() != nil {
		return false
	}
	var others int
	err := s.conn.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_index
		WHERE indrelid = to_regclass($1) AND (indisunique AND NOT indisprimary OR indisexclusion)`, ts.qname).Scan(&others)
	if err == nil && others == 0 {
		ts.foldable = 1
	}
	return ts.foldable > 0
}

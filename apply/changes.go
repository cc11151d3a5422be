package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

func (a *Applier) begin(ctx context.Context, lsn source.LSN, m *source.Begin) error {
	if err := a.outside(lsn, "Begin"); err != nil {
		return err
	}
	t := &txn{kind: kindPlain, xid: m.Xid, beginLSN: m.FinalLSN, skip: m.FinalLSN < a.skipBelow}
	a.cur = t
	a.applying = applying{lsn: m.FinalLSN, xid: m.Xid}
	if t.skip {
		return nil
	}
	if a.ddlCommits {
		// A relation may need DDL half way through; buffer so that the DDL can
		// run before any of this transaction's changes (see replay).
		t.buf = a.spool.newBuffer(m.Xid)
		return nil
	}
	_, err := a.groupTx(ctx)
	return err
}

func (a *Applier) commit(ctx context.Context, lsn source.LSN, m *source.Commit) error {
	t := a.cur
	if a.streams.inChunk || t == nil || t.kind != kindPlain {
		return protoErr(lsn, "Commit without Begin")
	}
	if m.CommitLSN != t.beginLSN {
		return protoErr(lsn, "Commit of commit LSN %s does not match its Begin's %s", m.CommitLSN, t.beginLSN)
	}
	a.cur = nil
	if t.skip {
		if m.EndLSN > a.skipBelow {
			return fmt.Errorf("apply: transaction %d ends at %s after the stored position %s although its commit %s is before it: the stored position is not a WAL record boundary", t.xid, m.EndLSN, a.skipBelow, m.CommitLSN)
		}
		return nil
	}
	p := sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.CommitTime}
	if t.buf != nil {
		defer t.buf.release()
		return a.applyBuffered(ctx, t.buf, p)
	}
	return a.finishTxn(ctx, t.rows, p, t.msgs)
}

// target returns the target transaction the changes of the transaction in hand go to.
func (a *Applier) target(ctx context.Context) (sink.Tx, error) {
	if a.cur != nil && a.cur.kind == kindPrepare {
		return a.preparedTx(ctx, a.cur.xid)
	}
	return a.groupTx(ctx)
}

func (a *Applier) change(ctx context.Context, lsn source.LSN, msg source.Message) error {
	var buf *txnBuffer
	var subxid uint32
	switch {
	case a.streams.inChunk:
		buf = a.streams.chunk()
		switch m := msg.(type) {
		case *source.Insert:
			subxid = a.streams.subxid(m.Xid)
		case *source.Update:
			subxid = a.streams.subxid(m.Xid)
		case *source.Delete:
			subxid = a.streams.subxid(m.Xid)
		case *source.Truncate:
			subxid = a.streams.subxid(m.Xid)
		}
	case a.cur == nil:
		return protoErr(lsn, "%s outside a transaction", messageName(msg))
	case a.cur.skip:
		return nil
	case a.cur.buf != nil:
		buf, subxid = a.cur.buf, a.cur.xid
	}
	if buf != nil {
		switch m := msg.(type) {
		case *source.Insert:
			return buf.addInsert(m, subxid, lsn)
		case *source.Update:
			return buf.addUpdate(m, subxid, lsn)
		case *source.Delete:
			return buf.addDelete(m, subxid, lsn)
		case *source.Truncate:
			return buf.addTruncate(m, subxid, lsn)
		}
		return nil
	}
	tx, err := a.target(ctx)
	if err != nil {
		return err
	}
	// The decoder reuses its tuples; the sink owns what it gets.
	rec := &record{lsn: lsn}
	switch m := msg.(type) {
	case *source.Insert:
		rec.kind, rec.relid, rec.new = recInsert, m.RelationID, m.New.Clone()
	case *source.Update:
		rec.kind, rec.relid, rec.oldKind, rec.old, rec.new = recUpdate, m.RelationID, m.OldKind, m.Old.Clone(), m.New.Clone()
	case *source.Delete:
		rec.kind, rec.relid, rec.oldKind, rec.old = recDelete, m.RelationID, m.OldKind, m.Old.Clone()
	case *source.Truncate:
		rec.kind, rec.options, rec.relids = recTruncate, m.Options, m.RelationIDs
	}
	if err := a.applyChange(ctx, tx, rec, nil); err != nil {
		if a.cur.kind == kindPrepare && a.leaveOutAborted(ctx, a.cur.xid, err) {
			a.cur.skip = true
			return nil
		}
		return err
	}
	a.cur.rows++
	return nil
}

func messageName(msg source.Message) string {
	if msg == nil {
		return "nil message"
	}
	return msg.Type().String()
}

// applyChange sends one change record to tx. versions, when set, holds the
// relation versions replay resolved for this point of the transaction.
func (a *Applier) applyChange(ctx context.Context, tx sink.Tx, rec *record, versions map[uint32]*schema.Table) error {
	table := func(relid uint32) (*schema.Table, error) {
		if t, ok := versions[relid]; ok && t != nil {
			return t, nil
		}
		t, err := a.cat.Table(relid)
		if err != nil {
			return nil, fmt.Errorf("apply: change at %s: %w", rec.lsn, err)
		}
		return t, nil
	}
	if rec.kind == recTruncate {
		tables := make([]*schema.Table, 0, len(rec.relids))
		names := make([]string, 0, len(rec.relids))
		for _, id := range rec.relids {
			t, err := table(id)
			if err != nil {
				return err
			}
			if a.inTableCopy(t) {
				continue
			}
			if err := a.syncRelation(ctx, rec.lsn, t); err != nil {
				return err
			}
			tables, names = append(tables, t), append(names, t.QualifiedName())
		}
		if len(tables) == 0 {
			return nil
		}
		if err := tx.Truncate(ctx, tables, rec.options); err != nil {
			return fmt.Errorf("apply: truncate %s at %s: %w", strings.Join(names, ", "), rec.lsn, err)
		}
		return nil
	}
	t, err := table(rec.relid)
	if err != nil {
		return err
	}
	if a.inTableCopy(t) {
		return nil
	}
	if err := a.syncRelation(ctx, rec.lsn, t); err != nil {
		return err
	}
	ch := &sink.Change{Table: t, LSN: rec.lsn, New: rec.new, OldKind: rec.oldKind, Old: rec.old}
	switch rec.kind {
	case recInsert:
		ch.Kind = sink.Insert
	case recUpdate:
		ch.Kind = sink.Update
	case recDelete:
		ch.Kind = sink.Delete
	}
	if ch.New != nil && len(ch.New) != len(t.Columns) || ch.Old != nil && len(ch.Old) != len(t.Columns) {
		return fmt.Errorf("apply: %c on %s at %s: the row has %d values but the relation has %d columns", ch.Kind, t.QualifiedName(), rec.lsn, max(len(ch.New), len(ch.Old)), len(t.Columns))
	}
	if (ch.Kind == sink.Insert || ch.Kind == sink.Update) && ch.New == nil || ch.Kind == sink.Delete && ch.Old == nil {
		return fmt.Errorf("apply: %c on %s at %s: the row is missing", ch.Kind, t.QualifiedName(), rec.lsn)
	}
	if err := tx.Apply(ctx, ch); err != nil {
		if earlier := (*sink.EarlierChangeError)(nil); errors.As(err, &earlier) {
			// A change queued before this one failed; the error names it.
			return fmt.Errorf("apply: %w", err)
		}
		return fmt.Errorf("apply: %c on %s at %s: %w", ch.Kind, t.QualifiedName(), rec.lsn, err)
	}
	return nil
}

// inTableCopy reports whether the current transaction's changes to t are
// already in t's snapshot copy (Config.TableSyncLSN).
func (a *Applier) inTableCopy(t *schema.Table) bool {
	if a.cfg.TableSyncLSN == nil || a.applying.lsn >= a.cfg.TableSyncLSN(t) {
		return false
	}
	// Before the snapshot's LSN: in the copy only if the snapshot sees the
	// transaction, which its transaction ids tell. A transaction prepared
	// before it is seen only if it also committed before it; one whose
	// commit record came just before the LSN may not have been visible yet
	// when a snapshot taken without a slot was.
	if a.applying.xid != 0 && a.cfg.TableSyncSnapshot != nil {
		if snap, ok := a.cfg.TableSyncSnapshot(t); ok {
			return snap.Visible(a.applying.xid)
		}
	}
	return true
}

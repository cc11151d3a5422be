package apply

import (
	"context"
	"fmt"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// replay applies a buffered transaction to the target transaction target returns
// (called only once there is something to apply) and returns the rows applied
// and its transactional messages.
//
// With a sink whose DDL commits implicitly, every Relation of the transaction is
// installed first and its DDL runs before any of its changes, after committing
// the group; each change then uses the relation version current at its place.
// (A source transaction that changes rows of a table and then alters it gets
// those earlier rows applied after the ALTER: MySQL cannot do better.)
func (a *Applier) replay(ctx context.Context, buf *txnBuffer, target func(context.Context) (sink.Tx, error)) (int, []*source.LogicalMessage, error) {
	var versions map[uint32]*schema.Table
	var order []*schema.Table
	if a.ddlCommits {
		versions = make(map[uint32]*schema.Table)
		type ddl struct {
			t, prev *schema.Table
			lsn     source.LSN
		}
		var ddls []ddl
		synced := map[uint32]bool{}
		err := buf.each(func(rec *record) error {
			var changedRelids []uint32
			switch rec.kind {
			case recInsert, recUpdate, recDelete:
				changedRelids = []uint32{rec.relid}
			case recTruncate:
				changedRelids = rec.relids
			}
			// A table whose Relation message came in a transaction the
			// target already had (installRelation) is brought up to the
			// catalog's definition here, before any change (syncRelation
			// would run its DDL with the target transaction open).
			for _, id := range changedRelids {
				if _, seen := versions[id]; seen || !a.rels.unsynced[id] || synced[id] {
					continue
				}
				t, err := a.cat.Table(id)
				if err != nil {
					return fmt.Errorf("apply: change at %s: %w", rec.lsn, err)
				}
				if !a.inTableCopy(t) {
					synced[id] = true
					ddls = append(ddls, ddl{t, nil, rec.lsn})
				}
			}
			if rec.kind != recRelation {
				return nil
			}
			rel := rec.relation
			if _, seen := versions[rel.RelationID]; !seen {
				versions[rel.RelationID], _ = a.cat.Table(rel.RelationID) // nil when new
			}
			if err := a.waitCommitted(ctx, buf.xid); err != nil {
				return err
			}
			t, prev, changed, err := a.cat.Apply(ctx, rel)
			if err != nil {
				return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, rec.lsn, err)
			}
			order = append(order, t)
			if a.rels.unsynced[rel.RelationID] && !synced[rel.RelationID] {
				prev, changed = nil, true // as in ensureRelationNow
			}
			if changed {
				synced[rel.RelationID] = true
				ddls = append(ddls, ddl{t, prev, rec.lsn})
			}
			return nil
		})
		if err != nil {
			return 0, nil, err
		}
		for i, d := range ddls {
			if err := a.ensureTable(ctx, d.lsn, d.t, d.prev, i == 0); err != nil {
				return 0, nil, err
			}
		}
		for id := range synced {
			delete(a.rels.unsynced, id)
		}
	}
	rows := 0
	var msgs []*source.LogicalMessage
	next := 0
	err := buf.each(func(rec *record) error {
		switch rec.kind {
		case recRelation:
			if a.ddlCommits {
				versions[rec.relation.RelationID] = order[next]
				next++
				return nil
			}
			// Transactional DDL joins the target transaction; a prepared
			// one's is begun for DDL of its own only (see preparedTx).
			if !a.preparing(buf.xid) {
				if _, err := target(ctx); err != nil {
					return err
				}
			}
			return a.ensureRelation(ctx, rec.lsn, buf.xid, rec.relation, false)
		case recMessage:
			if a.cfg.OnLogicalMessage != nil {
				msgs = append(msgs, rec.msg)
			}
			return nil
		}
		tx, err := target(ctx)
		if err != nil {
			return err
		}
		rows++
		return a.applyChange(ctx, tx, rec, versions)
	})
	return rows, msgs, err
}

// applyBuffered applies a buffered transaction as one source transaction of the
// group, keeping a large one out of a non-empty group.
func (a *Applier) applyBuffered(ctx context.Context, buf *txnBuffer, p sink.Progress) error {
	if a.group.txns > 0 && a.group.rows+buf.changes > a.cfg.GroupMaxRows {
		if err := a.commitGroup(ctx); err != nil {
			return err
		}
	}
	rows, msgs, err := a.replay(ctx, buf, a.groupTx)
	if err != nil {
		return err
	}
	return a.finishTxn(ctx, rows, p, msgs)
}

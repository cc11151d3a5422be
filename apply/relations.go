package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// relationSync is what apply keeps of the relations of the stream, to bring
// target tables up to them once and no more.
type relationSync struct {
	seen map[uint32]relationSeen // see ensureRelation
	// waited is the source transaction (xid, and txnLSN to tell a reused
	// xid apart) WaitCommitted last returned for: ended, it stays ended.
	waited struct {
		xid    uint32
		txnLSN source.LSN
	}
	// unsynced are relations installed from a transaction the target already
	// has (installRelation), whose target tables were left as they were;
	// the next change applied to one brings it up to date first (syncRelation).
	unsynced map[uint32]bool
	// viaRoot caches Config.PublishedViaRoot per source relation id.
	viaRoot map[uint32]bool
}

func (a *Applier) relation(ctx context.Context, lsn source.LSN, m *source.Relation) error {
	if a.streams.inChunk {
		return a.streams.chunk().addRelation(m, lsn)
	}
	if a.cur != nil && a.cur.buf != nil {
		if err := a.cur.buf.addRelation(m, lsn); err != nil || !a.cur.late {
			return err
		}
		// Held because the source finished it before pgrelay got here: the
		// transactions committed while it was prepared come before its
		// Commit Prepared, and use the relation without a Relation message
		// of their own (PostgreSQL sends one per session until the table
		// changes). Such a transaction cannot have changed a table whose
		// definition this one changed: that DDL held the table's lock.
		return a.installRelation(ctx, lsn, m)
	}
	if a.cur != nil && a.cur.skip {
		return a.installRelation(ctx, lsn, m)
	}
	var xid uint32
	if a.cur != nil {
		xid = a.cur.xid
	}
	err := a.ensureRelation(ctx, lsn, xid, m, !a.inGroupTxn() && a.cur == nil)
	if err != nil && a.cur != nil && a.cur.kind == kindPrepare {
		if a.leaveOutAborted(ctx, xid, err) {
			a.cur.skip = true
			return nil
		}
		// The source catalog does not show a prepared transaction's DDL
		// until COMMIT PREPARED: some of it (a renamed or dropped column, a
		// type it creates) cannot be applied as prepared.
		return fmt.Errorf("%w; the table's definition comes from prepared transaction %q (xid %d), whose DDL the source catalog does not show before COMMIT PREPARED: finish it on the source (COMMIT PREPARED or ROLLBACK PREPARED), then run pgrelay again, or run with PGRELAY_TWO_PHASE=off, which applies prepared transactions at COMMIT PREPARED", err, a.cur.srcGID, xid)
	}
	return err
}

// waitCommitted waits, when the catalog can (commitWaiter), until source
// transaction xid has ended on the source; once per transaction: ended, it
// stays ended.
func (a *Applier) waitCommitted(ctx context.Context, xid uint32) error {
	w, ok := a.cat.(commitWaiter)
	if !ok || xid == 0 || (a.rels.waited.xid == xid && a.rels.waited.txnLSN == a.applying.lsn) {
		return nil
	}
	if err := w.WaitCommitted(ctx, xid); err != nil {
		return err
	}
	a.rels.waited.xid, a.rels.waited.txnLSN = xid, a.applying.lsn
	return nil
}

// commitWaiter is the optional capability of a Catalog to wait until a source
// transaction is visible, before facts are read for its Relation messages.
type commitWaiter interface {
	WaitCommitted(ctx context.Context, xid uint32) error
}

// columnFiller is the optional capability of a Catalog to tell what older
// rows hold in a column (sink.FillResolver).
type columnFiller interface {
	ColumnFill(ctx context.Context, relationID uint32, schema, table, column string) (fill *schema.Value, found, volatile bool, err error)
}

// factsMatcher is the optional capability of a Catalog to tell whether the
// committed source catalog already matches a Relation message.
type factsMatcher interface {
	FactsMatch(ctx context.Context, rel *source.Relation) (bool, error)
}

// ensureRelation installs a Relation message of source transaction xid (0 when
// unknown) and brings the target table up to it. With a sink whose DDL commits
// implicitly, flushFirst commits the group first; callers pass false only where
// no target transaction is open.
//
// A message the same transaction sent already for the relation, unchanged, is
// passed over: PostgreSQL sends one before nearly every change after a
// relcache invalidation (a TRUNCATE of a partitioned table, then its refill,
// sends one per row), and each would read the source catalog again. The
// catalog facts read for the first one are the same: they are read once the
// transaction is committed (or, for one applied at its PREPARE, from before
// it), whichever of its messages asks.
func (a *Applier) ensureRelation(ctx context.Context, lsn source.LSN, xid uint32, rel *source.Relation, flushFirst bool) error {
	seen, ok := a.rels.seen[rel.RelationID]
	if ok && xid != 0 && seen.xid == xid && seen.txnLSN == a.applying.lsn && sameRelationMessage(seen.rel, rel) {
		if lag, ok := a.sink.(sink.BehindReporter); !ok || !lag.Behind(rel.RelationID) {
			return nil
		}
	}
	if err := a.ensureRelationNow(ctx, lsn, xid, rel, flushFirst); err != nil {
		return err
	}
	delete(a.rels.unsynced, rel.RelationID)
	if xid != 0 {
		a.rels.seen[rel.RelationID] = relationSeen{xid: xid, txnLSN: a.applying.lsn, rel: cloneRelation(rel)}
	}
	return nil
}

// relationSeen is the last Relation message of a relation installed, and the
// transaction that sent it (its id and its commit or prepare LSN).
type relationSeen struct {
	xid    uint32
	txnLSN source.LSN
	rel    *source.Relation
}

func sameRelationMessage(a, b *source.Relation) bool {
	return a.RelationID == b.RelationID && a.Namespace == b.Namespace && a.Name == b.Name &&
		a.ReplicaIdentity == b.ReplicaIdentity && slices.Equal(a.Columns, b.Columns)
}

func cloneRelation(r *source.Relation) *source.Relation {
	c := *r
	c.Namespace, c.Name = strings.Clone(r.Namespace), strings.Clone(r.Name)
	c.Columns = slices.Clone(r.Columns)
	for i := range c.Columns {
		c.Columns[i].Name = strings.Clone(c.Columns[i].Name)
	}
	return &c
}

func (a *Applier) ensureRelationNow(ctx context.Context, lsn source.LSN, xid uint32, rel *source.Relation, flushFirst bool) error {
	if lsn == 0 {
		// Relation messages come in XLogData without a WAL position: name the
		// transaction's commit instead.
		lsn = a.applying.lsn
	}
	// Applied as a prepared transaction: uncommitted on the source until
	// COMMIT PREPARED, so the wait below could only time out.
	preparing := a.preparing(xid)
	factsMatch := true
	ownDDL := preparing // whatever DDL rel brings is the prepared transaction's
	if m, ok := a.cat.(factsMatcher); ok && preparing {
		// When the committed catalog already has rel's columns (a table's
		// first use in the session, not the transaction's own DDL), its facts
		// are the transaction's.
		match, err := m.FactsMatch(ctx, rel)
		if err != nil {
			return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
		}
		factsMatch, ownDDL = match, !match
		if !match {
			// A column the committed catalog lacks is the transaction's own
			// DDL while the transaction is still prepared on the source: it
			// holds the table's lock, so no later DDL of the table can have
			// committed. Finished there since (while pgrelay applied it), the
			// catalog may be past it; a new session holds the transaction
			// until its Commit Prepared (beginPrepare).
			finished, err := a.finishedOnSource(ctx, xid)
			if err != nil {
				return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
			}
			if finished {
				return sink.Retryable(fmt.Errorf("apply: relation %s.%s (id %d) at %s: prepared transaction %d was committed or rolled back on the source while pgrelay applied it, and the table's definition there may have changed since: a new session applies it at its COMMIT PREPARED",
					rel.Namespace, rel.Name, rel.RelationID, lsn, xid))
			}
		}
	}
	if ownDDL {
		// Its DDL joins its target transaction (see preparedTx).
		if _, err := a.preparedTx(ctx, xid); err != nil {
			return err
		}
	}
	if !preparing {
		if err := a.waitCommitted(ctx, xid); err != nil {
			return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
		}
	}
	t, prev, changed, err := a.cat.Apply(ctx, rel)
	if err != nil {
		return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
	}
	if ownDDL {
		// Its columns the committed catalog lacks are the transaction's
		// own: not renamed since (schema.InferRenamed).
		t.Uncommitted = true
	}
	if a.rels.unsynced[rel.RelationID] {
		// The catalog's version was installed without the target
		// (installRelation): the target table may be older, and the sink
		// brings it from what it was built to, as syncRelation does. (A held
		// transaction's Relation message, installed when it arrived, comes
		// again at its Commit Prepared with its DDL.)
		prev, changed = nil, true
	}
	if lag, ok := a.sink.(sink.BehindReporter); !changed && (!ok || !lag.Behind(rel.RelationID)) {
		return nil
	}
	if a.inTableCopy(t) {
		// The table was copied under a later snapshot than this transaction
		// (an interrupted copy redone, a table added to the publication): the
		// target table has the later definition already, and this
		// transaction's changes to it are skipped.
		return nil
	}
	if via, err := a.publishedViaRoot(ctx, rel.RelationID); err != nil {
		return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
	} else if via {
		return nil
	}
	apart := false
	if ap, ok := a.sink.(sink.ApartEnsurer); ok && preparing && !ownDDL && a.prepared.tx != nil {
		// Committed earlier on the source, first seen in this prepared
		// transaction after its first change: altered in a target
		// transaction of its own, which the sink can do unless the prepared
		// one holds the table already.
		var err error
		if apart, err = ap.EnsureTableApart(ctx, t, prev); err != nil {
			return ensureTableError(lsn, t, err)
		}
	} else if err := a.ensureTable(ctx, lsn, t, prev, flushFirst); err != nil {
		return err
	}
	if preparing && !ownDDL && a.prepared.tx != nil && !apart && prev != nil && !schema.SameDefinition(prev, t) {
		// It joined the prepared transaction. (Without an earlier version
		// in this session, only the sink knows whether the target table
		// differed: a table's first Relation message in a session is a
		// change to the catalog, not to the table.)
		a.log.Warn("a table's change of definition committed earlier on the source was applied inside a prepared transaction on the target, which holds the table's lock there until COMMIT PREPARED: changes to the table from transactions committed before that wait for it (see docs/limitations.md)",
			"table", t.DisplayName(), "xid", xid, "lsn", lsn)
	}
	if factsMatch || a.prepared.fills == nil {
		return nil
	}
	// Columns the transaction added: their fill value (what older rows hold)
	// is in the source catalog only after COMMIT PREPARED, so the target
	// added them empty; the target fills them when it commits the transaction.
	// They are those the committed catalog lacks (Attnum 0). Without an
	// earlier Relation message in this session (a restart that resumed past
	// an earlier prepared transaction of the table sends none before this
	// one), that is all there is to go by; a table the committed catalog
	// does not know at all is new, and has no older rows.
	var added []string
	known := false
	for _, c := range t.Columns {
		if c.Attnum == 0 && (prev == nil || prev.Column(c.Name) == nil) {
			added = append(added, c.Name)
		}
		known = known || c.Attnum != 0
	}
	if prev == nil && !known {
		return nil
	}
	if len(added) == 0 {
		return nil
	}
	if err := a.prepared.fills.DeferFill(ctx, sink.GID(a.cfg.Slot, xid), t, added); err != nil {
		return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
	}
	return nil
}

// publishedViaRoot asks Config.PublishedViaRoot once per relation and session.
func (a *Applier) publishedViaRoot(ctx context.Context, relid uint32) (bool, error) {
	if a.cfg.PublishedViaRoot == nil {
		return false, nil
	}
	via, known := a.rels.viaRoot[relid]
	if !known {
		var err error
		if via, err = a.cfg.PublishedViaRoot(ctx, relid); err != nil {
			return false, err
		}
		a.rels.viaRoot[relid] = via
		if via {
			a.log.Debug("partition published through its root: no target table of its own", "relation_id", relid)
		}
	}
	return via, nil
}

func (a *Applier) ensureTable(ctx context.Context, lsn source.LSN, t, prev *schema.Table, flushFirst bool) error {
	if a.ddlCommits && flushFirst {
		if err := a.commitGroup(ctx); err != nil {
			return err
		}
	}
	if a.ddlCommits && (a.group.tx != nil || a.prepared.tx != nil) {
		return fmt.Errorf("apply: internal error: DDL for %s with a target transaction open", t.QualifiedName())
	}
	if err := a.sink.EnsureTable(ctx, t, prev); err != nil {
		return ensureTableError(lsn, t, err)
	}
	return nil
}

// ensureTableError is the error of the sink's EnsureTable for t, at lsn.
func ensureTableError(lsn source.LSN, t *schema.Table, err error) error {
	if earlier := (*sink.EarlierChangeError)(nil); errors.As(err, &earlier) {
		return fmt.Errorf("apply: %w", err)
	}
	if lsn == 0 {
		// Before any transaction of the session: no position to name.
		return fmt.Errorf("apply: create or alter target table for %s: %w", t.QualifiedName(), err)
	}
	return fmt.Errorf("apply: create or alter target table for %s at %s: %w", t.QualifiedName(), lsn, err)
}

// installRelations installs the relation versions of a transaction that is not
// applied (skipped on restart) but after which the source will not send them
// again.
func (a *Applier) installRelations(ctx context.Context, buf *txnBuffer) error {
	return buf.each(func(rec *record) error {
		if rec.kind != recRelation {
			return nil
		}
		return a.installRelation(ctx, rec.lsn, rec.relation)
	})
}

// installRelation installs a Relation message of a transaction the target
// already has, DDL included, without touching the target: for a prepared one
// the DDL holds the table's lock there until COMMIT PREPARED, and running it
// again would wait for that forever. Later changes rely on the relation as
// sent.
func (a *Applier) installRelation(ctx context.Context, lsn source.LSN, rel *source.Relation) error {
	if _, _, _, err := a.cat.Apply(ctx, rel); err != nil {
		return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
	}
	a.rels.unsynced[rel.RelationID] = true
	return nil
}

// syncRelation brings t's target table up to the catalog's definition
// before a change is applied to it, when t's Relation message in this
// session came in a transaction the target already had (installRelation)
// and none came since: PostgreSQL sends a table's Relation message once per
// session until the table changes, so the changes after it come without
// one. What the source changed since the target table was built would
// otherwise never reach it: an enum label added to one of its types (a row
// using the label was refused again in every new session while a prepared
// transaction the target holds came first in the stream).
func (a *Applier) syncRelation(ctx context.Context, lsn source.LSN, t *schema.Table) error {
	if len(a.rels.unsynced) == 0 || !a.rels.unsynced[t.RelationID] {
		return nil
	}
	if err := a.ensureTable(ctx, lsn, t, nil, false); err != nil {
		return err
	}
	delete(a.rels.unsynced, t.RelationID)
	return nil
}

package apply

import (
	"context"
	"fmt"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// preparedTxns are the prepared transactions (protocol 3+) from their Begin
// Prepare (or Stream Prepare) to their Commit or Rollback Prepared, and how
// the target takes them.
type preparedTxns struct {
	twoPhase sink.TwoPhase      // nil: prepared transactions are held until Commit Prepared
	fills    sink.PreparedFills // nil unless prepared transactions are applied as prepared
	tx       sink.Tx            // the own target transaction of a prepared transaction being applied
	txns     map[uint32]*preparedTxn
	onTarget map[string]bool // our GIDs prepared on the target
}

// findTargetPrepared reconciles, at Start, the target's prepared
// transactions of this slot: they stay prepared, since the source sends their
// Commit Prepared or Rollback Prepared again (those end after the stored
// position).
func (a *Applier) findTargetPrepared(ctx context.Context) error {
	if a.prepared.twoPhase == nil {
		return nil
	}
	prefix := sink.GIDPrefix(a.cfg.Slot)
	gids, err := a.prepared.twoPhase.PreparedGIDs(ctx, prefix)
	if err != nil {
		return fmt.Errorf("apply: list prepared transactions on the target: %w", err)
	}
	for _, gid := range gids {
		if !sink.OwnGID(a.cfg.Slot, gid) {
			continue
		}
		a.prepared.onTarget[gid] = true
		a.log.Info("prepared transaction on the target awaits COMMIT PREPARED or ROLLBACK PREPARED from the source", "gid", gid)
	}
	return nil
}

// preparedTxn is a transaction after its Prepare and before Commit/Rollback
// Prepared: prepared on the target (buf nil) or held in buf for a target that
// cannot prepare.
type preparedTxn struct {
	gid  string
	buf  *txnBuffer
	msgs []*source.LogicalMessage // transactional messages, delivered at commit
	late bool                     // held: finished on the source before pgrelay reached it
}

// preparedTx returns the target transaction of prepared transaction xid,
// beginning it when needed: at its first change, or at DDL of its own. DDL
// that a Relation message brings before that and that the source committed
// earlier (the committed catalog shows it) runs in a target transaction of
// its own: inside the prepared one it would hold the table's lock on the
// target until COMMIT PREPARED, and a change to the table from a transaction
// committed before that (later in the stream) would wait for it for ever.
func (a *Applier) preparedTx(ctx context.Context, xid uint32) (sink.Tx, error) {
	if a.prepared.tx == nil {
		var tx sink.Tx
		var err error
		if pb, ok := a.sink.(sink.PreparedBeginner); ok && a.prepared.twoPhase != nil {
			tx, err = pb.BeginPrepared(ctx, sink.GID(a.cfg.Slot, xid))
		} else {
			tx, err = a.sink.Begin(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("apply: begin target transaction for prepared transaction %d: %w", xid, err)
		}
		a.prepared.tx = tx
	}
	return a.prepared.tx, nil
}

// preparedChecker is the optional capability of a Catalog to tell whether a
// source transaction is still prepared on the source.
type preparedChecker interface {
	StillPrepared(ctx context.Context, xid uint32) (bool, error)
}

// finishedOnSource reports whether prepared source transaction xid has been
// committed or rolled back on the source since: pgrelay reaches its messages
// late (it was stopped, or is behind). The source's catalog may then have
// moved past the transaction, with DDL of its tables committed after it.
func (a *Applier) finishedOnSource(ctx context.Context, xid uint32) (bool, error) {
	pc, ok := a.cat.(preparedChecker)
	if !ok {
		return false, nil
	}
	still, err := pc.StillPrepared(ctx, xid)
	return err == nil && !still, err
}

// finishedBeforeReached is finishedOnSource for the prepared transaction
// whose what (Begin Prepare, Stream Prepare) message at lsn pgrelay has
// reached, logging that it is held when it is.
func (a *Applier) finishedBeforeReached(ctx context.Context, what string, lsn source.LSN, xid uint32, srcGID string, end source.LSN) (bool, error) {
	finished, err := a.finishedOnSource(ctx, xid)
	if err != nil {
		return false, fmt.Errorf("apply: %s of transaction %d at %s: %w", what, xid, lsn, err)
	}
	if finished {
		a.log.Info("the source committed or rolled back this prepared transaction before pgrelay reached it: it is applied at its COMMIT PREPARED, or dropped at its ROLLBACK PREPARED",
			"xid", xid, "gid", srcGID, "lsn", end)
	}
	return finished, nil
}

// preparing reports whether source transaction xid is the one in hand being
// applied as a prepared transaction on the target.
func (a *Applier) preparing(xid uint32) bool {
	return xid != 0 && xid == a.applying.preparedXid && a.prepared.twoPhase != nil && !a.ddlCommits
}

// leaveOutAborted decides, after applying prepared transaction xid to the
// target failed with err, whether the transaction was rolled back on the
// source: then its body may have arrived incomplete (see
// Config.TxnAborted), and it is rolled back on the target and left out. The
// Rollback Prepared that follows only records the position.
func (a *Applier) leaveOutAborted(ctx context.Context, xid uint32, err error) bool {
	if a.cfg.TxnAborted == nil || xid == 0 || ctx.Err() != nil {
		return false
	}
	aborted, qerr := a.cfg.TxnAborted(ctx, xid)
	if qerr != nil || !aborted {
		if qerr != nil {
			a.log.Warn("could not ask the source whether a prepared transaction that failed to apply was rolled back", "xid", xid, "error", qerr.Error())
		}
		return false
	}
	a.log.Warn("prepared transaction rolled back on the source before it was decoded: its changes arrived incomplete and are left out",
		"xid", xid, "gid", sink.GID(a.cfg.Slot, xid), "apply_error", err.Error())
	if a.prepared.tx != nil {
		_ = a.prepared.tx.Rollback(ctx)
		a.prepared.tx = nil
	}
	return true
}

// preparedCommitted reports whether the prepared transaction gid was committed
// on the target after a restart that came before its position was stored.
func (a *Applier) preparedCommitted(ctx context.Context, gid string, prepareEnd source.LSN) (bool, error) {
	pc, ok := a.sink.(sink.PreparedCommits)
	if !ok || a.prepared.twoPhase == nil {
		return false, nil
	}
	done, err := pc.PreparedCommitted(ctx, gid, prepareEnd)
	if err != nil {
		return false, fmt.Errorf("apply: look up prepared transaction %q on the target: %w", gid, err)
	}
	if done {
		a.log.Info("prepared transaction already committed on the target; skipping its body", "gid", gid)
	}
	return done, nil
}

// prepareOnTarget prepares a prepared transaction on the target: the one in
// a.prepared.tx when its changes were applied as they arrived, else buf's,
// applied to a target transaction of its own.
func (a *Applier) prepareOnTarget(ctx context.Context, lsn source.LSN, xid uint32, gid string, buf *txnBuffer, msgs []*source.LogicalMessage, p sink.Progress) error {
	own := func(ctx context.Context) (sink.Tx, error) { return a.preparedTx(ctx, xid) }
	if buf != nil {
		// Never grouped (invariant 3): earlier transactions commit first.
		if err := a.commitGroup(ctx); err != nil {
			return err
		}
		_, bmsgs, err := a.replay(ctx, buf, own)
		if err != nil {
			if a.leaveOutAborted(ctx, xid, err) {
				return nil
			}
			return err
		}
		msgs = append(msgs, bmsgs...)
	}
	tx, err := own(ctx)
	if err != nil {
		return err
	}
	if err := a.prepared.twoPhase.Prepare(ctx, tx, gid, p); err != nil {
		a.prepared.tx = nil
		if a.leaveOutAborted(ctx, xid, err) {
			return nil
		}
		return fmt.Errorf("apply: prepare transaction %d as %q at %s: %w", xid, gid, lsn, err)
	}
	a.prepared.tx = nil
	a.prepared.onTarget[gid] = true
	a.prepared.txns[xid] = &preparedTxn{gid: gid, msgs: msgs}
	// Prepared is durable on the target, and once the stored position passes
	// it the source sends only the Commit Prepared: the position may move past
	// it with the next commit.
	if p.LSN > a.group.applied.LSN {
		a.group.applied = p
	}
	return nil
}

func (a *Applier) streamPrepare(ctx context.Context, lsn source.LSN, m *source.StreamPrepare) error {
	if err := a.outside(lsn, "Stream Prepare"); err != nil {
		return err
	}
	buf := a.streams.bufs[m.Xid]
	if buf == nil {
		return protoErr(lsn, "Stream Prepare for transaction %d, which never streamed", m.Xid)
	}
	delete(a.streams.bufs, m.Xid)
	gid := sink.GID(a.cfg.Slot, m.Xid)
	done := m.EndLSN <= a.skipBelow || a.prepared.onTarget[gid]
	if !done {
		var err error
		if done, err = a.preparedCommitted(ctx, gid, m.EndLSN); err != nil {
			_ = buf.release()
			return err
		}
	}
	if done {
		return buf.release()
	}
	if a.prepared.twoPhase == nil {
		return a.hold(lsn, m.Xid, gid, buf, false)
	}
	if !a.ddlCommits {
		// As in beginPrepare.
		finished, err := a.finishedBeforeReached(ctx, "Stream Prepare", lsn, m.Xid, m.GID, m.EndLSN)
		if err != nil {
			_ = buf.release()
			return err
		}
		if finished {
			return a.hold(lsn, m.Xid, gid, buf, true)
		}
	}
	defer buf.release()
	a.applying = applying{lsn: m.PrepareLSN, xid: m.Xid, preparedXid: m.Xid}
	return a.prepareOnTarget(ctx, lsn, m.Xid, gid, buf, nil, sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.PrepareTime})
}

// hold keeps a prepared transaction the target cannot prepare until its Commit
// Prepared. Its effects become visible on the source at COMMIT PREPARED, so
// applying it then, in that order, is what a reader of the source sees.
func (a *Applier) hold(lsn source.LSN, xid uint32, gid string, buf *txnBuffer, late bool) error {
	if old := a.prepared.txns[xid]; old != nil {
		_ = buf.release()
		return protoErr(lsn, "transaction %d prepared twice", xid)
	}
	a.prepared.txns[xid] = &preparedTxn{gid: gid, buf: buf, late: late}
	return nil
}

func (a *Applier) beginPrepare(ctx context.Context, lsn source.LSN, m *source.BeginPrepare) error {
	if err := a.outside(lsn, "Begin Prepare"); err != nil {
		return err
	}
	gid := sink.GID(a.cfg.Slot, m.Xid)
	t := &txn{kind: kindPrepare, xid: m.Xid, gid: gid, srcGID: m.GID, beginLSN: m.PrepareLSN}
	a.applying = applying{lsn: m.PrepareLSN, xid: m.Xid, preparedXid: m.Xid}
	// Prepared on the target already: we stopped after PREPARE TRANSACTION and
	// before the position passed it. The body is there; wait for the Commit Prepared.
	t.skip = a.prepared.onTarget[gid]
	if !t.skip {
		done, err := a.preparedCommitted(ctx, gid, m.EndLSN)
		if err != nil {
			return err
		}
		t.skip = done
	}
	// Prepared before the stored position, and neither prepared nor known
	// committed on the target: either sent again after a restart although
	// it was applied and finished (its Commit or Rollback Prepared is then
	// before the stored position too, and drops it), or prepared before the
	// slot's two_phase_at (its consistent point, where the snapshot copy's
	// position is): the source skipped it at its PREPARE, it is not in the
	// copy, which did not see it committed, and the source sends it whole
	// right before its COMMIT PREPARED. Either way it is held until that
	// message and applied with it, as one target transaction at the commit's
	// position, so that a second send after a restart is told apart.
	t.held = !t.skip && m.EndLSN <= a.skipBelow
	if !t.skip && !t.held && a.prepared.twoPhase != nil && !a.ddlCommits {
		// Finished on the source before pgrelay got here: nothing holds it
		// prepared there any more, and the source's catalog may be past it
		// (DDL of its tables committed after it would read as its own, and
		// join it on the target, whose lock would then hold up the
		// transactions committed while it was prepared). Held until its
		// Commit Prepared and applied then, or dropped at its Rollback
		// Prepared.
		finished, err := a.finishedBeforeReached(ctx, "Begin Prepare", lsn, m.Xid, m.GID, m.EndLSN)
		if err != nil {
			return err
		}
		t.held, t.late = finished, finished
	}
	a.cur = t
	if t.skip {
		return nil
	}
	if t.held || a.prepared.twoPhase == nil || a.ddlCommits {
		t.buf = a.spool.newBuffer(m.Xid)
		return nil
	}
	// Its own target transaction, never grouped (invariant 3), begun at its
	// first change (see preparedTx).
	return a.commitGroup(ctx)
}

func (a *Applier) prepare(ctx context.Context, lsn source.LSN, m *source.Prepare) error {
	t := a.cur
	if a.streams.inChunk || t == nil || t.kind != kindPrepare {
		return protoErr(lsn, "Prepare without Begin Prepare")
	}
	if m.Xid != t.xid {
		return protoErr(lsn, "Prepare of transaction %d inside transaction %d", m.Xid, t.xid)
	}
	a.cur = nil
	if t.skip {
		return nil
	}
	if t.held || a.prepared.twoPhase == nil {
		return a.hold(lsn, t.xid, t.gid, t.buf, t.late)
	}
	if t.buf != nil {
		defer t.buf.release()
	}
	return a.prepareOnTarget(ctx, lsn, t.xid, t.gid, t.buf, t.msgs, sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.PrepareTime})
}

func (a *Applier) commitPrepared(ctx context.Context, lsn source.LSN, m *source.CommitPrepared) error {
	if err := a.outside(lsn, "Commit Prepared"); err != nil {
		return err
	}
	gid := sink.GID(a.cfg.Slot, m.Xid)
	pt := a.prepared.txns[m.Xid]
	delete(a.prepared.txns, m.Xid)
	if pt != nil && pt.buf != nil {
		defer pt.buf.release()
	}
	if m.EndLSN <= a.skipBelow {
		return nil
	}
	p := sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.CommitTime}
	if pt != nil && pt.buf != nil {
		if a.prepared.twoPhase != nil && !pt.late {
			a.log.Info("applying a transaction prepared before the stored position at its COMMIT PREPARED (prepared before the slot's consistent point, not in the snapshot copy)", "xid", m.Xid, "lsn", m.EndLSN)
		}
		a.applying = applying{lsn: m.CommitLSN, xid: m.Xid}
		return a.applyBuffered(ctx, pt.buf, p)
	}
	if a.prepared.twoPhase == nil {
		return fmt.Errorf("apply: Commit Prepared of transaction %d at %s: its changes were sent before a restart and are not on the target, which does not apply prepared transactions as prepared; use a target that can (PostgreSQL with max_prepared_transactions > 0) or recreate the slot without two_phase and copy the tables again", m.Xid, lsn)
	}
	if !a.prepared.onTarget[gid] {
		// Not prepared on the target: committed before a restart that came
		// before the position was stored. Only the position remains to store.
		a.log.Info("prepared transaction already committed on the target", "gid", gid, "lsn", m.EndLSN)
		return a.finishTxn(ctx, 0, p, nil)
	}
	// The walsender may send COMMIT PREPARED a moment before the source makes
	// the transaction visible to new snapshots: fill values of the columns it
	// added (sink.PreparedFills), read from the source catalog as the target
	// commits, would not be there yet, and older rows would keep NULL.
	if a.prepared.fills != nil {
		if err := a.waitCommitted(ctx, m.Xid); err != nil {
			return fmt.Errorf("apply: Commit Prepared of transaction %d at %s: %w", m.Xid, lsn, err)
		}
	}
	if err := a.finishOnTarget(ctx, lsn, gid, p, true); err != nil {
		return err
	}
	if pt == nil {
		return nil
	}
	msgs := make([]pendingMessage, len(pt.msgs))
	for i, msg := range pt.msgs {
		msgs[i] = pendingMessage{msg, p.LSN}
	}
	return a.deliver(ctx, msgs)
}

func (a *Applier) rollbackPrepared(ctx context.Context, lsn source.LSN, m *source.RollbackPrepared) error {
	if err := a.outside(lsn, "Rollback Prepared"); err != nil {
		return err
	}
	gid := sink.GID(a.cfg.Slot, m.Xid)
	if pt := a.prepared.txns[m.Xid]; pt != nil {
		delete(a.prepared.txns, m.Xid)
		if pt.buf != nil {
			if err := pt.buf.release(); err != nil {
				return err
			}
		}
	}
	if m.RollbackEndLSN <= a.skipBelow {
		return nil
	}
	p := sink.Progress{Slot: a.cfg.Slot, LSN: m.RollbackEndLSN, CommitTime: m.RollbackTime}
	if a.prepared.twoPhase == nil || !a.prepared.onTarget[gid] {
		return a.finishTxn(ctx, 0, p, nil)
	}
	return a.finishOnTarget(ctx, lsn, gid, p, false)
}

// finishOnTarget commits (or rolls back) our prepared transaction gid on the
// target and records p as applied and durable.
func (a *Applier) finishOnTarget(ctx context.Context, lsn source.LSN, gid string, p sink.Progress, commit bool) error {
	// Earlier transactions first: the stored position must not pass them.
	if err := a.commitGroup(ctx); err != nil {
		return err
	}
	finish, verb := a.prepared.twoPhase.CommitPrepared, "commit"
	if !commit {
		finish, verb = a.prepared.twoPhase.RollbackPrepared, "roll back"
	}
	if err := finish(ctx, gid, p); err != nil {
		return fmt.Errorf("apply: %s prepared transaction %q at %s: %w", verb, gid, lsn, err)
	}
	delete(a.prepared.onTarget, gid)
	if p.LSN > a.group.applied.LSN {
		a.group.applied = p
	}
	a.group.setDurable(p)
	return nil
}

package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// groupCommit is the group: the open target transaction that plain and
// streamed source transactions share (see Groups in the package doc), the
// commit of the last one while it is outstanding, and the positions the
// group's commits store.
type groupCommit struct {
	tx    sink.Tx // nil between groups
	start time.Time
	txns  int              // source transactions in tx
	rows  int              // their changes
	msgs  []pendingMessage // their transactional logical messages, delivered once durable
	// async commits groups without waiting (sink.AsyncCommitter); the commit
	// sent last is outstanding until settle.
	async       sink.AsyncCommitter
	outstanding *outstandingCommit

	applied sink.Progress // the end of the last source transaction applied (in the group or durable)
	durable atomic.Uint64 // the position last stored on the target
	// durableTime is the source commit time stored with durable (UnixNano;
	// 0: none), for a lag reading off the apply path.
	durableTime   atomic.Int64
	lastIdleStore time.Time // when idle last stored a position
}

// outstandingCommit is a group commit sent but not known durable yet.
type outstandingCommit struct {
	p    sink.Progress
	txns int
	msgs []pendingMessage
}

type pendingMessage struct {
	msg *source.LogicalMessage
	lsn source.LSN
}

// Durable returns the highest LSN durably stored on the target: what may be
// acknowledged to the source. It never decreases.
func (a *Applier) Durable() source.LSN { return source.LSN(a.group.durable.Load()) }

// DurableCommitTime is the source commit time stored with Durable: of the
// last source transaction applied, or when the applier last stored an idle
// position (the source idle, everything applied). Zero when none is stored.
func (a *Applier) DurableCommitTime() time.Time {
	if ns := a.group.durableTime.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (g *groupCommit) storeDurableTime(t time.Time) {
	if !t.IsZero() {
		g.durableTime.Store(t.UnixNano())
	}
}

// setDurable counts p durable: its LSN and commit time, the LSN never
// moving back.
func (g *groupCommit) setDurable(p sink.Progress) {
	for {
		cur := g.durable.Load()
		if uint64(p.LSN) <= cur {
			return
		}
		if g.durable.CompareAndSwap(cur, uint64(p.LSN)) {
			g.storeDurableTime(p.CommitTime)
			return
		}
	}
}

// Flush commits the open group now, if no source transaction is half applied to
// it, and stores the applied position if it is ahead of the stored one (after a
// prepared transaction). Run calls it when the stream is idle.
func (a *Applier) Flush(ctx context.Context) error {
	if a.failed != nil {
		return a.failed
	}
	if !a.started {
		return nil
	}
	if a.inGroupTxn() {
		// The group cannot commit in the middle of a source transaction; the
		// group sent before it may have committed meanwhile.
		if err := a.settle(ctx); err != nil {
			return a.fail(ctx, err)
		}
		return nil
	}
	err := a.commitGroupOr(ctx, true)
	if err == nil {
		err = a.settle(ctx)
	}
	if err != nil {
		if !errors.Is(err, ErrStop) {
			err = a.fail(ctx, err)
		}
		return err
	}
	return nil
}

// settle waits for the outstanding group commit and counts it durable.
func (a *Applier) settle(ctx context.Context) error {
	oc := a.group.outstanding
	if oc == nil {
		return nil
	}
	a.group.outstanding = nil
	if err := a.group.async.Settle(ctx); err != nil {
		return fmt.Errorf("apply: commit of %s up to %s: %w", sourceTxns(oc.txns), oc.p.LSN, err)
	}
	a.group.setDurable(oc.p)
	return a.deliver(ctx, oc.msgs)
}

// Idle tells the applier that the source has sent everything up to walEnd and
// nothing more is waiting. It commits the open group and, when no transaction
// at all is in hand (nothing half received, streamed, held or prepared on the
// target), stores walEnd as the position at most every IdleProgressInterval.
//
// walEnd must be the start or the end of a WAL record at or before which the
// source has sent everything: a keepalive's WAL end, or the start of a message
// not yet handed over (a Begin: its commit lies after it). It must not be the end
// of a Commit Prepared or Rollback Prepared not yet handled; Idle does not store
// anything while one of our transactions is prepared on the target, so such a
// message cannot be in flight then.
func (a *Applier) Idle(ctx context.Context, walEnd source.LSN) error {
	return a.idle(ctx, walEnd, false)
}

// StorePosition is Idle without the IdleProgressInterval bound: when no
// transaction is in hand it stores walEnd now (the migrate command, caught up
// at its marker, so that the stored position and the slot pass the marker).
func (a *Applier) StorePosition(ctx context.Context, walEnd source.LSN) error {
	return a.idle(ctx, walEnd, true)
}

func (a *Applier) idle(ctx context.Context, walEnd source.LSN, force bool) error {
	if err := a.Flush(ctx); err != nil {
		return err
	}
	if !a.started || a.cur != nil || a.streams.inChunk || len(a.streams.bufs) > 0 || len(a.prepared.txns) > 0 ||
		len(a.prepared.onTarget) > 0 || a.group.txns > 0 {
		return nil
	}
	if walEnd <= a.Durable() || walEnd <= a.group.applied.LSN || !force && a.now().Sub(a.group.lastIdleStore) < a.cfg.IdleProgressInterval {
		return nil
	}
	a.group.lastIdleStore = a.now()
	// Every transaction that committed before walEnd is applied: the target
	// is current as of now, which status measures its lag in seconds from.
	a.group.applied = sink.Progress{Slot: a.cfg.Slot, LSN: walEnd, CommitTime: a.now()}
	return a.Flush(ctx)
}

// settleBeforeFail learns the outcome of the group commit sent before a
// failure (a signal that cut apply short, a change the target refused),
// which completes or fails on its own: when it committed, its transactions
// count durable, so that the durable position reported and acknowledged is
// the one the target holds, not the one before it.
func (a *Applier) settleBeforeFail(ctx context.Context) {
	if a.group.outstanding == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := a.settle(sctx); err != nil {
		a.log.Debug("the group commit sent before the failure did not complete", "err", err)
	}
}

// inGroupTxn reports whether a source transaction is being applied to the group's
// target transaction right now (the group cannot be committed then).
func (a *Applier) inGroupTxn() bool {
	return a.cur != nil && a.cur.kind == kindPlain && !a.cur.skip && a.cur.buf == nil
}

// groupTx returns the group's target transaction, beginning it when needed.
func (a *Applier) groupTx(ctx context.Context) (sink.Tx, error) {
	if a.group.tx == nil {
		tx, err := a.sink.Begin(ctx)
		if err != nil {
			return nil, fmt.Errorf("apply: begin target transaction: %w", err)
		}
		a.group.tx = tx
		a.group.start = a.now()
	}
	return a.group.tx, nil
}

// finishTxn records that a source transaction has been applied to the group and
// commits the group when it is full or old.
func (a *Applier) finishTxn(ctx context.Context, rows int, p sink.Progress, msgs []*source.LogicalMessage) error {
	if _, err := a.groupTx(ctx); err != nil {
		return err
	}
	a.group.txns++
	a.group.rows += rows
	if p.LSN > a.group.applied.LSN {
		a.group.applied = p
	}
	for _, m := range msgs {
		a.group.msgs = append(a.group.msgs, pendingMessage{m, p.LSN})
	}
	if a.group.rows >= a.cfg.GroupMaxRows || a.now().Sub(a.group.start) >= a.cfg.GroupMaxDelay {
		// The group is full: its commit may be outstanding while the next
		// group is received (sink.AsyncCommitter).
		return a.commitGroupOr(ctx, false)
	}
	return nil
}

// commitGroup commits the open group with the applied position. It must not be
// called while a source transaction is half applied to the group.
// It returns once the commit is durable.
func (a *Applier) commitGroup(ctx context.Context) error {
	if err := a.commitGroupOr(ctx, false); err != nil {
		return err
	}
	return a.settle(ctx)
}

// commitGroupOr commits the open group; with storeApplied and no group, it
// stores the applied position alone when it is ahead of the stored one (after a
// prepared transaction, or an idle position).
func (a *Applier) commitGroupOr(ctx context.Context, storeApplied bool) error {
	if a.inGroupTxn() {
		return errors.New("apply: internal error: group commit inside a source transaction")
	}
	// One commit outstanding at a time: the one before this must be durable.
	if err := a.settle(ctx); err != nil {
		return err
	}
	if a.group.txns == 0 && (!storeApplied || a.group.applied.LSN <= a.Durable()) {
		if a.group.tx != nil {
			// Only DDL ran in it (a Relation outside any transaction).
			tx := a.group.tx
			if err := tx.Commit(ctx, sink.Progress{Slot: a.cfg.Slot, LSN: a.Durable(), CommitTime: a.group.applied.CommitTime}); err != nil {
				return fmt.Errorf("apply: commit at %s: %w", a.Durable(), err)
			}
			a.group.tx = nil
		}
		return nil
	}
	tx, err := a.groupTx(ctx)
	if err != nil {
		return err
	}
	p := a.group.applied
	if atx, ok := tx.(sink.AsyncTx); ok && a.group.async != nil {
		if err := atx.CommitAsync(ctx, p); err != nil {
			return fmt.Errorf("apply: commit of %s up to %s: %w", sourceTxns(a.group.txns), p.LSN, err)
		}
		a.group.tx = nil
		a.group.outstanding = &outstandingCommit{p: p, txns: a.group.txns, msgs: a.group.msgs}
		a.group.txns, a.group.rows, a.group.msgs = 0, 0, nil
		return nil
	}
	if err := tx.Commit(ctx, p); err != nil {
		return fmt.Errorf("apply: commit of %s up to %s: %w", sourceTxns(a.group.txns), p.LSN, err)
	}
	a.group.tx = nil
	a.group.setDurable(p)
	msgs := a.group.msgs
	a.group.txns, a.group.rows, a.group.msgs = 0, 0, nil
	return a.deliver(ctx, msgs)
}

// sourceTxns says how many source transactions a target commit held.
func sourceTxns(n int) string {
	switch n {
	case 0:
		return "the stored position"
	case 1:
		return "1 source transaction"
	}
	return fmt.Sprintf("%d source transactions", n)
}

func (a *Applier) deliver(ctx context.Context, msgs []pendingMessage) error {
	if a.cfg.OnLogicalMessage == nil {
		return nil
	}
	for i, pm := range msgs {
		if err := a.cfg.OnLogicalMessage(ctx, pm.msg, pm.lsn); err != nil {
			if len(msgs) > i+1 {
				a.log.Warn("logical messages not delivered after an error of the handler", "count", len(msgs)-i-1)
			}
			return fmt.Errorf("apply: logical message %q at %s: %w", pm.msg.Prefix, pm.msg.LSN, err)
		}
	}
	return nil
}

func cloneMessage(m *source.LogicalMessage) *source.LogicalMessage {
	c := m.Clone()
	c.Prefix = strings.Clone(m.Prefix)
	return c
}

func (a *Applier) logicalMessage(ctx context.Context, lsn source.LSN, m *source.LogicalMessage) error {
	if !m.Transactional() {
		if m.LSN != 0 && m.LSN < a.skipBelow {
			return nil
		}
		if !a.inGroupTxn() {
			// Whoever waits for this message (a caught-up marker) finds
			// everything sent before it durable.
			if err := a.commitGroup(ctx); err != nil {
				return err
			}
		}
		return a.deliver(ctx, []pendingMessage{{cloneMessage(m), m.LSN}})
	}
	switch {
	case a.streams.inChunk:
		return a.streams.chunk().addMessage(m, a.streams.subxid(m.Xid), lsn)
	case a.cur == nil:
		return protoErr(lsn, "transactional logical message %q outside a transaction", m.Prefix)
	case a.cur.skip:
		return nil
	case a.cur.buf != nil:
		return a.cur.buf.addMessage(m, a.cur.xid, lsn)
	}
	if a.cfg.OnLogicalMessage != nil {
		a.cur.msgs = append(a.cur.msgs, cloneMessage(m))
	}
	return nil
}

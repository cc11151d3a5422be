// Package apply turns the decoded pgoutput stream into target transactions: it
// assembles source transactions (plain, streamed and prepared), buffers and spills
// the ones that cannot be applied as they arrive, groups small ones into one
// target commit, and keeps the position the target durably holds, which is the
// only one acknowledged to the source.
//
// The message flow it implements is the one of the PostgreSQL manual, chapter
// "Logical Streaming Replication Protocol", section "Logical Replication
// Protocol Message Flow"
// (https://www.postgresql.org/docs/current/protocol-logical-replication.html).
//
// # Exactly once
//
// The target stores one position P per slot, written in the same target
// transaction as the changes (sink.Tx.Commit): every source transaction whose
// end LSN is ≤ P is on the target (invariant 1). Start reads P; replication
// restarts at P and apply skips what the source sends again:
//
//   - A plain transaction is skipped when its Begin's FinalLSN (the LSN of its
//     commit record) is < P. This is exact: P is always the end of a WAL record
//     (a commit's end LSN, or a position the walsender reported, which is the
//     start or end of a record), and WAL records do not overlap, so a commit
//     record starting before P ends at or before P, and one starting at or after
//     P ends after it. Deciding at Begin keeps skipped transactions from ever
//     opening a target transaction; Commit checks that EndLSN ≤ P indeed.
//   - A streamed transaction is skipped at Stream Commit when EndLSN ≤ P.
//   - A prepared transaction's body is skipped when its prepare end LSN ≤ P or
//     its GID is already prepared on the target; Commit Prepared and Rollback
//     Prepared when their end LSN ≤ P.
//
// # Groups
//
// Plain transactions are applied to an open target transaction as their changes
// arrive (never buffered whole). Consecutive source transactions share that
// target transaction until it holds GroupMaxRows changes or has been open for
// GroupMaxDelay, or the stream goes idle; a group is only ever committed between
// source transactions, so one source transaction is never split (invariant 3).
// A buffered transaction whose size would overflow a non-empty group is
// committed apart from it. Prepared transactions never join a group.
//
// # What is acknowledged
//
// Durable is the position last stored on the target by a commit: it only moves
// forward, and Run acknowledges nothing else (invariant 2). When the stream is
// idle and nothing is in hand, Run stores the position the source has sent up to
// (at most every IdleProgressInterval) so that the slot can advance over WAL
// with nothing for us, as PostgreSQL's own subscriber does.
//
// # Errors
//
// Any error stops the applier: the open target transaction is rolled back,
// nothing past the last commit is acknowledged, and every later call returns the
// same error. Retryable sink errors (sink.ErrRetryable) are returned as well,
// not retried here: a source transaction may be half applied to the rolled-back
// target transaction and only the source can send it again. The caller restarts
// from the stored position with a new Applier (and a new stream).
package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// ErrStop is returned by OnLogicalMessage to stop apply cleanly (the migrate
// command's caught-up marker). Handle and Run return it wrapped.
var ErrStop = errors.New("stop requested")

// ErrProtocol is wrapped by the errors of messages out of place in the stream
// (Commit without Begin, a change outside a transaction, …).
var ErrProtocol = errors.New("unexpected message")

// Catalog is what apply needs of the relation catalog; *schema.Catalog has it.
type Catalog interface {
	Apply(ctx context.Context, rel *source.Relation) (t, prev *schema.Table, changed bool, err error)
	ApplyType(msg *source.TypeMessage)
	Table(relationID uint32) (*schema.Table, error)
}

// The catalog's optional capabilities (declared with their use below) that
// *schema.Catalog has.
var (
	_ Catalog         = (*schema.Catalog)(nil)
	_ typeChanger     = (*schema.Catalog)(nil)
	_ preparedChecker = (*schema.Catalog)(nil)
	_ commitWaiter    = (*schema.Catalog)(nil)
	_ columnFiller    = (*schema.Catalog)(nil)
	_ factsMatcher    = (*schema.Catalog)(nil)
)

type txnKind byte

const (
	kindPlain   txnKind = 'B' // Begin … Commit
	kindPrepare txnKind = 'b' // Begin Prepare … Prepare
)

// txn is the non-streamed transaction in hand, between Begin (Prepare) and
// Commit (Prepare).
type txn struct {
	kind     txnKind
	xid      uint32
	gid      string
	srcGID   string     // the source's GID of a prepared transaction
	beginLSN source.LSN // Begin.FinalLSN or BeginPrepare.PrepareLSN
	skip     bool
	// held says a prepared transaction is held until its Commit Prepared and
	// applied then, as a target that cannot prepare has it (see beginPrepare);
	// late, that it is held because the source finished it before its
	// Begin Prepare reached pgrelay.
	held, late bool
	rows       int
	buf        *txnBuffer // set when the transaction is buffered, not applied as it arrives
	msgs       []*source.LogicalMessage
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

// Applier applies decoded pgoutput messages to a sink. It is driven by one
// goroutine (Handle, Flush, Idle, Close); Durable may be called from any.
type Applier struct {
	cfg        Config
	sink       sink.Sink
	twoPhase   sink.TwoPhase // nil: prepared transactions are held until Commit Prepared
	ddlCommits bool
	cat        Catalog
	log        *slog.Logger
	now        func() time.Time

	started   bool
	skipBelow source.LSN    // P: the stored position read at Start
	durable   atomic.Uint64 // the position last stored on the target
	applied   sink.Progress // the end of the last source transaction applied (in the group or durable)
	failed    error
	// durableTime is the source commit time stored with durable (UnixNano;
	// 0: none), for a lag reading off the apply path.
	durableTime atomic.Int64

	// The group: the open target transaction of plain and streamed transactions.
	tx         sink.Tx
	groupStart time.Time
	groupTxns  int
	groupRows  int
	groupMsgs  []pendingMessage
	// async commits groups without waiting (sink.AsyncCommitter); the commit
	// sent last is outstanding until settle.
	async       sink.AsyncCommitter
	outstanding *outstandingCommit

	cur *txn
	// txnLSN is the commit (or prepare) LSN of the source transaction whose
	// changes are being applied and txnXid its transaction id, for
	// Config.TableSyncLSN; txnPreparedXid is its transaction id when it is
	// applied at its prepare, 0 otherwise.
	txnLSN         source.LSN
	txnXid         uint32
	txnPreparedXid uint32
	fills          sink.PreparedFills // nil unless prepared transactions are applied as prepared
	prepTx         sink.Tx            // the own target transaction of a prepared transaction being applied

	streaming bool
	streamXid uint32
	streams   map[uint32]*txnBuffer
	relSeen   map[uint32]relationSeen // see ensureRelation
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
	prepared map[uint32]*preparedTxn
	// targetPrepared are our GIDs prepared on the target.
	targetPrepared map[string]bool
	// viaRoot caches Config.PublishedViaRoot per source relation id.
	viaRoot map[uint32]bool

	spool         *spool
	lastIdleStore time.Time
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

// New returns an Applier for the sink s. It validates cfg (filling in defaults).
// Call Start before Handle.
func New(cfg Config, s sink.Sink, cat Catalog, log *slog.Logger) (*Applier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if s == nil || cat == nil {
		return nil, errors.New("apply: new: sink and catalog are required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Applier{
		cfg:            cfg,
		sink:           s,
		cat:            cat,
		log:            log.With("component", "apply", "slot", cfg.Slot),
		now:            time.Now,
		streams:        make(map[uint32]*txnBuffer),
		relSeen:        make(map[uint32]relationSeen),
		unsynced:       make(map[uint32]bool),
		prepared:       make(map[uint32]*preparedTxn),
		targetPrepared: make(map[string]bool),
		viaRoot:        make(map[uint32]bool),
		spool:          newSpool(cfg.SpillDir, cfg.Slot, cfg.MemoryLimit),
	}
	if tp, ok := s.(sink.TwoPhase); ok && cfg.TwoPhase {
		a.twoPhase = tp
	}
	if dc, ok := s.(sink.DDLCommits); ok {
		a.ddlCommits = dc.DDLCommits()
	}
	if pf, ok := s.(sink.PreparedFills); ok && a.twoPhase != nil && !a.ddlCommits {
		if r, ok := cat.(columnFiller); ok {
			a.fills = pf
			pf.SetFillResolver(r.ColumnFill)
		}
	}
	if ac, ok := s.(sink.AsyncCommitter); ok {
		a.async = ac
	}
	return a, nil
}

// Start reads the stored progress (sink.Setup), removes spill files left by dead
// processes, reconciles the target's prepared transactions of this slot and
// returns the LSN to start replication at.
//
// Prepared transactions found on the target stay prepared: the source sends
// their Commit Prepared or Rollback Prepared again, since those end after the
// stored position. They are logged.
func (a *Applier) Start(ctx context.Context) (source.LSN, error) {
	if a.started {
		return 0, errors.New("apply: Start called twice")
	}
	p, err := a.sink.Setup(ctx, a.cfg.Slot)
	if err != nil {
		return 0, fmt.Errorf("apply: read stored progress: %w", err)
	}
	a.skipBelow = p.LSN
	a.durable.Store(uint64(p.LSN))
	a.storeDurableTime(p.CommitTime)
	a.applied = p
	a.applied.Slot = a.cfg.Slot
	if n, err := removeStaleSpillDirs(a.cfg.SpillDir, a.cfg.Slot); err != nil {
		a.log.Warn("could not remove stale spill files", "err", err)
	} else if n > 0 {
		a.log.Info("removed stale spill directories", "count", n, "dir", a.cfg.SpillDir)
	}
	if a.twoPhase != nil {
		prefix := sink.GIDPrefix(a.cfg.Slot)
		gids, err := a.twoPhase.PreparedGIDs(ctx, prefix)
		if err != nil {
			return 0, fmt.Errorf("apply: list prepared transactions on the target: %w", err)
		}
		for _, gid := range gids {
			if !sink.OwnGID(a.cfg.Slot, gid) {
				continue
			}
			a.targetPrepared[gid] = true
			a.log.Info("prepared transaction on the target awaits COMMIT PREPARED or ROLLBACK PREPARED from the source", "gid", gid)
		}
	}
	a.started = true
	a.lastIdleStore = a.now()
	return p.LSN, nil
}

// Durable returns the highest LSN durably stored on the target: what may be
// acknowledged to the source. It never decreases.
func (a *Applier) Durable() source.LSN { return source.LSN(a.durable.Load()) }

// DurableCommitTime is the source commit time stored with Durable: of the
// last source transaction applied, or when the applier last stored an idle
// position (the source idle, everything applied). Zero when none is stored.
func (a *Applier) DurableCommitTime() time.Time {
	if ns := a.durableTime.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (a *Applier) storeDurableTime(t time.Time) {
	if !t.IsZero() {
		a.durableTime.Store(t.UnixNano())
	}
}

// setDurable counts p durable: its LSN and commit time, the LSN never
// moving back.
func (a *Applier) setDurable(p sink.Progress) {
	for {
		cur := a.durable.Load()
		if uint64(p.LSN) <= cur {
			return
		}
		if a.durable.CompareAndSwap(cur, uint64(p.LSN)) {
			a.storeDurableTime(p.CommitTime)
			return
		}
	}
}

// Handle consumes one decoded message, carried by the XLogData whose WAL start
// is walStart. The message may reuse the decoder's buffers: Handle copies what it
// keeps.
func (a *Applier) Handle(ctx context.Context, walStart source.LSN, msg source.Message) error {
	if a.failed != nil {
		return a.failed
	}
	if !a.started {
		return errors.New("apply: Handle called before Start")
	}
	err := a.handle(ctx, walStart, msg)
	if err != nil && !errors.Is(err, ErrStop) {
		err = a.fail(ctx, err)
	}
	return err
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
	oc := a.outstanding
	if oc == nil {
		return nil
	}
	a.outstanding = nil
	if err := a.async.Settle(ctx); err != nil {
		return fmt.Errorf("apply: commit of %s up to %s: %w", sourceTxns(oc.txns), oc.p.LSN, err)
	}
	a.setDurable(oc.p)
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
	if !a.started || a.cur != nil || a.streaming || len(a.streams) > 0 || len(a.prepared) > 0 ||
		len(a.targetPrepared) > 0 || a.groupTxns > 0 {
		return nil
	}
	if walEnd <= a.Durable() || walEnd <= a.applied.LSN || !force && a.now().Sub(a.lastIdleStore) < a.cfg.IdleProgressInterval {
		return nil
	}
	a.lastIdleStore = a.now()
	// Every transaction that committed before walEnd is applied: the target
	// is current as of now, which status measures its lag in seconds from.
	a.applied = sink.Progress{Slot: a.cfg.Slot, LSN: walEnd, CommitTime: a.now()}
	return a.Flush(ctx)
}

// Close rolls back whatever is in hand (a source transaction is never partly
// committed) and removes the spill files. It does not close the sink.
func (a *Applier) Close(ctx context.Context) error {
	var errs []error
	if a.failed == nil {
		// The last group commit counts (the final durable LSN reported).
		errs = append(errs, a.settle(ctx))
	}
	errs = append(errs, a.rollback(ctx))
	a.cur = nil
	a.streams = map[uint32]*txnBuffer{}
	a.prepared = map[uint32]*preparedTxn{}
	errs = append(errs, a.spool.close())
	if a.failed == nil {
		a.failed = errors.New("apply: applier closed")
	}
	return errors.Join(errs...)
}

// fail rolls back and poisons the applier after err, and returns err, made
// retryable when it is a value the target refused for a type that has changed
// on the source since its Relation message (see sink.ErrValueRejected).
func (a *Applier) fail(ctx context.Context, err error) error {
	a.settleBeforeFail(ctx)
	if rerr := a.rollback(ctx); rerr != nil {
		a.log.Warn("rollback after error failed", "err", rerr)
	}
	err = a.typeChanged(ctx, err)
	a.failed = err
	return err
}

// settleBeforeFail learns the outcome of the group commit sent before a
// failure (a signal that cut apply short, a change the target refused),
// which completes or fails on its own: when it committed, its transactions
// count durable, so that the durable position reported and acknowledged is
// the one the target holds, not the one before it.
func (a *Applier) settleBeforeFail(ctx context.Context) {
	if a.outstanding == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := a.settle(sctx); err != nil {
		a.log.Debug("the group commit sent before the failure did not complete", "err", err)
	}
}

// typeChanger is the optional capability of a Catalog to tell a type changed on
// the source since it was read; *schema.Catalog has it.
type typeChanger interface {
	ChangedType(ctx context.Context) (string, error)
}

// typeChanged makes err retryable when the target refused a value and a type of
// the catalog's tables has changed on the source since it was read: a new
// session reads it again and alters the target's type before the row. A value
// refused for any other reason stays fatal, so bad data is not retried forever.
func (a *Applier) typeChanged(ctx context.Context, err error) error {
	if !errors.Is(err, sink.ErrValueRejected) || errors.Is(err, sink.ErrRetryable) {
		return err
	}
	tc, ok := a.cat.(typeChanger)
	if !ok {
		return err
	}
	name, cerr := tc.ChangedType(ctx)
	if cerr != nil {
		a.log.Warn("could not check the source for a changed type after a refused value", "err", cerr)
		return err
	}
	if name == "" {
		return err
	}
	return sink.Retryable(fmt.Errorf("%w (type %s changed on the source since pgrelay read it: a new session reads it again)", err, name))
}

func (a *Applier) rollback(ctx context.Context) error {
	// The caller's context may be what failed; the rollback still gets a chance.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var errs []error
	if a.tx != nil {
		errs = append(errs, a.tx.Rollback(rctx))
		a.tx = nil
	}
	if a.prepTx != nil {
		errs = append(errs, a.prepTx.Rollback(rctx))
		a.prepTx = nil
	}
	a.groupTxns, a.groupRows, a.groupMsgs = 0, 0, nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("apply: rollback: %w", err)
	}
	return nil
}

func protoErr(lsn source.LSN, format string, args ...any) error {
	return fmt.Errorf("apply: at LSN %s: %s: %w", lsn, fmt.Sprintf(format, args...), ErrProtocol)
}

// inGroupTxn reports whether a source transaction is being applied to the group's
// target transaction right now (the group cannot be committed then).
func (a *Applier) inGroupTxn() bool {
	return a.cur != nil && a.cur.kind == kindPlain && !a.cur.skip && a.cur.buf == nil
}

func (a *Applier) handle(ctx context.Context, lsn source.LSN, msg source.Message) error {
	switch msg.(type) {
	case *source.Begin, *source.Commit, *source.Insert, *source.Update, *source.Delete, *source.Origin, *source.TypeMessage:
		// The plain path: a group commit sent last may still be outstanding.
	default:
		if err := a.settle(ctx); err != nil {
			return err
		}
	}
	switch m := msg.(type) {
	case *source.Begin:
		return a.begin(ctx, lsn, m)
	case *source.Commit:
		return a.commit(ctx, lsn, m)
	case *source.Origin:
		return nil
	case *source.Relation:
		return a.relation(ctx, lsn, m)
	case *source.TypeMessage:
		// Type messages only name types: applying them early is harmless.
		a.cat.ApplyType(m)
		return nil
	case *source.Insert, *source.Update, *source.Delete, *source.Truncate:
		return a.change(ctx, lsn, m)
	case *source.LogicalMessage:
		return a.logicalMessage(ctx, lsn, m)
	case *source.StreamStart:
		return a.streamStart(lsn, m)
	case *source.StreamStop:
		if !a.streaming {
			return protoErr(lsn, "Stream Stop without Stream Start")
		}
		a.streaming = false
		return nil
	case *source.StreamCommit:
		return a.streamCommit(ctx, lsn, m)
	case *source.StreamAbort:
		return a.streamAbort(lsn, m)
	case *source.StreamPrepare:
		return a.streamPrepare(ctx, lsn, m)
	case *source.BeginPrepare:
		return a.beginPrepare(ctx, lsn, m)
	case *source.Prepare:
		return a.prepare(ctx, lsn, m)
	case *source.CommitPrepared:
		return a.commitPrepared(ctx, lsn, m)
	case *source.RollbackPrepared:
		return a.rollbackPrepared(ctx, lsn, m)
	case nil:
		return protoErr(lsn, "nil message")
	default:
		return protoErr(lsn, "message of type %T is not handled", msg)
	}
}

// outside checks that no transaction or stream chunk is open, for messages that
// start or finish one.
func (a *Applier) outside(lsn source.LSN, what string) error {
	if a.streaming {
		return protoErr(lsn, "%s inside the chunk of streamed transaction %d (no Stream Stop)", what, a.streamXid)
	}
	if a.cur != nil {
		return protoErr(lsn, "%s inside transaction %d (no Commit or Prepare)", what, a.cur.xid)
	}
	return nil
}

func (a *Applier) begin(ctx context.Context, lsn source.LSN, m *source.Begin) error {
	if err := a.outside(lsn, "Begin"); err != nil {
		return err
	}
	t := &txn{kind: kindPlain, xid: m.Xid, beginLSN: m.FinalLSN, skip: m.FinalLSN < a.skipBelow}
	a.cur = t
	a.txnLSN, a.txnXid = m.FinalLSN, m.Xid
	a.txnPreparedXid = 0
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
	if a.streaming || t == nil || t.kind != kindPlain {
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

// groupTx returns the group's target transaction, beginning it when needed.
func (a *Applier) groupTx(ctx context.Context) (sink.Tx, error) {
	if a.tx == nil {
		tx, err := a.sink.Begin(ctx)
		if err != nil {
			return nil, fmt.Errorf("apply: begin target transaction: %w", err)
		}
		a.tx = tx
		a.groupStart = a.now()
	}
	return a.tx, nil
}

// finishTxn records that a source transaction has been applied to the group and
// commits the group when it is full or old.
func (a *Applier) finishTxn(ctx context.Context, rows int, p sink.Progress, msgs []*source.LogicalMessage) error {
	if _, err := a.groupTx(ctx); err != nil {
		return err
	}
	a.groupTxns++
	a.groupRows += rows
	if p.LSN > a.applied.LSN {
		a.applied = p
	}
	for _, m := range msgs {
		a.groupMsgs = append(a.groupMsgs, pendingMessage{m, p.LSN})
	}
	if a.groupRows >= a.cfg.GroupMaxRows || a.now().Sub(a.groupStart) >= a.cfg.GroupMaxDelay {
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
	if a.groupTxns == 0 && (!storeApplied || a.applied.LSN <= a.Durable()) {
		if a.tx != nil {
			// Only DDL ran in it (a Relation outside any transaction).
			tx := a.tx
			if err := tx.Commit(ctx, sink.Progress{Slot: a.cfg.Slot, LSN: a.Durable(), CommitTime: a.applied.CommitTime}); err != nil {
				return fmt.Errorf("apply: commit at %s: %w", a.Durable(), err)
			}
			a.tx = nil
		}
		return nil
	}
	tx, err := a.groupTx(ctx)
	if err != nil {
		return err
	}
	p := a.applied
	if atx, ok := tx.(sink.AsyncTx); ok && a.async != nil {
		if err := atx.CommitAsync(ctx, p); err != nil {
			return fmt.Errorf("apply: commit of %s up to %s: %w", sourceTxns(a.groupTxns), p.LSN, err)
		}
		a.tx = nil
		a.outstanding = &outstandingCommit{p: p, txns: a.groupTxns, msgs: a.groupMsgs}
		a.groupTxns, a.groupRows, a.groupMsgs = 0, 0, nil
		return nil
	}
	if err := tx.Commit(ctx, p); err != nil {
		return fmt.Errorf("apply: commit of %s up to %s: %w", sourceTxns(a.groupTxns), p.LSN, err)
	}
	a.tx = nil
	a.setDurable(p)
	msgs := a.groupMsgs
	a.groupTxns, a.groupRows, a.groupMsgs = 0, 0, nil
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

// target returns the target transaction the changes of the transaction in hand go to.
func (a *Applier) target(ctx context.Context) (sink.Tx, error) {
	if a.cur != nil && a.cur.kind == kindPrepare {
		return a.preparedTx(ctx, a.cur.xid)
	}
	return a.groupTx(ctx)
}

// preparedTx returns the target transaction of prepared transaction xid,
// beginning it when needed: at its first change, or at DDL of its own. DDL
// that a Relation message brings before that and that the source committed
// earlier (the committed catalog shows it) runs in a target transaction of
// its own: inside the prepared one it would hold the table's lock on the
// target until COMMIT PREPARED, and a change to the table from a transaction
// committed before that (later in the stream) would wait for it for ever.
func (a *Applier) preparedTx(ctx context.Context, xid uint32) (sink.Tx, error) {
	if a.prepTx == nil {
		var tx sink.Tx
		var err error
		if pb, ok := a.sink.(sink.PreparedBeginner); ok && a.twoPhase != nil {
			tx, err = pb.BeginPrepared(ctx, sink.GID(a.cfg.Slot, xid))
		} else {
			tx, err = a.sink.Begin(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("apply: begin target transaction for prepared transaction %d: %w", xid, err)
		}
		a.prepTx = tx
	}
	return a.prepTx, nil
}

func (a *Applier) relation(ctx context.Context, lsn source.LSN, m *source.Relation) error {
	if a.streaming {
		return a.streams[a.streamXid].addRelation(m, lsn)
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
	if !ok || xid == 0 || (a.waited.xid == xid && a.waited.txnLSN == a.txnLSN) {
		return nil
	}
	if err := w.WaitCommitted(ctx, xid); err != nil {
		return err
	}
	a.waited.xid, a.waited.txnLSN = xid, a.txnLSN
	return nil
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
	seen, ok := a.relSeen[rel.RelationID]
	if ok && xid != 0 && seen.xid == xid && seen.txnLSN == a.txnLSN && sameRelationMessage(seen.rel, rel) {
		if lag, ok := a.sink.(sink.BehindReporter); !ok || !lag.Behind(rel.RelationID) {
			return nil
		}
	}
	if err := a.ensureRelationNow(ctx, lsn, xid, rel, flushFirst); err != nil {
		return err
	}
	delete(a.unsynced, rel.RelationID)
	if xid != 0 {
		a.relSeen[rel.RelationID] = relationSeen{xid: xid, txnLSN: a.txnLSN, rel: cloneRelation(rel)}
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

// preparing reports whether source transaction xid is the one in hand being
// applied as a prepared transaction on the target.
func (a *Applier) preparing(xid uint32) bool {
	return xid != 0 && xid == a.txnPreparedXid && a.twoPhase != nil && !a.ddlCommits
}

func (a *Applier) ensureRelationNow(ctx context.Context, lsn source.LSN, xid uint32, rel *source.Relation, flushFirst bool) error {
	if lsn == 0 {
		// Relation messages come in XLogData without a WAL position: name the
		// transaction's commit instead.
		lsn = a.txnLSN
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
	if a.unsynced[rel.RelationID] {
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
	if ap, ok := a.sink.(sink.ApartEnsurer); ok && preparing && !ownDDL && a.prepTx != nil {
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
	if preparing && !ownDDL && a.prepTx != nil && !apart && prev != nil && !schema.SameDefinition(prev, t) {
		// It joined the prepared transaction. (Without an earlier version
		// in this session, only the sink knows whether the target table
		// differed: a table's first Relation message in a session is a
		// change to the catalog, not to the table.)
		a.log.Warn("a table's change of definition committed earlier on the source was applied inside a prepared transaction on the target, which holds the table's lock there until COMMIT PREPARED: changes to the table from transactions committed before that wait for it (see docs/limitations.md)",
			"table", t.DisplayName(), "xid", xid, "lsn", lsn)
	}
	if factsMatch || a.fills == nil {
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
	if err := a.fills.DeferFill(ctx, sink.GID(a.cfg.Slot, xid), t, added); err != nil {
		return fmt.Errorf("apply: relation %s.%s (id %d) at %s: %w", rel.Namespace, rel.Name, rel.RelationID, lsn, err)
	}
	return nil
}

// publishedViaRoot asks Config.PublishedViaRoot once per relation and session.
func (a *Applier) publishedViaRoot(ctx context.Context, relid uint32) (bool, error) {
	if a.cfg.PublishedViaRoot == nil {
		return false, nil
	}
	via, known := a.viaRoot[relid]
	if !known {
		var err error
		if via, err = a.cfg.PublishedViaRoot(ctx, relid); err != nil {
			return false, err
		}
		a.viaRoot[relid] = via
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
	if a.ddlCommits && (a.tx != nil || a.prepTx != nil) {
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
	return fmt.Errorf("apply: create or alter target table for %s at %s: %w", t.QualifiedName(), lsn, err)
}

// subxid is the (sub)transaction a message in a stream chunk belongs to.
func (a *Applier) subxid(xid uint32) uint32 {
	if xid == 0 {
		return a.streamXid
	}
	return xid
}

func (a *Applier) change(ctx context.Context, lsn source.LSN, msg source.Message) error {
	var buf *txnBuffer
	var subxid uint32
	switch {
	case a.streaming:
		buf = a.streams[a.streamXid]
		switch m := msg.(type) {
		case *source.Insert:
			subxid = a.subxid(m.Xid)
		case *source.Update:
			subxid = a.subxid(m.Xid)
		case *source.Delete:
			subxid = a.subxid(m.Xid)
		case *source.Truncate:
			subxid = a.subxid(m.Xid)
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
	if a.prepTx != nil {
		_ = a.prepTx.Rollback(ctx)
		a.prepTx = nil
	}
	return true
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

// preparedCommitted reports whether the prepared transaction gid was committed
// on the target after a restart that came before its position was stored.
func (a *Applier) preparedCommitted(ctx context.Context, gid string, prepareEnd source.LSN) (bool, error) {
	pc, ok := a.sink.(sink.PreparedCommits)
	if !ok || a.twoPhase == nil {
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

// inTableCopy reports whether the current transaction's changes to t are
// already in t's snapshot copy (Config.TableSyncLSN).
func (a *Applier) inTableCopy(t *schema.Table) bool {
	if a.cfg.TableSyncLSN == nil || a.txnLSN >= a.cfg.TableSyncLSN(t) {
		return false
	}
	// Before the snapshot's LSN: in the copy only if the snapshot sees the
	// transaction, which its transaction ids tell. A transaction prepared
	// before it is seen only if it also committed before it; one whose
	// commit record came just before the LSN may not have been visible yet
	// when a snapshot taken without a slot was.
	if a.txnXid != 0 && a.cfg.TableSyncSnapshot != nil {
		if snap, ok := a.cfg.TableSyncSnapshot(t); ok {
			return snap.Visible(a.txnXid)
		}
	}
	return true
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
	case a.streaming:
		return a.streams[a.streamXid].addMessage(m, a.subxid(m.Xid), lsn)
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
				if _, seen := versions[id]; seen || !a.unsynced[id] || synced[id] {
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
			if a.unsynced[rel.RelationID] && !synced[rel.RelationID] {
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
			delete(a.unsynced, id)
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
	a.unsynced[rel.RelationID] = true
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
	if len(a.unsynced) == 0 || !a.unsynced[t.RelationID] {
		return nil
	}
	if err := a.ensureTable(ctx, lsn, t, nil, false); err != nil {
		return err
	}
	delete(a.unsynced, t.RelationID)
	return nil
}

// applyBuffered applies a buffered transaction as one source transaction of the
// group, keeping a large one out of a non-empty group.
func (a *Applier) applyBuffered(ctx context.Context, buf *txnBuffer, p sink.Progress) error {
	if a.groupTxns > 0 && a.groupRows+buf.changes > a.cfg.GroupMaxRows {
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

func (a *Applier) streamStart(lsn source.LSN, m *source.StreamStart) error {
	if err := a.outside(lsn, "Stream Start"); err != nil {
		return err
	}
	buf := a.streams[m.Xid]
	switch {
	case m.FirstSegment && buf != nil:
		return protoErr(lsn, "Stream Start of a first segment for transaction %d, which already streamed", m.Xid)
	case !m.FirstSegment && buf == nil:
		return protoErr(lsn, "Stream Start for transaction %d without its first segment", m.Xid)
	case buf == nil:
		a.streams[m.Xid] = a.spool.newBuffer(m.Xid)
	}
	a.streaming, a.streamXid = true, m.Xid
	return nil
}

func (a *Applier) streamCommit(ctx context.Context, lsn source.LSN, m *source.StreamCommit) error {
	if err := a.outside(lsn, "Stream Commit"); err != nil {
		return err
	}
	buf := a.streams[m.Xid]
	if buf == nil {
		return protoErr(lsn, "Stream Commit for transaction %d, which never streamed", m.Xid)
	}
	delete(a.streams, m.Xid)
	defer buf.release()
	if m.EndLSN <= a.skipBelow {
		// pgoutput takes the relations of a committed streamed transaction as
		// sent for the whole session: later transactions rely on them.
		return a.installRelations(ctx, buf)
	}
	a.txnLSN, a.txnXid = m.CommitLSN, m.Xid
	a.txnPreparedXid = 0
	return a.applyBuffered(ctx, buf, sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.CommitTime})
}

func (a *Applier) streamAbort(lsn source.LSN, m *source.StreamAbort) error {
	if err := a.outside(lsn, "Stream Abort"); err != nil {
		return err
	}
	buf := a.streams[m.Xid]
	if buf == nil {
		// Its changes never reached us (or it was dropped already): nothing to undo.
		a.log.Debug("stream abort of an unknown transaction", "xid", m.Xid, "subxid", m.SubXid, "lsn", lsn)
		return nil
	}
	if m.SubXid == m.Xid || m.SubXid == 0 {
		delete(a.streams, m.Xid)
		return buf.release()
	}
	buf.abortSub(m.SubXid)
	return nil
}

// prepareOnTarget prepares a prepared transaction on the target: the one in
// a.prepTx when its changes were applied as they arrived, else buf's, applied to
// a target transaction of its own.
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
	if err := a.twoPhase.Prepare(ctx, tx, gid, p); err != nil {
		a.prepTx = nil
		if a.leaveOutAborted(ctx, xid, err) {
			return nil
		}
		return fmt.Errorf("apply: prepare transaction %d as %q at %s: %w", xid, gid, lsn, err)
	}
	a.prepTx = nil
	a.targetPrepared[gid] = true
	a.prepared[xid] = &preparedTxn{gid: gid, msgs: msgs}
	// Prepared is durable on the target, and once the stored position passes
	// it the source sends only the Commit Prepared: the position may move past
	// it with the next commit.
	if p.LSN > a.applied.LSN {
		a.applied = p
	}
	return nil
}

func (a *Applier) streamPrepare(ctx context.Context, lsn source.LSN, m *source.StreamPrepare) error {
	if err := a.outside(lsn, "Stream Prepare"); err != nil {
		return err
	}
	buf := a.streams[m.Xid]
	if buf == nil {
		return protoErr(lsn, "Stream Prepare for transaction %d, which never streamed", m.Xid)
	}
	delete(a.streams, m.Xid)
	gid := sink.GID(a.cfg.Slot, m.Xid)
	done := m.EndLSN <= a.skipBelow || a.targetPrepared[gid]
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
	if a.twoPhase == nil {
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
	a.txnLSN, a.txnXid = m.PrepareLSN, m.Xid
	a.txnPreparedXid = m.Xid
	return a.prepareOnTarget(ctx, lsn, m.Xid, gid, buf, nil, sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.PrepareTime})
}

// hold keeps a prepared transaction the target cannot prepare until its Commit
// Prepared. Its effects become visible on the source at COMMIT PREPARED, so
// applying it then, in that order, is what a reader of the source sees.
func (a *Applier) hold(lsn source.LSN, xid uint32, gid string, buf *txnBuffer, late bool) error {
	if old := a.prepared[xid]; old != nil {
		_ = buf.release()
		return protoErr(lsn, "transaction %d prepared twice", xid)
	}
	a.prepared[xid] = &preparedTxn{gid: gid, buf: buf, late: late}
	return nil
}

func (a *Applier) beginPrepare(ctx context.Context, lsn source.LSN, m *source.BeginPrepare) error {
	if err := a.outside(lsn, "Begin Prepare"); err != nil {
		return err
	}
	gid := sink.GID(a.cfg.Slot, m.Xid)
	t := &txn{kind: kindPrepare, xid: m.Xid, gid: gid, srcGID: m.GID, beginLSN: m.PrepareLSN}
	a.txnLSN, a.txnXid = m.PrepareLSN, m.Xid
	a.txnPreparedXid = m.Xid
	// Prepared on the target already: we stopped after PREPARE TRANSACTION and
	// before the position passed it. The body is there; wait for the Commit Prepared.
	t.skip = a.targetPrepared[gid]
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
	if !t.skip && !t.held && a.twoPhase != nil && !a.ddlCommits {
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
	if t.held || a.twoPhase == nil || a.ddlCommits {
		t.buf = a.spool.newBuffer(m.Xid)
		return nil
	}
	// Its own target transaction, never grouped (invariant 3), begun at its
	// first change (see preparedTx).
	return a.commitGroup(ctx)
}

func (a *Applier) prepare(ctx context.Context, lsn source.LSN, m *source.Prepare) error {
	t := a.cur
	if a.streaming || t == nil || t.kind != kindPrepare {
		return protoErr(lsn, "Prepare without Begin Prepare")
	}
	if m.Xid != t.xid {
		return protoErr(lsn, "Prepare of transaction %d inside transaction %d", m.Xid, t.xid)
	}
	a.cur = nil
	if t.skip {
		return nil
	}
	if t.held || a.twoPhase == nil {
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
	pt := a.prepared[m.Xid]
	delete(a.prepared, m.Xid)
	if pt != nil && pt.buf != nil {
		defer pt.buf.release()
	}
	if m.EndLSN <= a.skipBelow {
		return nil
	}
	p := sink.Progress{Slot: a.cfg.Slot, LSN: m.EndLSN, CommitTime: m.CommitTime}
	if pt != nil && pt.buf != nil {
		if a.twoPhase != nil && !pt.late {
			a.log.Info("applying a transaction prepared before the stored position at its COMMIT PREPARED (prepared before the slot's consistent point, not in the snapshot copy)", "xid", m.Xid, "lsn", m.EndLSN)
		}
		a.txnLSN, a.txnXid = m.CommitLSN, m.Xid
		a.txnPreparedXid = 0
		return a.applyBuffered(ctx, pt.buf, p)
	}
	if a.twoPhase == nil {
		return fmt.Errorf("apply: Commit Prepared of transaction %d at %s: its changes were sent before a restart and are not on the target, which does not apply prepared transactions as prepared; use a target that can (PostgreSQL with max_prepared_transactions > 0) or recreate the slot without two_phase and copy the tables again", m.Xid, lsn)
	}
	if !a.targetPrepared[gid] {
		// Not prepared on the target: committed before a restart that came
		// before the position was stored. Only the position remains to store.
		a.log.Info("prepared transaction already committed on the target", "gid", gid, "lsn", m.EndLSN)
		return a.finishTxn(ctx, 0, p, nil)
	}
	// The walsender may send COMMIT PREPARED a moment before the source makes
	// the transaction visible to new snapshots: fill values of the columns it
	// added (sink.PreparedFills), read from the source catalog as the target
	// commits, would not be there yet, and older rows would keep NULL.
	if a.fills != nil {
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
	if pt := a.prepared[m.Xid]; pt != nil {
		delete(a.prepared, m.Xid)
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
	if a.twoPhase == nil || !a.targetPrepared[gid] {
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
	finish, verb := a.twoPhase.CommitPrepared, "commit"
	if !commit {
		finish, verb = a.twoPhase.RollbackPrepared, "roll back"
	}
	if err := finish(ctx, gid, p); err != nil {
		return fmt.Errorf("apply: %s prepared transaction %q at %s: %w", verb, gid, lsn, err)
	}
	delete(a.targetPrepared, gid)
	if p.LSN > a.applied.LSN {
		a.applied = p
	}
	a.setDurable(p)
	return nil
}

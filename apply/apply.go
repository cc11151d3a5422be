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

// applying is the source transaction whose changes are being applied, for
// Config.TableSyncLSN and the relations' facts; it outlives cur (a streamed
// transaction or one held until Commit Prepared is applied with none).
type applying struct {
	lsn         source.LSN // its commit LSN, or its prepare LSN when applied at its prepare
	xid         uint32
	preparedXid uint32 // xid when applied at its prepare, 0 otherwise
}

// Applier applies decoded pgoutput messages to a sink. It is driven by one
// goroutine (Handle, Flush, Idle, Close); Durable may be called from any.
type Applier struct {
	cfg        Config
	sink       sink.Sink
	ddlCommits bool
	cat        Catalog
	log        *slog.Logger
	now        func() time.Time

	started   bool
	skipBelow source.LSN // P: the stored position read at Start
	failed    error

	group groupCommit

	cur      *txn
	applying applying

	streams  streamedTxns
	prepared preparedTxns
	rels     relationSync

	spool *spool
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
		cfg:      cfg,
		sink:     s,
		cat:      cat,
		log:      log.With("component", "apply", "slot", cfg.Slot),
		now:      time.Now,
		streams:  streamedTxns{bufs: make(map[uint32]*txnBuffer)},
		prepared: preparedTxns{txns: make(map[uint32]*preparedTxn), onTarget: make(map[string]bool)},
		rels: relationSync{
			seen:     make(map[uint32]relationSeen),
			unsynced: make(map[uint32]bool),
			viaRoot:  make(map[uint32]bool),
		},
		spool: newSpool(cfg.SpillDir, cfg.Slot, cfg.MemoryLimit),
	}
	if tp, ok := s.(sink.TwoPhase); ok && cfg.TwoPhase {
		a.prepared.twoPhase = tp
	}
	if dc, ok := s.(sink.DDLCommits); ok {
		a.ddlCommits = dc.DDLCommits()
	}
	if pf, ok := s.(sink.PreparedFills); ok && a.prepared.twoPhase != nil && !a.ddlCommits {
		if r, ok := cat.(columnFiller); ok {
			a.prepared.fills = pf
			pf.SetFillResolver(r.ColumnFill)
		}
	}
	if ac, ok := s.(sink.AsyncCommitter); ok {
		a.group.async = ac
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
	a.group.durable.Store(uint64(p.LSN))
	a.group.storeDurableTime(p.CommitTime)
	a.group.applied = p
	a.group.applied.Slot = a.cfg.Slot
	if n, err := removeStaleSpillDirs(a.cfg.SpillDir, a.cfg.Slot); err != nil {
		a.log.Warn("could not remove stale spill files", "err", err)
	} else if n > 0 {
		a.log.Info("removed stale spill directories", "count", n, "dir", a.cfg.SpillDir)
	}
	if err := a.findTargetPrepared(ctx); err != nil {
		return 0, err
	}
	a.started = true
	a.group.lastIdleStore = a.now()
	return p.LSN, nil
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
	a.streams.bufs = map[uint32]*txnBuffer{}
	a.prepared.txns = map[uint32]*preparedTxn{}
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
	if a.group.tx != nil {
		errs = append(errs, a.group.tx.Rollback(rctx))
		a.group.tx = nil
	}
	if a.prepared.tx != nil {
		errs = append(errs, a.prepared.tx.Rollback(rctx))
		a.prepared.tx = nil
	}
	a.group.txns, a.group.rows, a.group.msgs = 0, 0, nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("apply: rollback: %w", err)
	}
	return nil
}

func protoErr(lsn source.LSN, format string, args ...any) error {
	return fmt.Errorf("apply: at LSN %s: %s: %w", lsn, fmt.Sprintf(format, args...), ErrProtocol)
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
		return a.streamStop(lsn)
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
	if a.streams.inChunk {
		return protoErr(lsn, "%s inside the chunk of streamed transaction %d (no Stream Stop)", what, a.streams.xid)
	}
	if a.cur != nil {
		return protoErr(lsn, "%s inside transaction %d (no Commit or Prepare)", what, a.cur.xid)
	}
	return nil
}

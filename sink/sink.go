// Package sink defines what pgrelay applies changes to: a small core interface
// every target implements, plus optional capabilities found by type assertion, the
// way database/sql/driver does it. Sinks see tables and changes, never pgoutput
// bytes. One package per target kind: sink/postgres, sink/mysql.
package sink

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// Progress is the replication position a target durably holds for one slot: every
// source transaction whose end LSN is ≤ LSN has been applied.
type Progress struct {
	Slot       string
	LSN        source.LSN
	CommitTime time.Time // source commit time of the last applied transaction
}

// ErrRetryable marks errors after which the whole target transaction may be
// retried: lost connections before a side effect could have happened,
// serialization failures, deadlocks. Sinks wrap such errors so that
// errors.Is(err, ErrRetryable) holds; every other error is fatal for apply.
var ErrRetryable = errors.New("retryable")

// Retryable wraps err so that errors.Is(err, ErrRetryable) holds while the
// message and the original chain stay intact.
func Retryable(err error) error { return mark(err, ErrRetryable) }

// mark wraps err so that errors.Is(err, sentinel) holds while the message and
// the original chain stay intact.
func mark(err, sentinel error) error {
	if err == nil {
		return nil
	}
	return markedError{err, sentinel}
}

type markedError struct{ err, sentinel error }

func (e markedError) Error() string   { return e.err.Error() }
func (e markedError) Unwrap() []error { return []error{e.err, e.sentinel} }

// EarlierChangeError wraps the error of a change queued before the operation
// that reported it (a sink that pipelines learns that a row failed with its
// next round trip, which may be a table's DDL): the error names its own change,
// and the operation at hand is not at fault.
type EarlierChangeError struct{ Err error }

func (e *EarlierChangeError) Error() string { return e.Err.Error() }
func (e *EarlierChangeError) Unwrap() error { return e.Err }

// ErrValueRejected marks errors where the target refused a value of a change
// as invalid input or as violating a check. When a type the value uses has
// changed on the source since pgrelay read it (a composite's attributes, a
// domain's checks), the source never signals that change in the stream: the
// value is right and the target's type is stale, and a new session, which
// reads the type again, can apply it. Otherwise the error is fatal.
var ErrValueRejected = errors.New("value rejected by the target")

// ValueRejected wraps err so that errors.Is(err, ErrValueRejected) holds while
// the message and the original chain stay intact.
func ValueRejected(err error) error { return mark(err, ErrValueRejected) }

// ChangeKind tells what a Change does.
type ChangeKind byte

const (
	Insert ChangeKind = 'I'
	Update ChangeKind = 'U'
	Delete ChangeKind = 'D'
)

// Change is one row change in a source transaction.
type Change struct {
	Kind  ChangeKind
	Table *schema.Table
	// OldKind is source.OldKey or source.OldFull when Old is set (updates that
	// change the key or tables with REPLICA IDENTITY FULL; every delete).
	OldKind byte
	Old     source.Tuple
	New     source.Tuple
	// LSN locates the change in the source WAL, for error messages.
	LSN source.LSN
}

// Sink is a replication target.
type Sink interface {
	// Setup brings the target's metadata schema up to date (migrations/) and
	// returns the stored progress for the slot (zero LSN when never seeded).
	Setup(ctx context.Context, slot string) (Progress, error)
	// EnsureTable creates the target table for t when missing, or evolves it
	// from prev (the previous version of the same relation, nil when unknown).
	//
	// apply may call it while a Tx from Begin is open, between two changes of a
	// source transaction that needs the new definition. A sink whose DDL is
	// transactional (PostgreSQL) must then run it inside that open Tx, so that it
	// commits or rolls back with the changes. A sink whose DDL commits implicitly
	// reports so through DDLCommits; apply then never calls EnsureTable while a Tx
	// is open.
	EnsureTable(ctx context.Context, t, prev *schema.Table) error
	// Begin starts a target transaction.
	Begin(ctx context.Context) (Tx, error)
	Close(ctx context.Context) error
}

// Tx is one target transaction. Several small source transactions may share one
// (group commit); one source transaction never spans two.
type Tx interface {
	// Apply queues or executes one change. Errors may surface here or at Commit.
	// The sink owns ch and the tuples it references from the call on: apply
	// hands over copies, never the decoder's reused buffers.
	Apply(ctx context.Context, ch *Change) error
	// Truncate empties tables (options are source.Truncate* bits).
	Truncate(ctx context.Context, tables []*schema.Table, options uint8) error
	// Commit records p in the same transaction and commits it durably.
	Commit(ctx context.Context, p Progress) error
	// Rollback abandons the transaction.
	Rollback(ctx context.Context) error
}

// AsyncCommitter is the capability to commit a transaction without waiting for
// the outcome (AsyncTx.CommitAsync), so that the next group of changes is
// received and queued while the target commits the last one. At most one
// commit is outstanding; every other use of the target waits for it.
type AsyncCommitter interface {
	// Settle waits for the outstanding commit, if any, and returns its outcome
	// (nil when there is none). Until Settle has returned it, a failed commit
	// also fails every other call into the sink.
	Settle(ctx context.Context) error
}

// AsyncTx is the Tx side of AsyncCommitter.
type AsyncTx interface {
	// CommitAsync records p in the same transaction and sends the commit
	// without waiting for it: the transaction is durable only once the sink's
	// Settle returns nil. An error here means nothing was committed.
	CommitAsync(ctx context.Context, p Progress) error
}

// TwoPhase is the capability to apply prepared transactions as prepared.
type TwoPhase interface {
	// Prepare prepares tx under gid instead of committing it. It must not take
	// locks later transactions need (no update of the shared progress row).
	Prepare(ctx context.Context, tx Tx, gid string, p Progress) error
	// CommitPrepared commits the prepared transaction gid and records p.
	CommitPrepared(ctx context.Context, gid string, p Progress) error
	// RollbackPrepared rolls back the prepared transaction gid and records p.
	RollbackPrepared(ctx context.Context, gid string, p Progress) error
	// PreparedGIDs lists the target's prepared transactions whose GID starts with prefix.
	PreparedGIDs(ctx context.Context, prefix string) ([]string, error)
}

// PreparedBeginner is the capability of a TwoPhase sink that must know, when
// a transaction begins, that it will be prepared: MySQL prepares only XA
// transactions, which begin with XA START. apply begins the target
// transaction of every prepared source transaction with it when the sink has
// it, and with Begin otherwise.
type PreparedBeginner interface {
	// BeginPrepared starts a target transaction to be prepared under gid
	// (TwoPhase.Prepare); it may still be committed with Commit.
	BeginPrepared(ctx context.Context, gid string) (Tx, error)
}

// PreparedCommits is the capability to tell that a prepared transaction was
// committed on the target (COMMIT PREPARED done) while the stored position
// still lies before its prepare: a crash between the two. apply then skips the
// body the source sends again instead of applying it twice.
type PreparedCommits interface {
	// PreparedCommitted reports whether the transaction prepared under gid with
	// prepare end LSN prepareEnd is committed on the target.
	PreparedCommitted(ctx context.Context, gid string, prepareEnd source.LSN) (bool, error)
}

// PreparedFills is the capability of a TwoPhase sink to give a column that a
// prepared transaction added its fill value when the transaction commits. The
// fill value (what rows older than the ADD COLUMN hold, from the column's
// default) is in the source catalog only once COMMIT PREPARED has run there,
// long after the target prepared the transaction with the column empty.
type PreparedFills interface {
	// DeferFill records, in the open transaction to be prepared as gid and
	// right after the DDL that added them, that columns of t were added
	// without their fill value.
	DeferFill(ctx context.Context, gid string, t *schema.Table, columns []string) error
	// SetFillResolver sets what CommitPrepared asks for the fill value of a
	// deferred column; without one, deferred columns stay as they are.
	SetFillResolver(r FillResolver)
}

// FillResolver returns the fill value of column of the source table whose OID
// is relationID (schema.table when relationID is 0: the table as the
// Relation message named it) as the source catalog has it now: a value of the
// column's type, or nil when rows older than the column hold NULL. found is
// false when the source no longer has the column. volatile reports a default
// that is not immutable, which gave each older row a value of its own that
// cannot be known.
type FillResolver func(ctx context.Context, relationID uint32, schema, table, column string) (fill *schema.Value, found, volatile bool, err error)

// DDLCommits is the capability to say that the target's DDL commits the open
// transaction implicitly (MySQL, MariaDB). When DDLCommits returns true, apply
// commits the open group and calls Sink.EnsureTable with no Tx open, before the
// changes of the source transaction that needs the new definition. A sink
// without this method is taken to have transactional DDL.
type DDLCommits interface {
	DDLCommits() bool
}

// BulkLoader is the capability to load a whole table from a stream in
// PostgreSQL's COPY text format (the snapshot copy).
type BulkLoader interface {
	CopyFrom(ctx context.Context, t *schema.Table, r io.Reader) (rows int64, err error)
}

// BinaryBulkLoader is the capability to load a whole table from a stream in
// PostgreSQL's COPY binary format, which costs a PostgreSQL target less CPU
// than text. Binary data is only safe where both sides agree on every column's
// type exactly: a value of one type read as another may load without an error
// and mean something else.
type BinaryBulkLoader interface {
	// TakesBinary reports whether t's target table takes COPY binary data of
	// t's columns, in t's order, each of exactly its source type
	// (Column.TypeOID, which schema.BinaryCopyType must know), as a source
	// server of major sourceMajor (0: unknown) sends them. When it does not,
	// why says what stands in the way, for a debug log.
	TakesBinary(ctx context.Context, t *schema.Table, sourceMajor int) (ok bool, why string, err error)
	// CopyFromBinary is BulkLoader.CopyFrom for COPY binary data; use it only
	// for a table TakesBinary accepted.
	CopyFromBinary(ctx context.Context, t *schema.Table, r io.Reader) (rows int64, err error)
}

// WholeLoader is the capability to load a table in one piece: the stream
// holds all of the table's rows, the table is empty, and nothing else loads
// into it meanwhile. A PostgreSQL target then loads it frozen (COPY …
// FREEZE), which spares it work after the load. binary says the stream is in
// COPY binary format (for a table BinaryBulkLoader.TakesBinary accepted),
// else text.
type WholeLoader interface {
	CopyWhole(ctx context.Context, t *schema.Table, r io.Reader, binary bool) (rows int64, err error)
}

// Snapshot table states, in the order a table goes through them.
const (
	TablePending = "pending" // to be copied
	TableCopying = "copying" // copy started; a restart copies it again from scratch
	TableCopied  = "copied"  // rows are in
	TableIndexed = "indexed" // secondary indexes built: done
)

// TableState is the snapshot copy state of one table on the target.
type TableState struct {
	Schema, Name string // source schema and name
	// RelationID is the source table's OID, 0 when unknown (set before
	// pgrelay kept it); kept once set.
	RelationID  uint32
	State       string // TablePending … TableIndexed
	Rows, Bytes int64
	// SyncLSN is the LSN of the snapshot the table was copied under when that
	// is not the slot's own (its interrupted copy was redone under a later
	// one); 0 otherwise. Streaming skips the table's changes from transactions
	// that committed before it: they are in the copy.
	SyncLSN source.LSN
	// SyncSnapshot is that snapshot in txid_current_snapshot() text form,
	// "" when unknown: a transaction prepared before SyncLSN and committed
	// after it is not in the copy, and only its transaction id tells.
	SyncSnapshot string
	// PublishedAs is what the publication published of the table when it was
	// copied (source.PublishedTable.Shape), "" when unknown; kept once set.
	PublishedAs string
	UpdatedAt   time.Time
}

// Seed records the snapshot a slot's target was seeded from.
type Seed struct {
	Slot string
	// ConsistentPoint is the LSN of the slot's exported snapshot: transactions
	// ending at or before it are in the copy.
	ConsistentPoint source.LSN
	SnapshotDone    bool
	CreatedAt       time.Time
	DoneAt          time.Time // zero until SnapshotDone
}

// SeedStore is the capability to keep snapshot (seed) state on the target, next
// to the data, so a restarted migration knows what is already copied.
type SeedStore interface {
	// Seed returns the slot's seed record; found is false when there is none.
	Seed(ctx context.Context, slot string) (seed Seed, found bool, err error)
	// StartSeed records a new snapshot at consistentPoint, not done, replacing
	// any previous record and forgetting the slot's table states.
	StartSeed(ctx context.Context, slot string, consistentPoint source.LSN) error
	// MarkSeeded marks the snapshot done and, in the same target transaction,
	// moves the slot's progress to consistentPoint (never backwards).
	MarkSeeded(ctx context.Context, slot string, consistentPoint source.LSN) error
	// TableStates lists the slot's table states, ordered by schema and name.
	TableStates(ctx context.Context, slot string) ([]TableState, error)
	// SetTableState inserts or replaces one table's state.
	SetTableState(ctx context.Context, slot string, st TableState) error
	// Teardown removes everything pgrelay recorded for slot on the target, and
	// pgrelay's metadata schema itself when no other slot uses it.
	Teardown(ctx context.Context, slot string) error
}

// SequenceSetter is the capability to give the target the sequences of the
// replicated tables' serial and identity columns, with the source's values:
// the last step of a migration, since pgoutput carries no sequence changes.
type SequenceSetter interface {
	SetSequences(ctx context.Context, seqs []source.Sequence) error
}

// Package sink defines what pgrelay applies changes to: a small core interface
// every target implements, plus capabilities found by type assertion, the way
// database/sql/driver does it. Sinks see tables and changes, never pgoutput
// bytes. One package per target kind: sink/postgres, sink/mysql; sink/sinktest
// is the suite every sink passes.
//
// # Capabilities
//
// Every capability a target may have is declared here, once. The required ones
// make up Target: the relay (apply/relay) runs only on a sink that has them
// all. The others are optional; without one, pgrelay does what the table says.
// Each sink states `var _ sink.X = (*Sink)(nil)` for every capability it
// implements, so that a renamed method is a compile error, not a feature
// silently switched off.
//
//	capability           required  what pgrelay does without it
//	-------------------  --------  ------------------------------------------------
//	Sink, Tx             yes       (apply: tables, transactions, the position)
//	SeedStore            yes       (the copy's state, so a restart resumes it)
//	BulkLoader           yes       (the snapshot copy's load, COPY text rows)
//	MetadataReader       yes       (status, seed decisions: position, known tables)
//	SlotLocker           yes       (one pgrelay per slot and target)
//	Teardowner           yes       (teardown; a new copy rolls back old prepared txns)
//	TableInspector       yes       (a fresh copy refuses tables holding foreign rows)
//	Preflighter          no        no check before the source is set up: a missing
//	                               privilege or a read-only target shows at the
//	                               first write, after the publication was made;
//	                               a read-only target's refusal is not explained
//	Preconnecter         no        connections open on first use, one after another
//	TablesEnsurer        no        the copy creates its tables one by one
//	Cleaner              one of    the copy cannot empty a table before loading it,
//	TablesCleaner        these     and refuses
//	StatesSetter         no        table states are set one by one
//	BinaryBulkLoader     no        every table is copied in COPY text format
//	BinaryChecker        no        TakesBinary is asked table by table
//	WholeLoader          no        a table loaded in one piece loads like any other
//	KeyDeferrer          no        tables load with their primary key in place
//	IndexBuilder         no        a table with secondary indexes cannot be copied
//	AsyncCommitter       no        each group commit waits for its outcome
//	TwoPhase             no        prepared transactions apply at COMMIT PREPARED
//	PrepareChecker       no        a TwoPhase sink is taken to be able to prepare
//	PreparedBeginner     no        a prepared transaction begins with Begin
//	PreparedCommits      no        a crash between COMMIT PREPARED and its position
//	                               leaves apply unable to tell: it stops
//	PreparedFills        no        a column a prepared transaction added keeps what
//	                               the target put in older rows
//	DDLCommits           no        DDL is taken to be transactional
//	ApartEnsurer         no        DDL always joins the open transaction
//	BehindReporter       no        a table's definition is brought up to date only
//	                               when the catalog sees it change
//	RelationLocator      no        a table whose name another took waits under a
//	                               temporary name for its own Relation message
//	CreatedTableIndexer  no        tables created from the stream get no secondary
//	                               indexes
//	JoinedTableCopier    no        a table joining a publication that lists its
//	                               tables is created from the stream, without the
//	                               rows it had
//	SequenceSetter       no        migrate leaves the target's sequences as they are
//	SchemaCarrier        no        no schema object is made on the target: migrate
//	                               lists each as left out (schema.go)
//	CutoverRecorder      no        status has no migration's report to go by: the
//	                               target is never called ready to switch to
//	SequenceChecker      no        status does not compare the sequences with the
//	                               source's, and says so
//	StatsReporter        no        /metrics shows no target counters
//	PreparedLister       no        prepared.waiting is never sent: a transaction
//	                               held prepared on the target goes unreported
//	Verifier             no        verify cannot compare the target (sink/verify.go)
//	VerifyChecksums      no        verify reads and hashes the rows instead of
//	                               checksumming them on the server
//
// # Errors
//
// A sink classifies its driver's errors itself (errors.As on the driver's
// error type) and marks them with the classes below, so that apply and the
// relay decide with errors.Is alone: ErrRetryable (a new session may
// succeed), ErrValueRejected (a value refused as invalid or failing a check),
// ErrChangeRefused (any refusal of a change's row: a value, a constraint),
// ErrReadOnly (the target takes no writes: a *ReadOnlyError, retried until an
// operator fixes it). The error of one change is a
// *ChangeError naming the table, the row's key and the source LSN.
package sink

import (
	"context"
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

// Target is every required capability: what the relay needs of a sink to
// copy, stream, report status and tear down.
type Target interface {
	Sink
	SeedStore
	BulkLoader
	MetadataReader
	SlotLocker
	Teardowner
	TableInspector
}

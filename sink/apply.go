package sink

import (
	"context"
	"log/slog"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// The optional capabilities apply and the relay use while changes stream.

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

// SequenceSetter is the capability to give the target the sequences of the
// replicated tables' serial and identity columns, with the source's values:
// the last step of a migration, since pgoutput carries no sequence changes.
type SequenceSetter interface {
	SetSequences(ctx context.Context, seqs []source.Sequence) error
}

// PrepareChecker is the capability of a TwoPhase sink to tell whether its
// target can hold prepared transactions now (a PostgreSQL target with
// max_prepared_transactions = 0 cannot), as found by Setup.
type PrepareChecker interface {
	CanPrepare() bool
}

// ApartEnsurer is the capability to bring a table to a new definition in a
// target transaction of its own while another is open: a prepared
// transaction's DDL applied in it would hold the table until COMMIT PREPARED,
// and a later change committed before it on the source would wait for ever.
// It reports whether it did; when not, the DDL joins the open transaction as
// with EnsureTable.
type ApartEnsurer interface {
	EnsureTableApart(ctx context.Context, t, prev *schema.Table) (bool, error)
}

// BehindReporter is the capability of a sink that can leave a table's target
// definition behind the catalog's for a while (a prepared transaction held the
// table): Behind reports it, and the table's next Relation message then goes
// to EnsureTable even when the catalog sees no change.
type BehindReporter interface {
	Behind(relationID uint32) bool
}

// RelationLocator is the capability to follow a source table to its target
// table by OID: when a Relation message of another relation claims a target
// table's name, the sink asks namer where the table's own relation is now and
// renames it there, reporting what it renames on log.
type RelationLocator interface {
	LocateRelations(namer schema.RelationNamer, log *slog.Logger)
}

// CreatedTableIndexer is the capability to build, with each table EnsureTable
// creates, the table's secondary indexes as r reads them from the source: for
// tables that appear after the snapshot copy, which builds its own tables'
// indexes after their data. nil turns it off.
type CreatedTableIndexer interface {
	IndexTablesItCreates(r schema.IndexReader)
}

// JoinedTableCopier is the capability to refuse, with a retryable error, to
// create from the stream a table the target has never had: under a publication
// that lists its tables, such a table was added to it with rows that only a
// copy brings, and the next session copies it. Off during the snapshot copy,
// which creates the tables it copies.
type JoinedTableCopier interface {
	CopyJoinedTables(on bool)
}

// Preconnecter is the capability to open, in the background, the connections
// a session's later steps would each open in turn: the metadata connection,
// the lock's, and up to bulk connections for bulk loads.
type Preconnecter interface {
	Preconnect(ctx context.Context, bulk int)
}

// Stats counts what a sink sent to its target since it was opened.
type Stats struct {
	Batches    int64 // round trips of queued statements
	Statements int64 // statements sent in them
	CopyRuns   int64 // insert runs sent as bulk loads
	CopyRows   int64 // rows sent by those loads
	Folded     int64 // updates folded into a later update of the same row
	// SetStatements counts the set statements sent (one UPDATE or DELETE
	// for many rows), SetRows the rows they changed.
	SetStatements int64
	SetRows       int64
	// UnfitNulled counts values the target cannot hold that were stored as
	// NULL instead, each one logged (a MySQL target with
	// PGRELAY_MYSQL_UNFIT=null).
	UnfitNulled int64
}

// StatsReporter is the capability to count what the sink sent, for /metrics.
// Stats is safe to call from any goroutine.
type StatsReporter interface {
	Stats() Stats
}

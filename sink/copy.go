package sink

import (
	"context"
	"io"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// The capabilities of the snapshot copy (apply/snapshot): load tables in bulk
// and keep the copy's state next to the data.

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
}

// TablesEnsurer is the capability to create many tables at once (EnsureTable
// for each, in order where it matters; PostgreSQL creates them in parallel).
type TablesEnsurer interface {
	EnsureTables(ctx context.Context, tables []*schema.Table) error
}

// Cleaner is the capability to empty a target table before its copy.
type Cleaner interface {
	Empty(ctx context.Context, t *schema.Table) error
}

// TablesCleaner is Cleaner for many tables at once (the PostgreSQL sink
// looks into a hundred per round trip).
type TablesCleaner interface {
	EmptyTables(ctx context.Context, tables []*schema.Table) error
}

// StatesSetter is the capability to set many tables' snapshot states at once.
type StatesSetter interface {
	SetTableStates(ctx context.Context, slot string, states []TableState) error
}

// BinaryChecker is BinaryBulkLoader's TakesBinary for many tables at once.
type BinaryChecker interface {
	TakesBinaryOf(ctx context.Context, tables []*schema.Table, sourceMajor int) (ok []bool, why []string, err error)
}

// IndexBuilder is the capability to build secondary indexes from the source's
// index definitions (pg_get_indexdef), after the data is in.
type IndexBuilder interface {
	CreateIndexes(ctx context.Context, t *schema.Table, defs []string) error
}

// KeyDeferrer is the capability to load a table without its primary key and
// add the key afterwards (one sorted build instead of an insert per row).
type KeyDeferrer interface {
	DropPrimaryKey(ctx context.Context, t *schema.Table) (bool, error)
	AddPrimaryKey(ctx context.Context, t *schema.Table) error
}

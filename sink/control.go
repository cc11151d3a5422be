package sink

import (
	"context"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// The capabilities the relay's control plane uses around apply: reading what
// pgrelay keeps on the target, one instance per slot, teardown, and the checks
// made before anything is created.

// MetadataReader is the capability to read what pgrelay keeps on the target
// without changing it: status reports it, the seed decides from it.
type MetadataReader interface {
	// HasMetadata reports whether pgrelay's metadata exists on the target:
	// false on a target pgrelay never wrote to, and nothing is created.
	HasMetadata(ctx context.Context) (bool, error)
	// Progress reads the stored position of slot; the zero LSN when none is
	// stored. The metadata must exist.
	Progress(ctx context.Context, slot string) (Progress, error)
	// KnownRelations lists the source tables the target holds a definition
	// of (tables pgrelay created, by the copy or from the stream), of every
	// slot. The metadata must exist.
	KnownRelations(ctx context.Context) ([]KnownRelation, error)
	// MetadataSchema is the schema (database) pgrelay keeps its metadata in:
	// no source table of a schema of that name can be replicated.
	MetadataSchema() string
}

// KnownRelation is a source table the target holds a definition of.
type KnownRelation struct {
	// Slot is the slot it was created for; "" when unknown (stored before
	// pgrelay kept it), which counts for every slot.
	Slot         string
	Schema, Name string // the source table's schema and name as last known
	// RelationID is the source table's OID; 0 when unknown.
	RelationID uint32
}

// SlotLocker is the capability to make one pgrelay the only one applying a
// slot to the target: a second instance waits and takes over when the first
// one dies.
type SlotLocker interface {
	// LockSlot takes slot's lock, calling waiting once first when another
	// holder makes it wait. The lock is held until release is called, the
	// sink is closed or its session dies.
	LockSlot(ctx context.Context, slot string, waiting func()) (release func(context.Context) error, err error)
}

// Teardowner is the capability to remove what pgrelay keeps on the target for
// a slot.
type Teardowner interface {
	// RollbackSlotPrepared rolls back the prepared transactions pgrelay made
	// on the target for slot (OwnGID): their source transactions will never
	// be finished through that slot again. It returns the GIDs it rolled
	// back, those before the failure too when it fails.
	RollbackSlotPrepared(ctx context.Context, slot string) ([]string, error)
	// Teardown removes everything pgrelay recorded for slot on the target, and
	// pgrelay's metadata schema itself when no other slot uses it.
	Teardown(ctx context.Context, slot string) error
}

// PreparedLister is the capability to list the transactions pgrelay holds
// prepared on the target for a slot, with how long each has been prepared:
// the relay tells an operator of one held long (prepared.waiting,
// PGRELAY_PREPARED_ALERT). The relay asks it on a sink of its own, opened
// ForInspection, never on the one that applies.
type PreparedLister interface {
	// HeldPrepared lists slot's prepared transactions on the target
	// (OwnGID), oldest first.
	HeldPrepared(ctx context.Context, slot string) ([]HeldPrepared, error)
}

// HeldPrepared is one transaction pgrelay holds prepared on the target.
type HeldPrepared struct {
	GID string
	// Age is how long it has been prepared, by the target's clock.
	Age time.Duration
	// LSN is the end of its PREPARE in the source WAL when the target can
	// tell, 0 when not (PostgreSQL's record of it is inside the prepared
	// transaction itself, invisible until it commits).
	LSN source.LSN
}

// TableInspector is the capability to tell what the target holds under the
// names of the tables a fresh copy loads (and empties first).
type TableInspector interface {
	// ForeignTables returns, of tables, those that exist on the target but
	// that pgrelay did not create (its metadata knows no relation of that
	// name), ordered by quoted name.
	ForeignTables(ctx context.Context, tables []schema.QualifiedName) ([]ForeignTable, error)
	// TableColumns returns the columns of those of tables that exist.
	TableColumns(ctx context.Context, tables []schema.QualifiedName) (map[schema.QualifiedName][]string, error)
}

// ForeignTable is a target table pgrelay did not create.
type ForeignTable struct {
	Name    schema.QualifiedName
	Quoted  string // the name as the target quotes it, for messages
	HasRows bool   // rows of its own, which the copy would replace
}

// Preflighter is the capability to check, before pgrelay creates anything on
// the source, that the target will take what pgrelay writes there. The relay
// also asks it, on a new sink, what makes a target read-only when a write was
// refused (*ReadOnlyError without its Database).
type Preflighter interface {
	// Preflight returns the problems of writing tables into schemas (the
	// published tables' schemas) and pgrelay's metadata. An error means the
	// check itself could not be made.
	Preflight(ctx context.Context, schemas []string) ([]Problem, error)
}

// ProblemKind tells what a Problem is about.
type ProblemKind int

const (
	// ProblemCreateSchema: the role may not create a schema pgrelay needs.
	ProblemCreateSchema ProblemKind = iota + 1
	// ProblemCreateTables: the role may not create tables in an existing
	// schema pgrelay writes into.
	ProblemCreateTables
	// ProblemReadOnly: the target takes no writes: Object is the database,
	// Fix what makes it read-only and how to undo it. The relay retries
	// until it is writable (*ReadOnlyError).
	ProblemReadOnly
	// ProblemSetting: a server setting breaks a guarantee (durability,
	// exactly once); the relay warns and goes on.
	ProblemSetting
)

// Problem is one thing that keeps the target from taking what pgrelay writes,
// as data: the relay words it.
type Problem struct {
	Kind ProblemKind
	// Object is what it is about as the target quotes it: a schema, a
	// database, a setting.
	Object string
	// Fix is what fixes it: a statement to run, a setting to change.
	Fix string
}

package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// Defaults of Config.
const (
	DefaultGroupMaxRows         = 10000
	DefaultGroupMaxDelay        = 100 * time.Millisecond
	DefaultMemoryLimit          = 32 << 20
	DefaultIdleProgressInterval = 10 * time.Second
)

// Config configures an Applier. Validate fills in the defaults.
type Config struct {
	// Slot is the replication slot: the key of the stored progress and part of
	// every target GID.
	Slot string
	// GroupMaxRows closes a group (one target transaction holding several small
	// source transactions) at the end of the first source transaction that
	// brings it to this many changes.
	GroupMaxRows int
	// GroupMaxDelay bounds how long a group stays open: it is committed at the
	// end of the first source transaction after it, and by Run when no frame
	// arrives for this long.
	GroupMaxDelay time.Duration
	// MemoryLimit bounds the bytes of buffered transactions (streamed ones, and
	// prepared ones the target cannot prepare) held in memory; past it the
	// largest are spilled to SpillDir.
	MemoryLimit int64
	// SpillDir is where spill files go, in a directory per process
	// (default: os.TempDir()/pgrelay-spill).
	SpillDir string
	// TwoPhase applies prepared transactions as prepared on the target, when the
	// sink has the sink.TwoPhase capability. Otherwise a prepared transaction is
	// held until its Commit Prepared and applied then as a normal one.
	TwoPhase bool
	// IdleProgressInterval is how often, at most, an idle applier stores the
	// source's WAL position as progress when no transaction is in hand, so that
	// the slot can advance over WAL that carries nothing for us.
	IdleProgressInterval time.Duration
	// OnLogicalMessage, when set, receives the messages written with
	// pg_logical_emit_message, in stream order. A transactional one is delivered
	// once its transaction is durably committed on the target (lsn is then that
	// transaction's end LSN), at most once: a crash right after the commit loses
	// it. A non-transactional one is delivered when it arrives, after every
	// transaction received before it has been committed (lsn is the message's
	// own LSN). m is only valid during the call. Returning an error wrapping
	// ErrStop stops apply cleanly: Handle and Run return it and nothing is lost.
	OnLogicalMessage func(ctx context.Context, m *source.LogicalMessage, lsn source.LSN) error
	// TableSyncLSN, when set, gives for a table the LSN its snapshot copy was
	// taken at when that differs from the slot's (a table whose interrupted copy
	// was redone under a later snapshot, or one added to the publication); 0
	// otherwise. Changes to such a table made by transactions that committed
	// (or were prepared) at or after that LSN are not in its copy and are
	// applied.
	TableSyncLSN func(t *schema.Table) source.LSN
	// TableSyncSnapshot, when set, gives the transaction ids of that snapshot.
	// A transaction before the table's sync LSN is in the copy when the
	// snapshot sees its transaction id, and its changes are then skipped;
	// otherwise they are applied: a transaction prepared before the LSN and
	// committed after it, or one whose commit record came just before an LSN
	// read after a snapshot taken without a slot. Without it every change
	// before the LSN is skipped, which is right for a slot's exported snapshot
	// except for prepared transactions.
	TableSyncSnapshot func(t *schema.Table) (source.TxidSnapshot, bool)
	// TxnAborted, when set, tells whether source transaction xid was rolled
	// back (ROLLBACK PREPARED included). A prepared transaction rolled back
	// before the decoder reached it may arrive with part of its body only
	// (PostgreSQL 18 sends changes after a savepoint without those before it);
	// when applying such a body fails and the transaction is aborted, it is
	// left out instead of stopping apply.
	TxnAborted func(ctx context.Context, xid uint32) (bool, error)
	// PublishedViaRoot, when set, tells whether source relation relid is a
	// partition whose changes the publication sends as its root's
	// (publish_via_partition_root). pgoutput sends such a partition's
	// Relation message too, right after its root's, but never a change with
	// its id: it is kept in the catalog only, and no target table is made
	// for it.
	PublishedViaRoot func(ctx context.Context, relid uint32) (bool, error)
}

// Validate checks the configuration and fills in defaults.
func (c *Config) Validate() error {
	if err := source.ValidateSlotName(c.Slot); err != nil {
		return fmt.Errorf("apply: config: %w", err)
	}
	if c.GroupMaxRows < 0 {
		return fmt.Errorf("apply: config: GroupMaxRows %d is negative", c.GroupMaxRows)
	}
	if c.GroupMaxRows == 0 {
		c.GroupMaxRows = DefaultGroupMaxRows
	}
	if c.GroupMaxDelay < 0 {
		return fmt.Errorf("apply: config: GroupMaxDelay %s is negative", c.GroupMaxDelay)
	}
	if c.GroupMaxDelay == 0 {
		c.GroupMaxDelay = DefaultGroupMaxDelay
	}
	if c.MemoryLimit < 0 {
		return fmt.Errorf("apply: config: MemoryLimit %d is negative", c.MemoryLimit)
	}
	if c.MemoryLimit == 0 {
		c.MemoryLimit = DefaultMemoryLimit
	}
	if c.SpillDir == "" {
		c.SpillDir = DefaultSpillDir()
	}
	if c.IdleProgressInterval < 0 {
		return errors.New("apply: config: IdleProgressInterval is negative")
	}
	if c.IdleProgressInterval == 0 {
		c.IdleProgressInterval = DefaultIdleProgressInterval
	}
	return nil
}

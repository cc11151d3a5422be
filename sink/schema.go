package sink

import (
	"context"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/source"
)

// ObjectState is what became of a schema object on the target.
type ObjectState string

const (
	// ObjectCreated: created by this run.
	ObjectCreated ObjectState = "created"
	// ObjectPresent: the target had it already.
	ObjectPresent ObjectState = "present"
	// ObjectLeftOut: not carried; the result's Reason says why.
	ObjectLeftOut ObjectState = "left out"
	// ObjectDeferred: not created yet; a later phase tries again (it may
	// need what the copy brings: a function taking a table's row type).
	ObjectDeferred ObjectState = "deferred"
	// ObjectNotCarried: a kind of object, or an object as the source has it,
	// that this kind of target cannot hold (a view, a function or a trigger
	// on MySQL, whose definitions are PostgreSQL's); Reason says why. It is
	// listed for the user to port, and does not keep the target from being
	// ready to switch to, since no run of pgrelay could make it.
	ObjectNotCarried ObjectState = "not carried"
)

// ObjectResult is what became of one schema object.
type ObjectResult struct {
	Kind  schema.ObjectKind `json:"kind"`
	Name  string            `json:"name"`
	State ObjectState       `json:"state"`
	// Reason says why an object was left out, deferred or not carried, and
	// what to know of one created otherwise than on the source (a trigger
	// created disabled, and how to enable it at the switch; a foreign key
	// MySQL checks at each row where the source checks it at commit).
	Reason string `json:"reason,omitempty"`
	// Incomplete marks an object created otherwise than on the source, which
	// needs a hand at the switch (Reason says what).
	Incomplete bool `json:"incomplete,omitempty"`
}

// Missing tells an object the target does not have but could: left out,
// or deferred and not made since (not an ObjectNotCarried one).
func (r ObjectResult) Missing() bool {
	return r.State == ObjectLeftOut || r.State == ObjectDeferred
}

// SchemaCarrier is the capability to create on the target the schema
// objects that go with the replicated tables (schema.ReadObjects): what the
// application needs besides the tables' rows, keys and indexes.
//
// A PostgreSQL target creates each object from its definition. A target of
// another kind carries what maps onto it and reports the rest, saying why:
// as left out what a later run could make, as not carried (ObjectNotCarried)
// what it can never hold. A MySQL target (sink/mysql) creates at the end of
// a migration the foreign keys whose tables it both replicates, from
// Object.ForeignKey, where MySQL can hold them as mapped (one whose columns
// map to types MySQL cannot key, or to different ones, or with a SET DEFAULT
// action, is not carried); it reports sequences that became a column's
// AUTO_INCREMENT (SequenceSetter) present, and views, materialized views,
// functions, triggers, types, checks and expression defaults not carried.
type SchemaCarrier interface {
	// CarryObjects creates the objects of objs the target lacks, in their
	// order, and reports what became of each, one result per object, in
	// objs' order. objs are those of phase and of earlier phases (a later
	// phase retries what an earlier one deferred). An object with LeftOut
	// set is reported left out (or not carried, when the target cannot hold
	// its kind anyway). PreData comes before the snapshot copy, so
	// an object that fails then may be deferred; PostData comes after the
	// catch-up, which it may not get in the way of, and ends by filling the
	// materialized views (Object.Refresh). The error is for a target that
	// cannot be used at all; an object it refuses is a result.
	CarryObjects(ctx context.Context, phase schema.Phase, objs []*schema.Object) ([]ObjectResult, error)
}

// CutoverReport is what a migration that caught up leaves on the target for
// `pgrelay status` to tell whether the target is ready to switch to.
type CutoverReport struct {
	Slot string `json:"slot"`
	// Schema is the PGRELAY_SCHEMA the migration ran with.
	Schema string `json:"schema"`
	// CaughtUpLSN is the source position the migration caught up to: the
	// target held every transaction committed before it.
	CaughtUpLSN source.LSN `json:"caught_up_lsn"`
	FinishedAt  time.Time  `json:"finished_at"`
	// Tables and Rows are the published tables and the rows the snapshot
	// copy copied into them.
	Tables int   `json:"tables"`
	Rows   int64 `json:"rows"`
	// Sequences is how many sequences were set to the source's values.
	Sequences int `json:"sequences"`
	// Objects are the schema objects and what became of them; sequences
	// that could not be set are among them (kind sequence, left out).
	Objects []ObjectResult `json:"objects"`
}

// CutoverRecorder is the capability to keep the last CutoverReport of a
// slot on the target.
type CutoverRecorder interface {
	RecordCutover(ctx context.Context, r CutoverReport) error
	// Cutover returns the slot's last report; found is false when there is
	// none (no migration caught up since the target's metadata knows it).
	Cutover(ctx context.Context, slot string) (r CutoverReport, found bool, err error)
}

// SequenceChecker is the capability to compare the target's sequences with
// the source's, before an application switches over.
type SequenceChecker interface {
	// SequencesBehind names the sequences of seqs (with the source's values)
	// that would hand out on the target a value the source has handed out
	// already, or that the target lacks.
	SequencesBehind(ctx context.Context, seqs []source.Sequence) ([]string, error)
}

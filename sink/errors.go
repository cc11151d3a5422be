package sink

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pgrelay/pgrelay/source"
)

// The error classes. A sink decides them from its driver's errors (errors.As
// on the driver's type, never the message text) and marks its errors so that
// errors.Is(err, class) holds while the message and the original chain stay
// intact.

// ErrRetryable marks errors after which the whole target transaction may be
// retried: lost connections before a side effect could have happened,
// serialization failures, deadlocks. Sinks wrap such errors so that
// errors.Is(err, ErrRetryable) holds; every other error is fatal for apply.
var ErrRetryable = errors.New("retryable")

// Retryable wraps err so that errors.Is(err, ErrRetryable) holds while the
// message and the original chain stay intact.
func Retryable(err error) error { return mark(err, ErrRetryable) }

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

// ErrChangeRefused marks the error of a change (or a copied row) the target
// refused: a value it cannot hold or a constraint the row breaks. It does not
// go away by itself (unless it is also ErrRetryable, or ErrValueRejected after
// a type change): a person must make the target take it. A ChangeError with
// Refused set satisfies errors.Is(err, ErrChangeRefused).
var ErrChangeRefused = errors.New("change refused by the target")

// ErrReadOnly marks errors of a target that takes no writes (a standby, a
// database or role set read-only): an operator's fix away, not the data's.
// The relay retries it (replicate until it is fixed, migrate within its
// attempts). A *ReadOnlyError satisfies errors.Is(err, ErrReadOnly).
var ErrReadOnly = errors.New("the target is read-only")

// ReadOnlyError says that the target database takes no writes, and, when
// known, what makes it so.
type ReadOnlyError struct {
	// Database is the target database as the target quotes it; "" when not
	// known (the refusal was seen where it is not).
	Database string
	// Cause is what makes it read-only and how to undo it; "" when not known.
	Cause string
	// Err is the target's refusal of a write; nil when it was found read-only
	// before writing (sink.Preflighter).
	Err error
}

func (e *ReadOnlyError) Error() string {
	db := "the target database"
	if e.Database != "" {
		db = "target database " + e.Database
	}
	cause := e.Cause
	if cause == "" {
		cause = "its sessions are read-only: make it writable, or point PGRELAY_TARGET_URL at the primary"
	}
	msg := db + " takes no writes: " + cause
	if e.Err != nil {
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

func (e *ReadOnlyError) Unwrap() error { return e.Err }

// Is makes a *ReadOnlyError satisfy errors.Is(err, ErrReadOnly).
func (e *ReadOnlyError) Is(target error) bool { return target == ErrReadOnly }

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

// ErrRowNotFound is wrapped by the error of an update or delete whose row is not
// on the target: the target has diverged from the source.
var ErrRowNotFound = errors.New("row not found on the target (the target has diverged from the source: rows changed there, or the publication changed since the copy — a row filter, or a partition attached or detached under publish_via_partition_root; run pgrelay verify, and copy again with PGRELAY_SNAPSHOT=always)")

// ErrNoIdentity is wrapped by the error of an update or delete on a table without
// a replica identity key.
var ErrNoIdentity = errors.New("table has no replica identity")

// OpChangeSchema is ChangeError.Op of a target table's schema change (CREATE or
// ALTER TABLE made from a Relation message), which names no source LSN.
const OpChangeSchema = "change schema of"

// ChangeError is the error of one change or queued operation of a sink: what it
// did, to which table, at which source LSN, and what the target said.
type ChangeError struct {
	Sink  string // the sink reporting it, e.g. "sink/postgres": the message's prefix
	Op    string // "insert into", "update", "delete from", "truncate", "copy into", …
	Table string // the target table's name as the target quotes it, e.g. "public"."t"
	LSN   source.LSN
	// LastLSN is set for runs of rows whose failing row is unknown: the
	// error is somewhere in LSN..LastLSN.
	LastLSN source.LSN
	Key     string // identity of the row for updates and deletes, e.g. (id)=(42)
	// Column is the target column whose value the target refused, when it
	// says, as the target quotes it.
	Column string
	Err    error
	// Reason is Err as the target words it when that is not Err's own text
	// (a server message with its code and detail on one line); "" for Err's.
	Reason string
	// Hint, when set, ends the message: what to do about it.
	Hint string
	// Refused says the target refused the change itself (ErrChangeRefused).
	Refused bool
}

func (e *ChangeError) Error() string {
	var b strings.Builder
	if e.Sink != "" {
		b.WriteString(e.Sink)
		b.WriteString(": ")
	}
	b.WriteString(e.Op)
	if e.Table != "" {
		b.WriteByte(' ')
		b.WriteString(e.Table)
	}
	if e.Key != "" {
		b.WriteString(" key ")
		b.WriteString(e.Key)
	}
	if e.LSN != 0 || e.LastLSN != 0 {
		fmt.Fprintf(&b, " at source LSN %s", e.LSN)
		if e.LastLSN != 0 && e.LastLSN != e.LSN {
			fmt.Fprintf(&b, "..%s", e.LastLSN)
		}
	}
	if e.Column != "" {
		b.WriteString(" column ")
		b.WriteString(e.Column)
	}
	b.WriteString(": ")
	switch {
	case e.Reason != "":
		b.WriteString(e.Reason)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *ChangeError) Unwrap() error { return e.Err }

// Is makes a refused change's error satisfy errors.Is(err, ErrChangeRefused).
func (e *ChangeError) Is(target error) bool { return target == ErrChangeRefused && e.Refused }

// EarlierChangeError wraps the error of a change queued before the operation
// that reported it (a sink that pipelines learns that a row failed with its
// next round trip, which may be a table's DDL): the error names its own change,
// and the operation at hand is not at fault.
type EarlierChangeError struct{ Err error }

func (e *EarlierChangeError) Error() string { return e.Err.Error() }
func (e *EarlierChangeError) Unwrap() error { return e.Err }

package sink

import (
	"context"

	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/source"
)

// Verifier is the capability to be compared with the source by `pgrelay
// verify` (package apply/verify): it opens a read-only session that reads
// target tables with their values in canonical form (package schema/canon),
// so one comparison serves every kind of target. Without it, verify cannot
// compare the target.
type Verifier interface {
	// OpenVerify opens a session of its own on the target, reading what
	// pgrelay recorded there for slot. It changes nothing on the target.
	OpenVerify(ctx context.Context, slot string) (VerifySession, error)
}

// VerifyReader reads tables for verify; the source's reader is one too.
type VerifyReader interface {
	// Describe reads a table's columns, key and indexes; nil (and no error)
	// when there is no such table.
	Describe(ctx context.Context, name VerifyName) (*VerifyShape, error)
	// Rows calls row for every row of t in r (or, when keys is not nil, for
	// the rows with those keys only; keys may be empty), in key order: key
	// is the row's values of t.Key, values those of t.Columns, each in the
	// canonical form of its column's Canon type (NULL: not Valid). Both
	// slices are valid until row returns. A keyless t (no Key) is read whole
	// in any order. position is, on a target, the source position it had
	// applied in the snapshot the rows were read from; on the source, its
	// WAL position read after the rows.
	Rows(ctx context.Context, t *VerifyTable, r VerifyRange, keys []VerifyKey, row func(key []string, values []canon.Value) error) (position source.LSN, err error)
}

// VerifyChecksums is the optional capability of a VerifyReader to count and
// checksum rows on its server (verify's fast path), giving exactly what
// canon.Checksum gives over the rows Rows reads: comparable with a side that
// reads rows.
type VerifyChecksums interface {
	// CanChecksum reports whether the server can compute the canonical form
	// of each of t's columns (when not, verify reads the rows).
	CanChecksum(t *VerifyTable) bool
	// Checksum counts and checksums the rows of t in r; position as for Rows.
	Checksum(ctx context.Context, t *VerifyTable, r VerifyRange) (VerifySummary, error)
}

// VerifySession is a target's VerifyReader with what pgrelay recorded there.
type VerifySession interface {
	VerifyReader
	// Applied is the source position the target has applied for the slot
	// (0 when none).
	Applied(ctx context.Context) (source.LSN, error)
	// HasMetadata reports whether pgrelay's metadata exists on the target.
	HasMetadata() bool
	// CopyInProgress reports whether the slot's snapshot copy started and
	// has not finished: the target then holds only part of the rows.
	CopyInProgress(ctx context.Context) (bool, error)
	// Locate names the target table of source table src (relationOID its
	// OID, 0 when unknown) as apply names it; failing that, for a table
	// renamed on the source while pgrelay was stopped, the target table
	// pgrelay recorded for that OID. found is false when neither exists.
	Locate(ctx context.Context, src VerifyName, relationOID uint32) (target VerifyName, found bool, err error)
	Close(ctx context.Context) error
}

// VerifyName is a schema-qualified table name, unquoted (for a MySQL
// target, Schema is the database).
type VerifyName struct{ Schema, Name string }

func (n VerifyName) String() string { return n.Schema + "." + n.Name }

// VerifyColumn is one column of a table as one side describes it.
type VerifyColumn struct {
	Name string
	// Type is the side's own spelling of the column's type, for messages.
	Type string
	// TypeOID is the type's OID on a PostgreSQL side, 0 elsewhere.
	TypeOID uint32
	// Collation is the effective collation of a collatable column, as
	// "provider locale" ("libc C" for byte order, which is also what a
	// binary collation orders by), "" otherwise. Key ranges compare in byte
	// order when the two sides' collations differ.
	Collation string
	// TextOrder marks a column the side orders as the bytes of its canonical
	// text rather than as the source type orders (a MySQL VARCHAR holding an
	// enum or inet): key ranges over it then compare in that order on both
	// sides.
	TextOrder bool
	// Canon is how the column's values compare. Describe sets it when the
	// column's own type tells; KindUnknown (a MySQL VARCHAR may hold an
	// enum, inet or interval) takes the source column's. Describe sets
	// DoubleNumbers (with the Kind or without) where the side keeps JSON
	// numbers as doubles (MySQL 8's JSON); both sides then compare the
	// column's numbers so.
	Canon canon.Type
}

// VerifyShape is a table as one side's catalog describes it.
type VerifyShape struct {
	Name VerifyName
	// Identity is the replica identity (d, i, f, n); a target reports 'd'.
	Identity byte
	Columns  []VerifyColumn
	// Key are the replica identity (a target: primary) key columns in index
	// order; empty when the table has none.
	Key []string
	// Indexes are the columns of each valid index, in index order (an
	// expression column is "").
	Indexes [][]string
	// EstimatedRows is the planner's estimate (0 when unknown).
	EstimatedRows int64
	// Partitioned marks a partitioned table, whose rows are its partitions'.
	Partitioned bool
}

// Column returns the column called name, nil when there is none.
func (s *VerifyShape) Column(name string) *VerifyColumn {
	for i := range s.Columns {
		if s.Columns[i].Name == name {
			return &s.Columns[i]
		}
	}
	return nil
}

// VerifyTable is one side's half of a table comparison: what to read, in
// the order both sides agree on.
type VerifyTable struct {
	Name VerifyName
	// Columns are read in this order (the same names on both sides).
	Columns []VerifyColumn
	// Key are the key columns in key order; empty: the table is read whole.
	Key []VerifyColumn
	// ByteOrder marks key columns whose ranges compare in byte order (of a
	// collatable column's text, or of the canonical text of a TextOrder
	// column) because the sides would order them differently otherwise.
	ByteOrder []bool
	// Partitioned reads the table with its partitions; otherwise the table
	// alone (without inheritance children, published as tables of their
	// own).
	Partitioned bool
	// Filter is a PostgreSQL source's row filter of the publication (SQL),
	// "" for all rows; a target's is always "".
	Filter string
}

// VerifyKey is one row's key: the canonical text of each key column.
type VerifyKey []string

// VerifyRange is the key range (From, To]: the rows whose key is greater
// than From and at most To, in the comparison's key order. A nil From starts
// at the first row, a nil To ends after the last: {nil, nil} is the whole
// table.
type VerifyRange struct {
	From, To VerifyKey
}

// Whole reports whether r covers every row.
func (r VerifyRange) Whole() bool { return r.From == nil && r.To == nil }

// VerifySummary is one side's count and checksum (canon.Checksum's text) of a
// range.
type VerifySummary struct {
	Rows     int64
	Checksum string
	// Position is as for VerifyReader.Rows.
	Position source.LSN
}

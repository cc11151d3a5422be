package verify

import (
	"context"
	"strings"

	"github.com/pgrelay/pgrelay/sink"
)

// Key is one row's key: the canonical text (package schema/canon) of each
// key column, in key order.
type Key = sink.VerifyKey

// joinKey is the key as one map key (canonical text holds no NUL byte: bytea
// is hex, and PostgreSQL text cannot hold one).
func joinKey(k Key) string { return strings.Join(k, "\x00") }

func splitKey(s string) Key { return Key(strings.Split(s, "\x00")) }

// Range is the key range (From, To]: the rows whose key is greater than From
// and at most To, in the comparison's key order. A nil From starts at the first
// row, a nil To ends after the last: a chunk of a keyless table is the whole
// table, {nil, nil}.
type Range = sink.VerifyRange

// Chunk sizes, in rows: a chunk is one query on each server, and a difference
// is reported for the chunk's key range.
const (
	MinChunkRows = 10_000
	MaxChunkRows = 50_000
	// chunksPerTable is how many chunks a large table aims for before the
	// chunk size reaches MaxChunkRows.
	chunksPerTable = 100
)

// ChunkRows is the chunk size for a table of about estimatedRows rows (the
// planner's estimate, pg_class.reltuples): a hundredth of the table, at least
// MinChunkRows and at most MaxChunkRows. Small tables are one or a few
// chunks; a large table's chunks stay small enough to hold a difference to a
// narrow range, and few enough not to spend the time on round trips.
func ChunkRows(estimatedRows int64) int64 {
	return min(max(estimatedRows/chunksPerTable, MinChunkRows), MaxChunkRows)
}

// BoundaryFunc returns the key of the n-th row after after (after nil: from
// the first row) in key order, or nil when fewer than n rows follow.
type BoundaryFunc func(ctx context.Context, after Key, n int64) (Key, error)

// planner splits a table into consecutive chunks of n rows by key range, one
// chunk at a time, as the comparison goes: (nil, k1], (k1, k2], …, (kLast, nil).
// The last range is open, so rows added past the last boundary, on either
// side, are still compared. The ranges cover every key exactly once whatever
// rows come and go while the comparison runs.
type planner struct {
	boundary BoundaryFunc
	rows     int64
	after    Key
	done     bool
}

func newPlanner(boundary BoundaryFunc, rows int64) *planner {
	return &planner{boundary: boundary, rows: max(rows, 1)}
}

// next returns the next chunk; ok is false after the last one.
func (p *planner) next(ctx context.Context) (r Range, ok bool, err error) {
	if p.done {
		return Range{}, false, nil
	}
	to, err := p.boundary(ctx, p.after, p.rows)
	if err != nil {
		return Range{}, false, err
	}
	r = Range{From: p.after, To: to}
	if to == nil {
		p.done = true
	}
	p.after = to
	return r, true, nil
}

package verify

import (
	"context"

	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// readerSide is a Side over a sink.VerifyReader: it checksums on the
// server where the reader can (sink.VerifyChecksums), and otherwise hashes
// the rows it reads.
type readerSide struct {
	r         sink.VerifyReader
	checksums sink.VerifyChecksums // nil when the reader has none
}

func newReaderSide(r sink.VerifyReader) readerSide {
	s := readerSide{r: r}
	s.checksums, _ = r.(sink.VerifyChecksums)
	return s
}

// Describe implements Side.
func (s *readerSide) Describe(ctx context.Context, name TableName) (*Shape, error) {
	return s.r.Describe(ctx, name)
}

// Summarize implements Side.
func (s *readerSide) Summarize(ctx context.Context, t *SideTable, r Range) (Summary, error) {
	if s.checksums != nil && s.checksums.CanChecksum(t) {
		return s.checksums.Checksum(ctx, t, r)
	}
	var c canon.Checksum
	pos, err := s.r.Rows(ctx, t, r, nil, func(_ []string, values []canon.Value) error {
		c.Add(values)
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	return Summary{Rows: c.Rows, Checksum: c.String(), Position: pos}, nil
}

// Rows implements Side.
func (s *readerSide) Rows(ctx context.Context, t *SideTable, r Range, keys []Key) (RowSet, error) {
	set := RowSet{Hashes: map[string]string{}}
	if keys != nil && len(keys) == 0 {
		set.Keys = []string{}
	}
	pos, err := s.r.Rows(ctx, t, r, keys, func(key []string, values []canon.Value) error {
		k := joinKey(key)
		set.Keys = append(set.Keys, k)
		set.Hashes[k] = canon.RowHash(values).String()
		return nil
	})
	if err != nil {
		return RowSet{}, err
	}
	set.Position = pos
	return set, nil
}

// SessionTarget is a Target read through a sink's verify session.
type SessionTarget struct {
	readerSide
	sink.VerifySession
}

var _ Target = (*SessionTarget)(nil)

// NewTarget reads the target through s.
func NewTarget(s sink.VerifySession) *SessionTarget {
	return &SessionTarget{readerSide: newReaderSide(s), VerifySession: s}
}

// Describe implements Side.
func (t *SessionTarget) Describe(ctx context.Context, name TableName) (*Shape, error) {
	return t.readerSide.Describe(ctx, name)
}

// Rows implements Side.
func (t *SessionTarget) Rows(ctx context.Context, st *SideTable, r Range, keys []Key) (RowSet, error) {
	return t.readerSide.Rows(ctx, st, r, keys)
}

// Applied implements Target.
func (t *SessionTarget) Applied(ctx context.Context) (source.LSN, error) {
	return t.VerifySession.Applied(ctx)
}

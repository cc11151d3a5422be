package applytest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// The fake's metadata, copy, lock, teardown and preflight: what the relay
// (apply/relay) needs besides apply, kept in memory like the rest.

var (
	_ sink.SeedStore      = (*Sink)(nil)
	_ sink.BulkLoader     = (*Sink)(nil)
	_ sink.Cleaner        = (*Sink)(nil)
	_ sink.MetadataReader = (*Sink)(nil)
	_ sink.SlotLocker     = (*Sink)(nil)
	_ sink.Teardowner     = (*Sink)(nil)
	_ sink.TableInspector = (*Sink)(nil)
	_ sink.Preflighter    = (*Sink)(nil)
)

// control is the fake's state beyond apply's, guarded by Sink.mu.
type control struct {
	// PreflightProblems is what Preflight reports.
	PreflightProblems []sink.Problem
	// Foreign are the target tables pgrelay did not create, for
	// ForeignTables; ForeignColumns their columns, for TableColumns.
	Foreign        []sink.ForeignTable
	ForeignColumns map[schema.QualifiedName][]string

	hasMeta bool
	seeds   map[string]sink.Seed
	states  map[string][]sink.TableState // by slot, ordered by schema and name
	known   []sink.KnownRelation
	locks   map[string]chan struct{} // held slot locks: closed on release
	copied  map[string]int64         // rows loaded by CopyFrom, by table
}

func newControl() control {
	return control{seeds: map[string]sink.Seed{}, states: map[string][]sink.TableState{},
		locks: map[string]chan struct{}{}, copied: map[string]int64{}}
}

// knowLocked records t as a table pgrelay created.
func (s *Sink) knowLocked(t *schema.Table) {
	for i, k := range s.known {
		if k.Schema == t.Schema && k.Name == t.Name || t.RelationID != 0 && k.RelationID == t.RelationID {
			s.known[i] = sink.KnownRelation{Schema: t.Schema, Name: t.Name, RelationID: t.RelationID}
			return
		}
	}
	s.known = append(s.known, sink.KnownRelation{Schema: t.Schema, Name: t.Name, RelationID: t.RelationID})
}

// Know records a table pgrelay created before, for slot ("" for any).
func (s *Sink) Know(k sink.KnownRelation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hasMeta = true
	s.known = append(s.known, k)
}

// SetSeed stores a seed record as an earlier run left it.
func (s *Sink) SetSeed(seed sink.Seed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hasMeta = true
	s.seeds[seed.Slot] = seed
}

// Copied returns how many rows CopyFrom loaded into table (schema.name).
func (s *Sink) Copied(table string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copied[table]
}

func (s *Sink) Seed(_ context.Context, slot string) (sink.Seed, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked("seed " + slot); err != nil {
		return sink.Seed{}, false, err
	}
	seed, ok := s.seeds[slot]
	return seed, ok, nil
}

func (s *Sink) StartSeed(_ context.Context, slot string, consistentPoint source.LSN) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked("start-seed " + slot + " " + consistentPoint.String()); err != nil {
		return err
	}
	s.seeds[slot] = sink.Seed{Slot: slot, ConsistentPoint: consistentPoint}
	delete(s.states, slot)
	return nil
}

func (s *Sink) MarkSeeded(_ context.Context, slot string, consistentPoint source.LSN) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked("mark-seeded " + slot + " " + consistentPoint.String()); err != nil {
		return err
	}
	seed, ok := s.seeds[slot]
	if !ok || seed.ConsistentPoint != consistentPoint {
		return fmt.Errorf("applytest: no seed started at %s", consistentPoint)
	}
	seed.SnapshotDone = true
	s.seeds[slot] = seed
	if consistentPoint > s.progress.LSN {
		s.progress = sink.Progress{Slot: slot, LSN: consistentPoint}
	}
	return nil
}

func (s *Sink) TableStates(_ context.Context, slot string) ([]sink.TableState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.states[slot]), nil
}

func (s *Sink) SetTableState(_ context.Context, slot string, st sink.TableState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked(fmt.Sprintf("table-state %s.%s %s", st.Schema, st.Name, st.State)); err != nil {
		return err
	}
	states := s.states[slot]
	i, found := slices.BinarySearchFunc(states, st, func(a, b sink.TableState) int {
		return strings.Compare(a.Schema+"\x00"+a.Name, b.Schema+"\x00"+b.Name)
	})
	if found {
		states[i] = st
	} else {
		states = slices.Insert(states, i, st)
	}
	s.states[slot] = states
	return nil
}

// CopyFrom counts the COPY text rows of r.
func (s *Sink) CopyFrom(_ context.Context, t *schema.Table, r io.Reader) (int64, error) {
	var n int64
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		return n, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked(fmt.Sprintf("copy %s rows=%d", t.QualifiedName(), n)); err != nil {
		return 0, err
	}
	s.copied[t.QualifiedName()] += n
	return n, nil
}

func (s *Sink) Empty(_ context.Context, t *schema.Table) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.copied, t.QualifiedName())
	return s.logLocked("empty " + t.QualifiedName())
}

func (s *Sink) HasMetadata(context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hasMeta, nil
}

// Progress implements sink.MetadataReader (Stored without a context).
func (s *Sink) Progress(_ context.Context, slot string) (sink.Progress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.progress
	p.Slot = slot
	return p, nil
}

func (s *Sink) KnownRelations(context.Context) ([]sink.KnownRelation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.known), nil
}

func (s *Sink) MetadataSchema() string { return "pgrelay" }

// LockSlot waits, when another holds slot's lock, until it is released.
func (s *Sink) LockSlot(ctx context.Context, slot string, waiting func()) (func(context.Context) error, error) {
	s.mu.Lock()
	for {
		held, ok := s.locks[slot]
		if !ok {
			break
		}
		s.mu.Unlock()
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-held:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
	}
	mine := make(chan struct{})
	s.locks[slot] = mine
	s.calls = append(s.calls, "lock "+slot)
	s.mu.Unlock()
	return func(context.Context) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.locks[slot] == mine {
			delete(s.locks, slot)
			close(mine)
		}
		return nil
	}, nil
}

func (s *Sink) RollbackSlotPrepared(_ context.Context, slot string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked("rollback-slot-prepared " + slot); err != nil {
		return nil, err
	}
	var done []string
	for gid := range s.prepared {
		if sink.OwnGID(slot, gid) {
			delete(s.prepared, gid)
			done = append(done, gid)
		}
	}
	slices.Sort(done)
	return done, nil
}

func (s *Sink) Teardown(_ context.Context, slot string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.logLocked("teardown " + slot); err != nil {
		return err
	}
	delete(s.seeds, slot)
	delete(s.states, slot)
	s.progress = sink.Progress{}
	s.hasMeta = len(s.seeds) > 0
	return nil
}

func (s *Sink) ForeignTables(_ context.Context, tables []schema.QualifiedName) ([]sink.ForeignTable, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sink.ForeignTable
	for _, f := range s.Foreign {
		if slices.Contains(tables, f.Name) {
			out = append(out, f)
		}
	}
	return out, nil
}

func (s *Sink) TableColumns(_ context.Context, tables []schema.QualifiedName) (map[schema.QualifiedName][]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[schema.QualifiedName][]string{}
	for _, t := range tables {
		if cols, ok := s.ForeignColumns[t]; ok {
			out[t] = cols
		}
	}
	return out, nil
}

func (s *Sink) Preflight(context.Context, []string) ([]sink.Problem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.PreflightProblems), nil
}

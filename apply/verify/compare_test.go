package verify

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/source"
)

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fakeWorld is a source table (integer key → row text) with its history by
// WAL position, and a target that holds the source's state at its applied
// position plus rows it diverged in. Each call to Applied lets the target
// apply everything (a replicator catching up) when applyOnPoll is set.
type fakeWorld struct {
	mu          sync.Mutex
	pos         source.LSN
	history     map[source.LSN]map[int]string // source state after each position
	applied     source.LSN
	diverged    map[int]*string // target rows that differ from the source's (nil: absent)
	applyOnPoll bool
	polls       int
	// afterSourceRead runs after every source read (a writer).
	afterSourceRead func(w *fakeWorld)
}

func newFakeWorld(rows int) *fakeWorld {
	state := map[int]string{}
	for i := 1; i <= rows; i++ {
		state[i] = "row " + strconv.Itoa(i)
	}
	w := &fakeWorld{pos: 100, history: map[source.LSN]map[int]string{100: state}, diverged: map[int]*string{}}
	w.applied = w.pos
	return w
}

// write changes the source: set (or delete, when v is nil) row k.
func (w *fakeWorld) writeLocked(k int, v *string) {
	state := maps.Clone(w.history[w.pos])
	if v == nil {
		delete(state, k)
	} else {
		state[k] = *v
	}
	w.pos += 10
	w.history[w.pos] = state
}

func (w *fakeWorld) write(k int, v *string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeLocked(k, v)
}

func (w *fakeWorld) diverge(k int, v *string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.diverged[k] = v
}

func strp(s string) *string { return &s }

// targetStateLocked is what the target holds.
func (w *fakeWorld) targetStateLocked() map[int]string {
	state := maps.Clone(w.history[w.applied])
	for k, v := range w.diverged {
		if v == nil {
			delete(state, k)
		} else {
			state[k] = *v
		}
	}
	return state
}

type fakeSide struct {
	w      *fakeWorld
	target bool
}

type fakeSource struct{ fakeSide }
type fakeTarget struct{ fakeSide }

var (
	_ Source = (*fakeSource)(nil)
	_ Target = (*fakeTarget)(nil)
)

func (s *fakeSide) Describe(_ context.Context, n TableName) (*Shape, error) {
	return &Shape{Name: n, Identity: 'd', Key: []string{"id"}, Indexes: [][]string{{"id"}},
		Columns: []Column{{Name: "id", Type: "integer"}, {Name: "v", Type: "text"}}}, nil
}

// read returns the side's state and position, running the writer after a
// source read.
func (s *fakeSide) read() (map[int]string, source.LSN) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.target {
		return s.w.targetStateLocked(), s.w.applied
	}
	state, pos := s.w.history[s.w.pos], s.w.pos
	if s.w.afterSourceRead != nil {
		s.w.afterSourceRead(s.w)
	}
	return state, pos
}

func sortedInts(state map[int]string, keep func(int) bool) []int {
	var keys []int
	for k := range state {
		if keep(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (s *fakeSide) Summarize(_ context.Context, t *SideTable, r Range) (Summary, error) {
	state, pos := s.read()
	var b strings.Builder
	keys := sortedInts(state, func(k int) bool { return inRange(r, k) })
	for _, k := range keys {
		b.WriteString(strconv.Itoa(k) + "=" + state[k] + ";")
	}
	return Summary{Rows: int64(len(keys)), Checksum: b.String(), Position: pos}, nil
}

func (s *fakeSide) Rows(_ context.Context, t *SideTable, r Range, keys []Key) (RowSet, error) {
	state, pos := s.read()
	want := func(k int) bool { return inRange(r, k) }
	if keys != nil {
		set := map[int]bool{}
		for _, k := range keys {
			n, _ := strconv.Atoi(k[0])
			set[n] = true
		}
		want = func(k int) bool { return set[k] }
	}
	rs := RowSet{Hashes: map[string]string{}, Position: pos}
	for _, k := range sortedInts(state, want) {
		key := strconv.Itoa(k)
		rs.Keys = append(rs.Keys, key)
		rs.Hashes[key] = state[k]
	}
	return rs, nil
}

func (s *fakeSource) Boundary(ctx context.Context, t *SideTable, after Key, n int64) (Key, error) {
	state, _ := s.read()
	return intBoundary(sortedInts(state, func(int) bool { return true }))(ctx, after, n)
}

func (s *fakeTarget) Applied(context.Context) (source.LSN, error) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.w.polls++
	if s.w.applyOnPoll {
		s.w.applied = s.w.pos
	}
	return s.w.applied, nil
}

func compareFake(t *testing.T, w *fakeWorld, live bool, wait time.Duration) *TableResult {
	t.Helper()
	cfg := Config{ChunkRows: 10, Wait: wait, Log: discardLog(),
		Live: func(context.Context) (bool, error) { return live, nil }}
	tbl := Table{Source: TableName{Schema: "public", Name: "t"}, Target: TableName{Schema: "public", Name: "t"}, Columns: []string{"id", "v"}}
	rep, err := Compare(context.Background(), cfg, &fakeSource{fakeSide{w: w}}, &fakeTarget{fakeSide{w: w, target: true}}, []Table{tbl})
	if err != nil {
		t.Fatal(err)
	}
	return &rep.Tables[0]
}

func TestCompareEqual(t *testing.T) {
	w := newFakeWorld(35)
	res := compareFake(t, w, false, time.Second)
	if !res.Equal() || res.Chunks != 4 || res.SourceRows != 35 || res.TargetRows != 35 {
		t.Errorf("equal tables: %+v", res)
	}
	if w.polls != 0 {
		t.Errorf("equal tables: the target's position was polled %d times, want 0", w.polls)
	}
}

// TestCompareStaticDifferences: with no replicator running, differences are
// reported from one read of each side, at once, by kind and key.
func TestCompareStaticDifferences(t *testing.T) {
	w := newFakeWorld(35)
	w.diverge(3, strp("changed"))
	w.diverge(15, nil)
	w.diverge(99, strp("extra"))
	start := time.Now()
	res := compareFake(t, w, false, time.Minute)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a static target took %v: it must not wait", took)
	}
	if w.polls != 0 {
		t.Errorf("static target: polled %d times, want 0", w.polls)
	}
	if res.Equal() || len(res.Differences) != 3 {
		t.Fatalf("differences: %+v", res.Differences)
	}
	d := res.Differences
	if d[0].Changed != 1 || !slices.EqualFunc(d[0].ChangedKeys, []Key{{"3"}}, slices.Equal) || d[0].Range.From != nil || d[0].Range.To[0] != "10" {
		t.Errorf("first chunk: %+v", d[0])
	}
	if d[1].MissingOnTarget != 1 || !slices.EqualFunc(d[1].MissingKeys, []Key{{"15"}}, slices.Equal) || d[1].SourceRows != 10 || d[1].TargetRows != 9 {
		t.Errorf("second chunk: %+v", d[1])
	}
	if d[2].ExtraOnTarget != 1 || d[2].ExtraKeys[0][0] != "99" || d[2].Range.To != nil {
		t.Errorf("last chunk: %+v", d[2])
	}
	for _, x := range d {
		if x.Unsettled != 0 {
			t.Errorf("static difference counted unsettled: %+v", x)
		}
	}
}

// TestCompareLiveLag: a target behind the source is waited for and then
// found equal.
func TestCompareLiveLag(t *testing.T) {
	w := newFakeWorld(35)
	w.write(12, strp("new value"))
	w.write(40, strp("new row"))
	w.write(2, nil)
	w.applyOnPoll = true // the replicator catches up once asked
	res := compareFake(t, w, true, 10*time.Second)
	if !res.Equal() {
		t.Errorf("a lagging target that catches up: %+v", res.Differences)
	}
	if w.polls == 0 {
		t.Errorf("the lagging target was never waited for")
	}
}

// TestCompareLiveConfirmed: a replicator runs, the target is current, yet a
// row differs: a confirmed difference.
func TestCompareLiveConfirmed(t *testing.T) {
	w := newFakeWorld(35)
	w.diverge(22, strp("wrong"))
	w.applyOnPoll = true
	res := compareFake(t, w, true, 10*time.Second)
	if len(res.Differences) != 1 || res.Differences[0].Changed != 1 || res.Differences[0].Unsettled != 0 {
		t.Errorf("confirmed difference: %+v", res.Differences)
	}
}

// TestCompareLiveHotRow: a row the source changes between every two reads
// is neither shown equal nor confirmed: reported unsettled after the
// re-checks, which the target lagging forever does not prolong past Wait.
func TestCompareLiveHotRow(t *testing.T) {
	w := newFakeWorld(35)
	n := 0
	w.afterSourceRead = func(w *fakeWorld) {
		n++
		w.writeLocked(7, strp("hot "+strconv.Itoa(n)))
	}
	start := time.Now()
	res := compareFake(t, w, true, 300*time.Millisecond)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v; the waits are bounded by Wait", took)
	}
	if len(res.Differences) != 1 || res.Differences[0].Changed != 1 || res.Differences[0].Unsettled != 1 {
		t.Errorf("hot row: %+v", res.Differences)
	}
}

// TestCompareMissingTable: a table the target lacks stops the run before
// anything is compared.
func TestCompareMissingTable(t *testing.T) {
	w := newFakeWorld(5)
	tgt := &missingTarget{fakeTarget{fakeSide{w: w, target: true}}}
	tbl := Table{Source: TableName{Schema: "public", Name: "t"}, Target: TableName{Schema: "public", Name: "t"}, Columns: []string{"id", "v"}}
	_, err := Compare(context.Background(), Config{Log: discardLog()}, &fakeSource{fakeSide{w: w}}, tgt, []Table{tbl, tbl})
	var me *MissingTablesError
	if !errors.As(err, &me) || len(me.Tables) != 2 || err.Error() != "tables public.t, public.t are missing on the target" {
		t.Errorf("err = %v, want a MissingTablesError for both", err)
	}
}

type missingTarget struct{ fakeTarget }

func (missingTarget) Describe(context.Context, TableName) (*Shape, error) { return nil, nil }

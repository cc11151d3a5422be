// Package verify compares the replicated tables of a source and a target, row
// count and checksum, chunk by chunk, and says where they differ.
//
// # What is compared
//
// Values in canonical form (package schema/canon): one text per value of a
// source column's type, whatever each side stores it as, so the same
// comparison serves a PostgreSQL and a MySQL target. A row is the md5 of the
// record text of its canonical values; a set of rows is its count and the
// sums of its rows' hashes (canon.Checksum), which does not depend on the
// order the rows are read in.
//
// A table with a replica identity key (REPLICA IDENTITY DEFAULT with a primary
// key, or USING INDEX) is split into chunks by key range, (k0, k1], (k1, k2], …,
// planned on the source: each boundary is the key of the n-th row after the
// previous one (ChunkRows). Each chunk is counted and checksummed on each
// side: by the server where it can compute the canonical forms (PostgreSQL:
// sink.VerifyChecksums), else from its rows read here. A chunk that differs is
// then read row by row on both sides, which names the keys missing on the
// target, extra on the target, and changed.
//
// A table without a key (REPLICA IDENTITY FULL or NOTHING, or DEFAULT without a
// primary key) is one chunk, the whole table. Its checksum counts duplicate
// rows as often as they occur.
//
// Both sides compare the source's published columns, by name, in the source's
// order; a published column the target lacks is reported, the others are still
// compared. Key ranges compare in the key columns' collation when it is the same
// on both servers, otherwise in byte order (COLLATE "C"), which the key index
// cannot serve unless one exists in that order: a warning says so, with the
// index to create.
//
// # A target that is still applying
//
// A chunk read on the source at WAL position S can only match the target once
// the target has applied everything up to S. When the chunk differs and a
// replicator is running (Config.Live: the slot is active), the rows that differ
// are re-checked: wait until the target's applied position (the same snapshot
// as its rows) has passed S, read those rows on the target, then again on the
// source. A row is equal as soon as the target holds what the source held at
// either read; it is a confirmed difference when the source row did not change
// between two reads that enclose a target read at or past the first one's
// position (the target should have held exactly it). Rows still changing after
// Config.Rechecks rounds are reported as a difference, counted as unsettled. A
// target nobody applies to (after migrate) is compared at once, with no waiting.
//
// # The sides
//
// The comparison needs of each server a Side: count and checksum a key range,
// list its rows' hashes, describe a table. The source is PostgreSQL
// (NewPostgresSource, package internal/pgverify); the target is whatever
// sink implements sink.Verifier (NewTarget).
package verify

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/internal/pgverify"
	"github.com/pgrelay/pgrelay/schema/canon"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Defaults of Config.
const (
	// DefaultWait bounds how long the re-checks of one chunk wait in all for the
	// target to apply past the source's position.
	DefaultWait = 30 * time.Second
	// DefaultRechecks is how many rounds of re-checks a differing chunk gets
	// while a replicator runs.
	DefaultRechecks = 5
	// maxSampleKeys is how many keys of each kind a difference lists.
	maxSampleKeys = 10
	// maxWaitTimeouts is how many waits may time out before the comparison
	// stops waiting for a target that does not catch up.
	maxWaitTimeouts = 3
	// progressEvery is how often a long table logs its progress.
	progressEvery = 10 * time.Second
)

// TableName is a schema-qualified table name, unquoted.
type TableName = sink.VerifyName

// Table is one replicated table to compare.
type Table struct {
	Source TableName
	Target TableName
	// Columns are the source's published columns, the ones compared.
	Columns []string
	// SourceFilter is the publication's row filter of the table, "" when it
	// has none: only source rows it holds for are compared.
	SourceFilter string
}

// Shape is a table as one server's catalog describes it.
type Shape = sink.VerifyShape

// Column is one column of a Shape.
type Column = sink.VerifyColumn

// SideTable is one side's half of a table comparison: what to read, in the
// order both sides agree on.
type SideTable = sink.VerifyTable

// Summary is one side's count and checksum of a range.
type Summary = sink.VerifySummary

// RowSet is one side's rows of a range: each key's row hash.
type RowSet struct {
	Keys     []string          // joined keys, in key order as read
	Hashes   map[string]string // joined key → row hash
	Position source.LSN        // as in Summary
}

// Side is one server of a comparison.
type Side interface {
	// Describe reads a table's columns and key; nil (and no error) when there
	// is no such table.
	Describe(ctx context.Context, name TableName) (*Shape, error)
	// Summarize counts the rows of r and computes their checksum: ordered by
	// key for a keyed table, order-independent for the whole of a keyless one.
	Summarize(ctx context.Context, t *SideTable, r Range) (Summary, error)
	// Rows reads the hash of each row of r by key or, when keys is not nil, of
	// the rows with those keys only.
	Rows(ctx context.Context, t *SideTable, r Range, keys []Key) (RowSet, error)
}

// Source is the side chunks are planned on.
type Source interface {
	Side
	// Boundary returns the key of the n-th row after after (nil: from the
	// first row) in t's key order, nil when fewer than n rows follow.
	Boundary(ctx context.Context, t *SideTable, after Key, n int64) (Key, error)
}

// Target is the side that applies the source's changes.
type Target interface {
	Side
	// Applied is the source position the target has applied (0 when none).
	Applied(ctx context.Context) (source.LSN, error)
}

// Config tunes a comparison.
type Config struct {
	// ChunkRows is the rows per chunk; 0 chooses per table (ChunkRows).
	ChunkRows int64
	// Wait bounds the time one chunk's re-checks wait in all for the target
	// to catch up; 0: re-check at once, without waiting (DefaultWait is the
	// command's default).
	Wait time.Duration
	// Rechecks is the number of re-check rounds of a differing chunk while a
	// replicator runs (DefaultRechecks when 0).
	Rechecks int
	// Live reports whether a replicator is applying to the target now; a
	// difference is re-checked only then. Nil: never.
	Live func(ctx context.Context) (bool, error)
	// Log receives progress and warnings (slog.Default when nil).
	Log *slog.Logger
}

// Report is the outcome of a comparison.
type Report struct {
	Tables []TableResult
}

// Equal reports whether every table is equal.
func (r *Report) Equal() bool {
	for i := range r.Tables {
		if !r.Tables[i].Equal() {
			return false
		}
	}
	return true
}

// TableResult is one table's outcome.
type TableResult struct {
	Table, Target TableName
	// Key are the key columns chunks are ranges of; empty: compared whole.
	Key []string
	// ByteOrder is true when the key ranges were compared in byte order.
	ByteOrder bool
	Chunks    int
	// SourceRows and TargetRows are the rows counted on each side, chunk by
	// chunk (on a live source, at slightly different moments).
	SourceRows, TargetRows int64
	// MissingColumns are published columns the target table lacks.
	MissingColumns []string
	Differences    []Difference
	Took           time.Duration
}

// Equal reports whether the table holds the same rows on both sides.
func (t *TableResult) Equal() bool { return len(t.Differences) == 0 && len(t.MissingColumns) == 0 }

// Difference is one chunk that differs.
type Difference struct {
	Range                  Range
	SourceRows, TargetRows int64
	// Row counts by kind (keyed tables only): rows of the source the target
	// lacks, rows only the target has, rows both have with other values.
	MissingOnTarget, ExtraOnTarget, Changed int
	// Sample keys of each kind, in key order, at most 10 each.
	MissingKeys, ExtraKeys, ChangedKeys []Key
	// Unsettled counts the rows (or, keyless, 1 for the table) still changing
	// on the source during every re-check: not confirmed, nor shown equal.
	Unsettled int
	// SourcePosition and AppliedPosition are the positions of the last reads.
	SourcePosition, AppliedPosition source.LSN
}

// Rows is the number of differing rows (keyed tables; 0 for a keyless one).
func (d *Difference) Rows() int { return d.MissingOnTarget + d.ExtraOnTarget + d.Changed }

// Confirmed reports whether some of the difference is certain: not every
// differing row (or, keyless, the table) was still changing at every re-check.
func (d *Difference) Confirmed() bool {
	if d.Rows() == 0 {
		return d.Unsettled == 0
	}
	return d.Unsettled < d.Rows()
}

// Confirmed reports whether the table certainly differs: a column is
// missing or a difference is confirmed.
func (t *TableResult) Confirmed() bool {
	if len(t.MissingColumns) > 0 {
		return true
	}
	for i := range t.Differences {
		if t.Differences[i].Confirmed() {
			return true
		}
	}
	return false
}

// MissingTablesError lists published tables the target does not have.
type MissingTablesError struct {
	Tables []TableName
}

func (e *MissingTablesError) Error() string {
	names := make([]string, len(e.Tables))
	for i, t := range e.Tables {
		names[i] = t.String()
	}
	what := "table " + names[0] + " is"
	if len(names) > 1 {
		what = "tables " + strings.Join(names, ", ") + " are"
	}
	return what + " missing on the target"
}

// plan is a table ready to compare.
type plan struct {
	log      *slog.Logger
	table    Table
	src, tgt *SideTable
	rows     int64 // chunk size
	result   TableResult
}

// Compare compares tables between src and tgt. An error means the comparison
// could not run (a server failed, a table is missing on the target:
// *MissingTablesError); differences are in the report.
func Compare(ctx context.Context, cfg Config, src Source, tgt Target, tables []Table) (*Report, error) {
	cfg.Wait = max(cfg.Wait, 0)
	if cfg.Rechecks <= 0 {
		cfg.Rechecks = DefaultRechecks
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	c := &comparer{cfg: cfg, src: src, tgt: tgt}
	// Every table is described before any is compared: a missing one stops
	// the run before it spends time on the others.
	plans := make([]*plan, 0, len(tables))
	var missing []TableName
	for _, t := range tables {
		p, err := c.plan(ctx, t)
		if err != nil {
			return nil, err
		}
		if p == nil {
			missing = append(missing, t.Target)
			continue
		}
		plans = append(plans, p)
	}
	if len(missing) > 0 {
		return nil, &MissingTablesError{Tables: missing}
	}
	report := &Report{}
	for _, p := range plans {
		if err := c.table(ctx, p); err != nil {
			return nil, err
		}
		report.Tables = append(report.Tables, p.result)
	}
	return report, nil
}

type comparer struct {
	cfg          Config
	src          Source
	tgt          Target
	waitTimeouts int
}

// plan describes t on both sides; nil when the target lacks the table.
func (c *comparer) plan(ctx context.Context, t Table) (*plan, error) {
	ss, err := c.src.Describe(ctx, t.Source)
	if err != nil {
		return nil, err
	}
	if ss == nil {
		return nil, fmt.Errorf("source: table %s is in the publication but was not found: was it dropped meanwhile? run verify again", t.Source)
	}
	ts, err := c.tgt.Describe(ctx, t.Target)
	if err != nil || ts == nil {
		return nil, err
	}
	return buildPlan(t, ss, ts, c.cfg.ChunkRows, c.cfg.Log), nil
}

// buildPlan decides what both sides read: the published columns the target
// has, the key, the key order.
func buildPlan(t Table, ss, ts *Shape, chunkRows int64, log *slog.Logger) *plan {
	p := &plan{table: t,
		src: &SideTable{Name: t.Source, Partitioned: ss.Partitioned, Filter: t.SourceFilter},
		tgt: &SideTable{Name: t.Target, Partitioned: ts.Partitioned}}
	p.result = TableResult{Table: t.Source, Target: t.Target}
	for _, name := range t.Columns {
		sc, tc := ss.Column(name), ts.Column(name)
		if sc == nil {
			continue // dropped on the source since the publication was read
		}
		if tc == nil {
			p.result.MissingColumns = append(p.result.MissingColumns, name)
			continue
		}
		sc2, tc2 := compareAs(*sc, *tc)
		p.src.Columns = append(p.src.Columns, sc2)
		p.tgt.Columns = append(p.tgt.Columns, tc2)
	}
	keyed := len(ss.Key) > 0 && (ss.Identity == 'd' || ss.Identity == 'i')
	for _, name := range ss.Key {
		if ts.Column(name) == nil {
			keyed = false // reported as a missing column; compare the table whole
		}
	}
	if keyed {
		var byteOrder []string
		textOrder := false // the target orders some key column as text: its own index serves that
		for _, name := range ss.Key {
			sc, tc := compareAs(*ss.Column(name), *ts.Column(name))
			// Byte order where both sides collate and disagree (COLLATE on a
			// side whose type does not collate would be an error), or where
			// the target orders as text what the source orders otherwise.
			bo := sc.Collation != "" && tc.Collation != "" && sc.Collation != tc.Collation || tc.TextOrder && !ordersAsText(sc.Canon.Kind)
			p.src.Key = append(p.src.Key, sc)
			p.tgt.Key = append(p.tgt.Key, tc)
			p.src.ByteOrder = append(p.src.ByteOrder, bo)
			p.tgt.ByteOrder = append(p.tgt.ByteOrder, bo)
			if bo {
				byteOrder = append(byteOrder, fmt.Sprintf("%s (%s on the source, %s on the target)", name, orNone(sc.Collation), orNone(tc.Collation)))
			}
			textOrder = textOrder || tc.TextOrder && bo
		}
		p.result.Key = slices.Clone(ss.Key)
		if len(byteOrder) > 0 {
			p.result.ByteOrder = true
			fix := byteOrderIndex(t.Source, p.src.Key, p.src.ByteOrder)
			if !textOrder {
				fix += "; and the same on the target table " + t.Target.String()
			}
			log.Warn("key columns sort differently on the source and the target: comparing key ranges in byte order, which the key index cannot serve (each chunk scans the table); for speed, create an index in byte order",
				"table", pgquote.Name(t.Source.Schema, t.Source.Name), "columns", strings.Join(byteOrder, "; "), "fix", fix)
		} else if !hasIndexPrefix(ts.Indexes, ss.Key) {
			log.Warn("the target table has no index in the source's key order: each chunk scans the target table",
				"table", pgquote.Name(t.Target.Schema, t.Target.Name), "key", strings.Join(ss.Key, ", "), "fix", byteOrderIndex(t.Target, p.tgt.Key, nil))
		}
	}
	p.rows = chunkRows
	if p.rows <= 0 {
		p.rows = ChunkRows(ss.EstimatedRows)
	}
	return p
}

// compareAs is how a column pair compares: a target column whose type does
// not tell its canonical form takes the source column's, and the source
// column compares JSON numbers as doubles where the target keeps them so.
func compareAs(sc, tc Column) (Column, Column) {
	doubles := tc.Canon.DoubleNumbers
	if tc.Canon.Kind == canon.KindUnknown {
		tc.Canon = sc.Canon
	}
	if doubles {
		sc.Canon.DoubleNumbers, tc.Canon.DoubleNumbers = true, true
	}
	return sc, tc
}

// ordersAsText reports whether a source column of kind k orders as the
// bytes of its canonical text (text and char in their collation, which the
// collations decide; uuid's bytes as its hex).
func ordersAsText(k canon.Kind) bool {
	return k == canon.KindText || k == canon.KindChar || k == canon.KindUUID
}

func orNone(collation string) string {
	if collation == "" {
		return "none"
	}
	return collation
}

// byteOrderIndex is the CREATE INDEX that serves key ranges of table in the
// comparison's order: a collatable column in COLLATE "C", another in byte
// order as its text (pgverify's text order).
func byteOrderIndex(table TableName, key []Column, byteOrder []bool) string {
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = pgquote.Ident(k.Name)
		switch {
		case byteOrder == nil || !byteOrder[i]:
		case k.Collation == "":
			cols[i] = "((" + cols[i] + `)::text COLLATE "C")`
		default:
			cols[i] += ` COLLATE "C"`
		}
	}
	return "CREATE INDEX ON " + pgquote.Ident(table.Schema) + "." + pgquote.Ident(table.Name) + " (" + strings.Join(cols, ", ") + ")"
}

func hasIndexPrefix(indexes [][]string, key []string) bool {
	for _, idx := range indexes {
		if len(idx) >= len(key) && slices.Equal(idx[:len(key)], key) {
			return true
		}
	}
	return false
}

// table compares one planned table into p.result.
func (c *comparer) table(ctx context.Context, p *plan) error {
	start := time.Now()
	res := &p.result
	log := c.cfg.Log.With("table", pgquote.Name(p.table.Source.Schema, p.table.Source.Name))
	if p.table.Target != p.table.Source {
		log = log.With("target_table", pgquote.Name(p.table.Target.Schema, p.table.Target.Name))
	}
	p.log = log
	if len(p.src.Key) == 0 {
		log.Info("verifying table", "key", "none: whole table, order-independent checksum")
		d, s, t, err := c.whole(ctx, p)
		if err != nil {
			return err
		}
		res.Chunks, res.SourceRows, res.TargetRows = 1, s, t
		if d != nil {
			res.Differences = append(res.Differences, *d)
		}
	} else {
		log.Info("verifying table", "key", strings.Join(res.Key, ", "), "chunk_rows", p.rows)
		pl := newPlanner(func(ctx context.Context, after Key, n int64) (Key, error) {
			return c.src.Boundary(ctx, p.src, after, n)
		}, p.rows)
		lastLog := time.Now()
		for {
			r, ok, err := pl.next(ctx)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			d, s, t, err := c.chunk(ctx, p, r)
			if err != nil {
				return err
			}
			log.Debug("chunk compared", "range", FormatRange(res.Key, r), "source_rows", s, "target_rows", t, "equal", d == nil)
			res.Chunks++
			res.SourceRows += s
			res.TargetRows += t
			if d != nil {
				log.Warn("chunk differs", "range", FormatRange(res.Key, d.Range), "source_rows", d.SourceRows, "target_rows", d.TargetRows)
				res.Differences = append(res.Differences, *d)
			}
			if time.Since(lastLog) >= progressEvery {
				log.Info("verifying table", "chunks_done", res.Chunks, "source_rows_done", res.SourceRows, "differences", len(res.Differences))
				lastLog = time.Now()
			}
		}
	}
	res.Took = time.Since(start)
	result := "equal"
	if !res.Equal() {
		result = "differs"
	}
	log.Info("table verified", "result", result, "chunks", res.Chunks, "source_rows", res.SourceRows, "target_rows", res.TargetRows,
		"differing_chunks", len(res.Differences), "took", res.Took.Round(time.Millisecond).String())
	return nil
}

// summarizeBoth reads the range's summary on both sides at once.
func (c *comparer) summarizeBoth(ctx context.Context, p *plan, r Range) (s, t Summary, err error) {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { s, err = c.src.Summarize(gctx, p.src, r); return err })
	g.Go(func() (err error) { t, err = c.tgt.Summarize(gctx, p.tgt, r); return err })
	err = g.Wait()
	return s, t, err
}

func sameSummary(a, b Summary) bool { return a.Rows == b.Rows && a.Checksum == b.Checksum }

// chunk compares one key range; a difference is localised to its rows.
func (c *comparer) chunk(ctx context.Context, p *plan, r Range) (*Difference, int64, int64, error) {
	s, t, err := c.summarizeBoth(ctx, p, r)
	if err != nil {
		return nil, 0, 0, err
	}
	if sameSummary(s, t) {
		return nil, s.Rows, t.Rows, nil
	}
	return c.localize(ctx, p, r)
}

// live asks Config.Live.
func (c *comparer) live(ctx context.Context) (bool, error) {
	if c.cfg.Live == nil {
		return false, nil
	}
	return c.cfg.Live(ctx)
}

// sameRow reports whether key k has the same row (or none) in a and b.
func sameRow(a, b map[string]string, k string) bool {
	ha, oka := a[k]
	hb, okb := b[k]
	return oka == okb && ha == hb
}

// mergeRows replaces the rows of keys in into with what got holds for them.
func mergeRows(into map[string]string, keys []string, got map[string]string) {
	for _, k := range keys {
		if h, ok := got[k]; ok {
			into[k] = h
		} else {
			delete(into, k)
		}
	}
}

// localize reads a differing chunk row by row on both sides, re-checks the
// rows that differ while a replicator runs, and returns what still differs
// (nil when nothing does).
func (c *comparer) localize(ctx context.Context, p *plan, r Range) (*Difference, int64, int64, error) {
	srcRows, err := c.src.Rows(ctx, p.src, r, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	tgtRows, err := c.tgt.Rows(ctx, p.tgt, r, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	sh, th := srcRows.Hashes, tgtRows.Hashes
	// The differing keys in key order: the source's first, then the target's own.
	var diff []string
	for _, k := range srcRows.Keys {
		if !sameRow(sh, th, k) {
			diff = append(diff, k)
		}
	}
	for _, k := range tgtRows.Keys {
		if _, ok := sh[k]; !ok {
			diff = append(diff, k)
		}
	}
	unsettled := map[string]bool{}
	if len(diff) > 0 {
		live, err := c.live(ctx)
		if err != nil {
			return nil, 0, 0, err
		}
		if live {
			for _, k := range diff {
				unsettled[k] = true
			}
		}
	}
	srcPos, tgtPos := srcRows.Position, tgtRows.Position
	w := c.newWaiter()
	for round := 0; round < c.cfg.Rechecks && len(unsettled) > 0; round++ {
		if tgtPos < srcPos {
			if err := w.wait(ctx, srcPos); err != nil {
				return nil, 0, 0, err
			}
		}
		keys := sortedKeys(diff, unsettled)
		got, err := c.tgt.Rows(ctx, p.tgt, r, splitKeys(keys))
		if err != nil {
			return nil, 0, 0, err
		}
		mergeRows(th, keys, got.Hashes)
		tgtPos = got.Position
		for _, k := range keys {
			if sameRow(sh, th, k) {
				delete(unsettled, k)
			}
		}
		if len(unsettled) == 0 {
			break
		}
		keys = sortedKeys(diff, unsettled)
		before := make(map[string]string, len(keys))
		for _, k := range keys {
			if h, ok := sh[k]; ok {
				before[k] = h
			}
		}
		got, err = c.src.Rows(ctx, p.src, r, splitKeys(keys))
		if err != nil {
			return nil, 0, 0, err
		}
		mergeRows(sh, keys, got.Hashes)
		for _, k := range keys {
			switch {
			case sameRow(sh, th, k):
				delete(unsettled, k) // the target holds the source's newer row
			case sameRow(sh, before, k) && tgtPos >= srcPos:
				delete(unsettled, k) // confirmed: the target, past the first read, lacks a row the source kept
			}
		}
		srcPos = got.Position
	}
	d := &Difference{Range: r, SourceRows: int64(len(sh)), TargetRows: int64(len(th)), SourcePosition: srcPos, AppliedPosition: tgtPos}
	for _, k := range diff {
		if sameRow(sh, th, k) {
			continue
		}
		_, inSrc := sh[k]
		_, inTgt := th[k]
		switch {
		case inSrc && !inTgt:
			d.MissingOnTarget++
			d.MissingKeys = appendSample(d.MissingKeys, k)
		case !inSrc && inTgt:
			d.ExtraOnTarget++
			d.ExtraKeys = appendSample(d.ExtraKeys, k)
		default:
			d.Changed++
			d.ChangedKeys = appendSample(d.ChangedKeys, k)
		}
		if unsettled[k] {
			d.Unsettled++
		}
	}
	if d.Rows() == 0 {
		p.log.Info("chunk differed while the target was behind; equal after re-checks",
			"range", FormatRange(p.result.Key, r), "rows_rechecked", len(diff))
		return nil, d.SourceRows, d.TargetRows, nil
	}
	return d, d.SourceRows, d.TargetRows, nil
}

func appendSample(keys []Key, k string) []Key {
	if len(keys) >= maxSampleKeys {
		return keys
	}
	return append(keys, splitKey(k))
}

// sortedKeys are the keys of diff (in its order) that are in set.
func sortedKeys(diff []string, set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for _, k := range diff {
		if set[k] {
			out = append(out, k)
		}
	}
	return out
}

func splitKeys(joined []string) []Key {
	out := make([]Key, len(joined))
	for i, k := range joined {
		out[i] = splitKey(k)
	}
	return out
}

// whole compares a keyless table as one chunk, re-checking it as a whole
// while a replicator runs.
func (c *comparer) whole(ctx context.Context, p *plan) (*Difference, int64, int64, error) {
	r := Range{}
	s, t, err := c.summarizeBoth(ctx, p, r)
	if err != nil {
		return nil, 0, 0, err
	}
	if sameSummary(s, t) {
		return nil, s.Rows, t.Rows, nil
	}
	live, err := c.live(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	settled := !live
	w := c.newWaiter()
	for round := 0; round < c.cfg.Rechecks && !settled; round++ {
		if t.Position < s.Position {
			if err := w.wait(ctx, s.Position); err != nil {
				return nil, 0, 0, err
			}
		}
		if t, err = c.tgt.Summarize(ctx, p.tgt, r); err != nil {
			return nil, 0, 0, err
		}
		if sameSummary(s, t) {
			p.log.Info("table differed while the target was behind; equal after re-checks", "rounds", round+1)
			return nil, s.Rows, t.Rows, nil
		}
		s2, err := c.src.Summarize(ctx, p.src, r)
		if err != nil {
			return nil, 0, 0, err
		}
		if sameSummary(s2, t) {
			p.log.Info("table differed while the target was behind; equal after re-checks", "rounds", round+1)
			return nil, s2.Rows, t.Rows, nil
		}
		settled = sameSummary(s2, s) && t.Position >= s.Position
		s = s2
	}
	d := &Difference{Range: r, SourceRows: s.Rows, TargetRows: t.Rows, SourcePosition: s.Position, AppliedPosition: t.Position}
	if !settled {
		d.Unsettled = 1
	}
	return d, s.Rows, t.Rows, nil
}

// waiter waits for the target to apply a position, for one chunk's
// re-checks: at most Config.Wait in all.
type waiter struct {
	c        *comparer
	deadline time.Time
	timedOut bool
}

func (c *comparer) newWaiter() *waiter {
	return &waiter{c: c, deadline: time.Now().Add(c.cfg.Wait)}
}

// wait waits until the target has applied want, or the chunk's time is up. A
// target that does not catch up is not an error: the re-check then compares
// what it holds. After a few chunks whose time ran out, the comparison stops
// waiting altogether.
func (w *waiter) wait(ctx context.Context, want source.LSN) error {
	c := w.c
	if w.timedOut || c.waitTimeouts >= maxWaitTimeouts {
		return nil
	}
	for {
		applied, err := c.tgt.Applied(ctx)
		if err != nil {
			return err
		}
		if applied >= want {
			return nil
		}
		if !time.Now().Before(w.deadline) {
			w.timedOut = true
			c.waitTimeouts++
			c.cfg.Log.Warn("the target has not applied the source's position in time; re-checking what it holds",
				"want", want.String(), "applied", applied.String(), "waited", c.cfg.Wait.String())
			if c.waitTimeouts == maxWaitTimeouts {
				c.cfg.Log.Warn("the target keeps lagging: no more waiting for it in this run; differences found from now on may be lag")
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FormatRange shows r over key columns as a condition one can paste into a
// WHERE clause: id > '1000' AND id <= '2000', (a, b) > ('x', '1') AND ….
func FormatRange(key []string, r Range) string { return pgverify.FormatRange(key, r) }

// FormatKey shows a key for people: 42, (x, 1).
func FormatKey(k Key) string {
	if len(k) == 1 {
		return k[0]
	}
	return "(" + strings.Join(k, ", ") + ")"
}

// Package snapshot copies the published tables of a source PostgreSQL into a
// target under one exported snapshot: COPY out of the source streamed straight
// into the target's bulk loader (no temporary files), several tables and CTID
// ranges of large tables in parallel, secondary indexes built after the data,
// and per-table state kept on the target so a crash during the copy redoes only
// the tables that were not finished.
package snapshot

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Target is what the snapshot needs of a sink: tables, bulk load, seed state.
// The optional capabilities it uses (sink.TablesCleaner, sink.KeyDeferrer,
// …) are found by type assertion.
type Target interface {
	sink.Sink
	sink.BulkLoader
	sink.SeedStore
}

// Config tunes the copy.
type Config struct {
	// Slot names the replication slot whose seed this copy is.
	Slot string
	// Workers is the number of tables or table ranges copied at once (default:
	// the number of CPUs, at least 2).
	Workers int
	// ChunkBytes splits tables larger than this into CTID ranges copied in
	// parallel (PostgreSQL 14+ sources, which scan TID ranges). Default 64 MiB.
	ChunkBytes int64
	// SharedCores says that the source and the target run on this machine,
	// on the cores pgrelay uses too. One job then keeps about two of them
	// busy (the source's COPY out with pgrelay, and the target's COPY in),
	// and cutting a table into ranges costs more than it gains beyond
	// Workers/2 ranges: a range scan costs the source a quarter more than
	// reading the whole table, and sessions loading one table contend for
	// its extension. Such a table is cut into at most Workers/2 ranges, and
	// not at all with fewer than 4 workers.
	SharedCores bool
	// Progress, when set, receives a refreshed progress line per second (a
	// terminal); otherwise progress goes to Log every 10 seconds.
	Progress io.Writer
	Log      *slog.Logger
}

// Validate applies defaults.
func (c *Config) Validate() error {
	if c.Slot == "" {
		return errors.New("snapshot: no slot name")
	}
	c.Workers = WorkersFor(c.Workers)
	if c.ChunkBytes <= 0 {
		c.ChunkBytes = 64 << 20
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// WorkersFor is how many workers a copy of Config.Workers = n runs at most:
// n, or when n is 0 the number of CPUs, at least 2.
func WorkersFor(n int) int {
	if n > 0 {
		return n
	}
	return max(2, runtime.NumCPU())
}

// Source is where the copy reads: the source URL, the exported snapshot and the
// server major.
type Source struct {
	URL          string
	SnapshotName string
	Major        int
	// Pool, when set, has the workers' connections (some opened
	// beforehand); the caller closes it. Without it, each worker opens its
	// own.
	Pool *ConnPool
}

// Table is one table to copy.
type Table struct {
	Table     *schema.Table
	Published source.PublishedTable
	// Clean empties the target table first. pgrelay sets it for every table
	// it copies, the first copy included: the target table may hold rows of
	// an interrupted or earlier copy, or rows it had before pgrelay.
	Clean     bool
	indexDefs []string
}

// deferKeyBytes is the size from which a table loads without its primary key,
// built afterwards. A smaller one loads with it: the key's drop and build
// cost more than its inserts (a table of 1,000 rows loads in the same time
// either way, one of 10,000 rows 8 ms faster without), and a snapshot of
// thousands of small tables spent a quarter of its time on them.
const deferKeyBytes = 256 << 10

// loadsWithoutKey reports whether t is large enough to load without its
// primary key: its size on the source, or its leaf partitions' when it is
// published through its root, is deferKeyBytes or more.
func (t *Table) loadsWithoutKey() bool {
	n := max(t.Published.Bytes, 0)
	for _, p := range t.Published.Parts {
		n += max(p.Bytes, 0)
	}
	return n >= deferKeyBytes
}

// quick reports whether t is small enough (under deferKeyBytes) to be
// copied in moments: it goes from pending to indexed without the copying
// and copied states in between (when it has no secondary index to build),
// which are for status to show a long copy's progress and which cost a
// thousands-of-tables copy two round trips a table. A restart copies a table
// again in every state but indexed, so nothing else depends on them.
func (t *Table) quick() bool { return !t.loadsWithoutKey() }

// Result sums up a copy.
type Result struct {
	Tables int
	Rows   int64
	Bytes  int64
	Took   time.Duration
}

type job struct {
	table *tableRun
	// part is the leaf partition this job reads, nil: the table itself.
	part       *source.Part
	fromPage   int64 // first page of the CTID range
	toPage     int64 // first page after the range; 0 = to the end
	whereRange bool
	// whole says the job is the table's only one, into a table of its own
	// (not a partitioned table's root) that is emptied before its copy.
	whole bool
}

type tableRun struct {
	Table
	// casts are the columns' casts (::"pg_catalog"."int4") when the table
	// goes in COPY binary format, nil when it goes in text.
	casts     []string
	started   atomic.Bool // a worker took its first job: copying
	remaining atomic.Int32
	finished  atomic.Bool // copied and indexed
	rows      atomic.Int64
	bytes     atomic.Int64
}

// copied adds to the table's counters what a COPY out of the source read
// (source.CopyOut): the ranges of a table copied at once all add to them.
func (r *tableRun) copied(rows, bytes int64) {
	r.rows.Add(rows)
	r.bytes.Add(bytes)
}

// Copy copies tables under the source's exported snapshot. Each table goes
// pending → copying → copied → indexed in the target's seed state. The
// exporting replication connection must stay idle until Copy returns.
func Copy(ctx context.Context, cfg Config, src Source, tables []Table, target Target, indexes schema.BatchIndexReader) (Result, error) {
	pool := src.Pool
	if pool == nil {
		pool = NewConnPool(src.URL)
		defer pool.Close(ctx)
	}
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	// Largest tables first so the long ones do not start last.
	sort.SliceStable(tables, func(i, j int) bool { return tables[i].Published.Bytes > tables[j].Published.Bytes })
	if err := readIndexDefs(ctx, cfg, tables, indexes); err != nil {
		return Result{}, err
	}
	runs, jobs := planJobs(tables, src.Major, cfg)
	cfg.Log.Debug("planned the copy", "tables", len(runs), "jobs", len(jobs), "workers", cfg.Workers, "shared_cores", cfg.SharedCores)

	// Empty what must be emptied once, before any range of it loads.
	if err := prepareRuns(ctx, cfg, src, runs, target); err != nil {
		return Result{}, err
	}

	workers := min(cfg.Workers, len(jobs))
	queue := make(chan job)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(queue)
		for _, j := range jobs {
			select {
			case queue <- j:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})

	// The snapshot must be imported by every worker before the first one
	// finishes: once all have imported it, the exporter may go on.
	var imported sync.WaitGroup
	imported.Add(workers)
	for w := 0; w < workers; w++ {
		g.Go(func() error {
			c, err := pool.Get(gctx)
			if err == nil {
				if err = c.Import(gctx, src.SnapshotName); err != nil {
					c.Close(gctx)
				}
			}
			imported.Done()
			if err != nil {
				return err
			}
			defer c.Close(gctx)
			conn, in := c.conn, c.in
			for j := range queue {
				if j.table.started.CompareAndSwap(false, true) && !j.table.Table.quick() {
					t := j.table.Table.Table
					if err := target.SetTableState(gctx, cfg.Slot, sink.TableState{Schema: t.Schema, Name: t.Name, RelationID: t.RelationID, State: sink.TableCopying}); err != nil {
						return err
					}
				}
				reusable, err := copyJob(gctx, conn, in, j, target)
				if err != nil {
					return err
				}
				if !reusable {
					if err := gctx.Err(); err != nil {
						return err
					}
					return fmt.Errorf("snapshot: the source connection is in an unknown state after copying %s", j.table.Table.Table.QualifiedName())
				}
				if j.table.remaining.Add(-1) == 0 {
					if err := finishTable(gctx, cfg, j.table, target); err != nil {
						return err
					}
				}
			}
			_, err = conn.Exec(gctx, "COMMIT")
			return err
		})
	}

	stopProgress := reportProgress(cfg, runs, start)
	err := g.Wait()
	stopProgress()
	res := Result{Tables: len(runs), Took: time.Since(start)}
	for _, r := range runs {
		res.Rows += r.rows.Load()
		res.Bytes += r.bytes.Load()
	}
	if err != nil {
		return res, err
	}
	cfg.Log.Info("snapshot copied", "tables", res.Tables, "rows", res.Rows, "mb", fmt.Sprintf("%.1f", float64(res.Bytes)/(1<<20)), "took", res.Took.Round(time.Millisecond))
	return res, nil
}

// planJobs splits the copy into jobs: one per table (per leaf partition of a
// partitioned table published through its root), or CTID ranges of one
// larger than cfg.ChunkBytes on a source that scans TID ranges (14+), at
// most 4 per worker (Workers/2 in all with cfg.SharedCores) and never more
// than its pages. A table of more ranges
// than workers gets a multiple of the worker count of them, so that the
// workers finish it together, and the last round of ranges is half the size
// of the others, so that the worker that finishes last waits for less. With
// fewer ranges than workers, the other workers copy other tables meanwhile.
// The last range is open-ended so pages added after relpages was read are
// copied too.
func planJobs(tables []Table, major int, cfg Config) ([]*tableRun, []job) {
	runs := make([]*tableRun, len(tables))
	var jobs []job
	w := int64(cfg.Workers)
	for i, t := range tables {
		r := &tableRun{Table: t}
		runs[i] = r
		before := len(jobs)
		units := []*source.Part{nil}
		if len(t.Published.Parts) > 0 {
			units = units[:0]
			for k := range t.Published.Parts {
				units = append(units, &t.Published.Parts[k])
			}
		}
		for _, part := range units {
			pages, bytes := t.Published.Pages, t.Published.Bytes
			if part != nil {
				pages, bytes = part.Pages, part.Bytes
			}
			n := int64(1)
			if major >= 14 && pages > 1 && bytes > cfg.ChunkBytes && (part != nil || !t.Published.Partitioned) {
				n = (bytes + cfg.ChunkBytes - 1) / cfg.ChunkBytes
				switch {
				case cfg.SharedCores:
					n = max(1, min(n, w/2, pages))
				case w == 1:
					// Ranges one after another gain nothing, and cost the
					// frozen load of a table in one piece.
					n = 1
				default:
					if n > w {
						n = (n + w - 1) / w * w
					}
					n = min(n, 4*w, pages)
				}
			}
			if n == 1 {
				whole := t.Clean && part == nil && !t.Published.Partitioned
				jobs = append(jobs, job{table: r, part: part, whole: whole})
				continue
			}
			for c, b := range rangeBounds(pages, n, w) {
				j := job{table: r, part: part, whereRange: true, fromPage: b[0], toPage: b[1]}
				if int64(c) == n-1 {
					j.toPage = 0
				}
				jobs = append(jobs, j)
			}
		}
		r.remaining.Store(int32(len(jobs) - before))
	}
	return runs, jobs
}

// rangeBounds cuts pages into n non-empty [from, to) ranges. When n is larger
// than w, the last w ranges are about half the size of the others.
func rangeBounds(pages, n, w int64) [][2]int64 {
	// Weights in halves: 2 for a full range, 1 for a range of the last round.
	weights := make([]int64, n)
	var total int64
	for i := range weights {
		weights[i] = 2
		if n > w && int64(i) >= n-w {
			weights[i] = 1
		}
		total += weights[i]
	}
	bounds := make([][2]int64, n)
	var from, acc int64
	for i, wt := range weights {
		acc += wt
		to := pages * acc / total
		// Every range keeps at least one page, and leaves one for each after it.
		to = max(to, from+1)
		to = min(to, pages-(n-1-int64(i)))
		bounds[i] = [2]int64{from, to}
		from = to
	}
	return bounds
}

// sourceReadBytes is the size of a snapshot connection's read buffer.
const sourceReadBytes = 256 << 10

// prepareRuns marks every table pending, empties those to be emptied (and
// drops the primary key of those loaded without it), and chooses each
// table's format, many tables per round trip where the target can.
func prepareRuns(ctx context.Context, cfg Config, src Source, runs []*tableRun, target Target) error {
	states := make([]sink.TableState, len(runs))
	for i, r := range runs {
		states[i] = sink.TableState{Schema: r.Table.Table.Schema, Name: r.Table.Table.Name, RelationID: r.Table.Table.RelationID, State: sink.TablePending}
	}
	if ss, ok := target.(sink.StatesSetter); ok {
		if err := ss.SetTableStates(ctx, cfg.Slot, states); err != nil {
			return err
		}
	} else {
		for _, st := range states {
			if err := target.SetTableState(ctx, cfg.Slot, st); err != nil {
				return err
			}
		}
	}
	var clean []*tableRun
	for _, r := range runs {
		if r.Clean {
			clean = append(clean, r)
		}
	}
	if len(clean) > 0 {
		if tc, ok := target.(sink.TablesCleaner); ok {
			tables := make([]*schema.Table, len(clean))
			for i, r := range clean {
				tables[i] = r.Table.Table
			}
			if err := tc.EmptyTables(ctx, tables); err != nil {
				return fmt.Errorf("snapshot: empty the target tables before copying them: %w", err)
			}
		} else {
			cl, ok := target.(sink.Cleaner)
			if !ok {
				return fmt.Errorf("snapshot: the target cannot empty %s before copying it", clean[0].Table.Table.QualifiedName())
			}
			steps := &Steps{Log: cfg.Log, What: "preparing the copy: emptying the target tables", Total: len(clean)}
			for i, r := range clean {
				steps.Done(i)
				if err := cl.Empty(ctx, r.Table.Table); err != nil {
					return fmt.Errorf("snapshot: empty %s on the target before copying it: %w", r.Table.Table.QualifiedName(), err)
				}
			}
		}
		if kd, ok := target.(sink.KeyDeferrer); ok {
			for _, r := range clean {
				if r.Table.loadsWithoutKey() {
					if _, err := kd.DropPrimaryKey(ctx, r.Table.Table); err != nil {
						return err
					}
				}
			}
		}
	}
	return chooseFormats(ctx, cfg, src, runs, target)
}

// chooseFormats decides once per table, before its jobs run, whether it goes
// in COPY binary format, which costs the target less CPU than text: only when
// the target can load binary, every copied column is of a type whose binary
// form means the same on both servers (schema.BinaryCopyType), and the target
// table has exactly these types. Otherwise the table goes in text, which the
// target's input functions read into whatever types its columns have.
func chooseFormats(ctx context.Context, cfg Config, src Source, runs []*tableRun, target Target) error {
	bl, ok := target.(sink.BinaryBulkLoader)
	if !ok {
		return nil
	}
	var ask []*tableRun
	var casts [][]string
	for _, r := range runs {
		if c := binaryCasts(cfg, r); c != nil {
			ask, casts = append(ask, r), append(casts, c)
		}
	}
	if len(ask) == 0 {
		return nil
	}
	tables := make([]*schema.Table, len(ask))
	for i, r := range ask {
		tables[i] = r.Table.Table
	}
	var oks []bool
	var whys []string
	if bc, ok := target.(sink.BinaryChecker); ok {
		var err error
		if oks, whys, err = bc.TakesBinaryOf(ctx, tables, src.Major); err != nil {
			return fmt.Errorf("snapshot: choose the copy format of %d tables: %w", len(tables), err)
		}
	} else {
		for _, t := range tables {
			ok, why, err := bl.TakesBinary(ctx, t, src.Major)
			if err != nil {
				return fmt.Errorf("snapshot: choose the copy format of %s: %w", t.QualifiedName(), err)
			}
			oks, whys = append(oks, ok), append(whys, why)
		}
	}
	for i, r := range ask {
		if !oks[i] {
			cfg.Log.Debug("copying in text format", "table", tables[i].DisplayName(), "why", whys[i])
			continue
		}
		r.casts = casts[i]
	}
	return nil
}

// binaryCasts returns the casts of r's columns in the source's select list
// when every published column is a table column of a type that may go in
// binary, nil otherwise.
func binaryCasts(cfg Config, r *tableRun) []string {
	t := r.Table.Table
	text := func(why string) []string {
		cfg.Log.Debug("copying in text format", "table", t.DisplayName(), "why", why)
		return nil
	}
	// The source's select list and the target's COPY column list must be the
	// same columns in the same order.
	if len(r.Published.Columns) != len(t.Columns) {
		return text(fmt.Sprintf("%d published columns, %d in the table", len(r.Published.Columns), len(t.Columns)))
	}
	casts := make([]string, len(t.Columns))
	for i, name := range r.Published.Columns {
		c := &t.Columns[i]
		if c.Name != name {
			return text(fmt.Sprintf("published column %d is %s, table column %s", i+1, name, c.Name))
		}
		typ, ok := schema.BinaryCopyType(c.TypeOID)
		if !ok {
			return text(fmt.Sprintf("column %s is of type %s", name, c.TypeName))
		}
		// Without typmod, so the source converts nothing; the bytes are then of
		// exactly the type the target was checked for even if the column's
		// type changed since the table was read.
		casts[i] = "::" + pgx.Identifier{"pg_catalog", typ}.Sanitize()
	}
	return casts
}

// copyOutSQL is the source's COPY TO STDOUT of one job: the published
// columns of the table (or of the job's partition) and, of its rows, those in
// the job's CTID range that the publication's row filter lets through.
func copyOutSQL(j job) string {
	t := j.table.Table.Table
	cols := make([]string, len(j.table.Published.Columns))
	for i, c := range j.table.Published.Columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
		if j.table.casts != nil {
			cols[i] += j.table.casts[i]
		}
	}
	from := "ONLY " + pgx.Identifier{t.Schema, t.Name}.Sanitize()
	switch {
	case j.part != nil:
		from = "ONLY " + pgx.Identifier{j.part.Schema, j.part.Name}.Sanitize()
	case j.table.Published.Partitioned:
		// The partitioned table as a whole: all its partitions.
		from = pgx.Identifier{t.Schema, t.Name}.Sanitize()
	}
	var conds []string
	if j.whereRange {
		conds = append(conds, fmt.Sprintf("ctid >= '(%d,0)'::tid", j.fromPage))
		if j.toPage > 0 {
			conds = append(conds, fmt.Sprintf("ctid < '(%d,0)'::tid", j.toPage))
		}
	}
	if f := j.table.Published.RowFilter; f != "" {
		conds = append(conds, "("+f+")")
	}
	sql := "COPY (SELECT " + strings.Join(cols, ", ") + " FROM " + from
	if len(conds) > 0 {
		sql += " WHERE " + strings.Join(conds, " AND ")
	}
	sql += ") TO STDOUT"
	if j.table.casts != nil {
		sql += " (FORMAT binary)"
	}
	return sql
}

// copyJob streams one table or range: COPY TO STDOUT on the source, read by
// the target's bulk loader as it arrives. It reports whether conn can be used
// for the next job.
func copyJob(ctx context.Context, conn *pgx.Conn, in *bufio.Reader, j job, target Target) (bool, error) {
	t := j.table.Table.Table
	binary := j.table.casts != nil
	load := target.CopyFrom
	if binary {
		load = target.(sink.BinaryBulkLoader).CopyFromBinary
	}
	// A large table in one piece loads frozen; a small one is not worth the
	// target's TRUNCATE, which costs a new file.
	if wl, ok := target.(sink.WholeLoader); ok && j.whole && !j.table.Table.quick() {
		load = func(ctx context.Context, t *schema.Table, r io.Reader) (int64, error) {
			return wl.CopyWhole(ctx, t, r, binary)
		}
	}
	if err := lockUnrewritten(ctx, conn, j); err != nil {
		return false, err
	}
	pg := conn.PgConn()
	out, err := source.StartCopyOut(ctx, pg.Frontend(), in, pg.Conn(), copyOutSQL(j), j.table.copied)
	if err != nil {
		return false, fmt.Errorf("snapshot: copy %s out of the source: %w", t.QualifiedName(), err)
	}
	rows, err := load(ctx, t, out)
	srcErr, reusable := out.Finish(err)
	if srcErr != nil && err == nil {
		return false, fmt.Errorf("snapshot: copy %s out of the source: %w", t.QualifiedName(), srcErr)
	}
	if err != nil {
		if srcErr != nil {
			// Both, for the caller to judge: a source that went away is
			// worth a new session, a target that refused a row is not.
			return false, fmt.Errorf("snapshot: copy %s: source: %w; target: %w", t.QualifiedName(), srcErr, err)
		}
		return false, fmt.Errorf("snapshot: copy %s into the target: %w", t.QualifiedName(), err)
	}
	j.table.rows.Add(rows - out.Rows())
	return reusable, nil
}

// lockUnrewritten locks the table (or partition) job j reads against
// rewrites until the worker's transaction ends, and fails with a retryable
// error when one committed after the snapshot: ALTER TABLE … TYPE, VACUUM
// FULL, CLUSTER or TRUNCATE give the table a new file whose rows the
// snapshot does not see, so the copy would read it empty, and the stream
// carries no rows for a rewrite. The snapshot's pg_class row names the file
// the snapshot saw; pg_relation_filenode, read through the catalog cache,
// the one a scan reads now. A new session copies the table anew.
func lockUnrewritten(ctx context.Context, conn *pgx.Conn, j job) error {
	t := j.table.Table.Table
	name := pgx.Identifier{t.Schema, t.Name}
	switch {
	case j.part != nil:
		name = pgx.Identifier{j.part.Schema, j.part.Name}
	case j.table.Published.Partitioned:
		return nil // no file of its own; its partitions are read as one
	}
	if _, err := conn.Exec(ctx, "LOCK TABLE ONLY "+name.Sanitize()+" IN ACCESS SHARE MODE"); err != nil {
		return fmt.Errorf("snapshot: lock %s for its copy: %w", name.Sanitize(), err)
	}
	var rewritten bool
	err := conn.QueryRow(ctx, `SELECT c.relfilenode <> 0 AND c.relfilenode IS DISTINCT FROM pg_catalog.pg_relation_filenode(c.oid)
		FROM pg_catalog.pg_class c WHERE c.oid = $1::pg_catalog.regclass`, name.Sanitize()).Scan(&rewritten)
	if err != nil {
		return fmt.Errorf("snapshot: check %s for a rewrite: %w", name.Sanitize(), err)
	}
	if rewritten {
		return sink.Retryable(fmt.Errorf("snapshot: %s was rewritten (ALTER TABLE … TYPE, VACUUM FULL, CLUSTER or TRUNCATE) after the copy's snapshot was taken, which then sees none of its rows: a new session copies it under a new snapshot", name.Sanitize()))
	}
	return nil
}

// indexBatch is how many tables' index definitions one query reads.
const indexBatch = 1000

// readIndexDefs reads the secondary index definitions of tables now, on the
// reader's one connection (it is not for concurrent use), indexBatch tables
// a query.
func readIndexDefs(ctx context.Context, cfg Config, tables []Table, indexes schema.BatchIndexReader) error {
	if indexes == nil {
		return nil
	}
	steps := &Steps{Log: cfg.Log, What: "preparing the copy: reading indexes", Total: len(tables)}
	for from := 0; from < len(tables); from += indexBatch {
		steps.Done(from)
		batch := tables[from:min(from+indexBatch, len(tables))]
		names := make([]schema.QualifiedName, len(batch))
		for i := range batch {
			names[i] = schema.QualifiedName{Schema: batch[i].Table.Schema, Name: batch[i].Table.Name}
		}
		defs, err := indexes.IndexDefsOf(ctx, names)
		if err != nil {
			return err
		}
		for i := range batch {
			batch[i].indexDefs = defs[names[i]]
		}
	}
	return nil
}

// finishTable builds the table's secondary indexes and records it done.
func finishTable(ctx context.Context, cfg Config, r *tableRun, target Target) error {
	t := r.Table.Table
	st := sink.TableState{Schema: t.Schema, Name: t.Name, RelationID: t.RelationID, State: sink.TableCopied, Rows: r.rows.Load(), Bytes: r.bytes.Load(),
		PublishedAs: r.Published.Shape()}
	if !r.Table.quick() || len(r.indexDefs) > 0 {
		if err := target.SetTableState(ctx, cfg.Slot, st); err != nil {
			return err
		}
	}
	if !r.Table.quick() {
		// A large table's keys take a while after its last row: say so.
		cfg.Log.Info("table loaded, building its keys and indexes", "table", t.DisplayName(), "rows", st.Rows, "indexes", len(r.indexDefs))
	}
	if kd, ok := target.(sink.KeyDeferrer); ok {
		if err := kd.AddPrimaryKey(ctx, t); err != nil {
			return err
		}
	}
	if defs := r.indexDefs; len(defs) > 0 {
		ib, ok := target.(sink.IndexBuilder)
		if !ok {
			return fmt.Errorf("snapshot: target cannot build the secondary indexes of %s", t.QualifiedName())
		}
		if err := ib.CreateIndexes(ctx, t, defs); err != nil {
			return err
		}
	}
	st.State = sink.TableIndexed
	if err := target.SetTableState(ctx, cfg.Slot, st); err != nil {
		return err
	}
	r.finished.Store(true)
	format := "text"
	if r.casts != nil {
		format = "binary"
	}
	cfg.Log.Info("table copied", "table", t.DisplayName(), "rows", st.Rows, "mb", fmt.Sprintf("%.1f", float64(st.Bytes)/(1<<20)), "format", format)
	return nil
}

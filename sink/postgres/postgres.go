// Package postgres is pgrelay's PostgreSQL sink: it applies source transactions
// to a PostgreSQL target in commit order, each together with its position in the
// pgrelay.progress table, and implements every capability package sink
// declares (the compile-time checks below list them).
//
// # Sessions
//
// Every target session starts with session_replication_role = replica (user
// triggers and foreign-key checks do not fire a second time for rows the source
// already checked), search_path = pg_catalog, pg_temp (every name pgrelay writes
// is qualified and quoted), synchronous_commit = on, and the settings values
// are read back with: DateStyle and IntervalStyle as the source's sessions
// write them, xmloption = content (as pg_dump sets it: an xml value may be a
// fragment, which a target database set to xmloption = document would refuse).
//
// # Speed
//
// Statements are prepared once per table version (and, for updates, per shape:
// which columns are unchanged TOAST values, which old values are NULL) and
// executed in batches of Options.BatchSize with one round trip per batch; values
// pass through in the source's text form without re-encoding. Runs of at least
// Options.CopyThreshold inserts into one table go through COPY FROM STDIN
// (measured on PostgreSQL 15: COPY wins from runs of about 64 rows; below
// that, the statements do). COMMIT joins the last batch unless that batch
// holds updates or deletes: their row counts must be checked before the
// transaction may end, which costs one more round trip.
//
// # Two-phase transactions
//
// Prepare inserts the transaction's row into pgrelay.prepared inside the
// transaction itself and runs PREPARE TRANSACTION; it never touches the shared
// pgrelay.progress row, so later transactions do not wait for the prepared one
// (invariant 4). CommitPrepared runs COMMIT PREPARED and then, in a short
// transaction, deletes the row and advances progress; RollbackPrepared likewise.
// Crash windows and how a restart settles them:
//
//   - before PREPARE TRANSACTION completed: nothing is on the target; the
//     source sends the transaction again.
//   - prepared, not finished: the gid is in pg_prepared_xacts (PreparedGIDs)
//     and its row is not visible yet; the source's Commit/Rollback Prepared
//     finishes it.
//   - COMMIT PREPARED done, bookkeeping not: the gid is no longer prepared but
//     its row is committed (PreparedRow reports found). CommitPrepared sees
//     that and only does the bookkeeping; RollbackPrepared reports an error,
//     since the transaction can no longer be rolled back.
//   - ROLLBACK PREPARED done, bookkeeping not: neither prepared nor a row:
//     RollbackPrepared only advances progress; CommitPrepared reports the loss.
//
// A COMMIT (or PREPARE TRANSACTION) whose connection dies before the answer is
// settled by looking at the target after reconnecting: the progress row (or
// pg_prepared_xacts) tells whether it happened; if not, the error is retryable.
//
// # Concurrency
//
// Setup, EnsureTable, Begin, the Tx methods and the TwoPhase methods use the one
// apply connection and must be called from one goroutine. CopyFrom (and its
// binary and clean variants), TakesBinary and the metadata helpers
// (TableStates, SetTableState, Seed, …) are safe to call concurrently with
// them and with each other.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/migrations"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Compile-time checks of the capabilities (package sink's table).
var (
	_ sink.Target = (*Sink)(nil) // every required one

	_ sink.Sink           = (*Sink)(nil)
	_ sink.Tx             = (*Tx)(nil)
	_ sink.SeedStore      = (*Sink)(nil)
	_ sink.BulkLoader     = (*Sink)(nil)
	_ sink.MetadataReader = (*Sink)(nil)
	_ sink.SlotLocker     = (*Sink)(nil)
	_ sink.Teardowner     = (*Sink)(nil)
	_ sink.TableInspector = (*Sink)(nil)

	_ sink.Preflighter         = (*Sink)(nil)
	_ sink.Preconnecter        = (*Sink)(nil)
	_ sink.TablesEnsurer       = (*Sink)(nil)
	_ sink.Cleaner             = (*Sink)(nil)
	_ sink.TablesCleaner       = (*Sink)(nil)
	_ sink.StatesSetter        = (*Sink)(nil)
	_ sink.BinaryBulkLoader    = (*Sink)(nil)
	_ sink.BinaryChecker       = (*Sink)(nil)
	_ sink.WholeLoader         = (*Sink)(nil)
	_ sink.KeyDeferrer         = (*Sink)(nil)
	_ sink.IndexBuilder        = (*Sink)(nil)
	_ sink.AsyncCommitter      = (*Sink)(nil)
	_ sink.AsyncTx             = (*Tx)(nil)
	_ sink.TwoPhase            = (*Sink)(nil)
	_ sink.PrepareChecker      = (*Sink)(nil)
	_ sink.PreparedCommits     = (*Sink)(nil)
	_ sink.PreparedFills       = (*Sink)(nil)
	_ sink.ApartEnsurer        = (*Sink)(nil)
	_ sink.BehindReporter      = (*Sink)(nil)
	_ sink.RelationLocator     = (*Sink)(nil)
	_ sink.CreatedTableIndexer = (*Sink)(nil)
	_ sink.JoinedTableCopier   = (*Sink)(nil)
	_ sink.SequenceSetter      = (*Sink)(nil)
	_ sink.StatsReporter       = (*Sink)(nil)
	_ sink.PreparedLister      = (*Sink)(nil)
)

// Options tune the sink. The zero value is usable.
type Options struct {
	// BatchSize is how many statements are queued before they are sent in one
	// round trip. Default 1000.
	BatchSize int
	// BatchBytes bounds the values queued in one batch. Default 4 MiB.
	BatchBytes int
	// CopyThreshold is the length from which a run of inserts into one table
	// goes through COPY instead of INSERT statements. Default 64; negative
	// disables COPY.
	CopyThreshold int
	// CopyBytes is the buffered size at which a long run of inserts is sent as
	// one COPY and a new run starts. Default 8 MiB.
	CopyBytes int
	// KeepOrder applies changes in arrival order instead of table by table
	// within a target transaction (see reorder.go).
	KeepOrder bool
	// LockWait is how long DDL the snapshot copy cannot do without (adding a
	// primary key back) waits for another session's lock on a target table
	// before it logs that it waits, and goes on waiting; and how long a
	// statement of the apply session runs before the sink looks at whether
	// it waits for a lock, and logs what holds it (lockwatch.go). Default
	// 10 s.
	LockWait time.Duration
	// Inspect opens the sink for what only reads pgrelay's metadata and the
	// target's tables, and removes the metadata (status, verify, teardown):
	// its sessions go without session_replication_role, whose privilege
	// those need not have, and it applies and loads nothing.
	Inspect bool
}

// Validate applies defaults and rejects impossible values.
func (o *Options) Validate() error {
	if o.BatchSize < 0 || o.BatchBytes < 0 || o.CopyBytes < 0 {
		return errors.New("sink/postgres: options: BatchSize, BatchBytes and CopyBytes must not be negative")
	}
	if o.BatchSize == 0 {
		o.BatchSize = 1000
	}
	if o.LockWait <= 0 {
		o.LockWait = 10 * time.Second
	}
	if o.BatchBytes == 0 {
		o.BatchBytes = 4 << 20
	}
	if o.CopyThreshold == 0 {
		o.CopyThreshold = 64
	}
	if o.CopyBytes == 0 {
		o.CopyBytes = 8 << 20
	}
	return nil
}

// MetadataSchema is the target schema pgrelay keeps its metadata in
// (migrations/postgres). A source table maps to the schema of its name, so no
// table of a source schema of this name can be replicated.
const MetadataSchema = "pgrelay"

// sessionParams are set in the startup packet of every target session.
var sessionParams = map[string]string{
	"session_replication_role": "replica",
	"search_path":              "pg_catalog, pg_temp",
	"synchronous_commit":       "on",
	// Every UPDATE and DELETE pgrelay sends finds its row by key. On small,
	// hot tables the planner's generic plan is a sequential scan, which in a
	// group commit revisits every dead version the group left behind: pgbench's
	// branches and tellers made apply twice as slow. A table without an index
	// (REPLICA IDENTITY FULL) is still scanned.
	"enable_seqscan": "off",
	// ...which makes a sequential scan's estimated cost huge, and would have
	// JIT compile each such statement (100+ ms for a 0.1 ms UPDATE of a
	// REPLICA IDENTITY FULL table without an index).
	"jit":           "off",
	"datestyle":     "ISO, YMD",
	"intervalstyle": "postgres",
	// xml input parses content, not documents only, whatever the target
	// database's or role's default: the source holds fragments the copy and
	// apply must take.
	"xmloption": "content",
	// Source sessions send UTF8 and money in the C locale's form
	// (source.sessionParams); the target converts to its database's encoding
	// and reads money back to the same stored amount.
	"client_encoding": "UTF8",
	"lc_monetary":     "C",
}

// Sink applies changes to a PostgreSQL target.
type Sink struct {
	config  *pgx.ConnConfig
	opts    Options
	dialect schema.Dialect

	// charsAsBytes: the target (before PostgreSQL 15) reads a "char" value
	// above 127 in the text form of a 15+ source as a backslash (legacyChars).
	charsAsBytes bool

	// Apply connection state: one goroutine.
	conn       *pgx.Conn
	slot       string
	canPrepare bool
	tables     map[*schema.Table]*tableStatements
	// behind holds the relations whose target table was left at an older
	// definition than the source catalog's (see heldByPrepared): their
	// next EnsureTable alters them even when the version is unchanged.
	behind     map[uint32]bool
	stmtSeq    int
	deallocate []string             // prepared statements of replaced table versions
	retired    []*tableStatements   // forgotten during the open transaction
	cur        *Tx                  // the open transaction, if any
	fill       sink.FillResolver    // fill values of columns prepared transactions added
	namer      schema.RelationNamer // where a source relation is now (identity.go)
	located    locations            // tables moved out of another relation's way, by OID (identity.go)
	indexes    schema.IndexReader   // secondary indexes of tables EnsureTable creates (IndexTablesItCreates)
	copyJoined bool                 // see CopyJoinedTables
	log        *slog.Logger
	// Reused COPY buffers of the apply connection: one may be on the wire
	// while the next run is encoded into the other (copyFlip).
	copyScratch [2][]byte
	copyFlip    int

	stats stats

	// The commit CommitAsync sent: its outcome arrives on pending; asyncErr
	// keeps a failure until Settle hands it over (async.go).
	pending  chan error
	pendingP sink.Progress
	asyncErr error

	metaMu sync.Mutex
	meta   *pgx.Conn // metadata helpers' connection, opened on first use

	lockMu sync.Mutex
	lock   *pgx.Conn // holds the slot's advisory lock (LockSlot)

	// bulkIdle are the connections of bulk loads that ended well, for the next
	// ones: a snapshot of thousands of small tables opened one per table.
	bulkMu   sync.Mutex
	bulkIdle []*pgx.Conn
	// warming counts the bulk connections Preconnect is opening.
	warming sync.WaitGroup
}

// New connects to the target at url (a libpq URL or key=value string).
func New(ctx context.Context, url string, opts Options) (*Sink, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := pgconnstr.ParsePgx(url)
	if err != nil {
		return nil, fmt.Errorf("sink/postgres: parse target URL: %w", redact.New(url).Err(err))
	}
	for k, v := range sessionParams {
		if !opts.Inspect || k != "session_replication_role" {
			cfg.RuntimeParams[k] = v
		}
	}
	s := &Sink{config: cfg, opts: opts, dialect: schema.Postgres, tables: map[*schema.Table]*tableStatements{}, behind: map[uint32]bool{},
		located: locations{}}
	// Connected at once: a target that cannot be reached fails the start.
	first := &s.conn
	if opts.Inspect {
		first = &s.meta
	}
	if *first, err = s.connect(ctx); err != nil {
		return nil, redact.New(url).Err(err)
	}
	if m := serverMajor(*first); m > 0 && m < 15 {
		s.charsAsBytes = true
	}
	return s, nil
}

// errInspectOnly refuses to apply or load on a sink opened with Inspect.
var errInspectOnly = errors.New("sink/postgres: opened to inspect the target (Options.Inspect): it applies and loads nothing")

// connect opens a target session with the replica settings (without
// session_replication_role under Inspect).
func (s *Sink) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.config.Copy())
	if err != nil {
		if sqlState(err) == "42501" {
			return nil, fmt.Errorf("sink/postgres: connect: role %q may not set session_replication_role = replica (needed so triggers and foreign keys do not fire twice): connect as a superuser or, on PostgreSQL 15+, run GRANT SET ON PARAMETER session_replication_role TO %s: %w",
				s.config.User, s.dialect.QuoteIdent(s.config.User), err)
		}
		return nil, classify(source.DescribeConnectError("target", &s.config.Config, err), true)
	}
	return conn, nil
}

// applyConn returns the apply connection, reconnecting after a loss. Prepared
// statements die with the session, so they are forgotten.
func (s *Sink) applyConn(ctx context.Context) (*pgx.Conn, error) {
	if s.opts.Inspect {
		return nil, errInspectOnly
	}
	if err := s.settle(); err != nil {
		return nil, err
	}
	if s.conn != nil && !s.conn.IsClosed() {
		return s.conn, nil
	}
	if s.conn != nil {
		_ = s.conn.Close(ctx)
		s.conn = nil
	}
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	s.tables = map[*schema.Table]*tableStatements{}
	s.deallocate, s.retired = nil, nil
	return conn, nil
}

// Setup brings pgrelay's metadata schema up to date, detects whether the target
// can prepare transactions and returns the stored progress of slot.
func (s *Sink) Setup(ctx context.Context, slot string) (sink.Progress, error) {
	if s.cur != nil {
		return sink.Progress{}, errors.New("sink/postgres: setup: a transaction is open")
	}
	conn, err := s.applyConn(ctx)
	if err != nil {
		return sink.Progress{}, err
	}
	if _, err := migrations.ApplyPostgres(ctx, conn); err != nil {
		// A read-only database's refusal becomes a *ReadOnlyError.
		return sink.Progress{}, classify(fmt.Errorf("sink/postgres: setup: %w", err), conn.IsClosed())
	}
	var maxPrepared string
	if err := conn.QueryRow(ctx, "SELECT current_setting('max_prepared_transactions')").Scan(&maxPrepared); err != nil {
		return sink.Progress{}, classify(fmt.Errorf("sink/postgres: setup: read max_prepared_transactions: %w", err), conn.IsClosed())
	}
	n, _ := strconv.Atoi(maxPrepared)
	s.canPrepare = n > 0
	s.slot = slot
	p, err := readProgress(ctx, conn, slot)
	if err != nil {
		return sink.Progress{}, classify(err, conn.IsClosed())
	}
	return p, nil
}

// CanPrepare reports whether the target allows PREPARE TRANSACTION
// (max_prepared_transactions > 0), as found by Setup.
func (s *Sink) CanPrepare() bool { return s.canPrepare }

// Close ends the sessions; an open transaction is rolled back by the server.
func (s *Sink) Close(ctx context.Context) error {
	_ = s.settle() // the goroutine of an outstanding commit uses the connection
	s.warming.Wait()
	var conns []*pgx.Conn
	if s.conn != nil {
		conns = append(conns, s.conn)
		s.conn = nil
	}
	s.cur = nil
	s.metaMu.Lock()
	if s.meta != nil {
		conns = append(conns, s.meta)
		s.meta = nil
	}
	s.metaMu.Unlock()
	s.lockMu.Lock()
	if s.lock != nil {
		conns = append(conns, s.lock)
		s.lock = nil
	}
	s.lockMu.Unlock()
	s.bulkMu.Lock()
	conns = append(conns, s.bulkIdle...)
	s.bulkIdle = nil
	s.bulkMu.Unlock()
	// At once: each close waits for its own round trip, which at the end of
	// a migration adds up.
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { errs[i] = c.Close(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sink/postgres: close: %w", err)
	}
	return nil
}

// maxBulkIdle is how many bulk-load connections are kept idle.
const maxBulkIdle = 16

// bulkConn returns a connection for a bulk load, a primary key or an index
// build: an idle one of an earlier load, or a new one. Key and index builds
// sort with the target's own maintenance_work_mem and parallel maintenance
// workers: 256MB, which pgrelay set before, made the primary key build of a
// 10,000,000-row table cost the server 2.6 s of CPU against 2.2 s with the
// default 64MB (docs/benchmarks.md), and asked a small target for a quarter
// gigabyte per concurrent build.
func (s *Sink) bulkConn(ctx context.Context) (*pgx.Conn, error) {
	s.warming.Wait()
	s.bulkMu.Lock()
	for len(s.bulkIdle) > 0 {
		c := s.bulkIdle[len(s.bulkIdle)-1]
		s.bulkIdle = s.bulkIdle[:len(s.bulkIdle)-1]
		if !c.IsClosed() {
			s.bulkMu.Unlock()
			return c, nil
		}
	}
	s.bulkMu.Unlock()
	return s.connectBulk(ctx)
}

// connectBulk opens a connection for bulk loads and index builds.
func (s *Sink) connectBulk(ctx context.Context) (*pgx.Conn, error) {
	if s.opts.Inspect {
		return nil, errInspectOnly
	}
	return s.connect(ctx)
}

// Preconnect opens, in the background, the metadata connection, the lock's
// and up to bulk connections for bulk loads, which a session's later steps
// would each open in turn (a connection costs a server process and an
// authentication: 20-30 ms on a small machine). The first use of each waits
// for its dial; one that failed is dialed again then, and that error is
// reported.
func (s *Sink) Preconnect(ctx context.Context, bulk int) {
	// Each unlocked by its dialing goroutine: withMeta and LockSlot wait for
	// it.
	for _, c := range []struct {
		mu   *sync.Mutex
		conn **pgx.Conn
	}{{&s.metaMu, &s.meta}, {&s.lockMu, &s.lock}} {
		c.mu.Lock()
		go func() {
			defer c.mu.Unlock()
			if *c.conn == nil || (*c.conn).IsClosed() {
				if conn, err := s.connect(ctx); err == nil {
					*c.conn = conn
				}
			}
		}()
	}
	s.bulkMu.Lock()
	bulk = min(bulk, maxBulkIdle-len(s.bulkIdle))
	s.bulkMu.Unlock()
	for range max(bulk, 0) {
		s.warming.Go(func() {
			conn, err := s.connectBulk(ctx)
			if err != nil {
				return
			}
			s.releaseBulk(ctx, conn, true)
		})
	}
}

// releaseBulk keeps conn for the next bulk load when its load ended well and
// it is idle, outside a transaction; otherwise it closes it.
func (s *Sink) releaseBulk(ctx context.Context, conn *pgx.Conn, ok bool) {
	if ok && !conn.IsClosed() && conn.PgConn().TxStatus() == 'I' {
		s.bulkMu.Lock()
		if len(s.bulkIdle) < maxBulkIdle {
			s.bulkIdle = append(s.bulkIdle, conn)
			s.bulkMu.Unlock()
			return
		}
		s.bulkMu.Unlock()
	}
	_ = conn.Close(context.WithoutCancel(ctx))
}

// statementsFor returns the prepared statements of t's version, creating the
// entry on first use.
func (s *Sink) statementsFor(t *schema.Table) *tableStatements {
	ts := s.tables[t]
	if ts != nil && ts.matches(t) {
		return ts
	}
	if ts != nil {
		s.forget(t)
	}
	// A relation sent again (after a source reconnect) may come as a new
	// *schema.Table of the same definition: drop the older one's statements so
	// they do not pile up.
	for old := range s.tables {
		if old.RelationID == t.RelationID && old.Schema == t.Schema && old.Name == t.Name {
			s.forget(old)
		}
	}
	ts = newTableStatements(s.dialect, s.located.target(t))
	s.tables[t] = ts
	return ts
}

// forget drops the statements of a table version. Changes of the open
// transaction may still be queued with them (reorder.go), so their
// server-side statements are deallocated only after the transaction ends, with
// the next one's first batch (retire).
func (s *Sink) forget(t *schema.Table) {
	ts := s.tables[t]
	if ts == nil {
		return
	}
	delete(s.tables, t)
	s.retired = append(s.retired, ts)
}

// retire schedules the server-side statements of the table versions forgotten
// so far for DEALLOCATE; called when a transaction has ended.
func (s *Sink) retire() {
	for _, ts := range s.retired {
		if ts.insert != nil && ts.insert.name != "" {
			s.deallocate = append(s.deallocate, ts.insert.name)
		}
		for _, st := range ts.byShape {
			if st.name != "" {
				s.deallocate = append(s.deallocate, st.name)
			}
		}
	}
	s.retired = nil
}

// prepare makes st a named server-side statement (one round trip, once).
func (s *Sink) prepare(ctx context.Context, ts *tableStatements, st *statement, named bool) error {
	if !named {
		return nil
	}
	if err := s.ready(); err != nil {
		return err
	}
	s.stmtSeq++
	name := "pgrelay_" + strconv.Itoa(s.stmtSeq)
	// Parsing an INSERT, UPDATE or DELETE locks its table.
	defer s.watchLocks(s.conn, ts.qname, 0)()
	if _, err := s.conn.PgConn().Prepare(ctx, name, st.sql, st.paramOIDs); err != nil {
		return err
	}
	st.name = name
	return nil
}

type stats struct {
	batches, statements, copyRuns, copyRows, folded atomic.Int64
	setStatements, setRows                          atomic.Int64
}

// Stats returns what the apply connection sent since New, for metrics and
// tests. Safe to call from any goroutine.
func (s *Sink) Stats() sink.Stats {
	return sink.Stats{
		Batches:       s.stats.batches.Load(),
		Statements:    s.stats.statements.Load(),
		CopyRuns:      s.stats.copyRuns.Load(),
		CopyRows:      s.stats.copyRows.Load(),
		Folded:        s.stats.folded.Load(),
		SetStatements: s.stats.setStatements.Load(),
		SetRows:       s.stats.setRows.Load(),
	}
}

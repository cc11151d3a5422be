package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/apply/snapshot"
	"github.com/pgrelay/pgrelay/internal/pgquote"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// seeder brings the target to a state it can stream into: the slot exists and
// the target holds a consistent copy of every published table as of a position
// the slot streams from.
type seeder struct {
	cfg      *Config
	log      *slog.Logger
	tgt      sink.Target
	cat      *schema.Catalog
	facts    schema.FactReader
	major    int
	twoPhase bool
	slot     source.SlotState
	srcConn  *pgx.Conn
	// repl is the session's replication connection, on which the slot is
	// created; nil once createSlot took it, or when there was none.
	repl     *source.ReplConn
	progress io.Writer // the copy's progress display, when set
	// sharedCores says the source and target servers share this machine.
	sharedCores bool
	// copied, when set, gets what each snapshot copy copied.
	copied func(snapshot.Result)
}

// tableSync is the snapshot a table's copy was redone under, later than the
// slot's: its LSN and, when known, its transaction ids.
type tableSync struct {
	lsn  source.LSN
	snap *source.TxidSnapshot
}

// tableSyncs are the tables whose copy was redone under a later snapshot than
// the slot's, by source OID: the stream's Relation message of a table renamed
// since carries its older name, and a table dropped may have left its name to
// another. Tables stored before pgrelay kept their OID go by name.
type tableSyncs struct {
	byOID  map[uint32]tableSync
	byName map[string]namedSync // each by its name when copied
}

// namedSync is a tableSync with the OID of its table, 0 when unknown.
type namedSync struct {
	oid uint32
	ts  tableSync
}

func newTableSyncs() *tableSyncs {
	return &tableSyncs{byOID: map[uint32]tableSync{}, byName: map[string]namedSync{}}
}

// add records the snapshot of the table whose OID is relationID (0: unknown)
// and whose name is name (schema.name). Of two for one table (its copy was
// redone after a rename, under the new name) the later holds: its rows are on
// the target.
func (s *tableSyncs) add(relationID uint32, name string, ts tableSync) {
	if relationID != 0 {
		if had, ok := s.byOID[relationID]; ok && had.lsn > ts.lsn {
			return
		}
		s.byOID[relationID] = ts
	}
	s.byName[name] = namedSync{relationID, ts}
}

// of is the snapshot t was copied under, zero when it was the slot's. A
// relation dropped on the source whose name a table copied under a later
// snapshot had (dropped tells, asked only then) takes that table's: its
// changes from before that snapshot went with it, as they did before pgrelay
// kept the OIDs; applied, they would make a table for it under that name.
func (s *tableSyncs) of(t *schema.Table, dropped func(relationID uint32) bool) tableSync {
	if ts, ok := s.byOID[t.RelationID]; ok && t.RelationID != 0 {
		return ts
	}
	n, ok := s.byName[t.QualifiedName()]
	if !ok || n.oid != 0 && (n.oid == t.RelationID || t.RelationID == 0 || !dropped(t.RelationID)) {
		return tableSync{}
	}
	return n.ts
}

func (s *tableSyncs) empty() bool { return s == nil || len(s.byName) == 0 }

// seed decides what to copy from PGRELAY_SNAPSHOT, the slot and the target's
// seed record, and copies it. It returns the replication connection that
// created the slot when it did (streaming goes on from it), and the snapshots
// of tables whose copy was redone under a later one.
func (s *seeder) seed(ctx context.Context) (*source.ReplConn, *tableSyncs, error) {
	d, err := s.decide(ctx)
	if inUse := (*slotInUseError)(nil); errors.As(err, &inUse) {
		client, cerr := source.ReadSlotClient(ctx, s.srcConn, inUse.pid)
		if cerr != nil {
			return nil, nil, cerr
		}
		inUse.client = &client
	}
	if err != nil {
		return nil, nil, err
	}
	seed, syncLSN := d.seed, d.syncs
	switch d.action {
	case seedWithoutCopy:
		cp := s.slot.ConfirmedFlushLSN
		var repl *source.ReplConn
		if !s.slot.Exists {
			var info source.SlotInfo
			if repl, info, err = s.createSlot(ctx, "nothing"); err != nil {
				return repl, nil, err
			}
			cp = info.ConsistentPoint
		}
		if err := s.tgt.StartSeed(ctx, s.cfg.Slot, cp); err != nil {
			return repl, nil, err
		}
		s.log.Info("PGRELAY_SNAPSHOT=never: streaming changes only, no table copy", "from", cp.String())
		return repl, nil, s.tgt.MarkSeeded(ctx, s.cfg.Slot, cp)
	case seedStream:
		if s.cfg.Snapshot == "never" {
			return nil, syncLSN, nil
		}
		if err := s.checkPublished(ctx, d.states); err != nil {
			return nil, nil, err
		}
		done, published, added, optional, err := s.knownTables(ctx, d.states)
		if err != nil || len(added) == 0 {
			return nil, syncLSN, err
		}
		// Published since the copy (ALTER PUBLICATION … ADD TABLE, an
		// unlogged table made SET LOGGED): their rows from before would
		// never arrive otherwise.
		s.log.Info("tables were added to the publication since the snapshot copy: copying them", "tables", strings.Join(added, ", "))
		if err := s.checkTargetTables(ctx, published); err != nil {
			return nil, nil, err
		}
		if !optional {
			return s.copyUnder(ctx, seed, done, syncLSN, "copying the added tables", 0)
		}
		// Under FOR ALL TABLES the stream carries the rows of all but a
		// table made SET LOGGED: not worth waiting long for a lock of
		// another published table (a prepared transaction may hold one
		// until pgrelay streams).
		repl, sync, err := s.copyUnder(ctx, seed, done, syncLSN, "copying the added tables", optionalCopyLockWait)
		if source.IsLockTimeout(err) {
			s.log.Warn("did not copy the tables created while pgrelay was stopped: "+source.LockedHint+"; the stream carries their rows, except those of an unlogged table made SET LOGGED, which the next start copies",
				"tables", strings.Join(added, ", "))
			return nil, syncLSN, nil
		}
		return repl, sync, err
	case seedResume:
		return s.copyUnder(ctx, seed, d.done, syncLSN, "resuming an interrupted copy", 0)
	}
	// A fresh copy: PGRELAY_SNAPSHOT=always, or auto on a target never seeded.
	published, err := source.ListPublication(ctx, s.srcConn, s.cfg.Publication, 30*time.Second)
	if source.IsLockTimeout(err) {
		return nil, nil, fmt.Errorf("%s; run again once it is released: %w", source.LockedHint, err)
	}
	if err != nil {
		return nil, nil, err
	}
	// The copy's connections open while the slot is created.
	n := min(snapshot.WorkersFor(s.cfg.CopyWorkers), max(len(published), 1))
	pool := snapshot.NewConnPool(s.cfg.SourceURL)
	defer pool.Close(ctx)
	pool.Predial(ctx, n)
	if pc, ok := s.tgt.(sink.Preconnecter); ok {
		pc.Preconnect(ctx, n)
	}
	if err := s.checkTargetTables(ctx, published); err != nil {
		return nil, nil, err
	}
	// The old slot's prepared transactions on the target would hold their
	// tables' locks against the copy for ever.
	if err := rollbackPrepared(ctx, s.tgt, s.cfg.Slot, s.log); err != nil {
		return nil, nil, err
	}
	if s.slot.Exists {
		s.log.Warn("dropping the slot to copy the tables anew under a new one", "slot", s.cfg.Slot, "reason", map[bool]string{true: "PGRELAY_SNAPSHOT=always", false: "the target holds no seed for it"}[s.cfg.Snapshot == "always"])
		if err := source.DropSlot(ctx, s.srcConn, s.cfg.Slot); err != nil {
			return nil, nil, err
		}
	}
	repl, info, err := s.createSlot(ctx, "export")
	if err != nil {
		return repl, nil, err
	}
	if err := s.tgt.StartSeed(ctx, s.cfg.Slot, info.ConsistentPoint); err != nil {
		return repl, nil, err
	}
	tables, _, err := s.plan(ctx, info.SnapshotName, nil, 0, pool)
	if err != nil {
		return repl, nil, err
	}
	if err := s.copy(ctx, info.SnapshotName, tables, pool); err != nil {
		return repl, nil, err
	}
	return repl, nil, s.tgt.MarkSeeded(ctx, s.cfg.Slot, info.ConsistentPoint)
}

// seedAction is what a start does to bring the target to a state it can
// stream into.
type seedAction int

const (
	// seedStream: the target is seeded; stream from its position (with
	// PGRELAY_SNAPSHOT=auto, after copying tables the publication gained).
	seedStream seedAction = iota
	// seedWithoutCopy: PGRELAY_SNAPSHOT=never on a target never seeded:
	// record the slot's position and copy nothing.
	seedWithoutCopy
	// seedResume: a copy a crash interrupted: the tables not done are
	// copied again under a new snapshot taken without a slot, and changes to
	// them from before that snapshot are skipped while streaming from the
	// slot.
	seedResume
	// seedFresh: copy every table under a new slot (PGRELAY_SNAPSHOT=always,
	// or auto on a target never seeded).
	seedFresh
)

// seedDecision is what PGRELAY_SNAPSHOT, the slot and the target's seed
// record decide.
type seedDecision struct {
	action seedAction
	seed   sink.Seed
	states []sink.TableState
	// syncs are the tables whose copy was redone under a later snapshot.
	syncs *tableSyncs
	// done are, for seedResume, the tables already copied.
	done map[string]bool
}

// decide reads the target's seed record and table states and decides what
// the start does; an error when it cannot go on.
func (s *seeder) decide(ctx context.Context) (seedDecision, error) {
	seed, found, err := s.tgt.Seed(ctx, s.cfg.Slot)
	if err != nil {
		return seedDecision{}, err
	}
	states, err := s.tgt.TableStates(ctx, s.cfg.Slot)
	if err != nil {
		return seedDecision{}, err
	}
	d := seedDecision{seed: seed, states: states, syncs: newTableSyncs()}
	for _, st := range states {
		if st.SyncLSN == 0 {
			continue
		}
		ts := tableSync{lsn: st.SyncLSN}
		if st.SyncSnapshot != "" {
			snap, err := source.ParseTxidSnapshot(st.SyncSnapshot)
			if err != nil {
				return seedDecision{}, fmt.Errorf("target: pgrelay.table_state of %s.%s: %w", st.Schema, st.Name, err)
			}
			ts.snap = &snap
		}
		d.syncs.add(st.RelationID, st.Schema+"."+st.Name, ts)
	}
	switch {
	case s.cfg.Snapshot == "never" && found, s.cfg.Snapshot == "auto" && found && seed.SnapshotDone:
		d.action = seedStream
		return d, nil
	case s.cfg.Snapshot == "never":
		d.action = seedWithoutCopy
		return d, nil
	case s.cfg.Snapshot == "auto" && found:
		if !s.slot.Exists {
			return seedDecision{}, fmt.Errorf("slot %q is gone but the copy of the tables into the target did not finish: run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", s.cfg.Slot)
		}
		d.action, d.done = seedResume, map[string]bool{}
		for _, st := range states {
			if st.State == sink.TableIndexed {
				d.done[st.Schema+"."+st.Name] = true
			}
		}
		return d, nil
	}
	if s.slot.Exists && s.slot.Active {
		return seedDecision{}, &slotInUseError{slot: s.cfg.Slot, pid: s.slot.ActivePID}
	}
	d.action = seedFresh
	return d, nil
}

// slotInUseError refuses a copy under a new slot while a client streams from
// the slot it replaces (source.ErrSlotInUse: retried).
type slotInUseError struct {
	slot   string
	pid    int
	client *source.SlotClient // who it is, when read (seed reads it)
}

func (e *slotInUseError) Error() string {
	who, find := "", ""
	if e.client != nil {
		who, find = " ("+e.client.String()+")", " ("+e.client.FindHint()+")"
	}
	return fmt.Sprintf("slot %q is in use: a client streams from it through walsender pid %d%s, most likely another pgrelay replicate or migrate; the copy replaces the slot once it is free: stop that client%s: %s",
		e.slot, e.pid, who, find, source.ErrSlotInUse)
}

func (e *slotInUseError) Unwrap() error { return source.ErrSlotInUse }

// copyUnder copies the published tables not in done under a new snapshot;
// streaming from the slot skips their changes that snapshot sees (syncLSN).
//
// The snapshot is exported by a plain transaction, not a temporary slot: a
// slot is created only once every transaction open on the source's server
// has ended, and one of them may be a prepared transaction pgrelay itself
// holds on a target database of the same server, which ends only when the
// stream, which waits for this copy, brings its COMMIT PREPARED. Without a
// slot the snapshot has no exact LSN, so the one read after it is kept with
// its transaction ids, which tell each transaction before that LSN in or out.
//
// lockWait, when not 0, bounds the wait for a published table's lock while the
// tables are read; the error then satisfies source.IsLockTimeout.
func (s *seeder) copyUnder(ctx context.Context, seed sink.Seed, done map[string]bool, syncLSN *tableSyncs, what string, lockWait time.Duration) (*source.ReplConn, *tableSyncs, error) {
	exp, err := source.ConnectPlain(ctx, s.cfg.SourceURL)
	if err != nil {
		return nil, nil, err
	}
	// Open, idle in its transaction, until the copy's workers are done.
	defer exp.Close(context.WithoutCancel(ctx))
	info, err := source.ExportSnapshot(ctx, exp)
	if err != nil {
		return nil, nil, err
	}
	pool := snapshot.NewConnPool(s.cfg.SourceURL)
	defer pool.Close(ctx)
	tables, snap, err := s.plan(ctx, info.Name, done, lockWait, pool)
	if err != nil {
		return nil, nil, err
	}
	s.log.Info(what, "tables_done", len(done), "tables_to_copy", len(tables), "snapshot_lsn", info.LSN.String())
	for _, t := range tables {
		name := t.Table.QualifiedName()
		syncLSN.add(t.Table.RelationID, name, tableSync{lsn: info.LSN, snap: &snap})
		if err := s.tgt.SetTableState(ctx, s.cfg.Slot, sink.TableState{Schema: t.Table.Schema, Name: t.Table.Name, RelationID: t.Table.RelationID, State: sink.TablePending, SyncLSN: info.LSN, SyncSnapshot: snap.String()}); err != nil {
			return nil, nil, err
		}
	}
	if err := s.copy(ctx, info.Name, tables, pool); err != nil {
		return nil, nil, err
	}
	return nil, syncLSN, s.tgt.MarkSeeded(ctx, s.cfg.Slot, seed.ConsistentPoint)
}

func (s *seeder) createSlot(ctx context.Context, snap string) (*source.ReplConn, source.SlotInfo, error) {
	repl := s.repl
	s.repl = nil
	if repl == nil {
		var err error
		if repl, err = source.Connect(ctx, s.cfg.SourceURL); err != nil {
			return nil, source.SlotInfo{}, err
		}
	}
	stopWatch := s.watchSlotCreation(ctx)
	info, err := repl.CreateSlot(ctx, s.cfg.Slot, source.SlotOptions{TwoPhase: s.twoPhase, Snapshot: snap})
	stopWatch()
	if err != nil {
		repl.Close(context.WithoutCancel(ctx))
		return nil, source.SlotInfo{}, err
	}
	s.log.Info("created slot", "slot", s.cfg.Slot, "consistent_point", info.ConsistentPoint.String(), "two_phase", s.twoPhase)
	return repl, info, nil
}

// optionalCopyLockWait bounds the wait for a published table's lock when the
// tables to copy would arrive through the stream anyway (see seed).
const optionalCopyLockWait = 10 * time.Second

// slotWaitLogAfter is how long slot creation may take before pgrelay says
// what it waits for, and how often it says it again.
var slotWaitLogAfter = 5 * time.Second

// watchSlotCreation logs, while a slot is being created, the transactions the
// server waits for: a logical slot is consistent only once every transaction
// running when it started has ended, prepared ones included, and until then
// CREATE_REPLICATION_SLOT does not return. The returned func stops the watch.
func (s *seeder) watchSlotCreation(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(slotWaitLogAfter)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var prepared, running []string
			c, err := source.ConnectPlain(ctx, s.cfg.SourceURL)
			if err == nil {
				prepared, running, err = source.OpenTransactions(ctx, c)
				c.Close(context.WithoutCancel(ctx))
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("creating the slot is waiting for transactions on the source to end", "waited", time.Since(start).Round(time.Second), "error", err.Error())
			} else {
				s.log.Warn("creating the slot is waiting for the source's open transactions to end (commit or roll back prepared transactions left behind; one named pgrelay_… is held by a pgrelay replicating into a database of this server and ends when its source's does)",
					"waited", time.Since(start).Round(time.Second), "prepared", prepared, "running", running)
			}
			t.Reset(30 * time.Second)
		}
	}()
	return func() { cancel(); <-done }
}

// plan reads the published tables as the snapshot sees them, installs them in
// the catalog and creates them on the target. Tables in skip are left out. It
// also returns the snapshot's transaction ids (txid_current_snapshot()).
// lockWait, when not 0, bounds the wait for a published table's lock (its
// size is read): the error then satisfies source.IsLockTimeout.
//
// It reads on a connection of pool, which it puts back for the copy.
func (s *seeder) plan(ctx context.Context, snapshotName string, skip map[string]bool, lockWait time.Duration, pool *snapshot.ConnPool) ([]snapshot.Table, source.TxidSnapshot, error) {
	c, err := pool.Get(ctx)
	if err != nil {
		return nil, source.TxidSnapshot{}, err
	}
	tables, snap, err := s.planOn(ctx, c, snapshotName, skip, lockWait)
	if err != nil {
		c.Close(ctx)
		return nil, snap, err
	}
	pool.Put(c)
	return tables, snap, nil
}

func (s *seeder) planOn(ctx context.Context, c *snapshot.Conn, snapshotName string, skip map[string]bool, lockWait time.Duration) ([]snapshot.Table, source.TxidSnapshot, error) {
	var snap source.TxidSnapshot
	if err := c.Import(ctx, snapshotName); err != nil {
		return nil, snap, err
	}
	conn := c.Pgx()
	// Its locks (a table's size is read under one) go with the transaction:
	// a worker takes each table's when it copies it.
	defer source.EndTransaction(context.WithoutCancel(ctx), conn)
	if lockWait > 0 {
		if err := source.SetLockTimeout(ctx, conn, lockWait); err != nil {
			return nil, snap, err
		}
	}
	snap, snapText, err := source.SnapshotXids(ctx, conn, snapshotName)
	s.log.Debug("the copy's snapshot", "snapshot", snapshotName, "txid_snapshot", snapText)
	if err != nil {
		return nil, snap, err
	}
	s.log.Info("reading the published tables' definitions", "publication", s.cfg.Publication)
	published, err := source.ReadPublishedTables(ctx, conn, s.cfg.Publication, s.major)
	if err != nil {
		return nil, snap, err
	}
	var out []snapshot.Table
	started := time.Now()
	steps := &snapshot.Steps{Log: s.log, What: "preparing the copy: reading the tables' definitions", Total: len(published)}
	for from := 0; from < len(published); from += factsBatch {
		steps.Done(from)
		batch := published[from:min(from+factsBatch, len(published))]
		var facts map[schema.QualifiedName]schema.TableFacts
		if bf, ok := s.facts.(schema.BatchFactReader); ok {
			names := make([]schema.QualifiedName, 0, len(batch))
			for _, pt := range batch {
				names = append(names, schema.QualifiedName{Schema: pt.Relation.Namespace, Name: pt.Relation.Name})
			}
			if facts, err = bf.TableFactsOf(ctx, names); err != nil {
				return nil, snap, err
			}
		}
		for _, pt := range batch {
			if skip[pt.Relation.Namespace+"."+pt.Relation.Name] {
				continue
			}
			var t *schema.Table
			if f, ok := facts[schema.QualifiedName{Schema: pt.Relation.Namespace, Name: pt.Relation.Name}]; ok {
				t, _, _, err = s.cat.ApplyFacts(ctx, pt.Relation, f)
			} else {
				t, _, _, err = s.cat.Apply(ctx, pt.Relation)
			}
			if err != nil {
				return nil, snap, err
			}
			out = append(out, snapshot.Table{Table: t, Published: pt, Clean: true})
		}
	}
	s.log.Debug("read the tables' definitions", "tables", len(out), "took", time.Since(started).Round(time.Millisecond))
	started = time.Now()
	steps = &snapshot.Steps{Log: s.log, What: "preparing the copy: creating the target tables", Total: len(out)}
	// Their target rows are replaced: the columns are the publication's now.
	var recopies []*schema.Table
	for _, i := range rowTypesFirst(out) {
		recopy := *out[i].Table
		recopy.Recopy = true
		recopies = append(recopies, &recopy)
	}
	s.log.Info("preparing the copy: creating the target tables", "tables", len(recopies))
	if te, ok := s.tgt.(sink.TablesEnsurer); ok {
		// Created in parallel where they can be (PostgreSQL).
		if err := te.EnsureTables(ctx, recopies); err != nil {
			return nil, snap, err
		}
	} else {
		for n, t := range recopies {
			steps.Done(n)
			if err := s.tgt.EnsureTable(ctx, t, nil); err != nil {
				return nil, snap, err
			}
		}
	}
	s.log.Debug("created the target tables", "tables", len(out), "took", time.Since(started).Round(time.Millisecond))
	return out, snap, nil
}

// factsBatch is how many tables' definitions are read from the source in one
// query.
const factsBatch = 1000

// rowTypesFirst orders the tables to create: those whose row type a column of
// another table uses before the others, so that the target's CREATE TABLE
// makes the row type, not a composite type standing in for it.
func rowTypesFirst(tables []snapshot.Table) []int {
	used := map[string]bool{}
	for _, t := range tables {
		for _, typ := range t.Table.Types {
			if typ.RowType {
				used[typ.Namespace+"."+typ.Name] = true
			}
		}
	}
	order := make([]int, 0, len(tables))
	for pass := 0; pass < 2; pass++ {
		for i, t := range tables {
			if used[t.Table.Schema+"."+t.Table.Name] == (pass == 0) {
				order = append(order, i)
			}
		}
	}
	return order
}

// copy copies tables under the exported snapshot, on connections of pool.
func (s *seeder) copy(ctx context.Context, snapshotName string, tables []snapshot.Table, pool *snapshot.ConnPool) error {
	scfg := snapshot.Config{Slot: s.cfg.Slot, Workers: s.cfg.CopyWorkers, Log: s.log,
		SharedCores: s.sharedCores, Progress: s.progress}
	var idx schema.BatchIndexReader
	if r, ok := s.facts.(schema.BatchIndexReader); ok {
		idx = r
	}
	res, err := snapshot.Copy(ctx, scfg, snapshot.Source{URL: s.cfg.SourceURL, SnapshotName: snapshotName, Major: s.major, Pool: pool}, tables, s.tgt, idx)
	if err == nil && s.copied != nil {
		s.copied(res)
	}
	return err
}

// checkTargetTables refuses a fresh copy into target tables that hold rows
// pgrelay did not put there: the copy would replace them (it truncates each
// table it loads). Tables pgrelay created (pgrelay.relation, also after
// PGRELAY_SNAPSHOT=always) and empty ones (a schema loaded with pg_dump -s)
// are fine.
func (s *seeder) checkTargetTables(ctx context.Context, published []source.PublishedName) error {
	names := make([]schema.QualifiedName, len(published))
	var inMeta []string
	meta := s.tgt.MetadataSchema()
	for i, p := range published {
		names[i] = schema.QualifiedName{Schema: p.Schema, Name: p.Name}
		if p.Schema == meta {
			inMeta = append(inMeta, pgx.Identifier{p.Schema, p.Name}.Sanitize())
		}
	}
	// Tables pgrelay keeps its metadata in are never "in the way" to be
	// emptied: a source table of that schema cannot be replicated at all.
	// (Preflight refuses them; the publication may have changed since.)
	if len(inMeta) > 0 {
		return &source.MetadataSchemaError{Schema: meta, Tables: inMeta,
			LeaveOut: fmt.Sprintf("leave them out of publication %s (PGRELAY_TABLES)", pgx.Identifier{s.cfg.Publication}.Sanitize())}
	}
	existing, err := s.tgt.ForeignTables(ctx, names)
	if err != nil {
		return fmt.Errorf("target: look for tables in the way of the copy: %w", err)
	}
	var occupied []string
	var empty []source.PublishedName // existing, without rows: they must take the columns
	for _, t := range existing {
		if t.HasRows {
			occupied = append(occupied, t.Quoted)
		} else {
			empty = append(empty, source.PublishedName{Schema: t.Name.Schema, Name: t.Name.Name})
		}
	}
	// Both kinds of problem in one refusal, not one per run.
	lackErr := s.checkTargetColumns(ctx, empty)
	if len(occupied) == 0 {
		return lackErr
	}
	inTheWay := &tablesInTheWayError{tables: occupied}
	var lacking *tablesInTheWayError
	if errors.As(lackErr, &lacking) {
		inTheWay.lacking = lacking.lacking
	} else if lackErr != nil {
		return lackErr
	}
	return inTheWay
}

// checkTargetColumns refuses a copy into empty target tables made beforehand
// (not by pgrelay) that lack a column the source publishes: the copy would
// fail at that table, after the slot was made, with PostgreSQL's bare
// "column does not exist".
func (s *seeder) checkTargetColumns(ctx context.Context, tables []source.PublishedName) error {
	if len(tables) == 0 {
		return nil
	}
	published, err := source.PublishedColumns(ctx, s.srcConn, s.cfg.Publication, s.major, tables)
	if err != nil {
		return err
	}
	names := make([]schema.QualifiedName, len(tables))
	for i, t := range tables {
		names[i] = schema.QualifiedName{Schema: t.Schema, Name: t.Name}
	}
	columns, err := s.tgt.TableColumns(ctx, names)
	if err != nil {
		return fmt.Errorf("target: read the columns of the tables the copy loads: %w", err)
	}
	have := map[source.PublishedName]map[string]bool{}
	for t, cols := range columns {
		k := source.PublishedName{Schema: t.Schema, Name: t.Name}
		have[k] = map[string]bool{}
		for _, c := range cols {
			have[k][c] = true
		}
	}
	var lacking []string
	for _, t := range tables {
		var missing []string
		for _, c := range published[t] {
			if !have[t][c] {
				missing = append(missing, pgquote.Name(c))
			}
		}
		if len(missing) > 0 {
			lacking = append(lacking, fmt.Sprintf("%s lacks %s", pgquote.Name(t.Schema, t.Name), strings.Join(missing, ", ")))
		}
	}
	if len(lacking) > 0 {
		return &tablesInTheWayError{lacking: lacking}
	}
	return nil
}

// tablesInTheWayError refuses a copy into target tables holding rows pgrelay
// did not copy, or, made beforehand, lacking published columns.
type tablesInTheWayError struct {
	tables  []string // holding rows
	lacking []string // empty, "x lacks "a", "b"": made beforehand without published columns
}

// inTheWayListed is how many tables the error names; it counts the others.
const inTheWayListed = 10

func (e *tablesInTheWayError) Error() string {
	var parts []string
	if len(e.tables) > 0 {
		names := strings.Join(e.tables[:min(len(e.tables), inTheWayListed)], ", ")
		if n := len(e.tables) - inTheWayListed; n > 0 {
			names += fmt.Sprintf(" and %d more", n)
		}
		parts = append(parts, fmt.Sprintf("target tables %s already hold rows that pgrelay did not copy, and the snapshot copy would replace them: empty or drop them (also after pgrelay teardown, which keeps replicated tables), or point PGRELAY_TARGET_URL at another database", names))
	}
	if len(e.lacking) > 0 {
		lacking := strings.Join(e.lacking[:min(len(e.lacking), inTheWayListed)], "; ")
		if n := len(e.lacking) - inTheWayListed; n > 0 {
			lacking += fmt.Sprintf("; and %d more tables lack columns", n)
		}
		parts = append(parts, fmt.Sprintf("target tables made beforehand lack columns the source publishes (%s): add them (ALTER TABLE … ADD COLUMN), or drop the tables so pgrelay creates them", lacking))
	}
	return strings.Join(parts, "; also, ")
}

// knownTables returns the published tables the target already has complete
// — copied by the snapshot (pgrelay.table_state) or created from the stream
// (pgrelay.relation, by name or source OID) —, the publication's tables, and
// the names of those the target has not (under FOR ALL TABLES, of those that
// hold rows), quoted for a log line.
func (s *seeder) knownTables(ctx context.Context, states []sink.TableState) (done map[string]bool, published []source.PublishedName, added []string, allTables bool, err error) {
	allTables, err = source.PublicationAllTables(ctx, s.srcConn, s.cfg.Publication)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if allTables && len(states) == 0 {
		// Seeded without a copy (PGRELAY_SNAPSHOT=never): the target's
		// tables were loaded some other way, and those cannot be told from
		// a table made SET LOGGED since, which is left to the stream.
		return nil, nil, nil, true, nil
	}
	published, err = source.ListPublication(ctx, s.srcConn, s.cfg.Publication, 30*time.Second)
	if source.IsLockTimeout(err) {
		s.log.Warn("could not check for tables added to the publication since the copy: "+source.LockedHint, "publication", s.cfg.Publication)
		return nil, nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, nil, false, err
	}
	// By OID where the target has it: a name is another table's once the
	// table copied under it was renamed or dropped.
	known := map[string]bool{}
	knownOID := map[uint32]bool{}
	for _, st := range states {
		if st.RelationID != 0 {
			knownOID[st.RelationID] = true
		} else {
			known[st.Schema+"."+st.Name] = true
		}
	}
	relations, err := s.tgt.KnownRelations(ctx)
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("target: %w", err)
	}
	for _, k := range relations {
		switch {
		case k.Slot != s.cfg.Slot && k.Slot != "":
		case k.RelationID != 0:
			knownOID[k.RelationID] = true
		default:
			known[k.Schema+"."+k.Name] = true
		}
	}
	done = map[string]bool{}
	for _, p := range published {
		name := p.Schema + "." + p.Name
		if known[name] || knownOID[p.OID] {
			done[name] = true
			continue
		}
		if allTables {
			// A table joins a FOR ALL TABLES publication by being created,
			// and the stream then carries all its rows; but an unlogged
			// table made SET LOGGED joins with the rows it has. Copy the
			// unknown ones that hold rows (a copy is right either way: the
			// stream's changes it already holds are skipped).
			empty, err := s.emptyTable(ctx, p)
			if err != nil {
				return nil, nil, nil, false, err
			}
			if empty {
				done[name] = true
				continue
			}
		}
		added = append(added, pgquote.Name(p.Schema, p.Name))
	}
	return done, published, added, allTables, nil
}

// emptyTable reports whether the source table p holds no row now. A table
// locked for long counts as not empty.
func (s *seeder) emptyTable(ctx context.Context, p source.PublishedName) (bool, error) {
	has, err := source.HasRows(ctx, s.srcConn, p, 10*time.Second)
	if source.IsLockTimeout(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("source: read %s.%s: %w", p.Schema, p.Name, err)
	}
	return !has, nil
}

// checkPublished stops a start when the publication publishes a copied table
// otherwise than when it was copied: another row filter, other partitions of
// a table published through its root, or another level of its partition tree
// (publish_via_partition_root switched). The copied rows then do not match what
// the publication publishes, and no change in the stream repairs that.
func (s *seeder) checkPublished(ctx context.Context, states []sink.TableState) error {
	left, err := publicationUnchanged(ctx, s.srcConn, s.cfg.Publication, s.major, states)
	for _, name := range left {
		s.log.Warn(leftPublicationMsg, "table", name, "publication", s.cfg.Publication)
	}
	if source.IsLockTimeout(err) {
		s.log.Warn("could not check whether the publication changed since the copy: "+source.LockedHint, "publication", s.cfg.Publication)
		return nil
	}
	return err
}

// leftPublicationMsg is said of a copied table the publication no longer
// publishes: nothing in the stream will say when it is added back.
const leftPublicationMsg = "a copied table is no longer published: its target table is not kept up to date, and if it is added back, the changes made while it was out never reach the target; copy again then (PGRELAY_SNAPSHOT=always), see docs/limitations.md"

// publicationUnchanged compares what publication publishes of each copied
// table now with what it published when the table was copied (states), on
// conn, and returns an error naming the tables it publishes otherwise, and
// the copied tables it no longer publishes (left).
func publicationUnchanged(ctx context.Context, conn *pgx.Conn, publication string, major int, states []sink.TableState) (left []string, err error) {
	// By the table's OID where it is stored: renamed since, it is the same
	// table; another that took its name is not.
	stored, storedOID := map[string]string{}, map[uint32]string{}
	for _, st := range states {
		switch {
		case st.PublishedAs == "":
		case st.RelationID != 0:
			storedOID[st.RelationID] = st.PublishedAs
		default:
			stored[st.Schema+"."+st.Name] = st.PublishedAs
		}
	}
	if len(stored)+len(storedOID) == 0 {
		return nil, nil
	}
	var published []source.PublishedTable
	err = source.WithLockTimeout(ctx, conn, 10*time.Second, func(tx pgx.Tx) error {
		var err error
		published, err = source.ReadPublishedShapes(ctx, tx, publication, major)
		return err
	})
	if err != nil {
		return nil, err
	}
	var changed []string
	// What is published, by OID and name: the copied tables not in it left.
	foundOID, found := map[uint32]bool{}, map[string]bool{}
	for _, pt := range published {
		name := pt.Relation.Namespace + "." + pt.Relation.Name
		foundOID[pt.Relation.RelationID], found[name] = true, true
		was, ok := storedOID[pt.Relation.RelationID]
		if !ok {
			if was, ok = stored[name]; !ok {
				continue
			}
		}
		if now, differs := shapeDiffers(was, pt.Shape()); differs {
			changed = append(changed, fmt.Sprintf("%s (copied with %s; now %s)", name, was, now))
		}
	}
	changed = append(changed, source.PartitionLevelChanges(published, func(oid uint32, name string) bool {
		_, byOID := storedOID[oid]
		_, byName := stored[name]
		return oid != 0 && byOID || byName
	})...)
	for _, st := range states {
		name := st.Schema + "." + st.Name
		switch {
		case st.PublishedAs == "":
		case st.RelationID != 0 && !foundOID[st.RelationID], st.RelationID == 0 && !found[name]:
			left = append(left, name)
		}
	}
	slices.Sort(left)
	if len(changed) == 0 {
		return left, nil
	}
	return left, &publicationChangedError{publication: publication, changed: changed}
}

// shapeDiffers compares a table's stored Shape with its shape now, which it
// returns as compared: without the column list when the stored one was
// recorded before shapes held it.
func shapeDiffers(was, now string) (string, bool) {
	if !strings.Contains(was, source.ShapeColumnList) {
		now, _, _ = strings.Cut(now, source.ShapeColumnList)
	}
	return now, was != now
}

// publicationChangedError names the copied tables a publication now
// publishes otherwise than when they were copied.
type publicationChangedError struct {
	publication string
	changed     []string
}

func (e *publicationChangedError) Error() string {
	return fmt.Sprintf("publication %q publishes tables otherwise than when they were copied, so the target holds other rows than it publishes: %s; run pgrelay verify, and copy again with PGRELAY_SNAPSHOT=always",
		e.publication, strings.Join(e.changed, "; "))
}

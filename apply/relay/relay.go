// Package relay is pgrelay's control plane: the commands replicate and
// migrate (a session: preflight, the single-instance lock, the seed decisions
// and the snapshot copy, then the stream with migrate's catch-up marker; and
// new sessions with backoff after what a retry cures), status, teardown,
// verify and tail. It reaches the target only through the capabilities of
// package sink (sink.Target and the optional ones), so that every target kind
// runs under the same control flow; cmd/pgrelay configures it, picks the sink
// and renders what it returns.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/pgrelay/pgrelay/apply"
	"github.com/pgrelay/pgrelay/internal/pgconnstr"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// markerPrefix is the prefix of the logical messages `pgrelay migrate` emits on
// the source to know when it has caught up.
const markerPrefix = "pgrelay.caught_up"

// migrateAttempts is how many sessions in a row `pgrelay migrate` tries (with
// backoff 1, 2, 4, 8 s) before it gives up on a server that stays unreachable;
// `pgrelay replicate` keeps trying.
const migrateAttempts = 5

// Target is how the relay reaches the target; cmd/pgrelay picks it from the
// target URL's scheme.
type Target struct {
	// Open connects a new sink to the target, for what mode says.
	Open func(ctx context.Context, mode OpenMode) (sink.Target, error)
	// Local says the target's server runs on this machine, sharing its cores.
	Local bool
}

// OpenMode says what a sink is opened for.
type OpenMode int

const (
	// ForApply: replicate and migrate, which write the tables with the
	// target's replica settings (PostgreSQL's session_replication_role).
	ForApply OpenMode = iota
	// ForInspection: status, verify and teardown, and the explanation of a
	// read-only target, which read what pgrelay keeps on the target and
	// remove it: they need no more privilege than that, and apply nothing.
	ForInspection
)

// Relay runs pgrelay's commands on one source and one target.
type Relay struct {
	cfg    *Config
	target Target
	log    *slog.Logger
	mon    *Monitor
	ev     events // operator events (events.go)

	// Progress, when set, shows the snapshot copy's progress (a terminal).
	Progress io.Writer

	// finished is the report of the end of the migrate that caught up.
	finished *sink.CutoverReport

	getenv func(string) (string, bool)          // os.LookupEnv (GOMAXPROCS, see streamProcs)
	now    func() time.Time                     // time.Now
	after  func(time.Duration) <-chan time.Time // time.After: a retry's backoff
}

// New validates cfg and returns a relay that logs on log. A relay for tail
// needs no target.
func New(cfg Config, target Target, log *slog.Logger) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Relay{cfg: &cfg, target: target, log: log, mon: newMonitor(),
		getenv: os.LookupEnv, now: time.Now, after: time.After}, nil
}

// Monitor is what /metrics and /healthz show of the relay's sessions.
func (r *Relay) Monitor() *Monitor { return r.mon }

// sharedCores says the source and the target both run on this machine.
func (r *Relay) sharedCores() bool {
	return pgconnstr.OnThisMachine(r.cfg.SourceURL) && r.target.Local
}

// Replicate runs `pgrelay replicate`: the same start as Migrate, then the
// stream until ctx ends (a signal), which is a clean stop (nil).
func (r *Relay) Replicate(ctx context.Context) error {
	if err := r.checkSpillDir(); err != nil {
		return err
	}
	_, err := r.run(ctx, false, r.session)
	return err
}

// checkSpillDir makes sure, before anything starts, that a transaction
// larger than the memory bound can spill where PGRELAY_SPILL_DIR says.
func (r *Relay) checkSpillDir() error {
	if err := apply.CheckSpillDir(r.cfg.SpillDir); err != nil {
		where := fmt.Sprintf("PGRELAY_SPILL_DIR=%q", r.cfg.SpillDir)
		if r.cfg.SpillDir == "" {
			where = fmt.Sprintf("the spill directory %s (PGRELAY_SPILL_DIR unset)", apply.DefaultSpillDir())
		}
		return &SettingsError{Err: fmt.Errorf("%s: transactions larger than memory cannot spill there: %v; set PGRELAY_SPILL_DIR to a writable directory", where, err)}
	}
	return nil
}

// Migrate runs `pgrelay migrate`: copy the tables when the target is not
// seeded, catch up with the source, set the sequences and carry the rest of
// the schema, stop. It returns where it caught up and its report. A signal
// ends it with ErrMigrateInterrupted.
func (r *Relay) Migrate(ctx context.Context) (*Migration, error) {
	r.finished = nil
	if err := r.checkSpillDir(); err != nil {
		return nil, err
	}
	caughtUp, err := r.run(ctx, true, r.session)
	if err != nil {
		return nil, err
	}
	return &Migration{CaughtUp: caughtUp, Report: r.finished}, nil
}

// attempt is one session of a run; migrate's returns where it caught up.
type attempt func(ctx context.Context, migrate bool) (caughtUp source.LSN, err error)

// run runs one replicate or migrate command: a session, and new sessions
// with backoff after errors a retry can cure (a server gone away, the slot
// busy), until the command is done or told to stop.
func (r *Relay) run(ctx context.Context, migrate bool, session attempt) (caughtUp source.LSN, err error) {
	defer r.ended(migrate, r.begin(), &caughtUp, &err)
	backoff := time.Second
	failures := 0 // in a row, without a session that reached streaming
	// A value the target refused, again and again at the same change, does
	// not go away by itself (a retry is for a type that changed on the
	// source, which a new session reads again).
	lastRefused, refusedInARow := "", 0
	for {
		start := r.now()
		r.mon.sessionStarted()
		caughtUp, err := session(ctx, migrate)
		// A read-only target refused a write: said with the database and
		// the setting that makes it so, and retried.
		err = r.explainReadOnly(ctx, err)
		streamed := r.mon.streamOK.Load()
		r.mon.sessionEnded(err)
		if streamed {
			// That session got through: the next trouble starts afresh.
			failures, backoff = 0, time.Second
		}
		if err == nil {
			return caughtUp, nil
		}
		// A signal: the session's error is the cancellation, or what it
		// caused (a COPY whose connection was cut), not a fault to retry.
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || retryable(err)) {
			return 0, r.interrupted(migrate, streamed)
		}
		if !retryable(err) {
			return 0, refusedHint(err)
		}
		if msg := err.Error(); valueRefused(err) && msg == lastRefused {
			refusedInARow++
		} else if valueRefused(err) {
			lastRefused, refusedInARow = msg, 1
		} else {
			lastRefused, refusedInARow = "", 0
		}
		if refusedInARow >= refusedAttempts {
			return 0, refusedHint(fmt.Errorf("%w (the target refused this change in %d sessions in a row: it does not go away by itself)", err, refusedInARow))
		}
		failures++
		if migrate && failures >= migrateAttempts {
			// A job, not a service: a server that stays away is an error.
			return 0, fmt.Errorf("%w (gave up after %d attempts)", err, failures)
		}
		if r.now().Sub(start) > time.Minute {
			backoff = time.Second
		}
		r.ev.n.Retrying(err)
		r.log.Warn("will retry", "in", backoff, "error", err.Error())
		select {
		case <-ctx.Done():
			return 0, r.interrupted(migrate, false)
		case <-r.after(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// interrupted ends a run a signal stopped: migrate with ErrMigrateInterrupted
// (exit 1), replicate with nil (exit 0), saying so when it stopped before
// streaming (in the snapshot copy, or waiting to retry), where nothing else
// does.
func (r *Relay) interrupted(migrate, streamed bool) error {
	if migrate {
		return ErrMigrateInterrupted
	}
	if !streamed {
		r.log.Info("stopped by a signal before streaming (during the snapshot copy, if one was running, or waiting to retry): what was copied is kept; run pgrelay replicate again to resume")
	}
	return nil
}

// refusedHint adds what to do to the error of a change the target refused: a
// value it cannot take or a constraint the row breaks (sink.ErrChangeRefused),
// which only a person can settle.
func refusedHint(err error) error {
	var ce *sink.ChangeError
	if !errors.As(err, &ce) || !errors.Is(err, sink.ErrChangeRefused) {
		return err
	}
	const fix = "make it take it (a constraint, unique index, trigger or column type the source does not have, or a value it cannot hold), then run pgrelay again"
	if ce.Op == sink.OpChangeSchema {
		// A table's DDL from the stream (no LSN of its own), not a copied
		// row: a new run makes it again, and copies nothing by itself.
		return fmt.Errorf("%w; the target refused this schema change: make it take it by hand on the target table, then run pgrelay again, which resumes with this source transaction; or copy again with PGRELAY_SNAPSHOT=always (a column type changed on the source with ALTER … TYPE … USING is converted on the target with a plain cast: docs/limitations.md)", err)
	}
	if ce.LSN == 0 {
		// A row of the snapshot copy: no source transaction to resume with.
		return fmt.Errorf("%w; the target refused a row of the snapshot copy: %s, which copies that table again", err, fix)
	}
	return fmt.Errorf("%w; the target refused this change: %s, which resumes with this source transaction (nothing from it on was acknowledged to the source)", err, fix)
}

// refusedAttempts is how many sessions in a row may fail on the same value
// the target refuses before pgrelay stops.
const refusedAttempts = 5

// valueRefused tells a target's answer that a change's value is invalid or
// breaks a constraint (sink.ErrChangeRefused), as opposed to a connection
// that failed.
func valueRefused(err error) bool { return errors.Is(err, sink.ErrChangeRefused) }

// retryable tells the errors after which a new session may succeed: lost or
// refused connections, a busy slot (source.Retryable), what a sink marks
// retryable, a read-only target (an operator's fix away); never what source.Fatal calls fatal, nor a local file (the spill
// directory) that cannot be written (its errno would pass for a net.Error):
// a person must act.
func retryable(err error) bool {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) || source.Fatal(err) {
		return false
	}
	return errors.Is(err, sink.ErrRetryable) || errors.Is(err, sink.ErrReadOnly) || source.Retryable(err)
}

func (c *Config) sourceConn() source.ConnConfig {
	return source.ConnConfig{
		URL: c.SourceURL, Slot: c.Slot, Publication: c.Publication, Tables: c.Tables,
		Streaming: c.Streaming, TwoPhase: c.TwoPhase, StatusInterval: c.StatusInterval,
	}
}

// session is one run: preflight, seed the target when needed, then stream
// until stopped (replicate) or caught up (migrate).
func (r *Relay) session(ctx context.Context, migrate bool) (caughtUp source.LSN, err error) {
	cfg, log := r.cfg, r.log
	cc := cfg.sourceConn()
	cc.ReplaceSlot = cfg.Snapshot == "always"
	// Preflight checks a validated copy (Validate fills in defaults); cc
	// stays as configured for the stream's options.
	pcc := cc
	if err := pcc.Validate(); err != nil {
		return 0, err
	}
	// The target first: a target pgrelay cannot reach must not leave a
	// publication behind on the source.
	conns, err := r.openSession(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { conns.close(ctx) }()
	tgt, srcConn := conns.tgt, conns.src
	pcc.MetadataSchema = tgt.MetadataSchema()
	if sr, ok := tgt.(sink.StatsReporter); ok {
		r.mon.setSink(sr)
	}
	if err := r.checkTarget(ctx, srcConn, tgt); err != nil {
		return 0, err
	}
	// The target's lock and set-up (its metadata schema's migrations) run
	// while the source is checked: two chains of round trips at once.
	targetCtx, cancelTarget := context.WithCancel(ctx)
	defer cancelTarget()
	targetDone := make(chan error, 1)
	go func() {
		if err := lockSlot(targetCtx, tgt, cfg.Slot, log); err != nil {
			targetDone <- err
			return
		}
		_, err := tgt.Setup(targetCtx, cfg.Slot)
		targetDone <- err
	}()
	targetErr := sync.OnceValue(func() error { return <-targetDone })
	// A publication is created only once the target is ready for the data,
	// and only when it can help: a slot the target was seeded from cannot
	// send what was written while its publication was missing.
	pcc.BeforeCreatePublication = func(ctx context.Context) error {
		if err := targetErr(); err != nil {
			return err
		}
		if cfg.Snapshot == "always" {
			return nil
		}
		_, seeded, err := tgt.Seed(ctx, cfg.Slot)
		if err == nil && seeded {
			err = &source.PublicationDroppedError{Publication: cfg.Publication, Slot: cfg.Slot}
		}
		return err
	}
	pre, err := source.PreflightOn(ctx, srcConn, conns.replErr, pcc)
	if err != nil {
		// A wait for another pgrelay's lock ends with it.
		cancelTarget()
		targetErr()
		return 0, err
	}
	if pre.PublicationCreated {
		log.Info("created publication", "publication", cfg.Publication)
		err := source.MarkPublication(ctx, srcConn, cfg.Publication)
		if err == nil {
			err = targetErr()
		} else {
			cancelTarget()
			targetErr()
		}
		if err != nil {
			// What this session created does not stay behind when the
			// target cannot take the data.
			if derr := source.DropPublication(context.WithoutCancel(ctx), srcConn, cfg.Publication); derr != nil {
				log.Warn("could not drop the publication this session created", "publication", cfg.Publication, "error", derr.Error())
			} else {
				log.Info("dropped the publication this session created", "publication", cfg.Publication)
			}
			return 0, err
		}
	} else if err := targetErr(); err != nil {
		return 0, err
	}
	if pre.KeylessUnknown {
		log.Warn("could not check the published tables for a missing replica identity: "+source.LockedHint, "publication", cfg.Publication)
	}
	if len(pre.Unpublished) > 0 {
		log.Warn("the publication does not publish "+strings.Join(pre.Unpublished, ", ")+": the target keeps rows the source changes or removes that way, and a row inserted again with the same key then stops apply; pgrelay verify reports such rows as differences",
			"publication", cfg.Publication)
	}
	if len(pre.Keyless) > 0 {
		log.Warn("published tables without a replica identity: UPDATE and DELETE on them now FAIL ON THE SOURCE (cannot update table because it does not have a replica identity and publishes updates); give each a primary key or run ALTER TABLE … REPLICA IDENTITY FULL, or leave them out with PGRELAY_TABLES",
			"publication", cfg.Publication, "tables", strings.Join(pre.Keyless, ", "))
	}
	r.checkWAL(ctx, srcConn)

	twoPhase := pre.ServerMajor >= 15 && cfg.TwoPhase != "off" && canPrepare(tgt)
	if cfg.TwoPhase == "on" && !twoPhase {
		if pre.ServerMajor < 15 {
			return 0, fmt.Errorf("PGRELAY_TWO_PHASE=on: the source is PostgreSQL %d; two-phase decoding needs 15 or newer: set PGRELAY_TWO_PHASE=auto", pre.ServerMajor)
		}
		return 0, errors.New("PGRELAY_TWO_PHASE=on: the target cannot hold prepared transactions: set max_prepared_transactions > 0 on it and restart it, or set PGRELAY_TWO_PHASE=auto")
	}
	// Prepared transactions stay two-phase only if the slot decodes them so.
	if pre.Slot.Exists && pre.ServerMajor >= 15 && pre.Slot.TwoPhase && !twoPhase && cfg.Snapshot != "always" {
		if cfg.TwoPhase == "off" {
			return 0, fmt.Errorf("PGRELAY_TWO_PHASE=off, but slot %q was created decoding prepared transactions at PREPARE, which cannot be turned off: set PGRELAY_TWO_PHASE=auto, or run pgrelay once with PGRELAY_SNAPSHOT=always, which makes a new slot and copies the tables anew", cfg.Slot)
		}
		return 0, fmt.Errorf("slot %q decodes prepared transactions at PREPARE, but the target cannot hold prepared transactions: set max_prepared_transactions > 0 on the target, or run pgrelay once with PGRELAY_SNAPSHOT=always, which makes a new slot and copies the tables anew", cfg.Slot)
	}

	facts := schema.NewSourceFacts(srcConn)
	cat := schema.NewCatalog(facts)
	// Asked from the goroutine that applies, like the catalog's facts.
	if rl, ok := tgt.(sink.RelationLocator); ok {
		if namer, ok := facts.(schema.RelationNamer); ok {
			rl.LocateRelations(namer, log)
		}
	}
	if err := r.carryPreData(ctx, tgt, srcConn); err != nil {
		return 0, err
	}
	sd := &seeder{cfg: cfg, log: log, tgt: tgt, cat: cat, facts: facts, major: pre.ServerMajor, twoPhase: twoPhase, slot: pre.Slot, srcConn: srcConn,
		repl: conns.takeRepl(), progress: r.Progress, sharedCores: r.sharedCores()}
	sd.copied = r.ev.copiedTables
	repl, syncLSN, err := sd.seed(ctx)
	if repl == nil {
		// Not taken for a new slot: the stream's.
		repl, sd.repl = sd.repl, nil
	}
	if err != nil {
		if repl != nil {
			repl.Close(context.WithoutCancel(ctx))
		}
		var inTheWay *tablesInTheWayError
		if errors.As(err, &inTheWay) && pre.PublicationCreated {
			// Refused before anything was copied: the publication this
			// session created does not stay behind.
			if derr := source.DropPublication(context.WithoutCancel(ctx), srcConn, cfg.Publication); derr != nil {
				log.Warn("could not drop the publication created for the refused copy", "publication", cfg.Publication, "error", derr.Error())
			} else {
				log.Info("dropped the publication created for the refused copy", "publication", cfg.Publication)
			}
		}
		return 0, err
	}
	// Copied once: a later session of this run (after an error) resumes.
	if cfg.Snapshot == "always" {
		cfg.Snapshot = "auto"
	}
	// Tables that appear from now on get their indexes with them.
	if ci, ok := tgt.(sink.CreatedTableIndexer); ok {
		if ir, ok := facts.(schema.IndexReader); ok {
			ci.IndexTablesItCreates(ir)
		}
	}
	// A table joining a publication that lists its tables is copied by a new
	// session (PGRELAY_SNAPSHOT=never: created from the stream).
	if jc, ok := tgt.(sink.JoinedTableCopier); ok {
		all, err := source.PublicationAllTables(ctx, srcConn, cfg.Publication)
		if err != nil {
			if repl != nil {
				repl.Close(context.WithoutCancel(ctx))
			}
			return 0, err
		}
		jc.CopyJoinedTables(!all && cfg.Snapshot != "never")
	}
	return r.stream(ctx, migrate, tgt, cat, repl, syncLSN, twoPhase, pre.ServerMajor, srcConn)
}

// canPrepare tells a target that takes prepared transactions: a TwoPhase
// sink that, when it can tell (PrepareChecker), says it can now.
func canPrepare(tgt sink.Sink) bool {
	if _, ok := tgt.(sink.TwoPhase); !ok {
		return false
	}
	pc, ok := tgt.(sink.PrepareChecker)
	return !ok || pc.CanPrepare()
}

// stream applies the slot's changes from the target's stored position.
func (r *Relay) stream(ctx context.Context, migrate bool, tgt sink.Target, cat *schema.Catalog, repl *source.ReplConn, syncLSN *tableSyncs, twoPhase bool, major int, srcConn *pgx.Conn) (source.LSN, error) {
	cfg, log := r.cfg, r.log
	cu := &catchUp{migrate: migrate, markers: major >= 14, token: randomToken()}
	acfg := apply.Config{
		Slot:             cfg.Slot,
		TwoPhase:         twoPhase,
		SpillDir:         cfg.SpillDir,
		OnLogicalMessage: cu.onMessage,
	}
	sf, _ := schema.NewSourceFacts(srcConn).(*schema.SourceFacts)
	if sf != nil {
		// On the catalog's connection, asked from the goroutine that applies.
		acfg.PublishedViaRoot = func(ctx context.Context, relid uint32) (bool, error) {
			return sf.PublishedViaRoot(ctx, cfg.Publication, relid)
		}
	}
	if !syncLSN.empty() {
		droppedRel := map[uint32]bool{}
		dropped := func(relid uint32) bool {
			if sf == nil {
				return true // unknown: by name
			}
			if d, ok := droppedRel[relid]; ok {
				return d
			}
			lctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			_, _, found, err := sf.RelationName(lctx, relid)
			// Unknown: as before pgrelay kept the OIDs, by name.
			droppedRel[relid] = err != nil || !found
			return droppedRel[relid]
		}
		acfg.TableSyncLSN = func(t *schema.Table) source.LSN { return syncLSN.of(t, dropped).lsn }
		acfg.TableSyncSnapshot = func(t *schema.Table) (source.TxidSnapshot, bool) {
			if snap := syncLSN.of(t, dropped).snap; snap != nil {
				return *snap, true
			}
			return source.TxidSnapshot{}, false
		}
	}
	if twoPhase {
		acfg.TxnAborted = func(ctx context.Context, xid uint32) (bool, error) {
			return sourceTxnAborted(ctx, cfg.SourceURL, xid)
		}
	}
	applier, err := apply.New(acfg, tgt, cat, log)
	if err != nil {
		return 0, err
	}
	defer applier.Close(context.WithoutCancel(ctx))
	startLSN, err := applier.Start(ctx)
	if err != nil {
		return 0, err
	}

	// Invariant 9: the slot must still hold every change after what the target has.
	slot, err := source.ReadSlot(ctx, srcConn, cfg.Slot)
	if err != nil {
		return 0, err
	}
	switch {
	case !slot.Exists:
		return 0, fmt.Errorf("slot %q does not exist on the source but the target was seeded from it: changes since %s cannot be streamed; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", cfg.Slot, startLSN)
	case slot.Invalidated():
		return 0, fmt.Errorf("slot %q was invalidated by the source (wal_status %s %s): the WAL after %s is gone; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", cfg.Slot, slot.WALStatus, slot.InvalidationReason, startLSN)
	case slot.ConfirmedFlushLSN > startLSN:
		return 0, fmt.Errorf("slot %q has confirmed %s but the target holds changes only up to %s: the changes in between are missing; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", cfg.Slot, slot.ConfirmedFlushLSN, startLSN)
	}

	cc := cfg.sourceConn()
	cc.Messages = major >= 14
	opts, err := cc.StreamOptions(major, twoPhase)
	if err != nil {
		return 0, err
	}
	if repl == nil {
		if repl, err = source.Connect(ctx, cfg.SourceURL); err != nil {
			return 0, err
		}
	}
	defer repl.Close(context.WithoutCancel(ctx))
	st, err := startWhenFree(ctx, repl, cfg, startLSN, opts, log)
	if err != nil {
		return 0, err
	}
	r.mon.applier.Store(applier)
	r.mon.stream.Store(st)
	r.mon.streamOK.Store(true)
	r.streaming(migrate, startLSN)
	log.Info("streaming", "slot", cfg.Slot, "from", startLSN.String(), "proto", opts.Proto, "two_phase", opts.TwoPhase, "streaming", opts.Streaming)
	defer streamProcs(r.sharedCores(), r.getenv, log)()

	if migrate {
		if cu.markers {
			if cu.target, err = source.EmitMarker(ctx, srcConn, markerPrefix, []byte(cu.token)); err != nil {
				return 0, err
			}
		} else if cu.target, err = source.CurrentWALLSN(ctx, srcConn); err != nil {
			return 0, err
		}
		log.Info("catching up", "to", cu.target.String())
	}
	var watch, alerts func(context.Context) error
	if !migrate && cfg.PublicationCheck > 0 {
		watch = func(ctx context.Context) error { return watchPublication(ctx, cfg, tgt, major, log) }
	}
	if !migrate {
		alerts = func(ctx context.Context) error { return r.watchAlerts(ctx, applier) }
	}
	applyErr := r.follow(ctx, st, source.NewDecoder(opts.Proto), applier, cu, watch, alerts)
	durable := applier.Durable()
	if applyErr != nil {
		if retryable(applyErr) && ctx.Err() == nil {
			// The run goes on in a new session (see run's "will retry"),
			// unless the same change keeps failing: no error yet.
			log.Warn("session ended: a new one starts from the stored position", "durable_lsn", durable.String(), "error", applyErr.Error())
		} else {
			log.Error("stopped", "durable_lsn", durable.String(), "error", applyErr.Error())
		}
		return 0, applyErr
	}
	if cu.reached.Load() {
		rep, err := r.finishMigration(ctx, tgt, srcConn, cu.target)
		if err != nil {
			log.Error("stopped", "durable_lsn", durable.String(), "error", err.Error())
			return 0, err
		}
		r.finished = rep
		// Every transaction before the marker is durable on the target.
		log.Info("caught up", "durable_lsn", durable.String(), "marker_lsn", cu.target.String())
		return cu.target, nil
	}
	log.Info("stopped cleanly", "durable_lsn", durable.String())
	if migrate {
		return 0, ErrMigrateInterrupted
	}
	return 0, nil
}

// replStream is the replication stream a session follows (*source.Stream).
type replStream interface {
	apply.FrameSource
	apply.ReceivedReporter
	Run(ctx context.Context) error
}

var _ replStream = (*source.Stream)(nil)

// catchUp is how migrate knows it has caught up: the logical message it
// emitted with token (markers: the source is 14 or newer), or, before 14,
// the durable position passing target, the WAL position read after the copy.
type catchUp struct {
	migrate, markers bool
	token            string
	target           source.LSN
	reached          atomic.Bool
}

// onMessage is apply's OnLogicalMessage: the marker stops apply.
func (c *catchUp) onMessage(_ context.Context, m *source.LogicalMessage, lsn source.LSN) error {
	if c.migrate && m.Prefix == markerPrefix && string(m.Content) == c.token {
		c.reached.Store(true)
		return fmt.Errorf("caught up at %s: %w", lsn, apply.ErrStop)
	}
	return nil
}

// follow applies st with applier until ctx ends (a signal), migrate catches
// up (cu), a watch (nil: none) or apply fails, or the stream ends; then, apply
// stopped, it flushes what is in hand and acknowledges what is durable before
// the stream closes. It returns the session's error, nil for a clean stop.
func (r *Relay) follow(ctx context.Context, st replStream, dec apply.Decoder, applier *apply.Applier, cu *catchUp, watches ...func(context.Context) error) error {
	migrate, caughtUp, target := cu.migrate, &cu.reached, cu.target
	streamCtx, stopStream := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStream()
	g, gctx := errgroup.WithContext(streamCtx)
	streamDone := make(chan error, 1)
	// Not gctx: errgroup cancels it when Wait returns, and the stream must
	// outlive apply to acknowledge what apply made durable.
	go func() { streamDone <- st.Run(streamCtx) }()
	applyCtx, stopApply := context.WithCancel(gctx)
	defer stopApply()
	go func() {
		select {
		case <-ctx.Done():
		case <-applyCtx.Done():
		}
		stopApply()
	}()
	if migrate && !cu.markers {
		// No logical messages before 14: done when the durable position passes
		// the WAL position read after the copy.
		g.Go(func() error {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-applyCtx.Done():
					return nil
				case <-tick.C:
					if applier.Durable() >= target || st.Received() >= target && applier.Durable() >= st.Received() {
						caughtUp.Store(true)
						stopApply()
						return nil
					}
				}
			}
		})
	}
	for _, watch := range watches {
		if watch != nil {
			g.Go(func() error { return watch(applyCtx) })
		}
	}
	g.Go(func() error {
		err := apply.Run(applyCtx, st, dec, applier)
		if errors.Is(err, apply.ErrStop) || applyCtx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
			return nil
		}
		if err == nil {
			// The stream ended: its error says why.
			if serr := <-streamDone; serr != nil {
				streamDone <- serr
				return serr
			}
			return errors.New("source: the replication stream ended")
		}
		return err
	})
	applyErr := g.Wait()
	if applyErr == nil && caughtUp.Load() && cu.markers {
		// Everything before the marker is applied: store the marker's position
		// when nothing is in hand, so status shows no lag and the slot advances.
		if err := applier.StorePosition(context.WithoutCancel(ctx), target); err != nil {
			applyErr = err
		}
	}
	// Everything committed is acknowledged before the stream closes.
	if err := applier.Flush(context.WithoutCancel(ctx)); err != nil && applyErr == nil && !stoppedMidGroup(ctx, err, caughtUp.Load()) {
		applyErr = err
	}
	st.Ack(applier.Durable())
	stopStream()
	serr := <-streamDone
	if applyErr == nil && serr != nil && !errors.Is(serr, context.Canceled) && ctx.Err() == nil && !caughtUp.Load() {
		applyErr = serr
	}
	return applyErr
}

// stoppedMidGroup tells the error of a group of transactions a signal cut
// short (its statements were on their way when apply stopped): the target
// rolls it back, the durable position does not count it, and the next run
// applies it again from the position the target stores. It is how a stop
// looks, not a fault to report.
func stoppedMidGroup(ctx context.Context, err error, caughtUp bool) bool {
	return ctx.Err() != nil && !caughtUp && errors.Is(err, context.Canceled)
}

// watchPublication repeats, every PGRELAY_PUBLICATION_CHECK_INTERVAL while
// replicate streams, the check each start makes: that the publication
// publishes each copied table as it did when the table was copied (its row
// filter, its partitions). A change stops replicate: the stream carries
// changes under the new definition but never the rows it newly covers or no
// longer covers, so the target would go on diverging without a word. A check
// that cannot be made (the source away, a lock held) is only logged.
func watchPublication(ctx context.Context, cfg *Config, tgt sink.SeedStore, major int, log *slog.Logger) error {
	tick := time.NewTicker(cfg.PublicationCheck)
	defer tick.Stop()
	said := map[string]bool{} // tables said to have left the publication
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		left, err := checkPublicationNow(ctx, cfg, tgt, major)
		for _, name := range left {
			if !said[name] {
				said[name] = true
				log.Warn(leftPublicationMsg, "table", name, "publication", cfg.Publication)
			}
		}
		var changed *publicationChangedError
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.As(err, &changed):
			return err
		default:
			log.Warn("could not check whether the publication changed since the copy", "publication", cfg.Publication, "error", err.Error())
		}
	}
}

// checkPublicationNow is one check of watchPublication, on a source
// connection of its own (the session's serves the applier).
func checkPublicationNow(ctx context.Context, cfg *Config, tgt sink.SeedStore, major int) (left []string, err error) {
	states, err := tgt.TableStates(ctx, cfg.Slot)
	if err != nil {
		return nil, err
	}
	conn, err := source.ConnectPlain(ctx, cfg.SourceURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return publicationUnchanged(ctx, conn, cfg.Publication, major, states)
}

// ErrMigrateInterrupted ends a migrate stopped by a signal: what is on the
// target is consistent and a new run resumes, but it is not caught up.
var ErrMigrateInterrupted = errors.New("migrate: stopped by a signal before the target caught up (what was applied is kept): run pgrelay migrate again to resume")

// startWhenFree starts replication, waiting while another process streams from
// the slot (a second instance takes over when the first one dies).
func startWhenFree(ctx context.Context, repl *source.ReplConn, cfg *Config, start source.LSN, opts source.StreamOptions, log *slog.Logger) (*source.Stream, error) {
	var warned time.Time
	for {
		st, err := repl.StartReplication(ctx, cfg.Slot, start, opts)
		if err == nil {
			return st, nil
		}
		if !errors.Is(err, source.ErrSlotInUse) {
			return nil, err
		}
		// Said at once, then every minute: a process that never lets go
		// (a walsender left behind by a client killed while creating the
		// slot) must not look like a pgrelay waiting for nothing.
		if time.Since(warned) > time.Minute {
			log.Warn("slot is in use by another process; waiting for it to become free (if no other pgrelay streams from it, end that process on the source: SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '"+cfg.Slot+"')",
				"slot", cfg.Slot, "error", err.Error())
			warned = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// lockSlot makes this process the only pgrelay applying to the target for the
// slot (sink.SlotLocker), until the sink closes. A second instance waits here
// and takes over when the first one dies.
func lockSlot(ctx context.Context, tgt sink.SlotLocker, slot string, log *slog.Logger) error {
	waited := false
	_, err := tgt.LockSlot(ctx, slot, func() {
		waited = true
		log.Warn("another pgrelay applies this slot to the target; waiting for it to stop", "slot", slot)
	})
	if err == nil && waited {
		log.Info("took over the slot", "slot", slot)
	}
	return err
}

func randomToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// checkTarget checks, before anything is created on the source, that the
// target will take what pgrelay writes there (sink.Preflighter): that it
// takes writes at all, that the role may create pgrelay's metadata schema,
// the schemas that do not exist yet and tables in the existing ones. The
// schemas are the publication's, or those it would publish when pgrelay
// creates it. Source trouble is left to preflight, which reports it better.
// A setting that breaks a guarantee is warned about.
func (r *Relay) checkTarget(ctx context.Context, src *pgx.Conn, tgt sink.Sink) error {
	pf, ok := tgt.(sink.Preflighter)
	if !ok {
		return nil
	}
	// A source in trouble (or a locked table) leaves the privileges to the
	// first CREATE; a read-only target is still found.
	schemas, serr := source.PublicationSchemas(ctx, src, r.cfg.Publication, r.cfg.Tables)
	found, err := pf.Preflight(ctx, schemas)
	if err != nil {
		return fmt.Errorf("target: check the role's privileges: %w", err)
	}
	if serr != nil {
		found = slices.DeleteFunc(found, func(p sink.Problem) bool { return p.Kind != sink.ProblemReadOnly })
	}
	return r.targetProblems(found)
}

// targetProblems words what the target's preflight found: a read-only
// target first (a *sink.ReadOnlyError, retried until an operator fixes
// it), then an error for what else keeps pgrelay from writing there, a
// warning for a setting that breaks a guarantee.
func (r *Relay) targetProblems(found []sink.Problem) error {
	for _, p := range found {
		if p.Kind == sink.ProblemReadOnly {
			return &sink.ReadOnlyError{Database: p.Object, Cause: p.Fix}
		}
	}
	var role []string
	for _, p := range found {
		switch p.Kind {
		case sink.ProblemCreateTables:
			role = append(role, fmt.Sprintf("may not create tables in schema %s: %s", p.Object, p.Fix))
		case sink.ProblemCreateSchema:
			role = append(role, fmt.Sprintf("may not create schema %s: %s", p.Object, p.Fix))
		case sink.ProblemSetting:
			r.log.Warn("a target setting breaks a guarantee of pgrelay", "setting", p.Object, "fix", p.Fix)
		}
	}
	if len(role) > 0 {
		return errors.New("target: the role " + strings.Join(role, "; and "))
	}
	return nil
}

// explainTimeout bounds explainReadOnly's look at the target.
const explainTimeout = 30 * time.Second

// explainReadOnly adds to err, when it is a write a read-only target refused
// whose database and cause are not known (a *sink.ReadOnlyError without its
// Database), what makes the database read-only, read on a new sink
// (sink.Preflighter); any other err is returned as it is.
func (r *Relay) explainReadOnly(ctx context.Context, err error) error {
	var ro *sink.ReadOnlyError
	if !errors.As(err, &ro) || ro.Database != "" || r.target.Open == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, explainTimeout)
	defer cancel()
	tgt, oerr := r.target.Open(ctx, ForInspection)
	if oerr != nil {
		return err
	}
	defer tgt.Close(context.WithoutCancel(ctx))
	pf, ok := tgt.(sink.Preflighter)
	if !ok {
		return err
	}
	found, perr := pf.Preflight(ctx, nil)
	if perr != nil {
		return err
	}
	refusal := ro.Err
	if refusal == nil {
		refusal = err
	}
	for _, p := range found {
		if p.Kind == sink.ProblemReadOnly {
			return &sink.ReadOnlyError{Database: p.Object, Cause: p.Fix, Err: refusal}
		}
	}
	return &sink.ReadOnlyError{Cause: "its sessions were read-only and are not any more", Err: refusal}
}

// sourceTxnAborted tells whether source transaction xid was rolled back
// (source.XactAborted).
func sourceTxnAborted(ctx context.Context, url string, xid uint32) (bool, error) {
	c, err := source.ConnectPlain(ctx, url)
	if err != nil {
		return false, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return source.XactAborted(ctx, c, xid)
}

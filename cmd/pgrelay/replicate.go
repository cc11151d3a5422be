package main

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sync/errgroup"

	"github.com/pgrelay/pgrelay/apply"
	"github.com/pgrelay/pgrelay/apply/snapshot"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/sink/postgres"
	"github.com/pgrelay/pgrelay/source"
)

// markerPrefix is the prefix of the logical messages `pgrelay migrate` emits on
// the source to know when it has caught up.
const markerPrefix = "pgrelay.caught_up"

// migrateAttempts is how many sessions in a row `pgrelay migrate` tries (with
// backoff 1, 2, 4, 8 s) before it gives up on a server that stays unreachable;
// `pgrelay replicate` keeps trying.
const migrateAttempts = 5

// target is what replicate and migrate need of a sink.
type target interface {
	snapshot.Target
	CanPrepare() bool
	// Progress reads the stored position without changing anything.
	Progress(ctx context.Context, slot string) (sink.Progress, error)
}

func runReplicate(ctx context.Context, e *env, _ []string) error { return relay(ctx, e, false) }
func runMigrate(ctx context.Context, e *env, _ []string) error   { return relay(ctx, e, true) }

// relay runs one replicate or migrate command: a session, and new sessions
// with backoff after errors a retry can cure (a server gone away, the slot
// busy), until the command is done or told to stop.
func relay(ctx context.Context, e *env, migrate bool) error {
	e.mon = newMonitor()
	e.mon.red = e.red
	if e.cfg.MetricsAddr != "" {
		stop, err := serveMetrics(ctx, e.cfg.MetricsAddr, e.mon, e.log)
		if err != nil {
			return err
		}
		defer stop()
	}
	backoff := time.Second
	failures := 0 // in a row, without a session that reached streaming
	// A value the target refused, again and again at the same change, does
	// not go away by itself (a retry is for a type that changed on the
	// source, which a new session reads again).
	lastRefused, refusedInARow := "", 0
	for {
		start := time.Now()
		e.mon.sessionStarted()
		// A read-only target refused a write: said with the database and
		// the setting that makes it so, and retried.
		err := postgres.ExplainReadOnly(ctx, e.cfg.TargetURL, session(ctx, e, migrate))
		streamed := e.mon.streamOK.Load()
		e.mon.sessionEnded(err)
		if streamed {
			// That session got through: the next trouble starts afresh.
			failures, backoff = 0, time.Second
		}
		if err == nil {
			return nil
		}
		// A signal: the session's error is the cancellation, or what it
		// caused (a COPY whose connection was cut), not a fault to retry.
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || retryable(err)) {
			return e.interrupted(migrate, streamed)
		}
		if !retryable(err) {
			return refusedHint(err)
		}
		if msg := err.Error(); valueRefused(err) && msg == lastRefused {
			refusedInARow++
		} else if valueRefused(err) {
			lastRefused, refusedInARow = msg, 1
		} else {
			lastRefused, refusedInARow = "", 0
		}
		if refusedInARow >= refusedAttempts {
			return refusedHint(fmt.Errorf("%w (the target refused this change in %d sessions in a row: it does not go away by itself)", err, refusedInARow))
		}
		failures++
		if migrate && failures >= migrateAttempts {
			// A job, not a service: a server that stays away is an error.
			return fmt.Errorf("%w (gave up after %d attempts)", err, failures)
		}
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		e.log.Warn("will retry", "in", backoff, "error", err.Error())
		select {
		case <-ctx.Done():
			return e.interrupted(migrate, false)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// interrupted ends a run a signal stopped: migrate with errMigrateInterrupted
// (exit 1), replicate with exit 0, saying so when it stopped before streaming
// (in the snapshot copy, or waiting to retry), where nothing else does.
func (e *env) interrupted(migrate, streamed bool) error {
	if migrate {
		return errMigrateInterrupted
	}
	if !streamed {
		e.log.Info("stopped by a signal before streaming (during the snapshot copy, if one was running, or waiting to retry): what was copied is kept; run pgrelay replicate again to resume")
	}
	return nil
}

// refusedHint adds what to do to the error of a change the target refused: a
// value it cannot take or a constraint the row breaks (SQLSTATE classes 22 and
// 23), which only a person can settle.
func refusedHint(err error) error {
	var ce *postgres.ChangeError
	var pgErr *pgconn.PgError
	if !errors.As(err, &ce) || !errors.As(err, &pgErr) || !(strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")) {
		return err
	}
	const fix = "make it take it (a constraint, unique index, trigger or column type the source does not have, or a value it cannot hold), then run pgrelay again"
	if ce.LSN == 0 {
		// A row of the snapshot copy: no source transaction to resume with.
		return fmt.Errorf("%w; the target refused a row of the snapshot copy: %s, which copies that table again", err, fix)
	}
	return fmt.Errorf("%w; the target refused this change: %s, which resumes with this source transaction (nothing from it on was acknowledged to the source)", err, fix)
}

// refusedAttempts is how many sessions in a row may fail on the same value
// the target refuses before pgrelay stops.
const refusedAttempts = 5

// valueRefused tells a target's answer that a value is invalid or breaks a
// constraint (SQLSTATE classes 22 and 23), as opposed to a connection that
// failed.
func valueRefused(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23"))
}

// retryable tells the errors after which a new session may succeed: lost or
// refused connections, a busy slot, what a sink marks retryable.
func retryable(err error) bool {
	var pathErr *fs.PathError
	var unknownCA x509.UnknownAuthorityError
	var badCert x509.CertificateInvalidError
	var badHost x509.HostnameError
	switch {
	case errors.As(err, &pathErr):
		// A local file (the spill directory) that cannot be written: a
		// person must act. (Its errno would pass for a net.Error below.)
		return false
	case errors.As(err, &unknownCA), errors.As(err, &badCert), errors.As(err, &badHost),
		strings.Contains(err.Error(), "server refused TLS connection"):
		// TLS required but not offered, or a certificate that does not
		// verify: the settings or the server must change.
		return false
	}
	var ne net.Error
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	var pre *source.PreflightError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "28", "3D", "42": // bad credentials, no such database, permissions and syntax: a person must act
			return false
		}
	}
	switch {
	case errors.As(err, &pre):
		return false
	case errors.Is(err, sink.ErrRetryable), errors.Is(err, source.ErrSlotInUse), errors.Is(err, source.ErrStreamEnded),
		errors.Is(err, source.ErrSnapshotTooLarge),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.As(err, &ne), errors.As(err, &connErr), pgconn.SafeToRetry(err):
		return true
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01..57P03: shutdown, cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "unexpected EOF")
}

func (c *Config) sourceConn() source.ConnConfig {
	return source.ConnConfig{
		URL: c.SourceURL, Slot: c.Slot, Publication: c.Publication, Tables: c.Tables,
		Streaming: c.Streaming, TwoPhase: c.TwoPhase, StatusInterval: c.StatusInterval,
		MetadataSchema: postgres.MetadataSchema,
	}
}

// openTarget connects to the target PGRELAY_TARGET_URL names (a PostgreSQL
// one: run refuses a mysql:// target before any command starts).
func openTarget(ctx context.Context, cfg *Config) (target, error) {
	return postgres.New(ctx, cfg.TargetURL, postgres.Options{KeepOrder: cfg.KeepOrder})
}

// session is one run: preflight, seed the target when needed, then stream
// until stopped (replicate) or caught up (migrate).
func session(ctx context.Context, e *env, migrate bool) (err error) {
	cfg, log := e.cfg, e.log
	cc := cfg.sourceConn()
	cc.ReplaceSlot = cfg.Snapshot == "always"
	// Preflight checks a validated copy (Validate fills in defaults); cc
	// stays as configured for the stream's options.
	pcc := cc
	if err := pcc.Validate(); err != nil {
		return err
	}
	// The target first: a target pgrelay cannot reach must not leave a
	// publication behind on the source.
	conns, err := openSession(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { conns.close(ctx) }()
	tgt, srcConn := conns.tgt, conns.src
	if pg, ok := tgt.(*postgres.Sink); ok {
		e.mon.sink.Store(pg)
	}
	if err := postgres.CheckWritable(ctx, conns.lock); err != nil {
		return err
	}
	if err := checkTargetPrivileges(ctx, cfg, srcConn, conns.lock); err != nil {
		return err
	}
	// The target's lock and set-up (its metadata schema's migrations) run
	// while the source is checked: two chains of round trips at once.
	targetCtx, cancelTarget := context.WithCancel(ctx)
	defer cancelTarget()
	targetDone := make(chan error, 1)
	go func() {
		if err := lockSlot(targetCtx, conns.lock, cfg.Slot, log); err != nil {
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
		return err
	}
	if pre.PublicationCreated {
		log.Info("created publication", "publication", cfg.Publication)
		err := markPublication(ctx, srcConn, cfg.Publication)
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
			return err
		}
	} else if err := targetErr(); err != nil {
		return err
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

	twoPhase := pre.ServerMajor >= 15 && cfg.TwoPhase != "off" && tgt.CanPrepare()
	if cfg.TwoPhase == "on" && !twoPhase {
		if pre.ServerMajor < 15 {
			return fmt.Errorf("PGRELAY_TWO_PHASE=on: the source is PostgreSQL %d; two-phase decoding needs 15 or newer: set PGRELAY_TWO_PHASE=auto", pre.ServerMajor)
		}
		return errors.New("PGRELAY_TWO_PHASE=on: the target cannot hold prepared transactions: set max_prepared_transactions > 0 on it and restart it, or set PGRELAY_TWO_PHASE=auto")
	}
	// Prepared transactions stay two-phase only if the slot decodes them so.
	if pre.Slot.Exists && pre.ServerMajor >= 15 && pre.Slot.TwoPhase && !twoPhase && cfg.Snapshot != "always" {
		if cfg.TwoPhase == "off" {
			return fmt.Errorf("PGRELAY_TWO_PHASE=off, but slot %q was created decoding prepared transactions at PREPARE, which cannot be turned off: set PGRELAY_TWO_PHASE=auto, or run pgrelay once with PGRELAY_SNAPSHOT=always, which makes a new slot and copies the tables anew", cfg.Slot)
		}
		return fmt.Errorf("slot %q decodes prepared transactions at PREPARE, but the target cannot hold prepared transactions: set max_prepared_transactions > 0 on the target, or run pgrelay once with PGRELAY_SNAPSHOT=always, which makes a new slot and copies the tables anew", cfg.Slot)
	}

	facts := schema.NewSourceFacts(srcConn)
	cat := schema.NewCatalog(facts)
	// Asked from the goroutine that applies, like the catalog's facts.
	if pg, ok := tgt.(*postgres.Sink); ok {
		if namer, ok := facts.(schema.RelationNamer); ok {
			pg.LocateRelations(namer, log)
		}
	}
	sd := &seeder{cfg: cfg, log: log, tgt: tgt, cat: cat, facts: facts, major: pre.ServerMajor, twoPhase: twoPhase, slot: pre.Slot, srcConn: srcConn,
		tgtConn: conns.lock, repl: conns.takeRepl(), progress: e.stderr}
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
		return err
	}
	// Copied once: a later session of this run (after an error) resumes.
	if cfg.Snapshot == "always" {
		cfg.Snapshot = "auto"
	}
	// Tables that appear from now on get their indexes with them.
	if pg, ok := tgt.(*postgres.Sink); ok {
		if ir, ok := facts.(schema.IndexReader); ok {
			pg.IndexTablesItCreates(ir)
		}
		// A table joining a publication that lists its tables is copied by
		// a new session (PGRELAY_SNAPSHOT=never: created from the stream).
		all, err := sd.allTables(ctx)
		if err != nil {
			if repl != nil {
				repl.Close(context.WithoutCancel(ctx))
			}
			return err
		}
		pg.CopyJoinedTables(!all && cfg.Snapshot != "never")
	}
	return stream(ctx, e, migrate, tgt, cat, repl, syncLSN, twoPhase, pre.ServerMajor, srcConn)
}

// stream applies the slot's changes from the target's stored position.
func stream(ctx context.Context, e *env, migrate bool, tgt target, cat *schema.Catalog, repl *source.ReplConn, syncLSN *tableSyncs, twoPhase bool, major int, srcConn *pgx.Conn) error {
	cfg, log := e.cfg, e.log
	token := randomToken()
	var caughtUp atomic.Bool
	acfg := apply.Config{
		Slot:     cfg.Slot,
		TwoPhase: twoPhase,
		SpillDir: cfg.SpillDir,
		OnLogicalMessage: func(_ context.Context, m *source.LogicalMessage, lsn source.LSN) error {
			if migrate && m.Prefix == markerPrefix && string(m.Content) == token {
				caughtUp.Store(true)
				return fmt.Errorf("caught up at %s: %w", lsn, apply.ErrStop)
			}
			return nil
		},
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
		return err
	}
	defer applier.Close(context.WithoutCancel(ctx))
	startLSN, err := applier.Start(ctx)
	if err != nil {
		return err
	}

	// Invariant 9: the slot must still hold every change after what the target has.
	slot, err := source.ReadSlot(ctx, srcConn, cfg.Slot)
	if err != nil {
		return err
	}
	switch {
	case !slot.Exists:
		return fmt.Errorf("slot %q does not exist on the source but the target was seeded from it: changes since %s cannot be streamed; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", cfg.Slot, startLSN)
	case slot.Invalidated():
		return fmt.Errorf("slot %q was invalidated by the source (wal_status %s %s): the WAL after %s is gone; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", cfg.Slot, slot.WALStatus, slot.InvalidationReason, startLSN)
	case slot.ConfirmedFlushLSN > startLSN:
		return fmt.Errorf("slot %q has confirmed %s but the target holds changes only up to %s: the changes in between are missing; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew", cfg.Slot, slot.ConfirmedFlushLSN, startLSN)
	}

	cc := cfg.sourceConn()
	cc.Messages = major >= 14
	opts, err := cc.StreamOptions(major, twoPhase)
	if err != nil {
		return err
	}
	if repl == nil {
		if repl, err = source.Connect(ctx, cfg.SourceURL); err != nil {
			return err
		}
	}
	defer repl.Close(context.WithoutCancel(ctx))
	st, err := startWhenFree(ctx, repl, cfg, startLSN, opts, log)
	if err != nil {
		return err
	}
	e.mon.applier.Store(applier)
	e.mon.stream.Store(st)
	e.mon.streamOK.Store(true)
	log.Info("streaming", "slot", cfg.Slot, "from", startLSN.String(), "proto", opts.Proto, "two_phase", opts.TwoPhase, "streaming", opts.Streaming)
	defer streamProcs(cfg, os.LookupEnv, log)()

	var target source.LSN
	if migrate {
		if major >= 14 {
			if target, err = source.EmitMarker(ctx, srcConn, markerPrefix, []byte(token)); err != nil {
				return err
			}
		} else if target, err = source.CurrentWALLSN(ctx, srcConn); err != nil {
			return err
		}
		log.Info("catching up", "to", target.String())
	}

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
	if migrate && major < 14 {
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
	if !migrate && cfg.PublicationCheck > 0 {
		g.Go(func() error { return watchPublication(applyCtx, cfg, tgt, major, log) })
	}
	g.Go(func() error {
		err := apply.Run(applyCtx, st, source.NewDecoder(opts.Proto), applier)
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
	if applyErr == nil && caughtUp.Load() && major >= 14 {
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
	durable := applier.Durable()
	if applyErr != nil {
		if retryable(applyErr) && ctx.Err() == nil {
			// The run goes on in a new session (see run's "will retry"),
			// unless the same change keeps failing: no error yet.
			log.Warn("session ended: a new one starts from the stored position", "durable_lsn", durable.String(), "error", applyErr.Error())
		} else {
			log.Error("stopped", "durable_lsn", durable.String(), "error", applyErr.Error())
		}
		return applyErr
	}
	if caughtUp.Load() {
		if err := setSequences(ctx, e, tgt, srcConn); err != nil {
			log.Error("stopped", "durable_lsn", durable.String(), "error", err.Error())
			return err
		}
		// Every transaction before the marker is durable on the target.
		log.Info("caught up", "durable_lsn", durable.String(), "marker_lsn", target.String())
		fmt.Fprintf(e.stdout, "caught up: the target holds every source transaction committed before %s\n", target)
		return nil
	}
	log.Info("stopped cleanly", "durable_lsn", durable.String())
	if migrate {
		return errMigrateInterrupted
	}
	return nil
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
func watchPublication(ctx context.Context, cfg *Config, tgt target, major int, log *slog.Logger) error {
	tick := time.NewTicker(cfg.PublicationCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := checkPublicationNow(ctx, cfg, tgt, major)
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
func checkPublicationNow(ctx context.Context, cfg *Config, tgt target, major int) error {
	states, err := tgt.TableStates(ctx, cfg.Slot)
	if err != nil {
		return err
	}
	conn, err := connectTo(ctx, "source", cfg.SourceURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return publicationUnchanged(ctx, conn, cfg.Publication, major, states)
}

// errMigrateInterrupted ends a migrate stopped by a signal: what is on the
// target is consistent and a new run resumes, but it is not caught up.
var errMigrateInterrupted = errors.New("migrate: stopped by a signal before the target caught up (what was applied is kept): run pgrelay migrate again to resume")

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
// slot: a session advisory lock taken on conn, a plain target connection,
// held until conn closes. A second instance waits here and takes over when
// the first one dies.
func lockSlot(ctx context.Context, conn *pgx.Conn, slot string, log *slog.Logger) error {
	key := "pgrelay:" + slot
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext($1))", key).Scan(&got); err != nil {
		return fmt.Errorf("target: lock slot %q: %w", slot, err)
	}
	if !got {
		log.Warn("another pgrelay applies this slot to the target; waiting for it to stop", "slot", slot)
		if _, err := conn.Exec(ctx, "SELECT pg_catalog.pg_advisory_lock(pg_catalog.hashtext($1))", key); err != nil {
			return fmt.Errorf("target: wait for slot %q lock: %w", slot, err)
		}
		log.Info("took over the slot", "slot", slot)
	}
	return nil
}

func randomToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// isTerminal reports whether f is a terminal (for progress display).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// setSequences ends a migration: pgoutput carries no sequence changes, so
// the sequences of the published tables' serial and identity columns get the
// source's values now, read after everything up to the marker was applied (a
// value read later is never behind the rows). A sequence the role may not
// read is left out, with a warning naming the GRANT that lets it.
func setSequences(ctx context.Context, e *env, tgt target, srcConn *pgx.Conn) error {
	setter, ok := tgt.(sink.SequenceSetter)
	if !ok {
		return nil
	}
	var seqs []source.Sequence
	err := source.WithLockTimeout(ctx, srcConn, 30*time.Second, func(tx pgx.Tx) error {
		// The joins in the order written: planning them every way took
		// 14 ms of the end of a migration (4 ms on a warm session), the
		// query itself 1.
		if _, err := tx.Exec(ctx, "SET LOCAL join_collapse_limit = 1; SET LOCAL from_collapse_limit = 1"); err != nil {
			return err
		}
		var err error
		seqs, err = source.ReadSequences(ctx, tx.Conn(), e.cfg.Publication)
		return err
	})
	if source.IsLockTimeout(err) {
		return fmt.Errorf("caught up, but the sequences could not be read: %s; once it is released, run pgrelay migrate again to set them: %w", source.LockedHint, err)
	}
	if err != nil {
		return err
	}
	var readable []source.Sequence
	for _, q := range seqs {
		if !q.Readable {
			e.log.Warn("sequence not set on the target: the source role may not read it",
				"sequence", q.Schema+"."+q.Name, "fix", fmt.Sprintf("GRANT SELECT ON SEQUENCE %s TO %s", pgx.Identifier{q.Schema, q.Name}.Sanitize(), pgx.Identifier{srcConn.Config().User}.Sanitize()))
			continue
		}
		readable = append(readable, q)
	}
	if err := setter.SetSequences(ctx, readable); err != nil {
		return err
	}
	if len(readable) > 0 {
		e.log.Info("sequences set", "count", len(readable))
	}
	return nil
}

// checkTargetPrivileges checks, before anything is created on the source, that
// the target role may create what pgrelay will create there: its pgrelay
// schema and schemas that do not exist yet (CREATE on the database), tables in
// the existing schemas of the published tables (CREATE on each; PostgreSQL 15+
// no longer grants it on public to everyone). The schemas are the
// publication's, or those it would publish when pgrelay creates it. Source
// trouble is left to preflight, which reports it better.
func checkTargetPrivileges(ctx context.Context, cfg *Config, src, tgt *pgx.Conn) error {
	var schemas []string
	err := func(c *pgx.Conn) error {
		var exists bool
		if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_publication WHERE pubname = $1)", cfg.Publication).Scan(&exists); err != nil {
			return err
		}
		if exists {
			published, err := source.ListPublication(ctx, c, cfg.Publication, 3*time.Second)
			for _, p := range published {
				if !slices.Contains(schemas, p.Schema) {
					schemas = append(schemas, p.Schema)
				}
			}
			return err
		}
		var rows pgx.Rows
		var err error
		if len(cfg.Tables) > 0 {
			rows, err = c.Query(ctx, `SELECT DISTINCT n.nspname::text FROM unnest($1::text[]) AS t(name)
				JOIN pg_catalog.pg_class c ON c.oid = pg_catalog.to_regclass(t.name)
				JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace`, cfg.Tables)
		} else {
			rows, err = c.Query(ctx, `SELECT DISTINCT n.nspname::text FROM pg_catalog.pg_class c
				JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'`)
		}
		if err != nil {
			return err
		}
		schemas, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	}(src)
	if err != nil {
		// Preflight reports a source in trouble better; a locked table
		// leaves the target's privileges to the first CREATE.
		return nil
	}
	var problems []string
	err = func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT x.s, n.oid IS NOT NULL,
				CASE WHEN n.oid IS NULL THEN pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE')
				     ELSE pg_catalog.has_schema_privilege(n.oid, 'CREATE') END,
				pg_catalog.quote_ident(current_user::text), pg_catalog.quote_ident(pg_catalog.current_database())
			FROM unnest($1::text[]) AS x(s) LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = x.s
			ORDER BY x.s <> 'pgrelay', x.s`, append([]string{"pgrelay"}, schemas...))
		if err != nil {
			return err
		}
		var sch, role, db string
		var exists, may bool
		_, err = pgx.ForEachRow(rows, []any{&sch, &exists, &may, &role, &db}, func() error {
			switch {
			case may:
			case exists:
				problems = append(problems, fmt.Sprintf("may not create tables in schema %s: GRANT CREATE ON SCHEMA %s TO %s",
					pgx.Identifier{sch}.Sanitize(), pgx.Identifier{sch}.Sanitize(), role))
			default:
				problems = append(problems, fmt.Sprintf("may not create schema %s: GRANT CREATE ON DATABASE %s TO %s",
					pgx.Identifier{sch}.Sanitize(), db, role))
			}
			return nil
		})
		return err
	}(tgt)
	if err != nil {
		return fmt.Errorf("target: check the role's privileges: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("target: the role %s", strings.Join(problems, "; and "))
	}
	return nil
}

// sourceTxnAborted tells whether source transaction xid was rolled back
// (source.XactAborted).
func sourceTxnAborted(ctx context.Context, url string, xid uint32) (aborted bool, err error) {
	err = withSourceConn(ctx, url, func(c *pgx.Conn) error {
		aborted, err = source.XactAborted(ctx, c, xid)
		return err
	})
	return aborted, err
}

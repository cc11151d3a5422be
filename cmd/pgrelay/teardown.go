package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/sink"

	"github.com/pgrelay/pgrelay/source"
)

// publicationMark is the comment pgrelay puts on a publication it created, so
// that teardown drops only what pgrelay made.
const publicationMark = "created by pgrelay"

// markPublication records that pgrelay created the publication.
func markPublication(ctx context.Context, conn *pgx.Conn, name string) error {
	_, err := conn.Exec(ctx, "COMMENT ON PUBLICATION "+pgx.Identifier{name}.Sanitize()+" IS '"+publicationMark+"'")
	if err != nil {
		return fmt.Errorf("source: mark publication %q as pgrelay's: %w", name, err)
	}
	return nil
}

func runTeardown(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("teardown: unexpected argument %q: it takes none", args[0])}
	}
	cfg, log := e.cfg, e.log
	src, err := connectTo(ctx, "source", cfg.SourceURL)
	if err != nil {
		return err
	}
	defer src.Close(context.WithoutCancel(ctx))
	// Both servers reachable before anything is dropped: a teardown is not
	// left half done by a wrong target URL.
	tgt, err := openTarget(ctx, cfg)
	if err != nil {
		return err
	}
	defer tgt.Close(context.WithoutCancel(ctx))

	slot, err := source.ReadSlot(ctx, src, cfg.Slot)
	if err != nil {
		return err
	}
	// A walsender lingers a moment after its client is gone: give a slot
	// that was just released the time to show it.
	for deadline := time.Now().Add(10 * time.Second); slot.Exists && slot.Active && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if slot, err = source.ReadSlot(ctx, src, cfg.Slot); err != nil {
			return err
		}
	}
	if slot.Exists && slot.Active {
		client, err := source.ReadSlotClient(ctx, src, slot.ActivePID)
		if err != nil {
			return err
		}
		return fmt.Errorf("slot %q is in use: a client streams from it through walsender pid %d (%s), most likely another pgrelay replicate or migrate: stop it first, then run teardown again (%s): %w",
			cfg.Slot, slot.ActivePID, client, client.FindHint(), source.ErrSlotInUse)
	}
	// Nothing will finish them once the slot is gone, and they hold locks on
	// the target's tables and on pgrelay's metadata.
	if err := rollbackTargetPrepared(ctx, cfg.TargetURL, cfg.Slot, log); err != nil {
		return err
	}
	if slot.Exists {
		if err := source.DropSlot(ctx, src, cfg.Slot); err != nil {
			return err
		}
		log.Info("dropped slot", "slot", cfg.Slot)
	}

	var comment *string
	err = src.QueryRow(ctx, `SELECT obj_description(oid, 'pg_publication') FROM pg_catalog.pg_publication WHERE pubname = $1`, cfg.Publication).Scan(&comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("source: look up publication %q: %w", cfg.Publication, err)
	case comment != nil && *comment == publicationMark:
		if err := source.DropPublication(ctx, src, cfg.Publication); err != nil {
			return err
		}
		log.Info("dropped publication", "publication", cfg.Publication)
	default:
		log.Info("kept publication: pgrelay did not create it", "publication", cfg.Publication)
	}

	var hasMeta bool
	if err := withTargetConn(ctx, cfg.TargetURL, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT to_regclass('pgrelay.progress') IS NOT NULL").Scan(&hasMeta)
	}); err != nil {
		return err
	}
	if hasMeta {
		if err := tgt.Teardown(ctx, cfg.Slot); err != nil {
			return err
		}
		log.Info("removed target metadata", "slot", cfg.Slot)
	}
	fmt.Fprintf(e.stdout, "teardown done: slot %q, its publication (if pgrelay created it) and the target metadata are gone; replicated tables are kept\n", cfg.Slot)
	return nil
}

// rollbackTargetPrepared rolls back the prepared transactions pgrelay made on
// the target for slot (teardown, or the slot dropped to copy anew): their
// source transactions will never be finished through that slot again.
func rollbackTargetPrepared(ctx context.Context, url, slot string, log *slog.Logger) error {
	return withTargetConn(ctx, url, func(c *pgx.Conn) error { return rollbackTargetPreparedOn(ctx, c, slot, log) })
}

// rollbackTargetPreparedOn is rollbackTargetPrepared on connection c.
func rollbackTargetPreparedOn(ctx context.Context, c *pgx.Conn, slot string, log *slog.Logger) error {
	prefix := sink.GIDPrefix(slot)
	rows, err := c.Query(ctx, `SELECT gid FROM pg_catalog.pg_prepared_xacts
		WHERE database = pg_catalog.current_database() AND pg_catalog.left(gid, pg_catalog.length($1)) = $1`, prefix)
	if err != nil {
		return fmt.Errorf("target: list prepared transactions: %w", err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("target: list prepared transactions: %w", err)
	}
	for _, gid := range gids {
		if !sink.OwnGID(slot, gid) {
			continue
		}
		if _, err := c.Exec(ctx, "ROLLBACK PREPARED '"+gid+"'"); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42704" { // finished meanwhile
				continue
			}
			return fmt.Errorf("target: roll back prepared transaction %s of slot %q: %w; roll it back by hand with ROLLBACK PREPARED '%s'", gid, slot, err, gid)
		}
		log.Warn("rolled back a prepared transaction pgrelay had made on the target: its source transaction is not replicated through this slot any more", "gid", gid)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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
	if slot.Exists {
		if slot.Active {
			return fmt.Errorf("slot %q is in use by process %d: stop the pgrelay streaming from it first: %w", cfg.Slot, slot.ActivePID, source.ErrSlotInUse)
		}
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

package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Teardown runs `pgrelay teardown`: it drops the slot, the publication if
// pgrelay created it, and pgrelay's metadata on the target. The replicated
// tables are kept.
func (r *Relay) Teardown(ctx context.Context) error {
	cfg, log := r.cfg, r.log
	src, err := source.ConnectPlain(ctx, cfg.SourceURL)
	if err != nil {
		return err
	}
	defer src.Close(context.WithoutCancel(ctx))
	// Both servers reachable before anything is dropped: a teardown is not
	// left half done by a wrong target URL.
	tgt, err := r.target.Open(ctx, ForInspection)
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
	if err := rollbackPrepared(ctx, tgt, cfg.Slot, log); err != nil {
		return err
	}
	if slot.Exists {
		if err := source.DropSlot(ctx, src, cfg.Slot); err != nil {
			return err
		}
		log.Info("dropped slot", "slot", cfg.Slot)
	}

	exists, ours, err := source.PublicationMarked(ctx, src, cfg.Publication)
	switch {
	case err != nil:
		return err
	case !exists:
	case ours:
		if err := source.DropPublication(ctx, src, cfg.Publication); err != nil {
			return err
		}
		log.Info("dropped publication", "publication", cfg.Publication)
	default:
		log.Info("kept publication: pgrelay did not create it", "publication", cfg.Publication)
	}

	hasMeta, err := tgt.HasMetadata(ctx)
	if err != nil {
		return err
	}
	if hasMeta {
		if err := tgt.Teardown(ctx, cfg.Slot); err != nil {
			return err
		}
		log.Info("removed target metadata", "slot", cfg.Slot)
	}
	return nil
}

// rollbackPrepared rolls back the prepared transactions pgrelay made on the
// target for slot (teardown, or the slot dropped to copy anew): their source
// transactions will never be finished through that slot again.
func rollbackPrepared(ctx context.Context, tgt sink.Teardowner, slot string, log *slog.Logger) error {
	gids, err := tgt.RollbackSlotPrepared(ctx, slot)
	for _, gid := range gids {
		log.Warn("rolled back a prepared transaction pgrelay had made on the target: its source transaction is not replicated through this slot any more", "gid", gid)
	}
	return err
}

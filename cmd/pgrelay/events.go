package main

// The operator events of replicate and migrate (apply/notify,
// docs/operations-webhooks.md): the notifier built from the settings and
// handed to the relay, and the WAL-retention lines of status.

import (
	"context"
	"fmt"
	"io"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/bytesize"
)

// runFunc is a command's run.
type runFunc func(ctx context.Context, e *env, args []string) error

// withEvents runs a command with the webhook notifier of its settings (none
// without PGRELAY_WEBHOOK_URL). On the way out it waits, at most
// notify.CloseTimeout, for the events still queued (migrate's last one, or
// replicate's stop) to be delivered.
func withEvents(run runFunc) runFunc {
	return func(ctx context.Context, e *env, args []string) error {
		c := e.cfg.Notify.Config(e.cfg.Slot, e.cfg.SourceURL, e.cfg.TargetURL)
		c.Redact = e.red.String
		n, err := notify.New(c, e.log)
		if err != nil {
			return err
		}
		e.relay.SetNotifier(n)
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notify.CloseTimeout)
			defer cancel()
			_ = n.Close(cctx) // what was not delivered is logged and counted
		}()
		return run(ctx, e, args)
	}
}

// walLines writes status's lines of the slot's WAL retention: what it
// retains against max_slot_wal_keep_size, then each warning.
func walLines(w io.Writer, r *relay.StatusReport) {
	wr := r.WALRetention
	keep := "-1 (unlimited)"
	if wr.MaxSlotWALKeepSize >= 0 {
		keep = bytesize.Format(wr.MaxSlotWALKeepSize)
	}
	line := "max_slot_wal_keep_size " + keep
	if r.Slot.Exists {
		line = fmt.Sprintf("%s retained, %s", bytesize.Format(wr.RetainedBytes), line)
		switch s := wr.SafeWALSize; {
		case s == nil:
		case *s >= 0:
			line += fmt.Sprintf(", %s more before the source may invalidate the slot", bytesize.Format(*s))
		default:
			line += fmt.Sprintf(", past it by %s", bytesize.Format(-*s))
		}
	}
	fmt.Fprintf(w, "slot WAL\t%s\n", line)
	for _, warn := range wr.Warnings {
		fmt.Fprintf(w, "WARNING\t%s\n", warn.Message)
	}
}

package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/pgrelay/pgrelay/source"
)

// FrameHandler takes one frame of the stream tail prints and returns the
// position that may be acknowledged.
type FrameHandler func(source.Frame) (ack source.LSN, err error)

// Tail runs `pgrelay tail`: it streams the source through a temporary slot of
// its own and hands each frame to the handler newHandler makes for the
// stream's protocol version. It runs until ctx ends (a signal), which is a
// clean stop; the temporary slot disappears with the connection, so tail
// leaves nothing behind on the source except the publication it may have
// created.
func (r *Relay) Tail(ctx context.Context, newHandler func(proto int) FrameHandler) error {
	cfg := r.cfg
	slot := "pgrelay_tail_" + strconv.Itoa(os.Getpid())
	cc := source.ConnConfig{
		URL:            cfg.SourceURL,
		Slot:           slot,
		Publication:    cfg.Publication,
		Tables:         cfg.Tables,
		Streaming:      cfg.Streaming,
		TwoPhase:       cfg.TwoPhase,
		Messages:       true,
		Binary:         cfg.TailBinary,
		StatusInterval: cfg.StatusInterval,
	}
	if err := cc.Validate(); err != nil {
		return &SettingsError{fmt.Errorf("tail: %w", err)}
	}

	pre, err := source.Preflight(ctx, cfg.SourceURL, cc)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tail: %w", err)
	}
	if pre.PublicationCreated {
		r.log.Info("created publication", "publication", cfg.Publication, "tables", tablesOrAll(cfg.Tables), "dropped_by", "pgrelay teardown")
		c, err := source.ConnectPlain(ctx, cfg.SourceURL)
		if err == nil {
			err = source.MarkPublication(ctx, c, cfg.Publication)
			c.Close(context.WithoutCancel(ctx))
		}
		if err != nil {
			return fmt.Errorf("tail: %w", err)
		}
	}

	// tail prints whatever arrives, so it asks for everything the server can send:
	// the "target" can hold prepared transactions.
	opts, err := cc.StreamOptions(pre.ServerMajor, true)
	if err != nil {
		return &SettingsError{fmt.Errorf("tail: %w", err)}
	}
	opts.Messages = pre.ServerMajor >= 14
	opts.Binary = cfg.TailBinary && pre.ServerMajor >= 14

	conn, err := source.Connect(ctx, cfg.SourceURL)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tail: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	info, err := conn.CreateSlot(ctx, slot, source.SlotOptions{Temporary: true, TwoPhase: opts.TwoPhase})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tail: %w", err)
	}
	stream, err := conn.StartReplication(ctx, slot, info.ConsistentPoint, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tail: %w", err)
	}
	r.log.Info("streaming",
		"server", pre.ServerVersion,
		"slot", slot,
		"start", info.ConsistentPoint.String(),
		"publication", cfg.Publication,
		"proto", opts.Proto,
		"streaming", streamingName(opts.Streaming),
		"two_phase", opts.TwoPhase,
		"binary", opts.Binary)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- stream.Run(runCtx) }()

	handle := newHandler(opts.Proto)
	var consumeErr error
	for f := range stream.Frames() {
		if consumeErr != nil {
			continue // drain until Run returns and closes Frames
		}
		ack, err := handle(f)
		if err != nil {
			consumeErr = err
			cancel()
			continue
		}
		stream.Ack(ack)
	}
	err = <-runErr
	if consumeErr != nil {
		return consumeErr
	}
	if ctx.Err() != nil {
		r.log.Info("stopped", "slot", slot, "acked", stream.Acked().String())
		return nil
	}
	if err == nil {
		err = errors.New("replication stream ended")
	}
	return fmt.Errorf("tail: %w", err)
}

func streamingName(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

func tablesOrAll(tables []string) any {
	if len(tables) == 0 {
		return "all"
	}
	return tables
}

// SettingsError is an error of the settings, found only once a command ran:
// nothing was done (exit 2).
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

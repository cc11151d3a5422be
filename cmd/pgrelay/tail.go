package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/pgrelay/pgrelay/source"
)

// runTail implements `pgrelay tail`: stream the source through a temporary slot
// of its own and print each pgoutput message as one JSON line on stdout. It runs
// until ctx ends (SIGINT/SIGTERM), which is a clean stop; the temporary slot
// disappears with the connection, so tail leaves nothing behind on the source
// except the publication it may have created.
func runTail(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("tail takes no arguments, got %q: configure it with PGRELAY_* variables", args[0])}
	}
	cfg := e.cfg
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
		return &usageError{fmt.Errorf("tail: %w", err)}
	}

	pre, err := source.Preflight(ctx, cfg.SourceURL, cc)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("tail: %w", err)
	}
	if pre.PublicationCreated {
		e.log.Info("created publication", "publication", cfg.Publication, "tables", tablesOrAll(cfg.Tables), "dropped_by", "pgrelay teardown")
		if err := withSourceConn(ctx, cfg.SourceURL, func(c *pgx.Conn) error { return markPublication(ctx, c, cfg.Publication) }); err != nil {
			return fmt.Errorf("tail: %w", err)
		}
	}

	// tail prints whatever arrives, so it asks for everything the server can send:
	// the "target" can hold prepared transactions.
	opts, err := cc.StreamOptions(pre.ServerMajor, true)
	if err != nil {
		return &usageError{fmt.Errorf("tail: %w", err)}
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
	e.log.Info("streaming",
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

	t := newTailer(e.stdout, opts.Proto, e.log)
	var consumeErr error
	for f := range stream.Frames() {
		if consumeErr != nil {
			continue // drain until Run returns and closes Frames
		}
		ack, err := t.handle(f)
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
		e.log.Info("stopped", "slot", slot, "acked", stream.Acked().String())
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

// tailer decodes frames and writes their JSON lines.
type tailer struct {
	dec  *source.Decoder
	rels relations
	out  *bufio.Writer
	buf  []byte
	log  *slog.Logger
}

func newTailer(w io.Writer, proto int, log *slog.Logger) *tailer {
	return &tailer{
		dec:  source.NewDecoder(proto),
		rels: make(relations),
		out:  bufio.NewWriterSize(w, 64<<10),
		buf:  make([]byte, 0, 4096),
		log:  log,
	}
}

// handle prints one frame's message, flushed so that a reader of the pipe sees
// it at once, and returns the position that may be acknowledged: the end of a
// finished transaction, or else the frame's own start.
func (t *tailer) handle(f source.Frame) (source.LSN, error) {
	msg, err := t.dec.Decode(f.Data)
	if err != nil {
		return 0, fmt.Errorf("tail: at %s: %w", f.WALStart, err)
	}
	if rel, ok := msg.(*source.Relation); ok {
		t.rels[rel.RelationID] = rel
	}
	t.buf, err = encodeMessage(t.buf[:0], f.WALStart, msg, t.rels)
	if err != nil {
		return 0, err
	}
	t.buf = append(t.buf, '\n')
	if _, err := t.out.Write(t.buf); err != nil {
		return 0, fmt.Errorf("tail: write to stdout: %w", err)
	}
	if err := t.out.Flush(); err != nil {
		return 0, fmt.Errorf("tail: write to stdout: %w", err)
	}
	ack := f.WALStart
	switch m := msg.(type) {
	case *source.Commit:
		ack = max(ack, m.EndLSN)
	case *source.StreamCommit:
		ack = max(ack, m.EndLSN)
	case *source.CommitPrepared:
		ack = max(ack, m.EndLSN)
	case *source.RollbackPrepared:
		ack = max(ack, m.RollbackEndLSN)
	}
	return ack, nil
}

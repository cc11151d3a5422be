package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/pgrelay/pgrelay/source"
)

// Tail runs `pgrelay tail`: it streams the source through a temporary slot of
// its own and writes each pgoutput message to out as one JSON line
// (source.AppendJSON). It runs until ctx ends (a signal), which is a clean
// stop; the temporary slot disappears with the connection, so tail leaves
// nothing behind on the source except the publication it may have created.
func (r *Relay) Tail(ctx context.Context, out io.Writer) error {
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

	handle := newTailer(out, opts.Proto).handle
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

// tailer decodes frames and writes their JSON lines.
type tailer struct {
	dec  *source.Decoder
	rels source.Relations
	out  *bufio.Writer
	buf  []byte
}

func newTailer(w io.Writer, proto int) *tailer {
	return &tailer{
		dec:  source.NewDecoder(proto),
		rels: make(source.Relations),
		out:  bufio.NewWriterSize(w, 64<<10),
		buf:  make([]byte, 0, 4096),
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
	t.buf, err = source.AppendJSON(t.buf[:0], f.WALStart, msg, t.rels)
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

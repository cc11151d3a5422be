package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/source"
)

// runTail implements `pgrelay tail`: the relay streams the source through a
// temporary slot of its own, and each pgoutput message is printed as one JSON
// line on stdout, until a signal.
func runTail(ctx context.Context, e *env, _ []string) error {
	return e.relay.Tail(ctx, func(proto int) relay.FrameHandler {
		return newTailer(e.stdout, proto, e.log).handle
	})
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

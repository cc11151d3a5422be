package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgrelay/pgrelay/source"
)

// FrameSource is the replication stream as Run uses it; *source.Stream has it.
type FrameSource interface {
	// Frames delivers the XLogData messages in WAL order; closed when the stream ends.
	Frames() <-chan source.Frame
	// Ack declares everything up to lsn durable on the target.
	Ack(lsn source.LSN)
}

// ReceivedReporter is the optional capability of a FrameSource to tell the
// highest WAL position the source has reported (the start of the latest
// message, or the WAL end of the latest keepalive). Run uses it to store the
// position while the stream is idle; *source.Stream has it.
type ReceivedReporter interface {
	Received() source.LSN
}

// Decoder decodes one pgoutput message; *source.Decoder is one.
type Decoder interface {
	Decode(buf []byte) (source.Message, error)
}

var (
	_ FrameSource      = (*source.Stream)(nil)
	_ ReceivedReporter = (*source.Stream)(nil)
	_ Decoder          = (*source.Decoder)(nil)
)

// Run joins the replication stream to the applier: it decodes each frame, hands
// it to a, commits the open group when no frame came for GroupMaxDelay, and
// acknowledges a.Durable() to the stream after every commit. When the stream is
// idle and it is a ReceivedReporter, Run also lets the applier store the
// position the source has sent up to (see Applier.Idle).
//
// Run returns nil when the Frames channel is closed (after committing the
// complete transactions in hand: the stream's own error tells why it ended),
// ctx's error when ctx ends, an error wrapping ErrStop when OnLogicalMessage
// asked to stop, or the first error of decoding or apply. It does not Close a.
func Run(ctx context.Context, stream FrameSource, dec Decoder, a *Applier) error {
	frames := stream.Frames()
	idle := a.cfg.GroupMaxDelay
	timer := time.NewTimer(idle)
	defer timer.Stop()
	acked := a.Durable()
	ack := func() {
		if d := a.Durable(); d > acked {
			stream.Ack(d)
			acked = d
		}
	}
	reporter, _ := stream.(ReceivedReporter)
	handle := func(f source.Frame) error {
		msg, err := dec.Decode(f.Data)
		if err != nil {
			return fmt.Errorf("apply: decode message at %s: %w", f.WALStart, err)
		}
		return a.Handle(ctx, f.WALStart, msg)
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return ctx.Err()
		case f, ok := <-frames:
			if !ok {
				err = a.Flush(ctx)
				ack()
				return err
			}
			err = handle(f)
			// The frames already waiting are taken without a select and a
			// timer reset each: during a backlog those cost more than
			// decoding. A burst is bounded so ctx is still looked at.
			for n := 1; err == nil && n < burstFrames; n++ {
				select {
				case f, ok = <-frames:
				default:
					ok = false
				}
				if !ok {
					break // empty or closed: the outer select sees which
				}
				err = handle(f)
			}
		case <-timer.C:
			// Read before looking at the channel: a frame noted by the reader
			// but not yet delivered then starts at or before this position.
			var received source.LSN
			if reporter != nil {
				received = reporter.Received()
			}
			if reporter != nil && len(frames) == 0 {
				err = a.Idle(ctx, received)
			} else {
				err = a.Flush(ctx)
			}
		}
		if err != nil {
			if errors.Is(err, ErrStop) {
				ack()
			}
			return err
		}
		ack()
		timer.Reset(idle)
	}
}

// burstFrames bounds how many waiting frames Run takes in a row.
const burstFrames = 256

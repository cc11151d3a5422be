package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/sink"
)

// Asynchronous commit (sink.AsyncCommitter). Committing a group used to leave
// the target idle while pgrelay received and queued the next group, and
// pgrelay idle while the target ran the last statements and COMMIT. CommitAsync
// sends them from a goroutine and returns; the applier queues the next group
// meanwhile, and learns the outcome from Settle before it counts the group
// durable. Every use of the apply connection first waits for the goroutine
// (settle), so the connection is never used by two goroutines, and a failed
// commit fails every call until Settle has handed it over.

// commitGrace is how long a commit that is on its way may take after the
// caller's context ended.
const commitGrace = 30 * time.Second

// CommitAsync flushes what is queued, records p and sends the commit without
// waiting for its outcome; Settle reports it.
func (tx *Tx) CommitAsync(ctx context.Context, p sink.Progress) error {
	return tx.end(ctx, p, tx.commitAsync)
}

func (tx *Tx) commitAsync(ctx context.Context, p sink.Progress) error {
	if err := tx.queueEnd(ctx, p); err != nil {
		return err
	}
	// Updates and deletes are checked for their row counts before COMMIT goes
	// out (see sendChecked): then COMMIT is a second round trip.
	checked := tx.hasRowChecks()
	inflight := tx.inflight
	tx.inflight = nil
	conn, ops, batch, keys := tx.take()
	var commit *pgconn.Batch
	commitOps := []op{{kind: opCommit, lsn: p.LSN}}
	if checked {
		commit = &pgconn.Batch{}
		commit.ExecParams("COMMIT", nil, nil, nil, nil)
	} else {
		batch.ExecParams("COMMIT", nil, nil, nil, nil)
		ops = append(ops, commitOps...)
	}
	s := tx.s
	done := make(chan error, 1)
	s.pending, s.pendingP = done, p
	// A commit that went out completes even when ctx ends (shutdown), unless
	// the target does not answer for a while.
	parent := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	stop := context.AfterFunc(parent, func() { time.AfterFunc(commitGrace, cancel) })
	go func() {
		defer stop()
		defer cancel()
		if inflight != nil {
			if err := <-inflight; err != nil {
				done <- err
				return
			}
		}
		if err := s.exec(ctx, conn, ops, batch, keys); err != nil {
			done <- err
			return
		}
		if commit != nil {
			done <- s.exec(ctx, conn, commitOps, commit, nil)
			return
		}
		done <- nil
	}()
	tx.finish()
	return nil
}

// Settle waits for the commit CommitAsync sent, if any, and returns its
// outcome, once.
func (s *Sink) Settle(ctx context.Context) error {
	err := s.settle()
	s.asyncErr = nil
	return err
}

// settle waits for the outstanding commit's goroutine. A failure is kept, and
// returned by every call, until Settle.
func (s *Sink) settle() error {
	if s.pending == nil {
		return s.asyncErr
	}
	err := <-s.pending
	s.pending = nil
	if err == nil {
		return s.asyncErr
	}
	var se *sendError
	if errors.As(err, &se) && se.commitUnknown {
		// The connection died with COMMIT on the wire: look at the target.
		err = s.resolveCommit(context.Background(), s.pendingP, err)
	} else if s.conn != nil && !s.conn.IsClosed() {
		// The transaction is still open (a row count was off) or aborted.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, rerr := s.conn.PgConn().Exec(ctx, "ROLLBACK").ReadAll(); rerr != nil {
			_ = s.conn.Close(ctx)
		}
		cancel()
	}
	if err != nil {
		s.asyncErr = err
	}
	return s.asyncErr
}

// ready waits until the apply connection is free: the outstanding commit and
// the open transaction's batch on the wire are done.
func (s *Sink) ready() error {
	if err := s.settle(); err != nil {
		return err
	}
	if s.cur != nil {
		return s.cur.wait()
	}
	return nil
}

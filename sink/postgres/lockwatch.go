package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// A statement of the apply session that waits for a lock held by another
// session, or by a prepared transaction, waits without a word from the
// server: apply would look stalled with nothing in the log. watchLocks looks
// at what such a statement waits for once it has run Options.LockWait, and
// then at doubling intervals (at most lockWatchMax), and logs the holders:
// sessions with their application, user, state and query; prepared
// transactions with their GID. One held by a prepared transaction of this
// slot is an error: only a later message of the stream, which apply reads
// after the waiting statement, ends that transaction, so apply cannot go on.

// lockWatchMax bounds the interval between two reports of one wait.
const lockWatchMax = 5 * time.Minute

// lockWatchTimeout bounds one look at the target (a new session).
const lockWatchTimeout = 10 * time.Second

// lockWatch watches one statement (or batch) of the apply session.
type lockWatch struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	cancel  context.CancelFunc // of the look in progress, if any
}

// watchLocks starts watching what runs on conn now, for what: the first
// table and LSN (0: none) of the batch, named in the report. stop ends the
// watch.
func (s *Sink) watchLocks(conn *pgx.Conn, table string, lsn source.LSN) (stop func()) {
	pid := conn.PgConn().PID()
	start := time.Now()
	w := &lockWatch{}
	every := s.opts.LockWait
	look := func() {
		ctx, cancel := context.WithTimeout(context.Background(), lockWatchTimeout)
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			cancel()
			return
		}
		w.cancel = cancel
		w.mu.Unlock()
		holders, err := s.lockHolders(ctx, pid)
		cancel()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.cancel = nil
		if w.stopped {
			return
		}
		s.reportLockWait(holders, err, time.Since(start), table, lsn)
		every = min(2*every, lockWatchMax)
		w.timer.Reset(every)
	}
	w.mu.Lock()
	w.timer = time.AfterFunc(every, look)
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.stopped = true
		w.timer.Stop()
		if w.cancel != nil {
			w.cancel()
		}
		w.mu.Unlock()
	}
}

// lockHolder is a session or a prepared transaction that holds a lock the
// watched session waits for.
type lockHolder struct {
	pid                     int    // 0: a prepared transaction
	gid                     string // of a prepared transaction
	app, user, state, query string
}

// lockHoldersSQL lists what blocks session $1: the sessions
// pg_blocking_pids names, and the prepared transactions (pid 0 there) that
// hold a lock on an object $1 waits for. pg_locks shows a prepared
// transaction's locks without a pid, under the virtual transaction that also
// holds its transaction id's lock, which names it in pg_prepared_xacts. It
// lists nothing when $1 does not wait for a lock.
const lockHoldersSQL = `WITH me AS (SELECT pg_catalog.pg_blocking_pids($1) AS pids)
SELECT b.pid, '', coalesce(a.application_name, ''), coalesce(a.usename::text, ''), coalesce(a.state, ''),
		coalesce(pg_catalog.left(pg_catalog.regexp_replace(a.query, '\s+', ' ', 'g'), 200), '')
	FROM me, pg_catalog.unnest(me.pids) AS b(pid) LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = b.pid
	WHERE b.pid <> 0
UNION ALL
SELECT DISTINCT 0, p.gid, '', coalesce(p.owner::text, ''), 'prepared ' || p.prepared::text, ''
	FROM me, pg_catalog.pg_locks w
	JOIN pg_catalog.pg_locks h ON h.pid IS NULL AND h.granted
		AND (h.locktype, h.database, h.relation, h.page, h.tuple, h.virtualxid, h.transactionid, h.classid, h.objid, h.objsubid)
			IS NOT DISTINCT FROM (w.locktype, w.database, w.relation, w.page, w.tuple, w.virtualxid, w.transactionid, w.classid, w.objid, w.objsubid)
	JOIN pg_catalog.pg_locks x ON x.pid IS NULL AND x.locktype = 'transactionid' AND x.virtualtransaction = h.virtualtransaction
	JOIN pg_catalog.pg_prepared_xacts p ON p.transaction = x.transactionid
	WHERE w.pid = $1 AND NOT w.granted AND 0 = ANY (me.pids)`

// lockHolders asks the target, on a session of its own (the watched one is
// busy), what holds the locks session pid waits for.
func (s *Sink) lockHolders(ctx context.Context, pid uint32) ([]lockHolder, error) {
	conn, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	rows, err := conn.Query(ctx, lockHoldersSQL, int32(pid))
	if err != nil {
		return nil, err
	}
	var out []lockHolder
	for rows.Next() {
		var h lockHolder
		var p int32
		if err := rows.Scan(&p, &h.gid, &h.app, &h.user, &h.state, &h.query); err != nil {
			rows.Close()
			return nil, err
		}
		h.pid = int(p)
		out = append(out, h)
	}
	return out, rows.Err()
}

// reportLockWait logs what the watched statement has waited for, for waited.
func (s *Sink) reportLockWait(holders []lockHolder, err error, waited time.Duration, table string, lsn source.LSN) {
	log := s.logger()
	waited = waited.Round(100 * time.Millisecond)
	if err != nil {
		log.Debug("could not look at what a long target statement waits for", "waited", waited.String(), "error", err.Error())
		return
	}
	if len(holders) == 0 {
		return // not waiting for a lock: a long statement, or a slow target
	}
	var sessions, prepared, own []string
	for _, h := range holders {
		switch {
		case h.pid != 0:
			sessions = append(sessions, fmt.Sprintf("pid %d (application %q, user %s, %s: %s)", h.pid, h.app, h.user, h.state, h.query))
		case s.slot != "" && sink.OwnGID(s.slot, h.gid):
			own = append(own, h.gid)
		default:
			prepared = append(prepared, fmt.Sprintf("%s (owner %s, %s)", h.gid, h.user, h.state))
		}
	}
	args := []any{"waited", waited.String(), "table", table}
	if lsn != 0 {
		args = append(args, "lsn", lsn.String())
	}
	if len(own) > 0 {
		log.Error("apply is stalled: a target statement waits for a lock held by this slot's own prepared transaction, "+
			"which only a later source message ends; pgrelay cannot go on by itself (a defect: please report it with this log)",
			append(args, "prepared", own, "other_holders", append(sessions, prepared...))...)
		return
	}
	if len(sessions) > 0 {
		args = append(args, "sessions", sessions)
	}
	if len(prepared) > 0 {
		args = append(args, "prepared", prepared)
	}
	log.Warn("a target statement is waiting for a lock another session or a prepared transaction holds "+
		"(end that session's transaction, or COMMIT PREPARED / ROLLBACK PREPARED the prepared one); pgrelay goes on once it is released",
		args...)
}

// batchSubject is the first table a batch changes and its LSN, to name the
// batch in a report.
func batchSubject(ops []op) (string, source.LSN) {
	for _, o := range ops {
		if o.table != "" {
			return o.table, o.lsn
		}
	}
	if len(ops) > 0 {
		return "", ops[0].lsn
	}
	return "", 0
}

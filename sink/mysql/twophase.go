package mysql

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

var (
	_ sink.TwoPhase         = (*Sink)(nil)
	_ sink.PreparedCommits  = (*Sink)(nil)
	_ sink.PreparedBeginner = (*Sink)(nil)
)

// Two-phase transactions as XA transactions (DESIGN.md, invariant 4).
//
// A prepared source transaction's target transaction starts with XA START
// instead of START TRANSACTION. Prepare inserts its row into
// pgrelay_prepared inside it (never the shared progress row, which the
// prepared transaction would hold locked for every later commit), then runs
// XA END and XA PREPARE, and closes the session: MariaDB keeps a prepared
// XA transaction bound to its session until the session ends, and every
// supported server keeps it across the disconnect, for another session's XA
// COMMIT or XA ROLLBACK. CommitPrepared runs XA COMMIT and then, in a short
// transaction, deletes the row and advances progress; RollbackPrepared
// likewise. A restart settles every crash window as on PostgreSQL:
//
//   - before XA PREPARE completed: nothing is on the target.
//   - prepared, not finished: the xid is in XA RECOVER (PreparedGIDs).
//   - XA COMMIT done, bookkeeping not: the xid is no longer in XA RECOVER
//     but its row is committed: CommitPrepared only does the bookkeeping.
//   - XA ROLLBACK done, bookkeeping not: neither: RollbackPrepared only
//     advances progress.
//
// The XA xid is the target GID, split into gtrid (its first 64 bytes) and
// bqual (the rest, then a tag of the target database): deterministic, found
// again by a restart, and read back whole from XA RECOVER. Prepared XA
// transactions are the server's, not a database's, so the tag keeps apart
// the slots of the same name that replicate into two databases of one
// server. Its format ID marks pgrelay's.

// xaFormatID is the format ID of pgrelay's XA xids ("pgry").
const xaFormatID = 0x70677279

// xaMaxPart is how long an XA gtrid and bqual may each be.
const xaMaxPart = 64

// xaTagLen is the length of the database tag that ends a bqual, after ':'.
const xaTagLen = 12

// xaTag is the tag of database in the xids of its prepared transactions.
func xaTag(database string) string {
	sum := sha256.Sum256([]byte(database))
	return hex.EncodeToString(sum[:])[:xaTagLen]
}

// XID is the XA xid pgrelay gives the prepared transaction of target GID
// gid in database, as XA COMMIT and XA ROLLBACK take it
// ('gtrid','bqual',formatID): for ending one by hand.
func XID(database, gid string) string {
	gtrid, rest := gid, ""
	if len(gid) > xaMaxPart {
		gtrid, rest = gid[:xaMaxPart], gid[xaMaxPart:]
	}
	return schema.QuoteString(gtrid) + "," + schema.QuoteString(rest+":"+xaTag(database)) + "," + strconv.Itoa(xaFormatID)
}

// xaXid is gid's XA xid in the sink's database.
func (s *Sink) xaXid(gid string) string { return XID(s.database, gid) }

// checkGID refuses a GID an XA xid cannot hold.
func checkGID(gid string) error {
	if gid == "" || len(gid) > xaMaxPart+xaMaxPart-1-xaTagLen {
		return fmt.Errorf("sink/mysql: GID %q: an XA xid holds 1 to %d bytes of it", gid, xaMaxPart+xaMaxPart-1-xaTagLen)
	}
	return nil
}

// CanPrepare reports whether the target can hold prepared XA transactions
// for pgrelay, as Setup found: XA RECOVER is allowed (MySQL 8 needs the
// XA_RECOVER_ADMIN privilege) and, with binary logging on, binlog_format is
// ROW. When not, Setup logged why; two-phase is then off and prepared
// source transactions apply at their COMMIT PREPARED.
func (s *Sink) CanPrepare() bool { return s.canPrepare }

// checkXA decides CanPrepare.
func (s *Sink) checkXA(ctx context.Context, conn *sql.Conn) {
	s.canPrepare = false
	var logBin, format sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT @@log_bin, @@binlog_format").Scan(&logBin, &format); err != nil {
		s.log.Info("two-phase is off: the target's binary log settings cannot be read", "error", err.Error())
		return
	}
	if (logBin.String == "1" || logBin.String == "ON") && !strings.EqualFold(format.String, "ROW") {
		s.log.Info("two-phase is off: the target logs binary in "+format.String+" format, and XA transactions need ROW (SET GLOBAL binlog_format = 'ROW'); prepared source transactions apply at their COMMIT PREPARED",
			"setting", "binlog_format", "value", format.String)
		return
	}
	if _, err := s.xaRecover(ctx, conn); err != nil {
		s.log.Info("two-phase is off: the target user may not list prepared XA transactions (MySQL 8: GRANT XA_RECOVER_ADMIN ON *.* TO the user); prepared source transactions apply at their COMMIT PREPARED",
			"error", err.Error())
		return
	}
	s.canPrepare = true
}

// xaRecover lists the GIDs of pgrelay's prepared XA transactions in the
// sink's database.
func (s *Sink) xaRecover(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}) ([]string, error) {
	rows, err := q.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	tag := ":" + xaTag(s.database)
	var gids []string
	for rows.Next() {
		var format, gtridLen, bqualLen int
		var data []byte
		if err := rows.Scan(&format, &gtridLen, &bqualLen, &data); err != nil {
			return nil, err
		}
		if format != xaFormatID || gtridLen+bqualLen > len(data) {
			continue
		}
		rest, ok := strings.CutSuffix(string(data[gtridLen:gtridLen+bqualLen]), tag)
		if !ok {
			continue // another database's
		}
		gids = append(gids, string(data[:gtridLen])+rest)
	}
	return gids, rows.Err()
}

// BeginPrepared starts the target transaction of a prepared source
// transaction, to be prepared under gid: an XA transaction from its first
// statement.
func (s *Sink) BeginPrepared(ctx context.Context, gid string) (sink.Tx, error) {
	if err := checkGID(gid); err != nil {
		return nil, err
	}
	tx, err := s.Begin(ctx)
	if err != nil {
		return nil, err
	}
	tx.(*Tx).xa = gid
	return tx, nil
}

// Prepare prepares tx under gid: its row in pgrelay_prepared, XA END and XA
// PREPARE, and the session closed (see above). A transaction begun with
// Begin that sent nothing yet becomes an XA transaction here; one that sent
// statements already (a large one) began as an ordinary transaction, which
// MySQL cannot prepare: use BeginPrepared.
func (s *Sink) Prepare(ctx context.Context, stx sink.Tx, gid string, p sink.Progress) error {
	tx, ok := stx.(*Tx)
	if !ok || tx.s != s {
		return errors.New("sink/mysql: prepare: not a transaction of this sink")
	}
	if err := tx.usable(); err != nil {
		return err
	}
	if err := checkGID(gid); err != nil {
		return err
	}
	if tx.begun && tx.xa != gid {
		return fmt.Errorf("sink/mysql: prepare %s: the transaction began as an ordinary one (it sent statements before it was prepared), and MySQL prepares only XA transactions: begin it with BeginPrepared", gid)
	}
	tx.xa = gid
	if err := tx.drain(ctx); err != nil {
		return err
	}
	if err := tx.closeRun(ctx); err != nil {
		return err
	}
	for _, u := range tx.units {
		if u.kind == opUpdate || u.kind == opDelete {
			if err := tx.flush(ctx, ""); err != nil {
				return err
			}
			break
		}
	}
	slot := p.Slot
	if slot == "" {
		slot = s.slot
	}
	xid := s.xaXid(gid)
	marker := "INSERT INTO pgrelay_prepared (slot, gid, xa_xid, end_lsn) VALUES (" + schema.QuoteString(slot) + ", " + schema.QuoteString(gid) + ", " +
		schema.QuoteString(xid) + ", " + strconv.FormatUint(uint64(p.LSN), 10) + ")"
	if err := tx.flush(ctx, marker+";\nXA END "+xid+";\nXA PREPARE "+xid); err != nil {
		_ = tx.end(ctx)
		return fmt.Errorf("sink/mysql: prepare %s: %w", gid, err)
	}
	// The session stays bound to the prepared transaction on MariaDB until
	// it ends: end it, and leave the transaction to XA COMMIT or ROLLBACK.
	s.cur = nil
	id := s.connID
	s.dropConn()
	s.awaitSessionEnd(ctx, id)
	return nil
}

// awaitSessionEnd waits, a little, until the server has ended the session
// id: only then is a transaction it prepared detached from it, for another
// session to finish (XA RECOVER lists it before). It returns early on any
// error; XA COMMIT and ROLLBACK try again anyway.
func (s *Sink) awaitSessionEnd(ctx context.Context, id int64) {
	for try := range 200 {
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil || n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(min(try+1, 10)) * 2 * time.Millisecond):
		}
	}
}

// xaFinish runs XA COMMIT or XA ROLLBACK of gid on a session of the pool.
// Right after the preparing session closed, the server may still be
// detaching the transaction from it: a few tries.
func (s *Sink) xaFinish(ctx context.Context, verb, gid string) error {
	var err error
	for try := range 20 {
		if _, err = s.db.ExecContext(ctx, "XA "+verb+" "+s.xaXid(gid)); err == nil {
			return nil
		}
		// XAER_NOTA (1397) when unknown, XAER_RMFAIL (1399) while bound.
		if n := mysqlNumber(err); n != 1399 && n != 1440 && n != 1397 || try == 19 {
			return err
		}
		if n := mysqlNumber(err); n == 1397 {
			if prepared, lerr := s.isPrepared(ctx, gid); lerr != nil || !prepared {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try+1) * 20 * time.Millisecond):
		}
	}
	return err
}

// isPrepared reports whether gid is a prepared XA transaction of pgrelay's.
func (s *Sink) isPrepared(ctx context.Context, gid string) (bool, error) {
	gids, err := s.xaRecover(ctx, s.db)
	if err != nil {
		return false, err
	}
	for _, g := range gids {
		if g == gid {
			return true, nil
		}
	}
	return false, nil
}

// preparedRow reports whether pgrelay_prepared holds a committed row for gid
// (with end LSN prepareEnd, when not 0).
func (s *Sink) preparedRow(ctx context.Context, gid string, prepareEnd source.LSN) (bool, error) {
	var n int
	q := "SELECT COUNT(*) FROM pgrelay_prepared WHERE gid = ?"
	args := []any{gid}
	if prepareEnd != 0 {
		q += " AND end_lsn = ?"
		args = append(args, uint64(prepareEnd))
	}
	err := s.db.QueryRowContext(ctx, q, args...).Scan(&n)
	return n > 0, err
}

// CommitPrepared commits the prepared transaction gid (XA COMMIT) and
// records p. A transaction committed before a crash that stopped its
// bookkeeping is only booked.
func (s *Sink) CommitPrepared(ctx context.Context, gid string, p sink.Progress) error {
	return s.finishPrepared(ctx, "COMMIT", gid, p)
}

// RollbackPrepared rolls back the prepared transaction gid (XA ROLLBACK)
// and records p.
func (s *Sink) RollbackPrepared(ctx context.Context, gid string, p sink.Progress) error {
	return s.finishPrepared(ctx, "ROLLBACK", gid, p)
}

func (s *Sink) finishPrepared(ctx context.Context, verb, gid string, p sink.Progress) error {
	if err := checkGID(gid); err != nil {
		return err
	}
	if s.cur != nil {
		return fmt.Errorf("sink/mysql: %s prepared %s: a transaction is open", strings.ToLower(verb), gid)
	}
	prepared, err := s.isPrepared(ctx, gid)
	if err != nil {
		return classify(fmt.Errorf("sink/mysql: %s prepared %s: list prepared XA transactions: %w", strings.ToLower(verb), gid, err), false)
	}
	if prepared {
		if err := s.xaFinish(ctx, verb, gid); err != nil {
			return classify(fmt.Errorf("sink/mysql: XA %s %s: %w", verb, gid, err), false)
		}
	} else {
		row, err := s.preparedRow(ctx, gid, 0)
		if err != nil {
			return classify(fmt.Errorf("sink/mysql: %s prepared %s: read pgrelay_prepared: %w", strings.ToLower(verb), gid, err), false)
		}
		switch {
		case verb == "COMMIT" && !row:
			return fmt.Errorf("sink/mysql: commit prepared %s: the target has no such prepared transaction, nor a record that it was committed: its changes are lost (rolled back by hand?); copy the tables again (PGRELAY_SNAPSHOT=always)", gid)
		case verb == "ROLLBACK" && row:
			return fmt.Errorf("sink/mysql: rollback prepared %s: the transaction was committed on the target already and cannot be rolled back", gid)
		}
	}
	// The bookkeeping: the row goes, progress moves, in one transaction.
	slot := p.Slot
	if slot == "" {
		slot = s.slot
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM pgrelay_prepared WHERE gid = ?", gid); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.progressSQL(slot, p))
		return err
	})
	if err != nil {
		return fmt.Errorf("sink/mysql: %s prepared %s: record progress: %w", strings.ToLower(verb), gid, err)
	}
	return nil
}

// PreparedGIDs lists pgrelay's prepared XA transactions whose GID starts
// with prefix, in GID order.
func (s *Sink) PreparedGIDs(ctx context.Context, prefix string) ([]string, error) {
	gids, err := s.xaRecover(ctx, s.db)
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: list prepared XA transactions: %w", err), false)
	}
	var out []string
	for _, g := range gids {
		if strings.HasPrefix(g, prefix) {
			out = append(out, g)
		}
	}
	slices.Sort(out) // XA RECOVER lists them in no order
	return out, nil
}

// PreparedCommitted implements sink.PreparedCommits: the row the prepared
// transaction inserted is committed, with the same prepare end LSN, and the
// xid is no longer prepared.
func (s *Sink) PreparedCommitted(ctx context.Context, gid string, prepareEnd source.LSN) (bool, error) {
	row, err := s.preparedRow(ctx, gid, prepareEnd)
	if err != nil {
		return false, classify(fmt.Errorf("sink/mysql: read pgrelay_prepared: %w", err), false)
	}
	if !row {
		return false, nil
	}
	prepared, err := s.isPrepared(ctx, gid)
	if err != nil {
		return false, classify(fmt.Errorf("sink/mysql: list prepared XA transactions: %w", err), false)
	}
	return !prepared, nil
}

// HeldPrepared lists slot's prepared XA transactions with their age by the
// server's clock, oldest first (sink.PreparedLister). XA RECOVER says which
// are prepared (a committed or rolled back one is not); age and LSN come from
// the marker row each inserted into pgrelay_prepared inside itself, so they
// hold across a restart of pgrelay or of the server (InnoDB's own start time
// of a recovered transaction is its recovery's).
//
// The marker is uncommitted while the transaction is prepared, and the
// prepared transaction holds it locked: it is read in a READ UNCOMMITTED,
// READ ONLY transaction, whose SELECT is a nonlocking read of the newest
// version on MySQL 8 and MariaDB alike (never waits, takes no lock). The
// isolation is set for that transaction alone (the driver's SET TRANSACTION
// without SESSION): the pool's session keeps READ COMMITTED. Markers are
// written with CURRENT_TIMESTAMP(6) in a '+00:00' session (every session of
// the sink), so they compare with UTC_TIMESTAMP(6).
//
// Without XA_RECOVER_ADMIN, MySQL 8 refuses XA RECOVER with XAER_RMERR
// (1401; the access denied error only in SHOW WARNINGS): pgrelay then
// prepares nothing (CanPrepare), so nothing is held.
func (s *Sink) HeldPrepared(ctx context.Context, slot string) ([]sink.HeldPrepared, error) {
	gids, err := s.xaRecover(ctx, s.db)
	if n := mysqlNumber(err); n == 1401 || n == 1227 {
		return nil, nil
	}
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: list the prepared transactions of slot %q (XA RECOVER): %w", slot, err), false)
	}
	var own []string
	for _, g := range gids {
		if sink.OwnGID(slot, g) {
			own = append(own, g)
		}
	}
	var marked map[string]sink.HeldPrepared
	if len(own) > 0 {
		if marked, err = s.preparedMarkers(ctx, own); err != nil {
			return nil, classify(fmt.Errorf("sink/mysql: read the marker rows of slot %q's prepared transactions (pgrelay_prepared): %w", slot, err), false)
		}
	}
	held := make([]sink.HeldPrepared, 0, len(own))
	var unmarked []string
	for _, g := range own {
		if h, ok := marked[g]; ok {
			held = append(held, h)
		} else {
			unmarked = append(unmarked, g)
		}
	}
	for i, age := range s.sinceFirstSeen(slot, unmarked) {
		held = append(held, sink.HeldPrepared{GID: unmarked[i], Age: age})
	}
	slices.SortFunc(held, func(a, b sink.HeldPrepared) int {
		if c := cmp.Compare(b.Age, a.Age); c != 0 {
			return c
		}
		return strings.Compare(a.GID, b.GID)
	})
	return held, nil
}

// preparedMarkers reads the marker rows of gids, uncommitted ones included,
// without a lock (see HeldPrepared).
func (s *Sink) preparedMarkers(ctx context.Context, gids []string) (map[string]sink.HeldPrepared, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadUncommitted, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	list := make([]string, len(gids))
	for i, g := range gids {
		list[i] = schema.QuoteString(g)
	}
	rows, err := tx.QueryContext(ctx, "SELECT gid, end_lsn, TIMESTAMPDIFF(MICROSECOND, created_at, UTC_TIMESTAMP(6)) FROM pgrelay_prepared WHERE gid IN ("+strings.Join(list, ", ")+")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	marked := make(map[string]sink.HeldPrepared, len(gids))
	for rows.Next() {
		var gid string
		var end uint64
		var micros int64
		if err := rows.Scan(&gid, &end, &micros); err != nil {
			return nil, err
		}
		marked[gid] = sink.HeldPrepared{GID: gid, Age: time.Duration(max(micros, 0)) * time.Microsecond, LSN: source.LSN(end)}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return marked, tx.Commit()
}

// sinceFirstSeen is how long ago this sink first saw each of gids, slot's
// prepared transactions without a marker row (made by hand, or finished
// between XA RECOVER and the read): a lower bound of their age. It forgets
// slot's others.
func (s *Sink) sinceFirstSeen(slot string, gids []string) []time.Duration {
	s.unmarkedMu.Lock()
	defer s.unmarkedMu.Unlock()
	now := time.Now()
	for g := range s.unmarkedSeen {
		if sink.OwnGID(slot, g) && !slices.Contains(gids, g) {
			delete(s.unmarkedSeen, g)
		}
	}
	ages := make([]time.Duration, len(gids))
	for i, g := range gids {
		first, ok := s.unmarkedSeen[g]
		if !ok {
			if s.unmarkedSeen == nil {
				s.unmarkedSeen = make(map[string]time.Time)
			}
			first = now
			s.unmarkedSeen[g] = now
		}
		ages[i] = now.Sub(first)
	}
	return ages
}

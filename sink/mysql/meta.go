package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/migrations"
	"github.com/pgrelay/pgrelay/schema"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// timeLayout is how DATETIME(6) values read as text.
const timeLayout = "2006-01-02 15:04:05.999999"

// parseTime reads a DATETIME(6) text value as UTC.
func parseTime(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	return time.ParseInLocation(timeLayout, s.String, time.UTC)
}

// timeLiteral is t as a DATETIME(6) literal, NULL for the zero time.
func timeLiteral(t time.Time) string {
	if t.IsZero() {
		return "NULL"
	}
	return "'" + t.UTC().Format("2006-01-02 15:04:05.000000") + "'"
}

// querier is what reads metadata: a connection or the pool.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readProgress(ctx context.Context, q querier, slot string) (sink.Progress, error) {
	p := sink.Progress{Slot: slot}
	var lsn uint64
	var commitTime sql.NullString
	err := q.QueryRowContext(ctx, "SELECT lsn, commit_time FROM pgrelay_progress WHERE slot = ?", slot).Scan(&lsn, &commitTime)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err == nil {
		p.LSN = source.LSN(lsn)
		p.CommitTime, err = parseTime(commitTime)
	}
	if err != nil {
		return p, fmt.Errorf("sink/mysql: read progress of slot %q: %w", slot, err)
	}
	return p, nil
}

// progressSQL is the statement that records p for slot in the transaction
// it runs in: the position only moves forward, and the commit time goes with
// it.
func (s *Sink) progressSQL(slot string, p sink.Progress) string {
	values := "(" + schema.QuoteString(slot) + ", " + strconv.FormatUint(uint64(p.LSN), 10) + ", " + timeLiteral(p.CommitTime) + ", CURRENT_TIMESTAMP(6))"
	// Assignments run left to right: commit_time reads lsn before it moves.
	return s.upsert("INSERT INTO pgrelay_progress (slot, lsn, commit_time, updated_at) VALUES " + values +
		" ON DUPLICATE KEY UPDATE commit_time = IF(VALUES(lsn) >= lsn, COALESCE(VALUES(commit_time), commit_time), commit_time)," +
		" updated_at = IF(VALUES(lsn) >= lsn, CURRENT_TIMESTAMP(6), updated_at), lsn = GREATEST(lsn, VALUES(lsn))")
}

// valuesRef is VALUES(col) in an ON DUPLICATE KEY UPDATE.
var valuesRef = regexp.MustCompile(`VALUES\((\w+)\)`)

// upsert turns an INSERT … ON DUPLICATE KEY UPDATE written with VALUES(col)
// into the server's syntax: MySQL 8.0.19+ names the new row with an alias
// (VALUES() is deprecated there), MariaDB knows only VALUES().
func (s *Sink) upsert(stmt string) string {
	if !s.server.RowAlias() {
		return stmt
	}
	insert, update, ok := strings.Cut(stmt, " ON DUPLICATE KEY UPDATE ")
	if !ok {
		return stmt
	}
	return insert + " AS new ON DUPLICATE KEY UPDATE " + valuesRef.ReplaceAllString(update, "new.$1")
}

// Progress reads the stored progress of slot without changing anything (for
// status reports); the zero LSN when none is stored.
func (s *Sink) Progress(ctx context.Context, slot string) (sink.Progress, error) {
	p, err := readProgress(ctx, s.db, slot)
	return p, classify(err, false)
}

// inTx runs fn in a transaction of the pool.
func (s *Sink) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return classify(err, true)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return classify(err, false)
	}
	return classify(tx.Commit(), false)
}

// Seed returns the slot's seed record.
func (s *Sink) Seed(ctx context.Context, slot string) (seed sink.Seed, found bool, err error) {
	var point uint64
	var done bool
	var created, doneAt sql.NullString
	err = s.db.QueryRowContext(ctx, "SELECT consistent_point, snapshot_done, created_at, done_at FROM pgrelay_seed WHERE slot = ?", slot).
		Scan(&point, &done, &created, &doneAt)
	if errors.Is(err, sql.ErrNoRows) {
		return sink.Seed{}, false, nil
	}
	if err == nil {
		seed = sink.Seed{Slot: slot, ConsistentPoint: source.LSN(point), SnapshotDone: done}
		if seed.CreatedAt, err = parseTime(created); err == nil {
			seed.DoneAt, err = parseTime(doneAt)
		}
	}
	if err != nil {
		return sink.Seed{}, false, classify(fmt.Errorf("sink/mysql: read seed of slot %q: %w", slot, err), false)
	}
	return seed, true, nil
}

// StartSeed records a new snapshot at consistentPoint, forgets the slot's
// table states and the source relation OIDs of its stored definitions (the
// new slot may read another source database, where the same OIDs name other
// tables).
func (s *Sink) StartSeed(ctx context.Context, slot string, consistentPoint source.LSN) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM pgrelay_table_state WHERE slot = ?", slot); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE pgrelay_relation SET relation_oid = NULL WHERE slot = ?", slot); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.upsert(`INSERT INTO pgrelay_seed (slot, consistent_point, snapshot_done, created_at, done_at)
			VALUES (?, ?, 0, CURRENT_TIMESTAMP(6), NULL) ON DUPLICATE KEY UPDATE consistent_point = VALUES(consistent_point), snapshot_done = 0, created_at = CURRENT_TIMESTAMP(6), done_at = NULL`),
			slot, uint64(consistentPoint))
		return err
	})
	if err != nil {
		return fmt.Errorf("sink/mysql: start seed of slot %q: %w", slot, err)
	}
	return nil
}

// MarkSeeded marks the snapshot done and moves the slot's progress to
// consistentPoint in the same transaction.
func (s *Sink) MarkSeeded(ctx context.Context, slot string, consistentPoint source.LSN) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE pgrelay_seed SET snapshot_done = 1, done_at = COALESCE(done_at, CURRENT_TIMESTAMP(6))
			WHERE slot = ? AND consistent_point = ?`, slot, uint64(consistentPoint))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("no seed started at %s (StartSeed first)", consistentPoint)
		}
		_, err = tx.ExecContext(ctx, s.progressSQL(slot, sink.Progress{Slot: slot, LSN: consistentPoint}))
		return err
	})
	if err != nil {
		return fmt.Errorf("sink/mysql: mark slot %q seeded: %w", slot, err)
	}
	return nil
}

// TableStates lists the slot's snapshot table states by schema and name.
func (s *Sink) TableStates(ctx context.Context, slot string) ([]sink.TableState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT source_schema, source_name, state, row_count, byte_count, sync_lsn, COALESCE(sync_snapshot, ''),
			COALESCE(published_as, ''), updated_at, COALESCE(relation_oid, 0)
		FROM pgrelay_table_state WHERE slot = ? ORDER BY source_schema, source_name`, slot)
	if err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: read table states of slot %q: %w", slot, err), false)
	}
	defer rows.Close()
	var states []sink.TableState
	for rows.Next() {
		var st sink.TableState
		var syncLSN sql.NullInt64
		var updated sql.NullString
		if err := rows.Scan(&st.Schema, &st.Name, &st.State, &st.Rows, &st.Bytes, &syncLSN, &st.SyncSnapshot, &st.PublishedAs, &updated, &st.RelationID); err != nil {
			return nil, fmt.Errorf("sink/mysql: read table states of slot %q: %w", slot, err)
		}
		st.SyncLSN = source.LSN(uint64(syncLSN.Int64))
		if st.UpdatedAt, err = parseTime(updated); err != nil {
			return nil, fmt.Errorf("sink/mysql: read table states of slot %q: %w", slot, err)
		}
		states = append(states, st)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(fmt.Errorf("sink/mysql: read table states of slot %q: %w", slot, err), false)
	}
	return states, nil
}

// SetTableState inserts or replaces one table's snapshot state.
func (s *Sink) SetTableState(ctx context.Context, slot string, st sink.TableState) error {
	if err := s.SetTableStates(ctx, slot, []sink.TableState{st}); err != nil {
		return fmt.Errorf("sink/mysql: set state of table %s.%s: %w", st.Schema, st.Name, err)
	}
	return nil
}

// SetTableStates is SetTableState for many tables in one statement. A
// table keeps its sync LSN and snapshot, published shape and OID until a new
// seed forgets every state: NULL leaves them as they are.
func (s *Sink) SetTableStates(ctx context.Context, slot string, states []sink.TableState) error {
	if len(states) == 0 {
		return nil
	}
	var values []byte
	for i, st := range states {
		switch st.State {
		case sink.TablePending, sink.TableCopying, sink.TableCopied, sink.TableIndexed:
		default:
			return fmt.Errorf("sink/mysql: table %s.%s: unknown state %q (want pending, copying, copied or indexed)", st.Schema, st.Name, st.State)
		}
		if i > 0 {
			values = append(values, ',')
		}
		nullable := func(set bool, lit string) string {
			if !set {
				return "NULL"
			}
			return lit
		}
		values = fmt.Appendf(values, "(%s, %s, %s, %s, %d, %d, %s, %s, %s, %s, CURRENT_TIMESTAMP(6))",
			schema.QuoteString(slot), schema.QuoteString(st.Schema), schema.QuoteString(st.Name), schema.QuoteString(st.State), st.Rows, st.Bytes,
			nullable(st.SyncLSN != 0, strconv.FormatUint(uint64(st.SyncLSN), 10)),
			nullable(st.SyncSnapshot != "", schema.QuoteString(st.SyncSnapshot)),
			nullable(st.PublishedAs != "", schema.QuoteString(st.PublishedAs)),
			nullable(st.RelationID != 0, strconv.FormatUint(uint64(st.RelationID), 10)))
	}
	// A table listed twice gets its last state: later rows of one INSERT
	// update the earlier ones.
	_, err := s.db.ExecContext(ctx, s.upsert(`INSERT INTO pgrelay_table_state (slot, source_schema, source_name, state, row_count, byte_count, sync_lsn, sync_snapshot, published_as, relation_oid, updated_at)
		VALUES `+string(values)+` ON DUPLICATE KEY UPDATE state = VALUES(state), row_count = VALUES(row_count), byte_count = VALUES(byte_count),
			sync_snapshot = IF(VALUES(sync_lsn) IS NULL, sync_snapshot, VALUES(sync_snapshot)),
			sync_lsn = COALESCE(VALUES(sync_lsn), sync_lsn),
			published_as = COALESCE(VALUES(published_as), published_as),
			relation_oid = COALESCE(VALUES(relation_oid), relation_oid),
			updated_at = VALUES(updated_at)`))
	if err != nil {
		return classify(fmt.Errorf("sink/mysql: set the states of %d tables: %w", len(states), err), false)
	}
	return nil
}

// metadataTables are pgrelay's tables, dropped by the last slot's Teardown.
var metadataTables = []string{"pgrelay_prepared", "pgrelay_progress", "pgrelay_table_state", "pgrelay_seed", "pgrelay_relation", "pgrelay_cutover",
	"pgrelay_foreign_key_away", "pgrelay_schema_migrations"}

// Teardown removes the slot's rows from pgrelay's metadata, and the metadata
// tables when no other slot has any, under the migrations' named lock.
// Prepared XA transactions are left alone: roll them back first.
func (s *Sink) Teardown(ctx context.Context, slot string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return classify(fmt.Errorf("sink/mysql: teardown of slot %q: %w", slot, err), true)
	}
	defer conn.Close()
	lock := migrations.MySQLLockName(s.database)
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 30)", lock).Scan(&got); err != nil || got.Int64 != 1 {
		if err == nil {
			err = errors.New("another session held it for 30 s (a pgrelay setting the target up?)")
		}
		return fmt.Errorf("sink/mysql: teardown of slot %q: take the named lock %s: %w", slot, lock, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", lock) //nolint:errcheck // released with the session anyway
	v, err := migrations.MySQLVersion(ctx, conn)
	if err != nil || v == 0 {
		return err
	}
	others := false
	err = func() error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
		for _, table := range []string{"pgrelay_progress", "pgrelay_prepared", "pgrelay_table_state", "pgrelay_seed", "pgrelay_cutover", "pgrelay_foreign_key_away"} {
			// The last two came with later migrations.
			later := table == "pgrelay_cutover" || table == "pgrelay_foreign_key_away"
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE slot = ?", slot); err != nil && (!later || mysqlNumber(err) != erNoSuchTable) {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM pgrelay_relation WHERE slot = ? OR slot IS NULL", slot); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pgrelay_progress) OR EXISTS (SELECT 1 FROM pgrelay_prepared)
			OR EXISTS (SELECT 1 FROM pgrelay_table_state) OR EXISTS (SELECT 1 FROM pgrelay_seed) OR EXISTS (SELECT 1 FROM pgrelay_relation)`).Scan(&others); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err == nil && !others {
		for _, table := range metadataTables {
			if _, err = conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
				break
			}
		}
	}
	if err != nil {
		return classify(fmt.Errorf("sink/mysql: teardown of slot %q: %w", slot, err), false)
	}
	return nil
}

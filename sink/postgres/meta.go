package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgrelay/pgrelay/migrations"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

var _ sink.SeedStore = (*Sink)(nil)

// withMeta runs fn on the metadata connection, opening it on first use and
// again after a loss. The metadata schema must exist (Setup creates it).
func (s *Sink) withMeta(ctx context.Context, fn func(*pgx.Conn) error) error {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	if s.meta == nil || s.meta.IsClosed() {
		conn, err := s.connect(ctx)
		if err != nil {
			return err
		}
		s.meta = conn
	}
	err := fn(s.meta)
	if err != nil {
		return classify(err, s.meta.IsClosed())
	}
	return nil
}

// progressArgs are the text parameters of progressSQL.
func progressArgs(slot string, p sink.Progress) [][]byte {
	var commitTime []byte
	if !p.CommitTime.IsZero() {
		commitTime = []byte(p.CommitTime.UTC().Format(time.RFC3339Nano))
	}
	return [][]byte{[]byte(slot), []byte(p.LSN.String()), commitTime}
}

func readProgress(ctx context.Context, conn *pgx.Conn, slot string) (sink.Progress, error) {
	p := sink.Progress{Slot: slot}
	var lsn string
	var commitTime pgtype.Timestamptz
	err := conn.QueryRow(ctx, "SELECT lsn::text, commit_time FROM pgrelay.progress WHERE slot = $1", slot).Scan(&lsn, &commitTime)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, fmt.Errorf("sink/postgres: read progress of slot %q: %w", slot, err)
	}
	if p.LSN, err = pglogrepl.ParseLSN(lsn); err != nil {
		return p, fmt.Errorf("sink/postgres: read progress of slot %q: %w", slot, err)
	}
	if commitTime.Valid {
		p.CommitTime = commitTime.Time
	}
	return p, nil
}

// Progress reads the stored progress of slot without changing anything (for
// status reports); the zero LSN when none is stored.
func (s *Sink) Progress(ctx context.Context, slot string) (sink.Progress, error) {
	var p sink.Progress
	err := s.withMeta(ctx, func(conn *pgx.Conn) (err error) {
		p, err = readProgress(ctx, conn, slot)
		return err
	})
	return p, err
}

// Seed returns the slot's seed record.
func (s *Sink) Seed(ctx context.Context, slot string) (seed sink.Seed, found bool, err error) {
	err = s.withMeta(ctx, func(conn *pgx.Conn) error {
		var point string
		var doneAt pgtype.Timestamptz
		err := conn.QueryRow(ctx, `SELECT consistent_point::text, snapshot_done, created_at, done_at
			FROM pgrelay.seed WHERE slot = $1`, slot).Scan(&point, &seed.SnapshotDone, &seed.CreatedAt, &doneAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		seed.Slot = slot
		seed.DoneAt = doneAt.Time
		seed.ConsistentPoint, err = pglogrepl.ParseLSN(point)
		return err
	})
	if err != nil {
		return sink.Seed{}, false, fmt.Errorf("sink/postgres: read seed of slot %q: %w", slot, err)
	}
	return seed, found, nil
}

// StartSeed records a new snapshot at consistentPoint and forgets the slot's
// previous table states, and the source relation OIDs of its stored
// definitions: the new slot may read another source database (restored from a
// dump, say), where the same OIDs name other tables; its tables are matched to
// the target's by name only.
func (s *Sink) StartSeed(ctx context.Context, slot string, consistentPoint source.LSN) error {
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "DELETE FROM pgrelay.table_state WHERE slot = $1", slot); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "UPDATE pgrelay.relation SET relation_oid = NULL WHERE slot = $1", slot); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO pgrelay.seed (slot, consistent_point, snapshot_done, created_at, done_at)
				VALUES ($1, $2::text::pg_lsn, false, now(), NULL)
				ON CONFLICT (slot) DO UPDATE SET consistent_point = excluded.consistent_point,
					snapshot_done = false, created_at = now(), done_at = NULL`, slot, consistentPoint.String())
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("sink/postgres: start seed of slot %q: %w", slot, err)
	}
	return nil
}

// MarkSeeded marks the snapshot done and moves the slot's progress to
// consistentPoint in the same transaction.
func (s *Sink) MarkSeeded(ctx context.Context, slot string, consistentPoint source.LSN) error {
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE pgrelay.seed SET snapshot_done = true, done_at = now()
				WHERE slot = $1 AND consistent_point = $2::text::pg_lsn`, slot, consistentPoint.String())
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return fmt.Errorf("no seed started at %s (StartSeed first)", consistentPoint)
			}
			args := progressArgs(slot, sink.Progress{Slot: slot, LSN: consistentPoint})
			_, err = tx.Exec(ctx, progressSQL, string(args[0]), string(args[1]), nil)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("sink/postgres: mark slot %q seeded: %w", slot, err)
	}
	return nil
}

// TableStates lists the slot's snapshot table states by schema and name.
func (s *Sink) TableStates(ctx context.Context, slot string) ([]sink.TableState, error) {
	var states []sink.TableState
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT schema, name, state, rows, bytes, coalesce(sync_lsn::text, ''), coalesce(sync_snapshot, ''),
				coalesce(published_as, ''), updated_at, coalesce(relation_oid, 0)
			FROM pgrelay.table_state WHERE slot = $1 ORDER BY schema, name`, slot)
		if err != nil {
			return err
		}
		states, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (sink.TableState, error) {
			var st sink.TableState
			var syncLSN string
			err := r.Scan(&st.Schema, &st.Name, &st.State, &st.Rows, &st.Bytes, &syncLSN, &st.SyncSnapshot, &st.PublishedAs, &st.UpdatedAt, &st.RelationID)
			if err == nil && syncLSN != "" {
				st.SyncLSN, err = pglogrepl.ParseLSN(syncLSN)
			}
			return st, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sink/postgres: read table states of slot %q: %w", slot, err)
	}
	return states, nil
}

// SetTableState inserts or replaces one table's snapshot state.
func (s *Sink) SetTableState(ctx context.Context, slot string, st sink.TableState) error {
	if err := s.setTableStates(ctx, slot, []sink.TableState{st}); err != nil {
		return fmt.Errorf("sink/postgres: set state of table %s.%s: %w", st.Schema, st.Name, err)
	}
	return nil
}

// SetTableStates is SetTableState for many tables in one statement: a copy
// of thousands of tables spent a round trip on each. A table listed twice
// gets its last state.
func (s *Sink) SetTableStates(ctx context.Context, slot string, states []sink.TableState) error {
	if err := s.setTableStates(ctx, slot, states); err != nil {
		return fmt.Errorf("sink/postgres: set the states of %d tables: %w", len(states), err)
	}
	return nil
}

func (s *Sink) setTableStates(ctx context.Context, slot string, states []sink.TableState) error {
	n := len(states)
	schemas, names, kinds := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	rows, bytes := make([]int64, 0, n), make([]int64, 0, n)
	syncLSNs, syncSnaps, publishedAs := make([]*string, 0, n), make([]*string, 0, n), make([]*string, 0, n)
	relids := make([]*uint32, 0, n)
	at := map[[2]string]int{}
	for _, st := range states {
		switch st.State {
		case sink.TablePending, sink.TableCopying, sink.TableCopied, sink.TableIndexed:
		default:
			return fmt.Errorf("table %s.%s: unknown state %q (want pending, copying, copied or indexed)", st.Schema, st.Name, st.State)
		}
		// A table keeps its sync LSN and snapshot until a new seed forgets
		// every state: NULL leaves them as they are.
		var lsn, snap, as *string
		if st.SyncLSN != 0 {
			l := st.SyncLSN.String()
			lsn = &l
		}
		if st.SyncSnapshot != "" {
			snap = &st.SyncSnapshot
		}
		if st.PublishedAs != "" {
			as = &st.PublishedAs
		}
		var relid *uint32
		if st.RelationID != 0 {
			relid = &st.RelationID
		}
		key := [2]string{st.Schema, st.Name}
		if i, ok := at[key]; ok {
			kinds[i], rows[i], bytes[i], syncLSNs[i], syncSnaps[i], publishedAs[i], relids[i] = st.State, st.Rows, st.Bytes, lsn, snap, as, relid
			continue
		}
		at[key] = len(schemas)
		schemas, names, kinds = append(schemas, st.Schema), append(names, st.Name), append(kinds, st.State)
		rows, bytes = append(rows, st.Rows), append(bytes, st.Bytes)
		syncLSNs, syncSnaps, publishedAs = append(syncLSNs, lsn), append(syncSnaps, snap), append(publishedAs, as)
		relids = append(relids, relid)
	}
	if len(schemas) == 0 {
		return nil
	}
	return s.withMeta(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `INSERT INTO pgrelay.table_state (slot, schema, name, state, rows, bytes, sync_lsn, sync_snapshot, published_as, relation_oid, updated_at)
			SELECT $1, u.schema, u.name, u.state, u.rows, u.bytes, u.sync_lsn::pg_lsn, u.sync_snapshot, u.published_as, u.relation_oid, now()
			FROM ROWS FROM (unnest($2::text[]), unnest($3::text[]), unnest($4::text[]), unnest($5::int8[]), unnest($6::int8[]),
				unnest($7::text[]), unnest($8::text[]), unnest($9::text[]), unnest($10::oid[])) AS u(schema, name, state, rows, bytes, sync_lsn, sync_snapshot, published_as, relation_oid)
			ON CONFLICT (slot, schema, name) DO UPDATE SET state = excluded.state, rows = excluded.rows,
				bytes = excluded.bytes, sync_lsn = coalesce(excluded.sync_lsn, pgrelay.table_state.sync_lsn),
				sync_snapshot = CASE WHEN excluded.sync_lsn IS NULL THEN pgrelay.table_state.sync_snapshot ELSE excluded.sync_snapshot END,
				published_as = coalesce(excluded.published_as, pgrelay.table_state.published_as),
				relation_oid = coalesce(excluded.relation_oid, pgrelay.table_state.relation_oid),
				updated_at = now()`, slot, schemas, names, kinds, rows, bytes, syncLSNs, syncSnaps, publishedAs, relids)
		return err
	})
}

// Teardown removes the slot's rows from pgrelay's metadata, and the pgrelay
// schema when no other slot has any. It takes the migrations' advisory lock so
// it cannot interleave with another instance's Setup. Prepared transactions are
// left alone: roll them back (RollbackPrepared) first.
func (s *Sink) Teardown(ctx context.Context, slot string) error {
	err := s.withMeta(ctx, func(conn *pgx.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrations.PostgresLockKey); err != nil {
				return err
			}
			// Another session using pgrelay's tables (a prepared transaction
			// left by hand, a verify) must not make teardown hang unseen.
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '30s'"); err != nil {
				return err
			}
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT to_regnamespace('pgrelay') IS NOT NULL").Scan(&exists); err != nil || !exists {
				return err
			}
			// The last migration's report (migration 0008: a target set up
			// by an older pgrelay lacks it).
			var cutover bool
			if err := tx.QueryRow(ctx, "SELECT to_regclass('pgrelay.cutover') IS NOT NULL").Scan(&cutover); err != nil {
				return err
			}
			if cutover {
				if _, err := tx.Exec(ctx, "DELETE FROM pgrelay.cutover WHERE slot = $1", slot); err != nil {
					return err
				}
			}
			var others bool
			err := tx.QueryRow(ctx, `
				WITH p AS (DELETE FROM pgrelay.progress WHERE slot = $1),
				     x AS (DELETE FROM pgrelay.prepared WHERE slot = $1),
				     t AS (DELETE FROM pgrelay.table_state WHERE slot = $1),
				     s AS (DELETE FROM pgrelay.seed WHERE slot = $1)
				SELECT EXISTS (SELECT FROM pgrelay.progress WHERE slot <> $1)
				    OR EXISTS (SELECT FROM pgrelay.prepared WHERE slot <> $1)
				    OR EXISTS (SELECT FROM pgrelay.table_state WHERE slot <> $1)
				    OR EXISTS (SELECT FROM pgrelay.seed WHERE slot <> $1)`, slot).Scan(&others)
			if err != nil || others {
				return err
			}
			_, err = tx.Exec(ctx, "DROP SCHEMA pgrelay CASCADE")
			return err
		})
	})
	if sqlState(err) == "55P03" {
		return fmt.Errorf("sink/postgres: teardown of slot %q: another session kept pgrelay's metadata locked for 30s (a prepared transaction: see pg_prepared_xacts; otherwise pg_locks): end it and run teardown again: %w", slot, err)
	}
	if err != nil {
		return fmt.Errorf("sink/postgres: teardown of slot %q: %w", slot, err)
	}
	return nil
}

package source

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrelay/pgrelay/internal/pgquote"
)

// SlotState is a replication slot as pg_replication_slots shows it.
type SlotState struct {
	Name     string
	Plugin   string // output plugin; "" for a physical slot
	Type     string // "logical" or "physical"
	Database string // the database a logical slot belongs to
	Exists   bool
	Active   bool // a walsender streams from it
	// Temporary slots vanish with their connection.
	Temporary bool
	TwoPhase  bool // from PostgreSQL 14; false before
	// WALStatus is reserved, extended, unreserved or lost (from 13; "" before).
	WALStatus string
	// InvalidationReason is set when the server invalidated the slot (from 17;
	// "" before, where WALStatus = "lost" tells).
	InvalidationReason string
	ConfirmedFlushLSN  LSN
	RestartLSN         LSN
	ActivePID          int
}

// Invalidated reports whether the slot can no longer stream: the server removed
// WAL it needed, or invalidated it for another reason (conflict, idle timeout).
func (s SlotState) Invalidated() bool {
	return s.WALStatus == "lost" || s.InvalidationReason != ""
}

// serverMajor is the major version of the server behind a pgx connection.
func serverMajor(conn *pgx.Conn) int {
	return parseMajor(conn.PgConn().ParameterStatus("server_version"))
}

// readSlotSQL selects the columns the server has: wal_status from 13, two_phase
// from 14, conflicting from 16, invalidation_reason from 17.
func readSlotSQL(major int) string {
	cols := []string{
		"slot_name", "coalesce(plugin, '')", "coalesce(slot_type, '')", "coalesce(database::text, '')",
		"active", "temporary", "coalesce(active_pid, 0)",
		"coalesce(confirmed_flush_lsn::text, '')", "coalesce(restart_lsn::text, '')",
	}
	if major >= 13 {
		cols = append(cols, "coalesce(wal_status, '')")
	} else {
		cols = append(cols, "''")
	}
	if major >= 14 {
		cols = append(cols, "coalesce(two_phase, false)")
	} else {
		cols = append(cols, "false")
	}
	switch {
	case major >= 17:
		cols = append(cols, "coalesce(invalidation_reason, '')")
	case major == 16:
		// 16's conflicting is true for any invalidation (17 narrowed it to
		// recovery conflicts): a lost WAL status tells the usual cause.
		cols = append(cols, "CASE WHEN NOT coalesce(conflicting, false) THEN '' WHEN wal_status = 'lost' THEN 'wal_removed' ELSE 'rows_removed' END")
	default:
		cols = append(cols, "''")
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM pg_catalog.pg_replication_slots WHERE slot_name = $1"
}

// ReadSlot reads the slot's row from pg_replication_slots. A missing slot is not
// an error: Exists is false.
func ReadSlot(ctx context.Context, conn *pgx.Conn, name string) (SlotState, error) {
	st := SlotState{Name: name}
	var confirmed, restart string
	var pid int32
	err := conn.QueryRow(ctx, readSlotSQL(serverMajor(conn)), name).Scan(
		&st.Name, &st.Plugin, &st.Type, &st.Database, &st.Active, &st.Temporary, &pid,
		&confirmed, &restart, &st.WALStatus, &st.TwoPhase, &st.InvalidationReason)
	if errors.Is(err, pgx.ErrNoRows) {
		return SlotState{Name: name}, nil
	}
	if err != nil {
		return SlotState{}, fmt.Errorf("source: read slot %q: %w", name, err)
	}
	st.Exists = true
	st.ActivePID = int(pid)
	if st.ConfirmedFlushLSN, err = parseOptionalLSN(confirmed); err != nil {
		return SlotState{}, fmt.Errorf("source: read slot %q: confirmed_flush_lsn: %w", name, err)
	}
	if st.RestartLSN, err = parseOptionalLSN(restart); err != nil {
		return SlotState{}, fmt.Errorf("source: read slot %q: restart_lsn: %w", name, err)
	}
	return st, nil
}

func parseOptionalLSN(s string) (LSN, error) {
	if s == "" {
		return 0, nil
	}
	return pglogrepl.ParseLSN(s)
}

// DropSlot drops a replication slot with pg_drop_replication_slot. A slot that a
// walsender is using is not dropped: the error wraps ErrSlotInUse and names the
// process. A missing slot wraps ErrSlotNotFound.
func DropSlot(ctx context.Context, conn *pgx.Conn, name string) error {
	_, err := conn.Exec(ctx, "SELECT pg_catalog.pg_drop_replication_slot($1)", name)
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55006" {
		return fmt.Errorf("source: drop slot %q: %w: %s: stop the process using it (SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = %s;) and retry",
			name, ErrSlotInUse, pgErr.Message, pgquote.Literal(name))
	}
	return fmt.Errorf("source: drop slot %q: %w", name, classifyPgError(err, name))
}

// CurrentWALLSN is the source's current WAL write position (pg_current_wal_lsn).
func CurrentWALLSN(ctx context.Context, conn *pgx.Conn) (LSN, error) {
	var text string
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_current_wal_lsn()::text").Scan(&text); err != nil {
		return 0, fmt.Errorf("source: read current WAL position: %w", err)
	}
	lsn, err := pglogrepl.ParseLSN(text)
	if err != nil {
		return 0, fmt.Errorf("source: read current WAL position %q: %w", text, err)
	}
	return lsn, nil
}

// EmitMarker writes a non-transactional logical decoding message
// (pg_logical_emit_message(false, prefix, content)) and returns its LSN. The
// stream delivers it, outside any transaction, to a consumer that asked for
// Messages; it marks a position (the end of a copy, a heartbeat that lets an idle
// stream's acked position advance). The WAL is flushed at once (from 17 by the
// call itself, before by a commit) so the walsender can send it without waiting
// for the WAL writer.
func EmitMarker(ctx context.Context, conn *pgx.Conn, prefix string, content []byte) (LSN, error) {
	if content == nil {
		content = []byte{}
	}
	var text string
	var err error
	if serverMajor(conn) >= 17 {
		err = conn.QueryRow(ctx, "SELECT pg_catalog.pg_logical_emit_message(false, $1::text, $2::bytea, true)::text", prefix, content).Scan(&text)
	} else {
		// Before 17 the message is not flushed: the WAL writer would, up to
		// wal_writer_delay (200 ms) later, and the walsender sends only
		// flushed WAL. A transaction id makes the commit flush it.
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, "SELECT pg_catalog.pg_logical_emit_message(false, $1::text, $2::bytea)::text", prefix, content).Scan(&text); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT pg_catalog.txid_current()")
			return err
		})
	}
	if err != nil {
		return 0, fmt.Errorf("source: emit marker %q: %w", prefix, err)
	}
	lsn, err := pglogrepl.ParseLSN(text)
	if err != nil {
		return 0, fmt.Errorf("source: emit marker %q: LSN %q: %w", prefix, text, err)
	}
	return lsn, nil
}

// ExportedSnapshot is a snapshot a transaction exported (pg_export_snapshot)
// for other sessions to import with SET TRANSACTION SNAPSHOT, and the WAL
// insert position read right after it was taken: every transaction the
// snapshot sees committed before LSN. Unlike a slot's exported snapshot it
// has no exact LSN: a transaction whose commit record is before LSN may still
// be unseen, which only the snapshot's transaction ids tell.
type ExportedSnapshot struct {
	Name string
	LSN  LSN
}

// ExportSnapshot begins a read-only REPEATABLE READ transaction on conn and
// exports its snapshot. The transaction must stay open, and conn idle, while
// other sessions import it. Unlike creating a slot, it waits for no other
// transaction.
func ExportSnapshot(ctx context.Context, conn *pgx.Conn) (ExportedSnapshot, error) {
	// The exporting session sits idle in its transaction for the whole copy.
	if _, err := conn.Exec(ctx, "SET idle_in_transaction_session_timeout = 0"); err != nil {
		return ExportedSnapshot{}, fmt.Errorf("source: export a snapshot: %w", err)
	}
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return ExportedSnapshot{}, fmt.Errorf("source: export a snapshot: %w", err)
	}
	// One statement: its snapshot, the transaction's, is taken before the
	// position is read.
	var snap ExportedSnapshot
	var text string
	err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_export_snapshot(),
		CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_insert_lsn() END::text`).Scan(&snap.Name, &text)
	if err != nil {
		return ExportedSnapshot{}, fmt.Errorf("source: export a snapshot: %w", err)
	}
	if snap.LSN, err = pglogrepl.ParseLSN(text); err != nil {
		return ExportedSnapshot{}, fmt.Errorf("source: export a snapshot: WAL position %q: %w", text, err)
	}
	return snap, nil
}

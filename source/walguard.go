package source

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgrelay/pgrelay/internal/bytesize"
)

// WALRetention is how much WAL the source keeps for a slot and how close that
// is to the server's limit, max_slot_wal_keep_size, past which a checkpoint
// removes the WAL and invalidates the slot (a new copy is then needed).
type WALRetention struct {
	Slot   string
	Exists bool
	Active bool
	// Major is the server's major version: before 13 there is neither
	// wal_status nor max_slot_wal_keep_size, and a slot keeps WAL without bound.
	Major int
	// WALStatus is reserved, extended, unreserved or lost (13+; "" before).
	WALStatus string
	// InvalidationReason is set when the server invalidated the slot (17+).
	InvalidationReason string
	RestartLSN         LSN
	// CurrentLSN is the server's WAL position (its replay position on a standby).
	CurrentLSN LSN
	// RetainedBytes is CurrentLSN - RestartLSN: the WAL the slot holds back.
	RetainedBytes int64
	// SafeWALSize is how many more bytes of WAL can be written before the slot
	// is past max_slot_wal_keep_size (13+; negative once it is); nil when the
	// setting is -1 or the slot is lost.
	SafeWALSize *int64
	// MaxSlotWALKeepSize is the server's max_slot_wal_keep_size in bytes; -1 is
	// unlimited, as is every server before 13.
	MaxSlotWALKeepSize int64
}

// ReadWALRetention reads the slot's WAL retention and the server's
// max_slot_wal_keep_size. A missing slot is not an error: Exists is false and
// the setting is still read, so the unlimited-retention warning can be given
// before the slot is created.
func ReadWALRetention(ctx context.Context, conn *pgx.Conn, slot string) (WALRetention, error) {
	r := WALRetention{Slot: slot, Major: serverMajor(conn), MaxSlotWALKeepSize: -1}
	var restart, current, keep, keepUnit string
	err := conn.QueryRow(ctx, readWALRetentionSQL(r.Major), slot).Scan(
		&r.Exists, &r.Active, &r.WALStatus, &r.InvalidationReason, &restart, &current, &r.SafeWALSize, &keep, &keepUnit)
	if err != nil {
		return WALRetention{}, fmt.Errorf("source: read the WAL retention of slot %q: %w", slot, err)
	}
	if r.RestartLSN, err = parseOptionalLSN(restart); err != nil {
		return WALRetention{}, fmt.Errorf("source: read the WAL retention of slot %q: restart_lsn: %w", slot, err)
	}
	if r.CurrentLSN, err = parseOptionalLSN(current); err != nil {
		return WALRetention{}, fmt.Errorf("source: read the WAL retention of slot %q: current WAL position: %w", slot, err)
	}
	if r.RestartLSN != 0 && r.CurrentLSN > r.RestartLSN {
		r.RetainedBytes = int64(r.CurrentLSN - r.RestartLSN)
	}
	if keep != "" {
		if r.MaxSlotWALKeepSize, err = settingBytes(keep, keepUnit); err != nil {
			return WALRetention{}, fmt.Errorf("source: read max_slot_wal_keep_size: %w", err)
		}
	}
	return r, nil
}

// readWALRetentionSQL reads one row whether the slot exists or not: the
// setting matters before the slot is created.
func readWALRetentionSQL(major int) string {
	status, reason, safe, keep, unit := "''", "''", "NULL::bigint", "''", "''"
	if major >= 13 {
		status, safe = "coalesce(s.wal_status, '')", "s.safe_wal_size"
		keep = "(SELECT setting FROM pg_catalog.pg_settings WHERE name = 'max_slot_wal_keep_size')"
		unit = "(SELECT coalesce(unit, '') FROM pg_catalog.pg_settings WHERE name = 'max_slot_wal_keep_size')"
	}
	if major >= 17 {
		reason = "coalesce(s.invalidation_reason, '')"
	}
	return `SELECT s.slot_name IS NOT NULL, coalesce(s.active, false), ` + status + `, ` + reason + `,
		coalesce(s.restart_lsn::text, ''),
		coalesce((CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() ELSE pg_catalog.pg_current_wal_lsn() END)::text, ''),
		` + safe + `, coalesce(` + keep + `, ''), coalesce(` + unit + `, '')
	FROM (SELECT 1) AS one LEFT JOIN pg_catalog.pg_replication_slots s ON s.slot_name = $1`
}

// settingBytes turns a size setting as pg_settings shows it (setting and
// unit, e.g. "1024" and "MB") into bytes; -1 stays -1.
func settingBytes(setting, unit string) (int64, error) {
	n, err := strconv.ParseInt(setting, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("setting %q: %w", setting, err)
	}
	if n < 0 {
		return -1, nil
	}
	if unit == "" {
		return n, nil
	}
	if unit[0] < '0' || unit[0] > '9' {
		unit = "1" + unit
	}
	mult, err := bytesize.Parse(unit)
	if err != nil || mult == 0 {
		return 0, fmt.Errorf("unit %q of setting %q is not a size", unit, setting)
	}
	return n * mult, nil
}

// WALAlert is when retained WAL is worth a warning: past Share of
// max_slot_wal_keep_size (0 = never) or past Bytes whatever the setting
// (0 = never).
type WALAlert struct {
	Share float64
	Bytes int64
}

// WALRisk is the kind of a WAL-retention warning, from the least to the most
// severe.
type WALRisk int

const (
	// WALUnlimited: max_slot_wal_keep_size is -1 (or the server is older than
	// 13): a stopped replica's slot keeps WAL until the source's disk is full.
	WALUnlimited WALRisk = iota + 1
	// WALRetained: the slot retains more WAL than WALAlert allows.
	WALRetained
	// WALUnreserved: the slot is past max_slot_wal_keep_size; the next
	// checkpoint removes WAL it needs.
	WALUnreserved
	// WALLost: the server removed WAL the slot needed, or invalidated it.
	WALLost
)

func (k WALRisk) String() string {
	switch k {
	case WALUnlimited:
		return "unlimited"
	case WALRetained:
		return "retained"
	case WALUnreserved:
		return "unreserved"
	case WALLost:
		return "lost"
	}
	return "none"
}

// AtRisk reports whether the slot itself is in danger (not only unbounded).
func (k WALRisk) AtRisk() bool { return k >= WALRetained }

// WALWarning is one thing an operator should know about a slot's WAL
// retention, as one line naming the setting and the risk.
type WALWarning struct {
	Risk    WALRisk
	Message string
}

// WALWarnings decides, from a reading and the alert thresholds, what to warn
// about, the most severe first. A lost slot gets only that warning.
func WALWarnings(r WALRetention, alert WALAlert) []WALWarning {
	if !r.Exists {
		if r.MaxSlotWALKeepSize < 0 {
			return []WALWarning{unlimitedWarning(r)}
		}
		return nil
	}
	if r.WALStatus == "lost" || r.InvalidationReason != "" {
		why := "wal_status lost"
		if r.InvalidationReason != "" {
			why = "invalidated: " + r.InvalidationReason
		}
		return []WALWarning{{WALLost, fmt.Sprintf(
			"slot %q is lost (%s): the source no longer has the WAL it needs and it can stream no more; run pgrelay once with PGRELAY_SNAPSHOT=always, which copies the tables anew",
			r.Slot, why)}}
	}
	var out []WALWarning
	keep := bytesize.Format(r.MaxSlotWALKeepSize)
	switch {
	case r.WALStatus == "unreserved":
		out = append(out, WALWarning{WALUnreserved, fmt.Sprintf(
			"slot %q retains %s of WAL, past max_slot_wal_keep_size (%s, wal_status unreserved): the source's next checkpoint removes WAL it still needs and invalidates it, and a new copy will be needed; let pgrelay catch up now, or raise max_slot_wal_keep_size (e.g. ALTER SYSTEM SET max_slot_wal_keep_size = '%dMB'; SELECT pg_reload_conf())",
			r.Slot, bytesize.Format(r.RetainedBytes), keep, 2*max(r.MaxSlotWALKeepSize, r.RetainedBytes)>>20)})
	case alert.Share > 0 && r.MaxSlotWALKeepSize > 0 && float64(r.RetainedBytes) >= alert.Share*float64(r.MaxSlotWALKeepSize):
		out = append(out, WALWarning{WALRetained, fmt.Sprintf(
			"slot %q retains %s of WAL, %.0f%% of max_slot_wal_keep_size (%s): past it the source invalidates the slot and a new copy will be needed; let pgrelay catch up, or raise max_slot_wal_keep_size",
			r.Slot, bytesize.Format(r.RetainedBytes), 100*float64(r.RetainedBytes)/float64(r.MaxSlotWALKeepSize), keep)})
	case alert.Bytes > 0 && r.RetainedBytes >= alert.Bytes:
		out = append(out, WALWarning{WALRetained, fmt.Sprintf(
			"slot %q retains %s of WAL, over PGRELAY_SLOT_WAL_ALERT (%s): the source keeps it on disk until pgrelay catches up",
			r.Slot, bytesize.Format(r.RetainedBytes), bytesize.Format(alert.Bytes))})
	}
	if r.MaxSlotWALKeepSize < 0 {
		out = append(out, unlimitedWarning(r))
	}
	return out
}

// unlimitedWarning is the advice for a server that bounds no slot's WAL.
func unlimitedWarning(r WALRetention) WALWarning {
	if r.Major > 0 && r.Major < 13 {
		return WALWarning{WALUnlimited, fmt.Sprintf(
			"the source (PostgreSQL %d) keeps all WAL slot %q needs, without limit: while pgrelay is stopped or behind, the WAL can fill the source's disk; watch the slot's retained WAL (PostgreSQL 13 and later bound it with max_slot_wal_keep_size)",
			r.Major, r.Slot)}
	}
	return WALWarning{WALUnlimited, fmt.Sprintf(
		"the source's max_slot_wal_keep_size is -1 (unlimited): while pgrelay is stopped or behind, slot %q keeps all WAL, which can fill the source's disk; to bound it, set max_slot_wal_keep_size (e.g. ALTER SYSTEM SET max_slot_wal_keep_size = '50GB'; SELECT pg_reload_conf()), at the price of a new copy if the slot passes it",
		r.Slot)}
}

// ErrWALAlert is returned by ParseWALAlert for a value it cannot read.
var ErrWALAlert = errors.New("expected a share of max_slot_wal_keep_size such as 80%, a size such as 50GB, or 0 for no alert")

// ParseWALAlert reads PGRELAY_SLOT_WAL_ALERT: a percentage (1% to 100%) of
// max_slot_wal_keep_size, a size of retained WAL (512MB, 50GB), or 0 for none.
func ParseWALAlert(s string) (WALAlert, error) {
	s = strings.TrimSpace(s)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || f < 1 || f > 100 {
			return WALAlert{}, ErrWALAlert
		}
		return WALAlert{Share: f / 100}, nil
	}
	n, err := bytesize.Parse(s)
	if err != nil {
		return WALAlert{}, ErrWALAlert
	}
	return WALAlert{Bytes: n}, nil
}

// String writes the alert as ParseWALAlert reads it.
func (a WALAlert) String() string {
	switch {
	case a.Share > 0:
		return strconv.FormatFloat(a.Share*100, 'f', -1, 64) + "%"
	case a.Bytes > 0:
		return bytesize.Format(a.Bytes)
	}
	return "0"
}

package notify

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/internal/bytesize"
	"github.com/pgrelay/pgrelay/source"
)

// Type names an event; it is the "event" field of the body.
type Type string

// The events pgrelay sends (docs/operations-webhooks.md shows each body).
const (
	MigrateFinished  Type = "migrate.finished"  // migrate caught up and exits 0
	MigrateFailed    Type = "migrate.failed"    // migrate exits with an error
	ReplicateStarted Type = "replicate.started" // replicate streams (once per process)
	ReplicateStopped Type = "replicate.stopped" // replicate stopped cleanly on a signal
	ReplicateFailed  Type = "replicate.failed"  // replicate exits with an error
	Retrying         Type = "retrying"          // a session failed and is retried (Notifier.Retrying)
	Recovered        Type = "recovered"         // a session works again after retries (Notifier.Recovered)
	LagHigh          Type = "lag.high"          // lag passed PGRELAY_LAG_ALERT (Notifier.Lag)
	LagOK            Type = "lag.ok"            // lag went back under it (Notifier.Lag)
	SlotAtRisk       Type = "slot.at_risk"      // the slot's WAL is near or past its limit (Notifier.Slot)
	PreparedWaiting  Type = "prepared.waiting"  // a prepared transaction is held on the target (Notifier.Prepared)
)

// Types lists every event type.
var Types = []Type{MigrateFinished, MigrateFailed, ReplicateStarted, ReplicateStopped, ReplicateFailed,
	Retrying, Recovered, LagHigh, LagOK, SlotAtRisk, PreparedWaiting}

// Event is what happened. The caller of Emit sets Type, the LSN it concerns
// when there is one, and the fields of its type; the notifier adds the id,
// the time, the slot, the source and the target. The fields of the events the
// Notifier's watchers send (Retry, Lag, WAL, Prepared) are filled by them.
type Event struct {
	Type Type
	LSN  source.LSN // 0 = none (sent as null)

	// migrate.finished: what the migration copied and how long it took.
	Tables   int
	Rows     int64
	Bytes    int64
	Duration time.Duration

	// migrate.failed, replicate.failed: the one-line reason, and the change
	// the target refused when there is one (Table as schema.table, Key as the
	// key columns' text, e.g. "id=42").
	Reason string
	Table  string
	Key    string

	Retry    *RetryInfo    // retrying, recovered
	Lag      *LagInfo      // lag.high, lag.ok
	WAL      *WALInfo      // slot.at_risk
	Prepared *PreparedInfo // prepared.waiting
}

// RetryInfo describes a run of failed sessions.
type RetryInfo struct {
	Attempts int       // failed sessions so far
	Since    time.Time // the first failure
	Down     time.Duration
}

// LagInfo is a lag reading and the threshold it was compared with.
type LagInfo struct {
	Bytes     int64
	Behind    time.Duration
	Threshold LagAlert
}

// WALInfo is the WAL-retention reading and the most severe warning.
type WALInfo struct {
	Retention source.WALRetention
	Warning   source.WALWarning
}

// PreparedInfo is a prepared transaction held on the target.
type PreparedInfo struct {
	GID       string
	Since     time.Time
	Held      time.Duration
	Threshold time.Duration
}

// envelope is what every body carries, filled at Emit.
type envelope struct {
	id     string
	time   time.Time
	slot   string
	source string
	target string
}

// fields returns the JSON object of the event: the envelope, then the fields
// of its type (docs/operations-webhooks.md). Every field of a type is always
// present; one that does not apply is null. scrub removes secrets from text.
func (e Event) fields(env envelope, scrub func(string) string) map[string]any {
	m := map[string]any{
		"id":     env.id,
		"event":  e.Type,
		"time":   formatTime(env.time),
		"slot":   env.slot,
		"source": env.source,
		"target": env.target,
		"lsn":    optLSN(e.LSN),
	}
	switch e.Type {
	case MigrateFinished:
		m["tables"] = e.Tables
		m["rows"] = e.Rows
		m["bytes"] = e.Bytes
		m["duration_seconds"] = seconds(e.Duration)
	case MigrateFailed, ReplicateFailed:
		m["reason"] = scrub(oneLine(e.Reason))
		m["table"] = optString(scrub(e.Table))
		m["key"] = optString(scrub(e.Key))
	case Retrying, Recovered:
		r := e.Retry
		if r == nil {
			r = &RetryInfo{}
		}
		if e.Type == Retrying {
			m["reason"] = scrub(oneLine(e.Reason))
		}
		m["attempts"] = r.Attempts
		m["since"] = formatTime(r.Since)
		m["down_seconds"] = seconds(r.Down)
	case LagHigh, LagOK:
		l := e.Lag
		if l == nil {
			l = &LagInfo{}
		}
		m["lag_bytes"] = l.Bytes
		m["lag_seconds"] = seconds(l.Behind)
		m["threshold"] = l.Threshold.String()
	case SlotAtRisk:
		w := e.WAL
		if w == nil {
			w = &WALInfo{}
		}
		m["risk"] = w.Warning.Risk.String()
		m["reason"] = scrub(oneLine(w.Warning.Message))
		m["wal_status"] = optString(w.Retention.WALStatus)
		m["retained_bytes"] = w.Retention.RetainedBytes
		m["safe_wal_size"] = w.Retention.SafeWALSize
		m["max_slot_wal_keep_size"] = w.Retention.MaxSlotWALKeepSize
	case PreparedWaiting:
		p := e.Prepared
		if p == nil {
			p = &PreparedInfo{}
		}
		m["gid"] = scrub(p.GID)
		m["prepared_at"] = formatTime(p.Since)
		m["held_seconds"] = seconds(p.Held)
		m["threshold_seconds"] = seconds(p.Threshold)
	}
	return m
}

// body is the request body of the event in format f.
func (e Event) body(f Format, env envelope, scrub func(string) string) ([]byte, error) {
	m := e.fields(env, scrub)
	if f == FormatSlack {
		return json.Marshal(map[string]string{"text": slackText(e, m)})
	}
	return json.Marshal(m)
}

// slackText is the one-message summary of an event for a Slack incoming
// webhook (or anything that takes {"text": ...}), escaped as Slack asks.
func slackText(e Event, m map[string]any) string {
	where := fmt.Sprintf("slot %s, %s → %s", m["slot"], m["source"], m["target"])
	at := ""
	if e.LSN != 0 {
		at = " at " + e.LSN.String()
	}
	var s string
	switch e.Type {
	case MigrateFinished:
		s = fmt.Sprintf("migration finished (%s): %d tables, %d rows, %s in %s", where, e.Tables, e.Rows,
			bytesize.Format(e.Bytes), e.Duration.Round(time.Second))
	case MigrateFailed, ReplicateFailed:
		what := "migration failed"
		if e.Type == ReplicateFailed {
			what = "replication stopped on an error"
		}
		s = fmt.Sprintf("%s (%s): %s", what, where, m["reason"])
		var change []string
		if t, ok := m["table"].(*string); ok && t != nil {
			change = append(change, "table "+*t)
		}
		if k, ok := m["key"].(*string); ok && k != nil {
			change = append(change, "key "+*k)
		}
		if e.LSN != 0 {
			change = append(change, "LSN "+e.LSN.String())
		}
		if len(change) > 0 {
			s += " [" + strings.Join(change, ", ") + "]"
			at = ""
		}
	case ReplicateStarted:
		s = fmt.Sprintf("replication started (%s)", where)
	case ReplicateStopped:
		s = fmt.Sprintf("replication stopped cleanly (%s)", where)
	case Retrying:
		s = fmt.Sprintf("retrying: %s since %s (%s): %s", attempts(e.retry().Attempts), m["since"], where, m["reason"])
	case Recovered:
		s = fmt.Sprintf("recovered after %s, down %s (%s)", attempts(e.retry().Attempts), e.retry().Down.Round(time.Second), where)
	case LagHigh, LagOK:
		l := e.lag()
		what := "lag is over"
		if e.Type == LagOK {
			what = "lag is back under"
		}
		s = fmt.Sprintf("%s PGRELAY_LAG_ALERT (%s): %s behind, %s (%s)", what, l.Threshold, bytesize.Format(l.Bytes), l.Behind.Round(time.Second), where)
	case SlotAtRisk:
		s = fmt.Sprintf("slot at risk (%s): %s", where, m["reason"])
		at = "" // the restart LSN says nothing here
	case PreparedWaiting:
		p := e.Prepared
		if p == nil {
			p = &PreparedInfo{}
		}
		s = fmt.Sprintf("prepared transaction %s held on the target for %s, waiting for COMMIT PREPARED or ROLLBACK PREPARED on the source (%s)",
			m["gid"], p.Held.Round(time.Second), where)
	default:
		s = fmt.Sprintf("%s (%s)", e.Type, where)
	}
	return slackEscape("pgrelay: " + s + at)
}

func attempts(n int) string {
	if n == 1 {
		return "1 failed attempt"
	}
	return fmt.Sprintf("%d failed attempts", n)
}

func (e Event) retry() RetryInfo {
	if e.Retry == nil {
		return RetryInfo{}
	}
	return *e.Retry
}

func (e Event) lag() LagInfo {
	if e.Lag == nil {
		return LagInfo{}
	}
	return *e.Lag
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// formatTime is RFC 3339 in UTC with milliseconds; the zero time is null.
func formatTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func optLSN(l source.LSN) *string {
	if l == 0 {
		return nil
	}
	s := l.String()
	return &s
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}

// oneLine joins the lines of s, as pgrelay prints an error.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

package notify

import (
	"errors"
	"strings"
	"time"

	"github.com/pgrelay/pgrelay/internal/bytesize"
	"github.com/pgrelay/pgrelay/source"
)

// LagAlert is PGRELAY_LAG_ALERT: a lag in bytes of WAL or in time behind the
// source, past which lag.high is sent. The zero value is off.
type LagAlert struct {
	Bytes  int64
	Behind time.Duration
}

// ErrLagAlert is returned by ParseLagAlert for a value it cannot read.
var ErrLagAlert = errors.New("expected a lag in bytes (e.g. 1GB, 512MB) or a duration (e.g. 5m), or 0 for no alert")

// ParseLagAlert reads PGRELAY_LAG_ALERT: a size (1GB, 512MB, 1048576), a
// duration with its unit (30s, 5m, 1h), or "" / 0 for none.
func ParseLagAlert(s string) (LagAlert, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return LagAlert{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return LagAlert{}, ErrLagAlert
		}
		return LagAlert{Behind: d}, nil
	}
	n, err := bytesize.Parse(s)
	if err != nil {
		return LagAlert{}, ErrLagAlert
	}
	return LagAlert{Bytes: n}, nil
}

// String writes the alert as ParseLagAlert reads it ("0" when off).
func (a LagAlert) String() string {
	switch {
	case a.Bytes > 0:
		return strings.ReplaceAll(bytesize.Format(a.Bytes), " ", "")
	case a.Behind > 0:
		return a.Behind.String()
	}
	return "0"
}

// On reports whether the alert is set.
func (a LagAlert) On() bool { return a.Bytes > 0 || a.Behind > 0 }

// LagOKShare is the share of PGRELAY_LAG_ALERT the lag must fall under before
// lag.ok is sent: a lag hovering at the threshold does not send a pair of
// events at every reading.
const LagOKShare = 0.8

// over reports whether the reading is at or past the alert, and under whether
// it is back under LagOKShare of it.
func (a LagAlert) compare(bytes int64, behind time.Duration) (over, under bool) {
	if a.Bytes > 0 {
		return bytes >= a.Bytes, float64(bytes) < LagOKShare*float64(a.Bytes)
	}
	return behind >= a.Behind, float64(behind) < LagOKShare*float64(a.Behind)
}

// watch is the state of the throttled and edge-triggered events.
type watch struct {
	// retrying
	retrying      bool
	retryAttempts int
	retrySince    time.Time
	retrySent     time.Time

	lagHigh bool

	slotRisk source.WALRisk // the risk last sent, 0 while none
	slotSent time.Time

	preparedSent map[string]bool // GIDs reported held
}

// Retrying records that a session failed with err and is to be retried. The
// first failure after a working session sends retrying at once; while the
// failures go on it is sent again once per Config.Repeat (PGRELAY_WEBHOOK_REPEAT).
func (n *Notifier) Retrying(err error) {
	if n == nil {
		return
	}
	n.mu.Lock()
	now := n.now()
	w := &n.watch
	if !w.retrying {
		w.retrying, w.retryAttempts, w.retrySince = true, 0, now
	}
	w.retryAttempts++
	send := w.retryAttempts == 1 || now.Sub(w.retrySent) >= n.cfg.Repeat
	if send {
		w.retrySent = now
	}
	info := &RetryInfo{Attempts: w.retryAttempts, Since: w.retrySince, Down: now.Sub(w.retrySince)}
	n.mu.Unlock()
	if send {
		reason := ""
		if err != nil {
			reason = err.Error()
		}
		n.Emit(Event{Type: Retrying, Reason: reason, Retry: info})
	}
}

// Recovered records that a session works again (it streams, or the copy goes
// on). After failures it sends recovered once; otherwise it does nothing, so
// it may be called at every session start.
func (n *Notifier) Recovered() {
	if n == nil {
		return
	}
	n.mu.Lock()
	w := &n.watch
	if !w.retrying {
		n.mu.Unlock()
		return
	}
	now := n.now()
	info := &RetryInfo{Attempts: w.retryAttempts, Since: w.retrySince, Down: now.Sub(w.retrySince)}
	w.retrying = false
	n.mu.Unlock()
	n.Emit(Event{Type: Recovered, Retry: info})
}

// LagReading is how far the target is behind the source.
type LagReading struct {
	Bytes  int64         // WAL bytes from the applied position to the source's
	Behind time.Duration // time since the last applied commit's source time (0 when idle and caught up)
	LSN    source.LSN    // the applied position
}

// Lag takes a lag reading. It sends lag.high when the lag reaches
// Config.LagAlert, and lag.ok once it is back under LagOKShare of it. Nothing
// happens when the alert is off.
func (n *Notifier) Lag(r LagReading) {
	if n == nil || !n.cfg.LagAlert.On() {
		return
	}
	over, under := n.cfg.LagAlert.compare(r.Bytes, r.Behind)
	n.mu.Lock()
	var typ Type
	switch {
	case over && !n.watch.lagHigh:
		n.watch.lagHigh, typ = true, LagHigh
	case under && n.watch.lagHigh:
		n.watch.lagHigh, typ = false, LagOK
	}
	n.mu.Unlock()
	if typ != "" {
		n.Emit(Event{Type: typ, LSN: r.LSN, Lag: &LagInfo{Bytes: r.Bytes, Behind: r.Behind, Threshold: n.cfg.LagAlert}})
	}
}

// Slot takes a WAL-retention reading and its warnings (source.WALWarnings).
// It sends slot.at_risk when the most severe warning that puts the slot at
// risk (retained past the alert, unreserved, lost) is more severe than the
// last one sent, and again once per Config.Repeat while the risk lasts. The
// unlimited-setting advice alone sends nothing: it is for the log at start.
func (n *Notifier) Slot(r source.WALRetention, warnings []source.WALWarning) {
	if n == nil {
		return
	}
	var worst source.WALWarning
	for _, w := range warnings {
		if w.Risk.AtRisk() && w.Risk > worst.Risk {
			worst = w
		}
	}
	n.mu.Lock()
	now := n.now()
	w := &n.watch
	send := false
	switch {
	case worst.Risk == 0:
		w.slotRisk = 0
	case worst.Risk > w.slotRisk || now.Sub(w.slotSent) >= n.cfg.Repeat:
		send = true
		w.slotRisk, w.slotSent = worst.Risk, now
	}
	n.mu.Unlock()
	if send {
		n.Emit(Event{Type: SlotAtRisk, LSN: r.RestartLSN, WAL: &WALInfo{Retention: r, Warning: worst}})
	}
}

// WatchesPrepared reports whether Prepared can send anything
// (Config.PreparedAlert is set): without it the caller need not read the
// target's prepared transactions.
func (n *Notifier) WatchesPrepared() bool { return n != nil && n.cfg.PreparedAlert > 0 }

// Prepared is a prepared transaction pgrelay holds on the target.
type Prepared struct {
	GID   string     // the target GID
	Since time.Time  // when it was prepared on the target
	LSN   source.LSN // the source position of its PREPARE
}

// Prepared takes the list of prepared transactions held on the target now.
// Each one held for Config.PreparedAlert or longer sends prepared.waiting
// once. Nothing happens when the alert is 0.
func (n *Notifier) Prepared(held []Prepared) {
	if n == nil || n.cfg.PreparedAlert <= 0 {
		return
	}
	n.mu.Lock()
	now := n.now()
	w := &n.watch
	if w.preparedSent == nil {
		w.preparedSent = make(map[string]bool)
	}
	still := make(map[string]bool, len(held))
	var events []Event
	for _, p := range held {
		still[p.GID] = true
		if held := now.Sub(p.Since); held >= n.cfg.PreparedAlert && !w.preparedSent[p.GID] {
			w.preparedSent[p.GID] = true
			events = append(events, Event{Type: PreparedWaiting, LSN: p.LSN,
				Prepared: &PreparedInfo{GID: p.GID, Since: p.Since, Held: held, Threshold: n.cfg.PreparedAlert}})
		}
	}
	for gid := range w.preparedSent {
		if !still[gid] {
			delete(w.preparedSent, gid)
		}
	}
	n.mu.Unlock()
	for _, e := range events {
		n.Emit(e)
	}
}

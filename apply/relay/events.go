package relay

// Operator events (apply/notify, docs/operations-webhooks.md) at the points
// of a run where they happen, and the WAL-retention guard: the slot's WAL
// read at each session start and, with the lag and the target's prepared
// transactions, every PGRELAY_STATUS_INTERVAL while replicate streams.
// Nothing here is on the apply path: Emit never blocks, and the readings are
// made on connections of their own (at a session's start, on its source
// connection before anything streams).

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrelay/pgrelay/apply"
	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/apply/snapshot"
	"github.com/pgrelay/pgrelay/internal/bytesize"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// SetNotifier makes n get the relay's events (nil: none), and /metrics show
// its counters. Call it before Replicate or Migrate.
func (r *Relay) SetNotifier(n *notify.Notifier) {
	r.ev.n = n
	r.mon.notifier.Store(n)
}

// events is what the relay keeps to send its events.
type events struct {
	n       *notify.Notifier // nil: a no-op
	started bool             // replicate.started was sent (once per process)
	copied  snapshot.Result  // what the run's snapshot copies copied
	wal     walLog
}

// begin starts a run's events and returns when it began.
func (r *Relay) begin() time.Time {
	r.ev.copied = snapshot.Result{}
	return r.now()
}

// ended sends the event of a run's end: migrate.finished with what it copied
// and where it caught up, replicate.stopped on a clean stop with the last
// durable position, or migrate.failed / replicate.failed with the reason and
// the change the target refused, if any.
func (r *Relay) ended(migrate bool, began time.Time, caughtUp *source.LSN, errp *error) {
	n, err := r.ev.n, *errp
	switch {
	case n == nil:
	case err == nil && migrate:
		n.Recovered() // after failed sessions: this one got through
		c := r.ev.copied
		n.Emit(notify.Event{Type: notify.MigrateFinished, LSN: *caughtUp, Tables: c.Tables, Rows: c.Rows, Bytes: c.Bytes,
			Duration: r.now().Sub(began)})
	case err == nil:
		n.Emit(notify.Event{Type: notify.ReplicateStopped, LSN: r.mon.LastDurable()})
	default:
		ev := notify.Event{Type: notify.ReplicateFailed, Reason: err.Error()}
		if migrate {
			ev.Type = notify.MigrateFailed
		}
		var ce *sink.ChangeError
		if errors.As(err, &ce) {
			ev.Table, ev.Key, ev.LSN = ce.Table, ce.Key, ce.LSN
		}
		n.Emit(ev)
	}
}

// streaming is called when a session starts streaming from from: the first
// time in a replicate process, replicate.started.
func (r *Relay) streaming(migrate bool, from source.LSN) {
	if !migrate && !r.ev.started {
		r.ev.started = true
		r.ev.n.Emit(notify.Event{Type: notify.ReplicateStarted, LSN: from})
	}
}

// copiedTables adds a snapshot copy's result to the run's.
func (e *events) copiedTables(res snapshot.Result) {
	e.copied.Tables += res.Tables
	e.copied.Rows += res.Rows
	e.copied.Bytes += res.Bytes
}

// checkWAL reads the slot's WAL retention at a session's start, on its source
// connection; a reading that fails is only logged.
func (r *Relay) checkWAL(ctx context.Context, conn *pgx.Conn) {
	rd, err := source.ReadWALRetention(ctx, conn, r.cfg.Slot)
	if err != nil {
		r.log.Warn("could not read the slot's WAL retention", "slot", r.cfg.Slot, "error", err.Error())
		return
	}
	r.walReading(rd)
}

// walReading takes a reading of the slot's WAL retention: /metrics shows it,
// its warnings are logged (see walLog) and slot.at_risk is sent.
func (r *Relay) walReading(rd source.WALRetention) {
	ws := source.WALWarnings(rd, r.cfg.SlotWALAlert)
	r.mon.wal.Store(&rd)
	due, cleared := r.ev.wal.due(ws, r.now(), r.cfg.alertRepeat())
	for _, w := range due {
		r.log.Warn(w.Message, "slot", r.cfg.Slot, "risk", w.Risk.String(), "retained_wal", bytesize.Format(rd.RetainedBytes),
			"max_slot_wal_keep_size", keepSize(rd.MaxSlotWALKeepSize))
	}
	if cleared {
		r.log.Info("the slot's retained WAL is back under the alert", "slot", r.cfg.Slot, "retained_wal", bytesize.Format(rd.RetainedBytes),
			"max_slot_wal_keep_size", keepSize(rd.MaxSlotWALKeepSize))
	}
	r.ev.n.Slot(rd, ws)
}

// keepSize is max_slot_wal_keep_size as a log or status shows it.
func keepSize(b int64) string {
	if b < 0 {
		return "-1 (unlimited)"
	}
	return bytesize.Format(b)
}

// alertRepeat is how often a lasting WAL-retention warning is logged again.
func (c *Config) alertRepeat() time.Duration {
	if c.AlertRepeat > 0 {
		return c.AlertRepeat
	}
	return notify.DefaultRepeat
}

// walLog decides which WAL-retention warnings the log gets: the advice about
// an unlimited max_slot_wal_keep_size once per process, a risk to the slot
// when it is new or worse than the last one logged, and again once per
// repeat while it lasts.
type walLog struct {
	mu        sync.Mutex
	unlimited bool           // the unlimited-retention advice was logged
	risk      source.WALRisk // the risk last logged; 0 while none
	at        time.Time      // when
}

// due returns the warnings of ws to log now, and whether a risk logged
// before is gone.
func (l *walLog) due(ws []source.WALWarning, now time.Time, repeat time.Duration) (due []source.WALWarning, cleared bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	atRisk := false
	for _, w := range ws {
		switch {
		case w.Risk == source.WALUnlimited:
			if !l.unlimited {
				l.unlimited = true
				due = append(due, w)
			}
		case w.Risk.AtRisk():
			atRisk = true
			if w.Risk > l.risk || now.Sub(l.at) >= repeat {
				l.risk, l.at = w.Risk, now
				due = append(due, w)
			}
		}
	}
	if !atRisk && l.risk != 0 {
		l.risk, cleared = 0, true
	}
	return due, cleared
}

// alertCheckTimeout bounds each reading of the periodic check: a server that
// does not answer delays the next one, never apply.
const alertCheckTimeout = 10 * time.Second

// watchAlerts checks, every PGRELAY_STATUS_INTERVAL until ctx ends, the slot's
// WAL retention (walReading), the lag (lag.high, lag.ok) and the prepared
// transactions held on the target (prepared.waiting), and tells the notifier
// that the session works (recovered, after failed ones). applier is read
// only through its atomic positions.
func (r *Relay) watchAlerts(ctx context.Context, applier *apply.Applier) error {
	a := &alertCheck{r: r, durable: applier.Durable, commitTime: applier.DurableCommitTime}
	defer a.close(ctx)
	tick := time.NewTicker(r.cfg.StatusInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		a.check(ctx)
	}
}

// alertCheck is one session's periodic check and the connections it holds.
type alertCheck struct {
	r          *Relay
	durable    func() source.LSN
	commitTime func() time.Time
	// readWAL and held read the source and the target; nil: on connections
	// of the check's own (the source's plain one, a sink opened
	// ForInspection).
	readWAL func(ctx context.Context) (source.WALRetention, error)
	held    func(ctx context.Context) ([]sink.HeldPrepared, error)

	src      *pgx.Conn
	tgt      sink.Target
	noLister bool // the target cannot list its prepared transactions
}

func (a *alertCheck) check(ctx context.Context) {
	r, n := a.r, a.r.ev.n
	n.Recovered()
	rctx, cancel := context.WithTimeout(ctx, alertCheckTimeout)
	rd, err := a.readSourceWAL(rctx)
	cancel()
	switch {
	case err == nil:
		r.walReading(rd)
		n.Lag(a.lag(rd.CurrentLSN))
	case ctx.Err() == nil:
		r.log.Debug("could not read the slot's WAL retention", "slot", r.cfg.Slot, "error", err.Error())
	}
	if !n.WatchesPrepared() || a.noLister {
		return
	}
	rctx, cancel = context.WithTimeout(ctx, alertCheckTimeout)
	held, err := a.heldPrepared(rctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			r.log.Debug("could not list the prepared transactions held on the target", "slot", r.cfg.Slot, "error", err.Error())
		}
		return
	}
	now := r.now()
	list := make([]notify.Prepared, len(held))
	for i, h := range held {
		list[i] = notify.Prepared{GID: h.GID, Since: now.Add(-h.Age), LSN: h.LSN}
	}
	n.Prepared(list)
}

// lag is how far the target is behind the source's WAL position current:
// in bytes, and in time since the commit of the last transaction applied (or
// the last idle position stored); none when it holds everything.
func (a *alertCheck) lag(current source.LSN) notify.LagReading {
	durable := a.durable()
	l := notify.LagReading{LSN: durable}
	if current > durable {
		l.Bytes = int64(current - durable)
		if t := a.commitTime(); !t.IsZero() {
			l.Behind = max(a.r.now().Sub(t), 0)
		}
	}
	return l
}

func (a *alertCheck) readSourceWAL(ctx context.Context) (source.WALRetention, error) {
	if a.readWAL != nil {
		return a.readWAL(ctx)
	}
	if a.src == nil || a.src.IsClosed() {
		conn, err := source.ConnectPlain(ctx, a.r.cfg.SourceURL)
		if err != nil {
			return source.WALRetention{}, err
		}
		a.src = conn
	}
	rd, err := source.ReadWALRetention(ctx, a.src, a.r.cfg.Slot)
	if err != nil {
		a.closeSource(ctx) // a new connection next time
	}
	return rd, err
}

func (a *alertCheck) heldPrepared(ctx context.Context) ([]sink.HeldPrepared, error) {
	if a.held != nil {
		return a.held(ctx)
	}
	if a.tgt == nil {
		if a.r.target.Open == nil {
			a.noLister = true
			return nil, nil
		}
		tgt, err := a.r.target.Open(ctx, ForInspection)
		if err != nil {
			return nil, err
		}
		if _, ok := tgt.(sink.PreparedLister); !ok {
			a.noLister = true
			_ = tgt.Close(context.WithoutCancel(ctx))
			return nil, nil
		}
		a.tgt = tgt
	}
	held, err := a.tgt.(sink.PreparedLister).HeldPrepared(ctx, a.r.cfg.Slot)
	if err != nil {
		a.closeTarget(ctx)
	}
	return held, err
}

func (a *alertCheck) close(ctx context.Context) {
	a.closeSource(ctx)
	a.closeTarget(ctx)
}

func (a *alertCheck) closeSource(ctx context.Context) {
	if a.src != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = a.src.Close(cctx)
		cancel()
		a.src = nil
	}
}

func (a *alertCheck) closeTarget(ctx context.Context) {
	if a.tgt != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = a.tgt.Close(cctx)
		cancel()
		a.tgt = nil
	}
}

// alertCollector is /metrics of the notifier (its counters; zero without
// one) and of the last reading of the slot's WAL retention (none before
// the first).
type alertCollector struct{ m *Monitor }

var (
	mWebhookEvents = prometheus.NewDesc("pgrelay_webhook_events_total",
		"Operator events emitted to the webhooks (PGRELAY_WEBHOOK_URL).", nil, nil)
	mWebhookDeliveries = prometheus.NewDesc("pgrelay_webhook_deliveries_total",
		"Deliveries of events, one per event and URL, by outcome: delivered (2xx), failed (given up or refused, or cut off at exit), dropped (oldest of a full queue).", []string{"outcome"}, nil)
	mWebhookRetries = prometheus.NewDesc("pgrelay_webhook_retries_total",
		"Delivery attempts after the first.", nil, nil)
	mWebhookQueued = prometheus.NewDesc("pgrelay_webhook_queued",
		"Deliveries waiting in the queues.", nil, nil)
	mRetainedWAL = prometheus.NewDesc("pgrelay_slot_retained_wal_bytes",
		"WAL the source keeps for the slot: its WAL position minus the slot's restart_lsn.", nil, nil)
	mSafeWALSize = prometheus.NewDesc("pgrelay_slot_safe_wal_size_bytes",
		"WAL that can still be written before the slot passes max_slot_wal_keep_size (pg_replication_slots.safe_wal_size; negative past it); absent when unlimited.", nil, nil)
	mKeepSize = prometheus.NewDesc("pgrelay_source_max_slot_wal_keep_size_bytes",
		"The source's max_slot_wal_keep_size in bytes; -1: unlimited.", nil, nil)
	mWALStatus = prometheus.NewDesc("pgrelay_slot_wal_status",
		"1 for the slot's wal_status (reserved, extended, unreserved, lost), 0 for the others.", []string{"status"}, nil)
)

// walStatuses are the values of pg_replication_slots.wal_status.
var walStatuses = []string{"reserved", "extended", "unreserved", "lost"}

func (c alertCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mWebhookEvents, mWebhookDeliveries, mWebhookRetries, mWebhookQueued,
		mRetainedWAL, mSafeWALSize, mKeepSize, mWALStatus} {
		ch <- d
	}
}

func (c alertCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.notifier.Load().Stats() // the zero Stats without a notifier
	ch <- prometheus.MustNewConstMetric(mWebhookEvents, prometheus.CounterValue, float64(st.Emitted))
	ch <- prometheus.MustNewConstMetric(mWebhookDeliveries, prometheus.CounterValue, float64(st.Delivered), "delivered")
	ch <- prometheus.MustNewConstMetric(mWebhookDeliveries, prometheus.CounterValue, float64(st.Failed), "failed")
	ch <- prometheus.MustNewConstMetric(mWebhookDeliveries, prometheus.CounterValue, float64(st.Dropped), "dropped")
	ch <- prometheus.MustNewConstMetric(mWebhookRetries, prometheus.CounterValue, float64(st.Retries))
	ch <- prometheus.MustNewConstMetric(mWebhookQueued, prometheus.GaugeValue, float64(st.Queued))
	rd := c.m.wal.Load()
	if rd == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(mKeepSize, prometheus.GaugeValue, float64(rd.MaxSlotWALKeepSize))
	if !rd.Exists {
		return
	}
	ch <- prometheus.MustNewConstMetric(mRetainedWAL, prometheus.GaugeValue, float64(rd.RetainedBytes))
	if rd.SafeWALSize != nil {
		ch <- prometheus.MustNewConstMetric(mSafeWALSize, prometheus.GaugeValue, float64(*rd.SafeWALSize))
	}
	if rd.WALStatus != "" {
		for _, s := range walStatuses {
			v := 0.0
			if s == rd.WALStatus {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(mWALStatus, prometheus.GaugeValue, v, s)
		}
	}
}

// WALRetentionStatus is the slot's WAL retention as status shows it.
type WALRetentionStatus struct {
	// RetainedBytes is the WAL the source keeps for the slot; 0 without one.
	RetainedBytes int64 `json:"retained_bytes"`
	// SafeWALSize is how much more WAL can be written before the slot passes
	// max_slot_wal_keep_size (negative past it); null when unlimited, lost,
	// without a slot, or before PostgreSQL 13.
	SafeWALSize *int64 `json:"safe_wal_size"`
	// MaxSlotWALKeepSize is the source's setting in bytes; -1: unlimited.
	MaxSlotWALKeepSize int64 `json:"max_slot_wal_keep_size"`
	// Warnings say what is at risk and what to do, the most severe first.
	Warnings []WALWarningStatus `json:"warnings"`
}

// WALWarningStatus is one warning: risk is unlimited, retained, unreserved
// or lost.
type WALWarningStatus struct {
	Risk    string `json:"risk"`
	Message string `json:"message"`
}

// addWALRetention fills rep's WAL retention from the source.
func (r *Relay) addWALRetention(ctx context.Context, src *pgx.Conn, rep *StatusReport) error {
	rd, err := source.ReadWALRetention(ctx, src, r.cfg.Slot)
	if err != nil {
		return err
	}
	w := &rep.WALRetention
	w.RetainedBytes, w.SafeWALSize, w.MaxSlotWALKeepSize = rd.RetainedBytes, rd.SafeWALSize, rd.MaxSlotWALKeepSize
	w.Warnings = []WALWarningStatus{}
	for _, ww := range source.WALWarnings(rd, r.cfg.SlotWALAlert) {
		w.Warnings = append(w.Warnings, WALWarningStatus{Risk: ww.Risk.String(), Message: ww.Message})
	}
	return nil
}

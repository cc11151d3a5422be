package relay

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrelay/pgrelay/apply"
	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// Monitor is what the running sessions show (cmd/pgrelay serves it as
// /metrics and /healthz). Sessions come and go (retries); the monitor outlives
// them and reads whichever is current. Its methods are safe to call from any
// goroutine.
type Monitor struct {
	applier  atomic.Pointer[apply.Applier]
	stream   atomic.Pointer[source.Stream]
	sessions atomic.Int64
	failures atomic.Int64
	lastErr  atomic.Pointer[string]
	streamOK atomic.Bool
	// lastDurable is the durable position of the last session that
	// streamed, for replicate.stopped.
	lastDurable atomic.Uint64
	// wal is the last reading of the slot's WAL retention; notifier the
	// relay's (events.go).
	wal      atomic.Pointer[source.WALRetention]
	notifier atomic.Pointer[notify.Notifier]

	mu   sync.Mutex
	sink sink.StatsReporter // the current session's, if it counts
	// base holds the counters of sinks of ended sessions, so the totals stay
	// monotonic across retries.
	base sink.Stats
}

func newMonitor() *Monitor { return &Monitor{} }

// sessionStarted and sessionEnded bracket one session.
func (m *Monitor) sessionStarted() { m.sessions.Add(1) }

func (m *Monitor) sessionEnded(err error) {
	m.streamOK.Store(false)
	m.mu.Lock()
	if m.sink != nil {
		st := m.sink.Stats()
		m.base.Batches += st.Batches
		m.base.Statements += st.Statements
		m.base.CopyRuns += st.CopyRuns
		m.base.CopyRows += st.CopyRows
		m.base.UnfitNulled += st.UnfitNulled
		m.sink = nil
	}
	m.mu.Unlock()
	if a := m.applier.Load(); a != nil {
		m.lastDurable.Store(uint64(a.Durable()))
	}
	m.applier.Store(nil)
	m.stream.Store(nil)
	if err != nil {
		m.failures.Add(1)
		msg := err.Error()
		m.lastErr.Store(&msg)
	}
}

// setSink makes sr the session's sink, whose counters SinkStats adds up.
func (m *Monitor) setSink(sr sink.StatsReporter) {
	m.mu.Lock()
	m.sink = sr
	m.mu.Unlock()
}

// SinkStats is what the sinks of every session so far sent.
func (m *Monitor) SinkStats() sink.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.base
	if m.sink != nil {
		st := m.sink.Stats()
		b.Batches += st.Batches
		b.Statements += st.Statements
		b.CopyRuns += st.CopyRuns
		b.CopyRows += st.CopyRows
		b.UnfitNulled += st.UnfitNulled
	}
	return b
}

// Durable is the source position durably applied on the target by the
// current session; 0 between sessions.
func (m *Monitor) Durable() source.LSN {
	if a := m.applier.Load(); a != nil {
		return a.Durable()
	}
	return 0
}

// Received is the highest source position the current session received.
func (m *Monitor) Received() source.LSN {
	if s := m.stream.Load(); s != nil {
		return s.Received()
	}
	return 0
}

// LastDurable is the durable position of the current session or, between
// sessions, of the last one that streamed; 0 before any did.
func (m *Monitor) LastDurable() source.LSN {
	if d := m.Durable(); d != 0 {
		return d
	}
	return source.LSN(m.lastDurable.Load())
}

// Streaming says a session streams from the source now.
func (m *Monitor) Streaming() bool { return m.streamOK.Load() }

// Sessions counts the sessions started (the first one and each retry),
// Failures those that ended with an error.
func (m *Monitor) Sessions() int64 { return m.sessions.Load() }
func (m *Monitor) Failures() int64 { return m.failures.Load() }

// LastError is the error of the last session that failed, "" when none did.
func (m *Monitor) LastError() string {
	if e := m.lastErr.Load(); e != nil {
		return *e
	}
	return ""
}

// Collectors are the monitor's Prometheus metrics (namespace pgrelay), for a
// registry that /metrics serves.
func (m *Monitor) Collectors() []prometheus.Collector {
	var out []prometheus.Collector
	out = append(out, alertCollector{m})
	gauge := func(name, help string, f func() float64) {
		out = append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "pgrelay", Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "pgrelay", Name: name, Help: help}, f))
	}
	gauge("durable_lsn", "Source WAL position durably applied on the target (as a number).", func() float64 { return float64(m.Durable()) })
	gauge("received_lsn", "Highest source WAL position received.", func() float64 { return float64(m.Received()) })
	gauge("lag_bytes", "Received but not yet durably applied WAL, in bytes.", func() float64 {
		r, d := m.Received(), m.Durable()
		if r <= d {
			return 0
		}
		return float64(r - d)
	})
	gauge("streaming", "1 while a session streams from the source.", func() float64 {
		if m.Streaming() {
			return 1
		}
		return 0
	})
	counter("sessions_total", "Sessions started (the first one and each retry).", func() float64 { return float64(m.Sessions()) })
	counter("session_failures_total", "Sessions that ended with an error.", func() float64 { return float64(m.Failures()) })
	counter("target_batches_total", "Round trips of pipelined statements to the target.", func() float64 { return float64(m.SinkStats().Batches) })
	counter("target_statements_total", "Statements sent to the target.", func() float64 { return float64(m.SinkStats().Statements) })
	counter("target_copy_rows_total", "Rows sent to the target through COPY.", func() float64 { return float64(m.SinkStats().CopyRows) })
	counter("target_unfit_nulled_total", "Values the target cannot hold stored as NULL instead (PGRELAY_MYSQL_UNFIT=null), each one logged.", func() float64 { return float64(m.SinkStats().UnfitNulled) })
	return out
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgrelay/pgrelay/apply"
	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/sink/postgres"
	"github.com/pgrelay/pgrelay/source"
)

// monitor exposes the running session to /metrics and /healthz
// (PGRELAY_METRICS_ADDR). Sessions come and go (retries); the monitor outlives
// them and reads whichever is current.
type monitor struct {
	applier  atomic.Pointer[apply.Applier]
	stream   atomic.Pointer[source.Stream]
	sink     atomic.Pointer[postgres.Sink]
	sessions atomic.Int64
	failures atomic.Int64
	// base holds the counters of sinks of ended sessions, so the totals stay
	// monotonic across retries.
	base     atomic.Pointer[postgres.Stats]
	lastErr  atomic.Pointer[string]
	streamOK atomic.Bool
	red      *redact.Redactor // hides secrets in the last error /healthz shows
}

func newMonitor() *monitor {
	m := &monitor{}
	m.base.Store(&postgres.Stats{})
	return m
}

// sessionStarted and sessionEnded bracket one session.
func (m *monitor) sessionStarted() { m.sessions.Add(1) }

func (m *monitor) sessionEnded(err error) {
	m.streamOK.Store(false)
	if s := m.sink.Swap(nil); s != nil {
		st, b := s.Stats(), *m.base.Load()
		m.base.Store(&postgres.Stats{Batches: b.Batches + st.Batches, Statements: b.Statements + st.Statements, CopyRuns: b.CopyRuns + st.CopyRuns, CopyRows: b.CopyRows + st.CopyRows})
	}
	m.applier.Store(nil)
	m.stream.Store(nil)
	if err != nil {
		m.failures.Add(1)
		msg := err.Error()
		m.lastErr.Store(&msg)
	}
}

func (m *monitor) sinkStats() postgres.Stats {
	b := *m.base.Load()
	if s := m.sink.Load(); s != nil {
		st := s.Stats()
		b.Batches += st.Batches
		b.Statements += st.Statements
		b.CopyRuns += st.CopyRuns
		b.CopyRows += st.CopyRows
	}
	return b
}

func (m *monitor) durable() source.LSN {
	if a := m.applier.Load(); a != nil {
		return a.Durable()
	}
	return 0
}

func (m *monitor) received() source.LSN {
	if s := m.stream.Load(); s != nil {
		return s.Received()
	}
	return 0
}

func (m *monitor) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "pgrelay", Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "pgrelay", Name: name, Help: help}, f))
	}
	gauge("durable_lsn", "Source WAL position durably applied on the target (as a number).", func() float64 { return float64(m.durable()) })
	gauge("received_lsn", "Highest source WAL position received.", func() float64 { return float64(m.received()) })
	gauge("lag_bytes", "Received but not yet durably applied WAL, in bytes.", func() float64 {
		r, d := m.received(), m.durable()
		if r <= d {
			return 0
		}
		return float64(r - d)
	})
	gauge("streaming", "1 while a session streams from the source.", func() float64 {
		if m.streamOK.Load() {
			return 1
		}
		return 0
	})
	counter("sessions_total", "Sessions started (the first one and each retry).", func() float64 { return float64(m.sessions.Load()) })
	counter("session_failures_total", "Sessions that ended with an error.", func() float64 { return float64(m.failures.Load()) })
	counter("target_batches_total", "Round trips of pipelined statements to the target.", func() float64 { return float64(m.sinkStats().Batches) })
	counter("target_statements_total", "Statements sent to the target.", func() float64 { return float64(m.sinkStats().Statements) })
	counter("target_copy_rows_total", "Rows sent to the target through COPY.", func() float64 { return float64(m.sinkStats().CopyRows) })
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return reg
}

// healthz answers 200 while a session streams, 503 with the reason otherwise.
func (m *monitor) healthz(w http.ResponseWriter, _ *http.Request) {
	if m.streamOK.Load() {
		fmt.Fprintln(w, "ok: streaming")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	if e := m.lastErr.Load(); e != nil {
		fmt.Fprintf(w, "not streaming: last error: %s\n", m.red.String(*e))
		return
	}
	fmt.Fprintln(w, "not streaming yet")
}

// serveMetrics listens on addr and serves /metrics and /healthz until ctx ends.
func serveMetrics(ctx context.Context, addr string, m *monitor, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("PGRELAY_METRICS_ADDR=%q: cannot listen: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.registry(), promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", m.healthz)
	// Profiles for diagnosing a slow or large process in the field.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err.Error())
		}
	}()
	log.Info("serving /metrics and /healthz", "addr", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

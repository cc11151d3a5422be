package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgrelay/pgrelay/apply/relay"
	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// monitor is the relay's sessions (relay.Monitor) as /metrics and /healthz
// show them (PGRELAY_METRICS_ADDR).
type monitor struct {
	sessions
	red *redact.Redactor // hides secrets in the last error /healthz shows
}

// sessions is what relay.Monitor tells.
type sessions interface {
	Durable() source.LSN
	Received() source.LSN
	Streaming() bool
	Sessions() int64
	Failures() int64
	LastError() string
	SinkStats() sink.Stats
}

var _ sessions = (*relay.Monitor)(nil)

func (m monitor) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "pgrelay", Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "pgrelay", Name: name, Help: help}, f))
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
	reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return reg
}

// healthz answers 200 while a session streams, 503 with the reason otherwise.
func (m monitor) healthz(w http.ResponseWriter, _ *http.Request) {
	if m.Streaming() {
		fmt.Fprintln(w, "ok: streaming")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	if e := m.LastError(); e != "" {
		fmt.Fprintf(w, "not streaming: last error: %s\n", m.red.String(e))
		return
	}
	fmt.Fprintln(w, "not streaming yet")
}

// serveMetrics listens on PGRELAY_METRICS_ADDR, when set, and serves
// /metrics and /healthz until stop.
func (e *env) serveMetrics(ctx context.Context) (stop func(), err error) {
	addr, m, log := e.cfg.MetricsAddr, monitor{e.relay.Monitor(), e.red}, e.log
	if addr == "" {
		return func() {}, nil
	}
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

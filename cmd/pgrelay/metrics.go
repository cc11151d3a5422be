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
)

// monitor is the relay's sessions (relay.Monitor) as /metrics and /healthz
// show them (PGRELAY_METRICS_ADDR).
type monitor struct {
	sessions
	red *redact.Redactor // hides secrets in the last error /healthz shows
}

// sessions is what /metrics and /healthz show of relay.Monitor.
type sessions interface {
	Streaming() bool
	LastError() string
	Collectors() []prometheus.Collector
}

var _ sessions = (*relay.Monitor)(nil)

func (m monitor) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
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

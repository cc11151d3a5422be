package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pgrelay/pgrelay/internal/redact"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// fakeSessions is a relay.Monitor as the test sets it.
type fakeSessions struct {
	streaming          bool
	sessions, failures int64
	lastErr            string
}

func (f *fakeSessions) Durable() source.LSN   { return 0 }
func (f *fakeSessions) Received() source.LSN  { return 0 }
func (f *fakeSessions) Streaming() bool       { return f.streaming }
func (f *fakeSessions) Sessions() int64       { return f.sessions }
func (f *fakeSessions) Failures() int64       { return f.failures }
func (f *fakeSessions) LastError() string     { return f.lastErr }
func (f *fakeSessions) SinkStats() sink.Stats { return sink.Stats{} }

func TestHealthzFollowsTheSession(t *testing.T) {
	s := &fakeSessions{}
	m := monitor{sessions: s}
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		m.healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "not streaming yet") {
		t.Fatalf("before a session: %d %q", code, body)
	}
	s.sessions, s.streaming = 1, true
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "streaming") {
		t.Fatalf("streaming: %d %q", code, body)
	}
	s.streaming, s.failures, s.lastErr = false, 1, "target: connect: connection refused"
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "connection refused") {
		t.Fatalf("after a failure: %d %q", code, body)
	}
}

func TestMetricsCountSessions(t *testing.T) {
	s := &fakeSessions{}
	reg := monitor{sessions: s}.registry()
	s.sessions, s.failures = 2, 1
	want := `
# HELP pgrelay_session_failures_total Sessions that ended with an error.
# TYPE pgrelay_session_failures_total counter
pgrelay_session_failures_total 1
# HELP pgrelay_sessions_total Sessions started (the first one and each retry).
# TYPE pgrelay_sessions_total counter
pgrelay_sessions_total 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pgrelay_sessions_total", "pgrelay_session_failures_total"); err != nil {
		t.Fatal(err)
	}
}

// /healthz shows the last error without the pieces of a password it holds.
func TestHealthzHidesSecrets(t *testing.T) {
	s := &fakeSessions{failures: 1, lastErr: `source: cannot resolve host "ssSECRETpart@127.0.0.1": no such host`}
	m := monitor{s, redact.New("postgres://relay:p@ssSECRETpart@127.0.0.1:5432/app")}
	rec := httptest.NewRecorder()
	m.healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if body := rec.Body.String(); strings.Contains(body, "SECRET") || !strings.Contains(body, "cannot resolve host") {
		t.Fatalf("healthz: %q", body)
	}
}

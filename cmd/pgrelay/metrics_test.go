package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
	m := monitor{s}
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
	reg := monitor{s}.registry()
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

package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pgrelay/pgrelay/internal/redact"
)

func TestHealthzFollowsTheSession(t *testing.T) {
	m := newMonitor()
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		m.healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "not streaming yet") {
		t.Fatalf("before a session: %d %q", code, body)
	}
	m.sessionStarted()
	m.streamOK.Store(true)
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "streaming") {
		t.Fatalf("streaming: %d %q", code, body)
	}
	m.sessionEnded(errors.New("target: connect: connection refused"))
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "connection refused") {
		t.Fatalf("after a failure: %d %q", code, body)
	}
}

func TestMetricsCountSessions(t *testing.T) {
	m := newMonitor()
	reg := m.registry()
	m.sessionStarted()
	m.sessionEnded(errors.New("boom"))
	m.sessionStarted()
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
	m := newMonitor()
	m.red = redact.New("postgres://relay:p@ssSECRETpart@127.0.0.1:5432/app")
	m.sessionEnded(errors.New(`source: cannot resolve host "ssSECRETpart@127.0.0.1": no such host`))
	rec := httptest.NewRecorder()
	m.healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if body := rec.Body.String(); strings.Contains(body, "SECRET") || !strings.Contains(body, "cannot resolve host") {
		t.Fatalf("healthz: %q", body)
	}
}

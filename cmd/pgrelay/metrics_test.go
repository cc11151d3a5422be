package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgrelay/pgrelay/internal/redact"
)

// fakeSessions is a relay.Monitor as the test sets it.
type fakeSessions struct {
	streaming bool
	lastErr   string
}

func (f *fakeSessions) Streaming() bool                    { return f.streaming }
func (f *fakeSessions) LastError() string                  { return f.lastErr }
func (f *fakeSessions) Collectors() []prometheus.Collector { return nil }

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
	s.streaming = true
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "streaming") {
		t.Fatalf("streaming: %d %q", code, body)
	}
	s.streaming, s.lastErr = false, "target: connect: connection refused"
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "connection refused") {
		t.Fatalf("after a failure: %d %q", code, body)
	}
}

// /healthz shows the last error without the pieces of a password it holds.
func TestHealthzHidesSecrets(t *testing.T) {
	s := &fakeSessions{lastErr: `source: cannot resolve host "ssSECRETpart@127.0.0.1": no such host`}
	m := monitor{s, redact.New("postgres://relay:p@ssSECRETpart@127.0.0.1:5432/app")}
	rec := httptest.NewRecorder()
	m.healthz(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if body := rec.Body.String(); strings.Contains(body, "SECRET") || !strings.Contains(body, "cannot resolve host") {
		t.Fatalf("healthz: %q", body)
	}
}

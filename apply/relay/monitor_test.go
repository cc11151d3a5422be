package relay

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsCountSessions(t *testing.T) {
	m := newMonitor()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
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

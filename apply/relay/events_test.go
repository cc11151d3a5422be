package relay

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/apply/snapshot"
	"github.com/pgrelay/pgrelay/sink"
	"github.com/pgrelay/pgrelay/source"
)

// eventSink is a loopback webhook receiver that keeps every body.
type eventSink struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (s *eventSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	if json.Unmarshal(b, &m) == nil {
		s.mu.Lock()
		s.bodies = append(s.bodies, m)
		s.mu.Unlock()
	}
}

// types are the event types received, in order.
func (s *eventSink) types() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.bodies {
		out = append(out, b["event"].(string))
	}
	return out
}

func (s *eventSink) event(t *testing.T, typ string) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bodies {
		if b["event"] == typ {
			return b
		}
	}
	t.Fatalf("no %s event", typ)
	return nil
}

// withNotifier gives tr a notifier on tr's clock that posts to a new
// receiver; flush waits for every event to be delivered.
func withNotifier(t *testing.T, tr *testRelay, cfg notify.Config) (rc *eventSink, flush func()) {
	t.Helper()
	rc = &eventSink{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	cfg.URLs = []string{srv.URL}
	cfg.Slot, cfg.SourceURL, cfg.TargetURL = "pgrelay", "postgres://u:pw-source@src.example/db", "postgres://u:pw-target@tgt.example/db"
	cfg.Now = tr.now
	cfg.RetryWaitMin, cfg.RetryWaitMax = time.Millisecond, time.Millisecond
	n, err := notify.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	tr.SetNotifier(n)
	return rc, func() {
		if err := n.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunEvents: a run sends retrying at the first failed session (and not
// again within PGRELAY_WEBHOOK_REPEAT), replicate.started when it first
// streams, and its end: replicate.stopped with the last durable position,
// replicate.failed and migrate.failed with the reason and the change the
// target refused, migrate.finished with what the copies copied and where it
// caught up.
func TestRunEvents(t *testing.T) {
	refused := &sink.ChangeError{Sink: "sink/postgres", Op: "update", Table: "public.orders", Key: "(id)=(42)", LSN: 0x16B3748,
		Err: errors.New("new row violates check constraint"), Refused: true}
	for _, c := range []struct {
		name    string
		migrate bool
		errs    []error
		want    []string
		check   func(t *testing.T, rc *eventSink)
	}{
		{"replicate stops", false, []error{lost, lost}, []string{"retrying", "replicate.started", "replicate.stopped"}, func(t *testing.T, rc *eventSink) {
			if r := rc.event(t, "retrying"); r["attempts"] != 1.0 || !strings.Contains(r["reason"].(string), "terminating connection") {
				t.Errorf("retrying: %v", r)
			}
			if s := rc.event(t, "replicate.started"); s["lsn"] != "0/1000" {
				t.Errorf("replicate.started: %v", s)
			}
			if s := rc.event(t, "replicate.stopped"); s["lsn"] != "0/2000" {
				t.Errorf("replicate.stopped: %v, want the last durable position 0/2000", s)
			}
		}},
		{"replicate fails", false, []error{refused}, []string{"replicate.failed"}, func(t *testing.T, rc *eventSink) {
			f := rc.event(t, "replicate.failed")
			if f["table"] != "public.orders" || f["key"] != "(id)=(42)" || f["lsn"] != "0/16B3748" ||
				!strings.Contains(f["reason"].(string), "violates check constraint") {
				t.Errorf("replicate.failed: %v", f)
			}
		}},
		{"migrate finishes", true, []error{lost}, []string{"retrying", "recovered", "migrate.finished"}, func(t *testing.T, rc *eventSink) {
			f := rc.event(t, "migrate.finished")
			if f["lsn"] != "0/1000" || f["tables"] != 2.0 || f["rows"] != 20.0 || f["bytes"] != 200.0 || f["duration_seconds"] != 3.0 {
				t.Errorf("migrate.finished: %v; want lsn 0/1000, 2 tables, 20 rows, 200 bytes in 3 s (two sessions and a backoff)", f)
			}
		}},
		{"migrate fails", true, []error{errors.New("connect to source: password authentication failed for pw-source")}, []string{"migrate.failed"}, func(t *testing.T, rc *eventSink) {
			f := rc.event(t, "migrate.failed")
			if r := f["reason"].(string); !strings.Contains(r, "password authentication failed") || strings.Contains(r, "pw-source") || f["table"] != nil {
				t.Errorf("migrate.failed: %v", f)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTestRelay(t, Config{}, nil)
			rc, flush := withNotifier(t, tr, notify.Config{})
			calls := 0
			session := func(ctx context.Context, migrate bool) (source.LSN, error) {
				i := calls
				calls++
				tr.advance(time.Second)
				// Every session copies a table, the failed ones too (the
				// copy got through, something after it failed).
				tr.ev.copiedTables(snapshot.Result{Tables: 1, Rows: 10, Bytes: 100})
				if i < len(c.errs) {
					return 0, c.errs[i]
				}
				if !migrate {
					// It streams, then a signal stops it.
					tr.streaming(false, 0x1000)
					tr.mon.lastDurable.Store(0x2000)
				}
				return 0x1000, nil
			}
			tr.ev.copiedTables(snapshot.Result{Tables: 5, Rows: 50, Bytes: 500}) // an earlier run's: not counted
			_, _ = tr.run(t.Context(), c.migrate, session)
			flush()
			if got := rc.types(); !slices.Equal(got, c.want) {
				t.Fatalf("events %v, want %v", got, c.want)
			}
			c.check(t, rc)
		})
	}
}

// TestAlertCheck: the periodic check of a streaming replicate says the
// session works (recovered), reads the slot's WAL (logged and slot.at_risk
// when the risk is new, the unlimited advice once), the lag (lag.high, then
// lag.ok under 80% of the alert) and the target's prepared transactions
// (prepared.waiting once each, past the alert).
func TestAlertCheck(t *testing.T) {
	tr := newTestRelay(t, Config{SlotWALAlert: source.WALAlert{Share: 0.8}, AlertRepeat: time.Hour}, nil)
	rc, flush := withNotifier(t, tr, notify.Config{LagAlert: notify.LagAlert{Bytes: 1000}, PreparedAlert: time.Minute, Repeat: time.Hour})
	durable, commit := source.LSN(3000), tr.now().Add(-time.Minute)
	rd := source.WALRetention{Slot: "pgrelay", Exists: true, Major: 16, WALStatus: "reserved", RestartLSN: 1000, CurrentLSN: 5000,
		RetainedBytes: 4000, MaxSlotWALKeepSize: -1}
	var held []sink.HeldPrepared
	a := &alertCheck{r: tr.Relay, durable: func() source.LSN { return durable }, commitTime: func() time.Time { return commit },
		readWAL: func(context.Context) (source.WALRetention, error) { return rd, nil },
		held:    func(context.Context) ([]sink.HeldPrepared, error) { return held, nil }}
	ctx := t.Context()

	tr.ev.n.Retrying(lost)
	held = []sink.HeldPrepared{{GID: "pgrelay_pgrelay_7", Age: 30 * time.Second}}
	a.check(ctx) // 2000 bytes behind; unlimited; held 30 s
	a.check(ctx) // the same: nothing new
	durable = 4900
	rd.MaxSlotWALKeepSize, rd.RetainedBytes, rd.CurrentLSN = 4096, 3900, 4950
	held = []sink.HeldPrepared{{GID: "pgrelay_pgrelay_7", Age: 2 * time.Minute}}
	a.check(ctx) // 50 bytes behind; 95% of max_slot_wal_keep_size; held 2 min
	rd.RetainedBytes, rd.WALStatus = 5000, "unreserved"
	a.check(ctx) // worse: unreserved
	rd.RetainedBytes, rd.WALStatus = 100, "reserved"
	a.check(ctx) // back under
	flush()

	want := []string{"retrying", "recovered", "lag.high", "slot.at_risk", "lag.ok", "prepared.waiting", "slot.at_risk"}
	if got := rc.types(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if l := rc.event(t, "lag.high"); l["lag_bytes"] != 2000.0 || l["lag_seconds"] != 60.0 || l["lsn"] != "0/BB8" {
		t.Errorf("lag.high: %v; want 2000 bytes, 60 s, at the durable 0/BB8", l)
	}
	if s := rc.event(t, "slot.at_risk"); s["risk"] != "retained" || s["retained_bytes"] != 3900.0 || s["max_slot_wal_keep_size"] != 4096.0 {
		t.Errorf("slot.at_risk: %v", s)
	}
	if p := rc.event(t, "prepared.waiting"); p["gid"] != "pgrelay_pgrelay_7" || p["held_seconds"] != 120.0 || p["threshold_seconds"] != 60.0 {
		t.Errorf("prepared.waiting: %v", p)
	}
	logs := tr.logs.String()
	for what, n := range map[string]int{
		"max_slot_wal_keep_size is -1 (unlimited)": 1, // once per process
		"95% of max_slot_wal_keep_size":            1,
		"wal_status unreserved":                    1,
		"back under the alert":                     1,
	} {
		if got := strings.Count(logs, what); got != n {
			t.Errorf("%q logged %d times, want %d; log:\n%s", what, got, n, logs)
		}
	}
	if r := tr.mon.wal.Load(); r == nil || r.RetainedBytes != 100 {
		t.Errorf("the monitor's reading: %+v", r)
	}
}

// TestAlertMetrics: /metrics shows the notifier's counters and the slot's
// last WAL-retention reading.
func TestAlertMetrics(t *testing.T) {
	tr := newTestRelay(t, Config{}, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(tr.mon.Collectors()...)
	_, flush := withNotifier(t, tr, notify.Config{})
	safe := int64(-3 << 20)
	tr.walReading(source.WALRetention{Slot: "pgrelay", Exists: true, Major: 16, WALStatus: "unreserved", RestartLSN: 1,
		CurrentLSN: 64<<20 + 1, RetainedBytes: 64 << 20, SafeWALSize: &safe, MaxSlotWALKeepSize: 48 << 20})
	tr.streaming(false, 0x1000)
	flush()
	want := `
# HELP pgrelay_slot_retained_wal_bytes WAL the source keeps for the slot: its WAL position minus the slot's restart_lsn.
# TYPE pgrelay_slot_retained_wal_bytes gauge
pgrelay_slot_retained_wal_bytes 6.7108864e+07
# HELP pgrelay_slot_safe_wal_size_bytes WAL that can still be written before the slot passes max_slot_wal_keep_size (pg_replication_slots.safe_wal_size; negative past it); absent when unlimited.
# TYPE pgrelay_slot_safe_wal_size_bytes gauge
pgrelay_slot_safe_wal_size_bytes -3.145728e+06
# HELP pgrelay_source_max_slot_wal_keep_size_bytes The source's max_slot_wal_keep_size in bytes; -1: unlimited.
# TYPE pgrelay_source_max_slot_wal_keep_size_bytes gauge
pgrelay_source_max_slot_wal_keep_size_bytes 5.0331648e+07
# HELP pgrelay_slot_wal_status 1 for the slot's wal_status (reserved, extended, unreserved, lost), 0 for the others.
# TYPE pgrelay_slot_wal_status gauge
pgrelay_slot_wal_status{status="extended"} 0
pgrelay_slot_wal_status{status="lost"} 0
pgrelay_slot_wal_status{status="reserved"} 0
pgrelay_slot_wal_status{status="unreserved"} 1
# HELP pgrelay_webhook_events_total Operator events emitted to the webhooks (PGRELAY_WEBHOOK_URL).
# TYPE pgrelay_webhook_events_total counter
pgrelay_webhook_events_total 2
# HELP pgrelay_webhook_deliveries_total Deliveries of events, one per event and URL, by outcome: delivered (2xx), failed (given up or refused, or cut off at exit), dropped (oldest of a full queue).
# TYPE pgrelay_webhook_deliveries_total counter
pgrelay_webhook_deliveries_total{outcome="delivered"} 2
pgrelay_webhook_deliveries_total{outcome="dropped"} 0
pgrelay_webhook_deliveries_total{outcome="failed"} 0
# HELP pgrelay_webhook_queued Deliveries waiting in the queues.
# TYPE pgrelay_webhook_queued gauge
pgrelay_webhook_queued 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pgrelay_slot_retained_wal_bytes", "pgrelay_slot_safe_wal_size_bytes",
		"pgrelay_source_max_slot_wal_keep_size_bytes", "pgrelay_slot_wal_status", "pgrelay_webhook_events_total",
		"pgrelay_webhook_deliveries_total", "pgrelay_webhook_queued"); err != nil {
		t.Fatal(err)
	}
}

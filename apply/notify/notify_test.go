package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgrelay/pgrelay/source"
)

// recorded is one request a test receiver got.
type recorded struct {
	header http.Header
	body   []byte
	status int
}

// receiver is a loopback webhook receiver that records every request and
// answers as respond says (200 when nil).
type receiver struct {
	mu       sync.Mutex
	requests []recorded
	respond  func(n int, r *http.Request, w http.ResponseWriter) int // n counts requests from 0
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	n := len(rc.requests)
	rc.requests = append(rc.requests, recorded{header: r.Header.Clone(), body: body})
	rc.mu.Unlock()
	status := http.StatusOK
	if rc.respond != nil {
		status = rc.respond(n, r, w)
	}
	rc.mu.Lock()
	rc.requests[n].status = status
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) got() []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

// accepted are the bodies answered 2xx, decoded, in order.
func (rc *receiver) accepted(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range rc.got() {
		if r.status/100 != 2 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
		}
		out = append(out, m)
	}
	return out
}

func startReceiver(t *testing.T, rc *receiver) *httptest.Server {
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return srv
}

// logBuffer is a log sink safe for the delivery goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeClock is a settable clock for the watchers.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const (
	testSecret     = "webhook-signing-key"
	sourcePassword = "s3cret-src-pw"
	targetPassword = "hunter2-tgt-pw"
)

// testConfig is a configuration with fast retries for url.
func testConfig(urls ...string) Config {
	return Config{
		URLs:         urls,
		Slot:         "pgrelay",
		SourceURL:    "postgres://alice:" + sourcePassword + "@db1.example:5432/app?sslmode=require",
		TargetURL:    "mysql://bob:" + targetPassword + "@db2.example:3306/shop",
		RetryWaitMin: time.Millisecond,
		RetryWaitMax: 5 * time.Millisecond,
	}
}

func mustNew(t *testing.T, cfg Config, log *slog.Logger) *Notifier {
	t.Helper()
	n, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if n == nil {
		t.Fatal("New returned no notifier")
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

// closeAll waits for every queued event to be delivered or given up.
func closeAll(t *testing.T, n *Notifier) {
	t.Helper()
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// referenceCheck is the receiver's check as docs/operations-webhooks.md
// describes it, written from the description rather than from Signature.
func referenceCheck(secret string, r recorded) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(r.header.Get("X-Pgrelay-Timestamp") + "." + string(r.body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	return hmac.Equal([]byte(want), []byte(r.header.Get("X-Pgrelay-Signature")))
}

// schema is the documented body of each event: the envelope, then the
// fields of its type (docs/operations-webhooks.md).
var envelopeFields = []string{"id", "event", "time", "slot", "source", "target", "lsn"}

var schema = map[Type][]string{
	MigrateFinished:  {"tables", "rows", "bytes", "duration_seconds"},
	MigrateFailed:    {"reason", "table", "key"},
	ReplicateStarted: {},
	ReplicateStopped: {},
	ReplicateFailed:  {"reason", "table", "key"},
	Retrying:         {"reason", "attempts", "since", "down_seconds"},
	Recovered:        {"attempts", "since", "down_seconds"},
	LagHigh:          {"lag_bytes", "lag_seconds", "threshold"},
	LagOK:            {"lag_bytes", "lag_seconds", "threshold"},
	SlotAtRisk:       {"risk", "reason", "wal_status", "retained_bytes", "safe_wal_size", "max_slot_wal_keep_size"},
	PreparedWaiting:  {"gid", "prepared_at", "held_seconds", "threshold_seconds"},
}

// emitEveryEvent sends one event of every type through n (clock is n's).
func emitEveryEvent(n *Notifier, clock *fakeClock) {
	n.Emit(Event{Type: MigrateFinished, LSN: 0x16B3748, Tables: 12, Rows: 123456, Bytes: 5 << 20, Duration: 63 * time.Second})
	n.Emit(Event{Type: MigrateFailed, Reason: "connect to source: password authentication failed (password=" + sourcePassword + ")"})
	n.Emit(Event{Type: ReplicateStarted, LSN: 0x16B3748})
	n.Retrying(errors.New("target: connection refused; url postgres://bob:" + targetPassword + "@db2/shop"))
	clock.add(time.Minute)
	n.Recovered()
	n.Lag(LagReading{Bytes: 2 << 30, Behind: 90 * time.Second, LSN: 0x2000000})
	n.Lag(LagReading{Bytes: 1 << 20, Behind: time.Second, LSN: 0x3000000})
	safe := int64(-3 << 20)
	r := source.WALRetention{Slot: "pgrelay", Exists: true, Major: 16, WALStatus: "unreserved", RestartLSN: 0x1000000,
		CurrentLSN: 0x5000000, RetainedBytes: 64 << 20, SafeWALSize: &safe, MaxSlotWALKeepSize: 48 << 20}
	n.Slot(r, source.WALWarnings(r, source.WALAlert{Share: 0.8}))
	n.Prepared([]Prepared{{GID: "pgrelay_pgrelay_1234", Since: clock.now().Add(-20 * time.Minute), LSN: 0x4000000}})
	n.Emit(Event{Type: ReplicateFailed, LSN: 0x4000100, Table: "public.orders", Key: "id=42",
		Reason: `target refused a change: value too long for type character varying(3)`})
	n.Emit(Event{Type: ReplicateStopped, LSN: 0x4000200})
}

func TestEveryEventWithItsFields(t *testing.T) {
	rc := &receiver{}
	srv := startReceiver(t, rc)
	clock := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(srv.URL + "/hooks/pgrelay")
	cfg.Secret = testSecret
	cfg.LagAlert = LagAlert{Bytes: 1 << 30}
	cfg.PreparedAlert = 10 * time.Minute
	cfg.Now = clock.now
	var logs logBuffer
	n := mustNew(t, cfg, logs.logger())
	emitEveryEvent(n, clock)
	closeAll(t, n)

	reqs := rc.got()
	seen := map[Type]map[string]any{}
	for _, r := range reqs {
		if !referenceCheck(testSecret, r) {
			t.Errorf("signature does not verify: %s", r.header.Get("X-Pgrelay-Signature"))
		}
		if !Verify(testSecret, r.header.Get(HeaderTimestamp), r.header.Get(HeaderSignature), r.body, clock.now(), time.Minute) {
			t.Error("Verify refuses a request pgrelay sent")
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatal(err)
		}
		typ := Type(m["event"].(string))
		if seen[typ] != nil {
			t.Errorf("%s sent twice", typ)
		}
		seen[typ] = m
		if r.header.Get("Idempotency-Key") != m["id"] || len(m["id"].(string)) != 36 {
			t.Errorf("%s: Idempotency-Key %q, id %v", typ, r.header.Get("Idempotency-Key"), m["id"])
		}
		if r.header.Get("X-Pgrelay-Event") != string(typ) {
			t.Errorf("%s: X-Pgrelay-Event %q", typ, r.header.Get("X-Pgrelay-Event"))
		}
		// Exactly the documented fields.
		want := append(slices.Clone(envelopeFields), schema[typ]...)
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Errorf("%s fields %v, documented %v", typ, keys, want)
		}
		if m["slot"] != "pgrelay" || m["source"] != "db1.example:5432/app" || m["target"] != "db2.example:3306/shop" {
			t.Errorf("%s envelope: slot %v source %v target %v", typ, m["slot"], m["source"], m["target"])
		}
		if _, err := time.Parse(time.RFC3339, m["time"].(string)); err != nil {
			t.Errorf("%s time %v: %v", typ, m["time"], err)
		}
		// No password of the connection strings, no signing secret.
		for _, secret := range []string{sourcePassword, targetPassword, testSecret} {
			if bytes.Contains(r.body, []byte(secret)) {
				t.Errorf("%s body contains %q: %s", typ, secret, r.body)
			}
		}
	}
	for _, typ := range Types {
		if seen[typ] == nil {
			t.Errorf("no %s event", typ)
		}
	}
	if t.Failed() {
		return
	}
	check := func(typ Type, field string, want any) {
		t.Helper()
		if got := seen[typ][field]; got != want {
			t.Errorf("%s %s = %#v, want %#v", typ, field, got, want)
		}
	}
	check(MigrateFinished, "lsn", "0/16B3748")
	check(MigrateFinished, "tables", 12.0)
	check(MigrateFinished, "rows", 123456.0)
	check(MigrateFinished, "bytes", float64(5<<20))
	check(MigrateFinished, "duration_seconds", 63.0)
	check(MigrateFailed, "lsn", nil)
	check(MigrateFailed, "table", nil)
	check(MigrateFailed, "reason", "connect to source: password authentication failed (password=xxxxx)")
	check(ReplicateFailed, "table", "public.orders")
	check(ReplicateFailed, "key", "id=42")
	check(ReplicateFailed, "lsn", "0/4000100")
	check(Retrying, "attempts", 1.0)
	check(Retrying, "since", "2025-03-01T12:00:00.000Z")
	check(Retrying, "reason", "target: connection refused; url postgres://bob:xxxxx@db2/shop")
	check(Recovered, "down_seconds", 60.0)
	check(LagHigh, "lag_bytes", float64(2<<30))
	check(LagHigh, "lag_seconds", 90.0)
	check(LagHigh, "threshold", "1GB")
	check(LagOK, "lsn", "0/3000000")
	check(SlotAtRisk, "risk", "unreserved")
	check(SlotAtRisk, "wal_status", "unreserved")
	check(SlotAtRisk, "retained_bytes", float64(64<<20))
	check(SlotAtRisk, "safe_wal_size", float64(-3<<20))
	check(SlotAtRisk, "max_slot_wal_keep_size", float64(48<<20))
	check(SlotAtRisk, "lsn", "0/1000000")
	check(PreparedWaiting, "gid", "pgrelay_pgrelay_1234")
	check(PreparedWaiting, "held_seconds", 1200.0)
	check(PreparedWaiting, "threshold_seconds", 600.0)
	if !strings.Contains(seen[SlotAtRisk]["reason"].(string), "max_slot_wal_keep_size") {
		t.Errorf("slot.at_risk reason %q", seen[SlotAtRisk]["reason"])
	}
	st := n.Stats()
	if st.Emitted != uint64(len(Types)) || st.Delivered != uint64(len(Types)) || st.Failed != 0 || st.Dropped != 0 || st.Queued != 0 {
		t.Errorf("stats %+v", st)
	}
	for _, secret := range []string{sourcePassword, targetPassword, testSecret} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log contains %q:\n%s", secret, logs.String())
		}
	}
}

// Several URLs each get every event, in order.
func TestSeveralURLs(t *testing.T) {
	a, b := &receiver{}, &receiver{}
	sa, sb := startReceiver(t, a), startReceiver(t, b)
	n := mustNew(t, testConfig(sa.URL+"/a", " "+sb.URL+"/b "), nil)
	for range 3 {
		n.Emit(Event{Type: ReplicateStarted})
	}
	n.Emit(Event{Type: ReplicateStopped})
	closeAll(t, n)
	for _, rc := range []*receiver{a, b} {
		got := rc.accepted(t)
		if len(got) != 4 || got[3]["event"] != string(ReplicateStopped) {
			t.Fatalf("receiver got %v", got)
		}
	}
	if a.accepted(t)[0]["id"] != b.accepted(t)[0]["id"] {
		t.Error("the same event has two ids")
	}
	if st := n.Stats(); st.Emitted != 4 || st.Delivered != 8 {
		t.Errorf("stats %+v", st)
	}
}

// A receiver that answers 503 to the first attempt of each event gets each
// event once: the retry carries the same Idempotency-Key and a fresh,
// valid signature.
func TestRetryAfter503DeliversOncePerKey(t *testing.T) {
	var mu sync.Mutex
	tries := map[string]int{}
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	rc := &receiver{respond: func(_ int, r *http.Request, _ http.ResponseWriter) int {
		mu.Lock()
		defer mu.Unlock()
		key := r.Header.Get("Idempotency-Key")
		tries[key]++
		if tries[key] == 1 {
			clock.add(time.Minute) // the retry is signed anew, at its own time
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}}
	srv := startReceiver(t, rc)
	cfg := testConfig(srv.URL)
	cfg.Secret = testSecret
	cfg.Now = clock.now
	n := mustNew(t, cfg, nil)
	for range 5 {
		n.Emit(Event{Type: ReplicateStarted})
	}
	closeAll(t, n)
	accepted := map[string]int{}
	stamps := map[string][]string{}
	for _, r := range rc.got() {
		if !referenceCheck(testSecret, r) {
			t.Errorf("attempt with status %d: signature does not verify", r.status)
		}
		key := r.header.Get("Idempotency-Key")
		stamps[key] = append(stamps[key], r.header.Get("X-Pgrelay-Timestamp"))
		if r.status == http.StatusOK {
			accepted[key]++
		}
	}
	for key, ts := range stamps {
		if len(ts) != 2 || ts[0] == ts[1] {
			t.Errorf("event %s: attempts at timestamps %v, want two different ones", key, ts)
		}
	}
	if len(accepted) != 5 {
		t.Fatalf("%d events accepted, want 5 (%v)", len(accepted), accepted)
	}
	for key, c := range accepted {
		if c != 1 || tries[key] != 2 {
			t.Errorf("event %s accepted %d times after %d attempts", key, c, tries[key])
		}
	}
	if st := n.Stats(); st.Delivered != 5 || st.Retries != 5 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// 429 with Retry-After: the retry waits what the receiver asked, not the
// (here 1ms) backoff.
func TestRetryAfter429IsHonoured(t *testing.T) {
	var times []time.Time
	rc := &receiver{respond: func(i int, _ *http.Request, w http.ResponseWriter) int {
		times = append(times, time.Now()) // requests are sequential
		if i == 0 {
			w.Header().Set("Retry-After", "1")
			return http.StatusTooManyRequests
		}
		return http.StatusOK
	}}
	srv := startReceiver(t, rc)
	n := mustNew(t, testConfig(srv.URL), nil)
	n.Emit(Event{Type: ReplicateStarted})
	closeAll(t, n)
	accepted := rc.accepted(t) // its lock orders the handler's writes before the reads below
	if len(times) != 2 || len(accepted) != 1 {
		t.Fatalf("%d attempts, %d accepted", len(times), len(accepted))
	}
	// A lower bound only: a slow machine can only make the gap longer.
	if gap := times[1].Sub(times[0]); gap < time.Second {
		t.Errorf("retried after %s, before the 1s Retry-After", gap)
	}
}

func TestBackoff(t *testing.T) {
	n := &Notifier{cfg: Config{RetryAfterMax: time.Minute}}
	resp := func(status int, retryAfter string) *http.Response {
		r := &http.Response{StatusCode: status, Header: http.Header{}}
		if retryAfter != "" {
			r.Header.Set("Retry-After", retryAfter)
		}
		return r
	}
	lo, hi := time.Second, 30*time.Second
	for _, c := range []struct {
		resp *http.Response
		want time.Duration
	}{
		{resp(429, "7"), 7 * time.Second},
		{resp(503, "7"), 7 * time.Second},
		{resp(429, "3600"), time.Minute}, // capped at RetryAfterMax
		{resp(429, "0"), lo},             // never below the minimum
		{resp(429, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)), time.Minute},
	} {
		if got := n.backoff(lo, hi, 0, c.resp); got != c.want {
			t.Errorf("status %d Retry-After %q: %s, want %s", c.resp.StatusCode, c.resp.Header.Get("Retry-After"), got, c.want)
		}
	}
	// Otherwise exponential with jitter, within [lo, min(lo·2^attempt, hi)].
	for attempt := range 40 {
		for _, r := range []*http.Response{nil, resp(500, ""), resp(429, "soon")} {
			ceil := hi
			if attempt < 5 {
				ceil = lo << attempt
			}
			if got := n.backoff(lo, hi, attempt, r); got < lo || got > ceil {
				t.Errorf("attempt %d: %s outside [%s, %s]", attempt, got, lo, ceil)
			}
		}
	}
}

// A receiver that never answers holds up nothing: Emit returns at once
// whatever the queue holds, the oldest events are dropped and counted, and
// Close gives up when its context ends.
func TestHangingReceiverNeverBlocksEmit(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	rc := &receiver{respond: func(int, *http.Request, http.ResponseWriter) int {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
		return http.StatusOK
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handlers
	cfg := testConfig(srv.URL)
	cfg.QueueSize = 8
	cfg.RequestTimeout = time.Hour
	var logs logBuffer
	n, err := New(cfg, logs.logger())
	if err != nil {
		t.Fatal(err)
	}
	n.Emit(Event{Type: ReplicateStarted})
	<-arrived // the first event is in flight, stuck
	const more = 1000
	for range more {
		n.Emit(Event{Type: LagHigh}) // would hang the test if Emit waited
	}
	st := n.Stats()
	if st.Emitted != more+1 || st.Queued != 8 || st.Dropped != more-8 || st.Delivered != 0 {
		t.Fatalf("stats %+v", st)
	}
	if !strings.Contains(logs.String(), "webhook queue full: dropped the oldest event") {
		t.Errorf("drops not logged:\n%s", logs.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Close(ctx); err == nil || !strings.Contains(err.Error(), "8 webhook deliveries") {
		t.Errorf("Close: %v", err)
	}
	if st := n.Stats(); st.Failed != 9 || st.Queued != 0 {
		t.Errorf("after Close: %+v", st)
	}
	n.Emit(Event{Type: ReplicateStopped}) // after Close: ignored, no panic
}

// A receiver that is down: every delivery fails after its retries, Emit never
// waits, and the failures are logged without the URL's credentials.
func TestDownReceiverFailsWithoutLeakingTheURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	url := "http://hookuser:hookpass-123@" + addr + "/services/T0KEN-abc/B0KEN-def?token=qtoken-xyz"
	cfg := testConfig(url)
	cfg.RetryMax = 2
	var logs logBuffer
	n := mustNew(t, cfg, logs.logger())
	for range 20 {
		n.Emit(Event{Type: ReplicateStarted})
	}
	closeAll(t, n)
	if st := n.Stats(); st.Failed != 20 || st.Delivered != 0 || st.Retries != 40 {
		t.Errorf("stats %+v", st)
	}
	out := logs.String()
	if strings.Count(out, "webhook delivery failed") != 20 || !strings.Contains(out, "connection refused") ||
		!strings.Contains(out, "http://"+addr+"/…") || !strings.Contains(out, "attempts=3") {
		t.Errorf("log:\n%s", out)
	}
	for _, secret := range []string{"hookpass-123", "hookuser", "T0KEN-abc", "B0KEN-def", "qtoken-xyz", "/services"} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains %q:\n%s", secret, out)
		}
	}
}

// 4xx but 408 and 429 is final: one attempt, logged with the status.
func TestRefusedIsNotRetried(t *testing.T) {
	rc := &receiver{respond: func(int, *http.Request, http.ResponseWriter) int { return http.StatusBadRequest }}
	srv := startReceiver(t, rc)
	var logs logBuffer
	n := mustNew(t, testConfig(srv.URL), logs.logger())
	n.Emit(Event{Type: ReplicateStarted})
	closeAll(t, n)
	if len(rc.got()) != 1 || n.Stats().Failed != 1 || !strings.Contains(logs.String(), "receiver answered 400 Bad Request") {
		t.Errorf("%d attempts, stats %+v, log:\n%s", len(rc.got()), n.Stats(), logs.String())
	}
}

// TLS is verified: a receiver whose certificate the system does not trust
// gets nothing (and is not retried); trusting its CA lets the event through.
func TestTLSVerified(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewUnstartedServer(rc)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	defer srv.Close()

	var logs logBuffer
	n := mustNew(t, testConfig(srv.URL), logs.logger())
	n.Emit(Event{Type: ReplicateStarted})
	closeAll(t, n)
	if st := n.Stats(); st.Delivered != 0 || st.Failed != 1 || st.Retries != 0 || len(rc.got()) != 0 {
		t.Errorf("untrusted certificate: stats %+v, %d requests", st, len(rc.got()))
	}
	if !strings.Contains(logs.String(), "certificate") {
		t.Errorf("log does not say why:\n%s", logs.String())
	}

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	cfg := testConfig(srv.URL)
	cfg.RootCAs = pool
	n = mustNew(t, cfg, nil)
	n.Emit(Event{Type: ReplicateStarted})
	closeAll(t, n)
	if st := n.Stats(); st.Delivered != 1 || len(rc.accepted(t)) != 1 {
		t.Errorf("trusted CA: stats %+v", st)
	}
}

// A redirect is not followed (a redirected POST would arrive as a GET).
func TestRedirectNotFollowed(t *testing.T) {
	rc := &receiver{}
	target := startReceiver(t, rc)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusFound))
	defer redirect.Close()
	n := mustNew(t, testConfig(redirect.URL), nil)
	n.Emit(Event{Type: ReplicateStarted})
	closeAll(t, n)
	if len(rc.got()) != 0 || n.Stats().Failed != 1 {
		t.Errorf("redirect followed: %d requests, stats %+v", len(rc.got()), n.Stats())
	}
}

func TestSlackFormat(t *testing.T) {
	rc := &receiver{}
	srv := startReceiver(t, rc)
	clock := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(srv.URL)
	cfg.Format = FormatSlack
	cfg.LagAlert = LagAlert{Behind: time.Minute}
	cfg.PreparedAlert = time.Minute
	cfg.Now = clock.now
	n := mustNew(t, cfg, nil)
	emitEveryEvent(n, clock)
	n.Emit(Event{Type: ReplicateFailed, Reason: "a <b> & c", Table: "public.t"})
	closeAll(t, n)
	var texts []string
	for _, r := range rc.got() {
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatal(err)
		}
		text, ok := m["text"].(string)
		if len(m) != 1 || !ok || !strings.HasPrefix(text, "pgrelay: ") || !strings.Contains(text, "slot pgrelay, db1.example:5432/app → db2.example:3306/shop") {
			t.Errorf("slack body %s", r.body)
		}
		for _, secret := range []string{sourcePassword, targetPassword, "alice"} {
			if strings.Contains(text, secret) {
				t.Errorf("slack text contains %q: %s", secret, text)
			}
		}
		texts = append(texts, text)
	}
	if len(texts) != len(Types)+1 {
		t.Fatalf("%d messages: %q", len(texts), texts)
	}
	for _, want := range []string{
		"migration finished (slot pgrelay, db1.example:5432/app → db2.example:3306/shop): 12 tables, 123456 rows, 5 MB in 1m3s at 0/16B3748",
		"replication stopped on an error (slot pgrelay, db1.example:5432/app → db2.example:3306/shop): target refused a change: value too long for type character varying(3) [table public.orders, key id=42, LSN 0/4000100]",
		"lag is over PGRELAY_LAG_ALERT (1m0s): 2 GB behind, 1m30s",
		"a &lt;b&gt; &amp; c [table public.t]",
	} {
		if !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no message says %q:\n%s", want, strings.Join(texts, "\n"))
		}
	}
}

// events returns the event types a receiver accepted, in order.
func events(t *testing.T, rc *receiver) []string {
	var out []string
	for _, m := range rc.accepted(t) {
		out = append(out, m["event"].(string))
	}
	return out
}

func TestRetryingIsThrottled(t *testing.T) {
	rc := &receiver{}
	srv := startReceiver(t, rc)
	clock := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(srv.URL)
	cfg.Now = clock.now
	n := mustNew(t, cfg, nil) // Repeat: the default 10m
	n.Recovered()             // nothing failed: nothing to say
	fail := errors.New("source: connection refused")
	n.Retrying(fail) // sent: the first failure
	for range 9 {    // 9 more within the first 10 minutes: not sent
		clock.add(time.Minute)
		n.Retrying(fail)
	}
	clock.add(time.Minute)
	n.Retrying(fail) // 10 minutes after the last one sent: sent
	clock.add(30 * time.Second)
	n.Retrying(fail)
	n.Recovered()
	n.Recovered()
	n.Retrying(fail) // a new run of failures
	closeAll(t, n)
	got := rc.accepted(t)
	if want := []string{"retrying", "retrying", "recovered", "retrying"}; !slices.Equal(events(t, rc), want) {
		t.Fatalf("events %v, want %v", events(t, rc), want)
	}
	if got[1]["attempts"] != 11.0 || got[1]["down_seconds"] != 600.0 || got[2]["attempts"] != 12.0 || got[2]["down_seconds"] != 630.0 || got[3]["attempts"] != 1.0 {
		t.Errorf("bodies %v", got)
	}
}

func TestLagHysteresis(t *testing.T) {
	for _, c := range []struct {
		name     string
		alert    LagAlert
		readings []LagReading
		want     []string
	}{
		{"bytes", LagAlert{Bytes: 1000}, []LagReading{
			{Bytes: 500}, {Bytes: 1000}, {Bytes: 1500}, {Bytes: 900}, {Bytes: 1100}, {Bytes: 800}, {Bytes: 799}, {Bytes: 850}, {Bytes: 5000}, {Bytes: 0},
		}, []string{"lag.high", "lag.ok", "lag.high", "lag.ok"}},
		{"duration", LagAlert{Behind: time.Minute}, []LagReading{
			{Behind: time.Second}, {Behind: 2 * time.Minute, Bytes: 1 << 40}, {Behind: 50 * time.Second}, {Behind: 47 * time.Second}, {Behind: 61 * time.Second},
		}, []string{"lag.high", "lag.ok", "lag.high"}},
		{"off", LagAlert{}, []LagReading{{Bytes: 1 << 40, Behind: time.Hour}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := &receiver{}
			srv := startReceiver(t, rc)
			cfg := testConfig(srv.URL)
			cfg.LagAlert = c.alert
			n := mustNew(t, cfg, nil)
			for _, r := range c.readings {
				n.Lag(r)
			}
			closeAll(t, n)
			if got := events(t, rc); !slices.Equal(got, c.want) {
				t.Errorf("events %v, want %v", got, c.want)
			}
		})
	}
}

func TestSlotAtRisk(t *testing.T) {
	rc := &receiver{}
	srv := startReceiver(t, rc)
	clock := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(srv.URL)
	cfg.Now = clock.now
	n := mustNew(t, cfg, nil)
	alert := source.WALAlert{Share: 0.8}
	reading := func(status string, retained, keep int64) {
		r := source.WALRetention{Slot: "pgrelay", Exists: true, Major: 16, WALStatus: status, RetainedBytes: retained, MaxSlotWALKeepSize: keep}
		n.Slot(r, source.WALWarnings(r, alert))
	}
	reading("reserved", 10, 100)    // fine
	reading("reserved", 10, -1)     // unlimited: advice for the log, no event
	reading("extended", 85, 100)    // retained: sent
	clock.add(time.Minute)          //
	reading("extended", 90, 100)    // same risk, within Repeat: not sent
	reading("unreserved", 120, 100) // worse: sent
	clock.add(5 * time.Minute)      //
	reading("extended", 85, 100)    // less severe, within Repeat: not sent
	clock.add(5 * time.Minute)      //
	reading("unreserved", 130, 100) // Repeat passed: sent again
	reading("reserved", 10, 100)    // cleared
	reading("extended", 81, 100)    // at risk again: sent
	closeAll(t, n)
	var risks []string
	for _, m := range rc.accepted(t) {
		risks = append(risks, m["risk"].(string))
	}
	if want := []string{"retained", "unreserved", "unreserved", "retained"}; !slices.Equal(risks, want) {
		t.Errorf("slot.at_risk sent for %v, want %v", risks, want)
	}
}

func TestPreparedWaiting(t *testing.T) {
	rc := &receiver{}
	srv := startReceiver(t, rc)
	clock := &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	cfg := testConfig(srv.URL)
	cfg.Now = clock.now
	cfg.PreparedAlert = 5 * time.Minute
	n := mustNew(t, cfg, nil)
	start := clock.now()
	a := Prepared{GID: "pgrelay_s_100", Since: start}
	b := Prepared{GID: "pgrelay_s_101", Since: start.Add(2 * time.Minute)}
	n.Prepared([]Prepared{a, b}) // held 0 and -2 min
	clock.add(5 * time.Minute)
	n.Prepared([]Prepared{a, b}) // a held 5 min: sent
	clock.add(time.Minute)
	n.Prepared([]Prepared{a, b}) // a again: not sent; b at 4 min
	clock.add(time.Minute)
	n.Prepared([]Prepared{b}) // a finished; b at 5 min: sent
	n.Prepared([]Prepared{a}) // a (same GID, prepared anew) held long: sent again
	closeAll(t, n)
	var gids []string
	for _, m := range rc.accepted(t) {
		gids = append(gids, m["gid"].(string))
	}
	if want := []string{a.GID, b.GID, a.GID}; !slices.Equal(gids, want) {
		t.Errorf("prepared.waiting for %v, want %v", gids, want)
	}

	// Off by default.
	cfg.PreparedAlert = 0
	n = mustNew(t, cfg, nil)
	n.Prepared([]Prepared{{GID: "x", Since: start.Add(-time.Hour)}})
	closeAll(t, n)
	if n.Stats().Emitted != 0 {
		t.Error("prepared.waiting sent with the alert off")
	}
}

// Without URLs there is no notifier, and a nil one does nothing.
func TestNilNotifier(t *testing.T) {
	n, err := New(Config{Slot: "x"}, nil)
	if n != nil || err != nil {
		t.Fatalf("New without URLs: %v, %v", n, err)
	}
	n.Emit(Event{Type: ReplicateStarted})
	n.Retrying(errors.New("x"))
	n.Recovered()
	n.Lag(LagReading{Bytes: 1 << 40})
	n.Slot(source.WALRetention{}, nil)
	n.Prepared([]Prepared{{GID: "g"}})
	if err := n.Close(context.Background()); err != nil || n.Stats() != (Stats{}) {
		t.Errorf("nil notifier: %v %+v", err, n.Stats())
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		says string
	}{
		{Config{URLs: []string{"ftp://user:pw-in-url@host/x"}}, "webhook URL 1 (ftp://host/…): expected an http:// or https:// URL"},
		{Config{URLs: []string{"https://ok.example/a", "hooks.example/no-scheme"}}, "webhook URL 2 ((unparsable URL))"},
		{Config{URLs: []string{"https://ok.example"}, Format: "xml"}, `format "xml": expected json or slack`},
	} {
		_, err := New(c.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "pw-in-url") {
			t.Errorf("New(%v): %v, want %q", c.cfg.URLs, err, c.says)
		}
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"event":"replicate.started"}`)
	now := time.Unix(1_700_000_000, 0)
	ts := "1700000000"
	sig := Signature("k3y", ts, body)
	if !referenceCheck("k3y", recorded{header: http.Header{"X-Pgrelay-Timestamp": {ts}, "X-Pgrelay-Signature": {sig}}, body: body}) {
		t.Fatal("Signature disagrees with the documented check")
	}
	if !Verify("k3y", ts, sig, body, now.Add(30*time.Second), time.Minute) {
		t.Error("valid request refused")
	}
	for name, ok := range map[string]bool{
		"other key":  Verify("other", ts, sig, body, now, time.Minute),
		"other body": Verify("k3y", ts, sig, []byte(`{"event":"replicate.failed"}`), now, time.Minute),
		"old":        Verify("k3y", ts, sig, body, now.Add(2*time.Minute), time.Minute),
		"bad ts":     Verify("k3y", "x", sig, body, now, time.Minute),
		"other ts":   Verify("k3y", "1700000001", sig, body, now, time.Minute),
	} {
		if ok {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://alice:pw@db1:5432/app?sslmode=require":  "db1:5432/app",
		"postgresql://db1/app":                              "db1/app",
		"postgres://alice:p/a@ss@db1:5432/app":              "db1:5432/app",
		"postgres://u@:5432/app?host=%2Fvar%2Frun%2Fpg":     ":5432/app",
		"postgres://u:pw@/app?host=/tmp&port=5433":          "/tmp:5433/app",
		"postgres://u:pw@db1/?dbname=other&password=x":      "db1/other",
		"postgres://h1:5432,h2:5433/app":                    "h1:5432,h2:5433/app",
		"mysql://bob:pw@db2:3306/shop?tls=true":             "db2:3306/shop",
		"host=db1 port=5432 dbname=app user=u password=pw":  "db1:5432/app",
		"host='db 1' dbname='a\\'pp' password='p w'":        "db 1/a'pp",
		"hostaddr=10.0.0.1 dbname = app password=secret123": "10.0.0.1/app",
		"dbname=app": "app",
		"":           "",
	} {
		if got := Endpoint(in); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPasswordOf(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://alice:s%40cret@db1/app":       "s@cret",
		"postgres://alice:p/a@ss@db1/app":         "p/a@ss",
		"postgres://alice@db1/app?password=q-pw1": "q-pw1",
		"host=db1 password='p w\\'x'":             "p w'x",
		"host=db1 password=plain":                 "plain",
		"postgres://db1/app":                      "",
	} {
		if got := passwordOf(in); got != want {
			t.Errorf("passwordOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XXXX": "https://hooks.slack.com/…",
		"https://u:p@hooks.example:8443/":             "https://hooks.example:8443",
		"http://127.0.0.1:9000?token=abc":             "http://127.0.0.1:9000/…",
		"https://hooks.example":                       "https://hooks.example",
		"::not a url":                                 "(unparsable URL)",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseLagAlert(t *testing.T) {
	for in, want := range map[string]LagAlert{
		"": {}, "0": {}, "1GB": {Bytes: 1 << 30}, "512MB": {Bytes: 512 << 20}, "1048576": {Bytes: 1 << 20},
		"5m": {Behind: 5 * time.Minute}, "90s": {Behind: 90 * time.Second}, "1h30m": {Behind: 90 * time.Minute},
	} {
		got, err := ParseLagAlert(in)
		if err != nil || got != want {
			t.Errorf("ParseLagAlert(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if back, err := ParseLagAlert(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q through %q: %+v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"fast", "-5m", "1 minute", "10%"} {
		if got, err := ParseLagAlert(in); err == nil {
			t.Errorf("ParseLagAlert(%q) = %+v, want an error", in, got)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	got := URLSecrets(" https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX ")
	want := []string{"XXXXXXXXXXXXXXXXXXXXXXXX"}
	if !slices.Equal(got, want) {
		t.Errorf("slack: %q, want %q", got, want)
	}
	got = URLSecrets("https://user:pass-word@h.example/hooks?token=abc1")
	want = []string{"pass-word", "abc1"}
	if !slices.Equal(got, want) {
		t.Errorf("userinfo: %q, want %q", got, want)
	}
	got = URLSecrets("https://tok3n-as-user@h.example/")
	if !slices.Contains(got, "tok3n-as-user") {
		t.Errorf("token as user: %q", got)
	}
	// Nothing of a URL without credentials: its host, port and path are no
	// secret, and hiding their pieces would garble every message.
	if got := URLSecrets("http://127.0.0.1:9000/hooks/pgrelay"); len(got) != 0 {
		t.Errorf("a URL without credentials: %q, want none", got)
	}
	// A URL that does not parse gives its credentials, not itself whole.
	got = URLSecrets("http://u:pa/ss@[::1/hooks?token=abc1")
	want = []string{"u:pa/ss", "abc1"}
	if !slices.Equal(got, want) {
		t.Errorf("unparsable: %q, want %q", got, want)
	}
}

// A password pasted into a URL unescaped, which a reading of the URL takes
// for a host or a database, shows in no envelope.
func TestEnvelopeHidesPastedPassword(t *testing.T) {
	rc := &receiver{}
	srv := startReceiver(t, rc)
	cfg := testConfig(srv.URL)
	cfg.SourceURL = "postgres://db1.example:5432/app?user=u&password=Qv15kZw@[::1]:1/jXq@[::1]:1/Pyf&sslmode=disable"
	cfg.TargetURL = "postgres://u:Zq9@[::2]:7/wQ@db2.example:5432/shop"
	n := mustNew(t, cfg, nil)
	n.Emit(Event{Type: ReplicateStarted})
	closeAll(t, n)
	got := rc.accepted(t)
	if len(got) != 1 {
		t.Fatalf("%d events", len(got))
	}
	for _, piece := range []string{"Qv15", "::1]", "jXq@", "Zq9@", "::2]"} {
		for _, f := range []string{"source", "target"} {
			if s, _ := got[0][f].(string); strings.Contains(s, piece) {
				t.Errorf("%s %q shows %q of a password", f, s, piece)
			}
		}
	}
}

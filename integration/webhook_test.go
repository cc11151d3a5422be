package integration

// Operator events end to end (docs/operations-webhooks.md): the built binary
// posts to a webhook receiver on loopback; every event type with its
// documented fields, each event handled once per idempotency key although
// its first attempt is refused, signatures that verify, no password in any
// body or log line; the WAL-retention guard in the log, status and /metrics;
// and a receiver that hangs or is down never holds up replication.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/pgrelay/pgrelay/apply/notify"
	"github.com/pgrelay/pgrelay/integration/harness"
)

// hookSecret signs the test receivers' requests.
const hookSecret = "wh-signing-key-5150"

// hookRequest is one request a receiver got.
type hookRequest struct {
	key, event string
	body       []byte
	fields     map[string]any
	status     int
}

// hookReceiver is a webhook receiver on loopback. It checks each request's
// signature (with a secret), answers 503 to the first attempt of each
// Idempotency-Key when refuseFirst is set, and 200 otherwise; hang makes
// every request wait until the test ends.
type hookReceiver struct {
	url         string
	secret      string
	refuseFirst bool
	hang        chan struct{}

	mu       sync.Mutex
	reqs     []hookRequest
	problems []string
}

func newHookReceiver(t *testing.T, secret string, refuseFirst bool) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{secret: secret, refuseFirst: refuseFirst}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/hooks/pgrelay"
	return rc
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.hang != nil {
		select {
		case <-rc.hang:
		case <-r.Context().Done():
		}
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := hookRequest{key: r.Header.Get("Idempotency-Key"), event: r.Header.Get("X-Pgrelay-Event"), body: body, status: http.StatusOK}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := json.Unmarshal(body, &req.fields); err != nil {
		rc.problems = append(rc.problems, fmt.Sprintf("a body that is not a JSON object: %v: %s", err, body))
	}
	if rc.secret != "" && !notify.Verify(rc.secret, r.Header.Get("X-Pgrelay-Timestamp"), r.Header.Get("X-Pgrelay-Signature"), body, time.Now(), 5*time.Minute) {
		rc.problems = append(rc.problems, fmt.Sprintf("%s %s: signature %q does not verify", req.event, req.key, r.Header.Get("X-Pgrelay-Signature")))
		req.status = http.StatusUnauthorized
	}
	if req.fields["id"] != req.key || req.fields["event"] != req.event {
		rc.problems = append(rc.problems, fmt.Sprintf("headers Idempotency-Key %q, X-Pgrelay-Event %q for the body %s", req.key, req.event, body))
	}
	if rc.refuseFirst && req.status == http.StatusOK && !slices.ContainsFunc(rc.reqs, func(q hookRequest) bool { return q.key == req.key }) {
		req.status = http.StatusServiceUnavailable
	}
	rc.reqs = append(rc.reqs, req)
	w.WriteHeader(req.status)
}

// requests returns what it got so far, in order.
func (rc *hookReceiver) requests() []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs)
}

// accepted are the events answered 200, in order, from the from-th request
// on.
func (rc *hookReceiver) accepted(from int) []map[string]any {
	var out []map[string]any
	for _, r := range rc.requests()[min(from, len(rc.requests())):] {
		if r.status == http.StatusOK {
			out = append(out, r.fields)
		}
	}
	return out
}

// await waits until an event of typ, accepted from the from-th request on,
// satisfies ok (nil: any), and returns it; p's exit fails the wait early.
func (rc *hookReceiver) await(t *testing.T, p *e2eProc, from int, typ string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	var got map[string]any
	err := harness.Await(3*time.Minute, 50*time.Millisecond, "a "+typ+" event", func() error {
		exited := p != nil && p.exited()
		for _, ev := range rc.accepted(from) {
			if ev["event"] == typ && (ok == nil || ok(ev)) {
				got = ev
				return nil
			}
		}
		if exited {
			return harness.Abort(fmt.Errorf("%s exited (%v) first", p.name, p.err))
		}
		return fmt.Errorf("events so far: %v", rc.types(from))
	})
	if err != nil {
		logs := ""
		if p != nil {
			logs = p.logs()
		}
		t.Fatalf("%v; log:\n%s", err, logs)
	}
	return got
}

// last is the latest event of typ accepted from the from-th request on, or nil.
func (rc *hookReceiver) last(from int, typ string) map[string]any {
	var got map[string]any
	for _, ev := range rc.accepted(from) {
		if ev["event"] == typ {
			got = ev
		}
	}
	return got
}

func (rc *hookReceiver) types(from int) []string {
	var out []string
	for _, ev := range rc.accepted(from) {
		out = append(out, ev["event"].(string))
	}
	return out
}

// checkDelivery checks what the receiver got: no problem (signatures), each
// event accepted exactly once per idempotency key and, with refuseFirst,
// after its refused first attempt.
func (rc *hookReceiver) checkDelivery(t *testing.T) {
	t.Helper()
	rc.mu.Lock()
	for _, p := range rc.problems {
		t.Error(p)
	}
	rc.mu.Unlock()
	attempts, accepted := map[string]int{}, map[string]int{}
	for _, r := range rc.requests() {
		attempts[r.key]++
		if r.status == http.StatusOK {
			accepted[r.key]++
		}
	}
	for key, n := range attempts {
		switch {
		case accepted[key] > 1:
			t.Errorf("event %s accepted %d times, want once: a retry after a 2xx", key, accepted[key])
		case accepted[key] == 0:
			t.Errorf("event %s was never accepted (%d attempts)", key, n)
		case rc.refuseFirst && n != 2:
			t.Errorf("event %s: %d attempts, want 2 (503, then 200)", key, n)
		}
	}
}

// texts are the decoded string values of every body, for a search that JSON's
// escapes cannot hide from.
func (rc *hookReceiver) texts() []string {
	var out []string
	for _, r := range rc.requests() {
		for k, v := range r.fields {
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
		out = append(out, string(r.body))
	}
	return out
}

// hookFields are the documented fields of each event beyond the envelope
// (docs/operations-webhooks.md).
var hookFields = map[string][]string{
	"migrate.finished":  {"tables", "rows", "bytes", "duration_seconds"},
	"migrate.failed":    {"reason", "table", "key"},
	"replicate.started": {},
	"replicate.stopped": {},
	"replicate.failed":  {"reason", "table", "key"},
	"retrying":          {"reason", "attempts", "since", "down_seconds"},
	"recovered":         {"attempts", "since", "down_seconds"},
	"lag.high":          {"lag_bytes", "lag_seconds", "threshold"},
	"lag.ok":            {"lag_bytes", "lag_seconds", "threshold"},
	"slot.at_risk":      {"risk", "reason", "wal_status", "retained_bytes", "safe_wal_size", "max_slot_wal_keep_size"},
	"prepared.waiting":  {"gid", "prepared_at", "held_seconds", "threshold_seconds"},
}

// checkEnvelope checks that ev has exactly the documented fields of its
// type, the envelope naming e's slot, source and target.
func checkEnvelope(t *testing.T, e *e2eEnv, ev map[string]any) {
	t.Helper()
	typ, _ := ev["event"].(string)
	want := append([]string{"id", "event", "time", "slot", "source", "target", "lsn"}, hookFields[typ]...)
	var keys []string
	for k := range ev {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("%s has fields %v, documented %v", typ, keys, want)
	}
	src, tgt := fmt.Sprintf("127.0.0.1:%d/%s", e.src.Port, e.src.DB), fmt.Sprintf("127.0.0.1:%d/%s", e.tgt.Port, e.tgt.DB)
	if ev["slot"] != e.slot || ev["source"] != src || ev["target"] != tgt {
		t.Errorf("%s envelope: slot %v source %v target %v; want %s, %s, %s", typ, ev["slot"], ev["source"], ev["target"], e.slot, src, tgt)
	}
	if s, _ := ev["time"].(string); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(s) {
		t.Errorf("%s time %v", typ, ev["time"])
	}
}

// lsnOf is an event's lsn field ("" for null).
func lsnOf(ev map[string]any) string {
	s, _ := ev["lsn"].(string)
	return s
}

// noSecrets checks that no text shows any of secrets.
func noSecrets(t *testing.T, what string, texts []string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, x := range texts {
			if strings.Contains(x, s) {
				t.Errorf("%s shows secret %q: %s", what, s, x)
				break
			}
		}
	}
}

// TestWebhookEvents: a migrate that fails and one that finishes, a replicate
// that starts, loses its target and recovers, falls behind and catches up,
// stops on a signal, and one stopped by a value the target refuses: each
// sends its event with the documented fields, to a receiver that refuses
// every event's first attempt (each is then handled once) and checks every
// signature. No body and no log line shows a password or the secret.
func TestWebhookEvents(t *testing.T) {
	e2eEachMajor(t, testWebhookEvents)
}

func testWebhookEvents(t *testing.T, major int) {
	// Dedicated servers: the target is stopped and frozen, and the lag
	// read on the source is this test's alone.
	e := e2eNewEnv(t, harness.Postgres(t, major, harness.Dedicated()), harness.Postgres(t, e2eTargetMajor, harness.Dedicated()))
	rc := newHookReceiver(t, hookSecret, true)
	e.extra = append(e.extra, "PGRELAY_WEBHOOK_URL="+rc.url, "PGRELAY_WEBHOOK_SECRET="+hookSecret,
		"PGRELAY_LAG_ALERT=8MB", "PGRELAY_PREPARED_ALERT=0s")
	e.src.Exec(t, `CREATE TABLE wh_a (id int PRIMARY KEY, v text); CREATE TABLE wh_b (id int PRIMARY KEY, v text);
		INSERT INTO wh_a SELECT g, 'a' FROM generate_series(1, 100) g; INSERT INTO wh_b SELECT g, 'b' FROM generate_series(1, 50) g`)
	var procs []*e2eProc
	wrongPW := "wrong-pw-4711"

	// migrate.failed: the source refuses the password, which no retry cures.
	bad := *e
	bad.extra = append(slices.Clone(e.extra), "PGRELAY_SOURCE_URL="+strings.Replace(e.src.URL(), ":"+e.src.Password+"@", ":"+wrongPW+"@", 1))
	p, code := bad.run(time.Minute, "migrate")
	procs = append(procs, p)
	if code != 1 {
		t.Fatalf("migrate with a wrong password exited %d, want 1; log:\n%s", code, p.logs())
	}
	// migrate waited for its last event before it exited.
	failed := rc.last(0, "migrate.failed")
	if failed == nil || !strings.Contains(failed["reason"].(string), "password authentication failed") || failed["table"] != nil || lsnOf(failed) != "" {
		t.Errorf("migrate.failed: %v; want the reason, no table, no lsn (events: %v)", failed, rc.types(0))
	}

	// migrate.finished: what the copy copied, where it caught up.
	p = e.mustRun(3*time.Minute, "migrate")
	procs = append(procs, p)
	caughtUp := e2eLSNPattern.FindString(strings.Join(p.out.all(), "\n"))
	finished := rc.last(0, "migrate.finished")
	if finished == nil || lsnOf(finished) != caughtUp || finished["tables"] != 2.0 || finished["rows"] != 150.0 ||
		finished["bytes"].(float64) <= 0 || finished["duration_seconds"].(float64) <= 0 {
		t.Errorf("migrate.finished: %v; want lsn %s (stdout), 2 tables, 150 rows, some bytes and time (events: %v)", finished, caughtUp, rc.types(0))
	}

	// replicate.started, and the advice about the source's unlimited
	// max_slot_wal_keep_size.
	p = e.start("replicate")
	procs = append(procs, p)
	started := rc.await(t, p, 0, "replicate.started", nil)
	streaming := p.waitLog(t, "streaming", time.Minute)
	if lsnOf(started) != streaming.str("from") {
		t.Errorf("replicate.started at %s, streaming from %s", lsnOf(started), streaming.str("from"))
	}
	if l := p.waitLog(t, "max_slot_wal_keep_size is -1 (unlimited)", 0); l.str("level") != "WARN" || l.str("risk") != "unlimited" || !strings.Contains(l.str("msg"), "disk") {
		t.Errorf("the unlimited-retention warning: %v", l)
	}
	// It comes with the session's start, before the stream.
	warned, streamed := -1, -1
	for i, l := range p.logLines() {
		switch {
		case warned < 0 && strings.Contains(l.str("msg"), "max_slot_wal_keep_size is -1"):
			warned = i
		case streamed < 0 && l.str("msg") == "streaming":
			streamed = i
		}
	}
	if warned < 0 || warned > streamed {
		t.Errorf("the unlimited-retention warning is line %d of the log, streaming line %d: want it at the start; log:\n%s", warned, streamed, p.logs())
	}

	// retrying while the target is down, recovered once a session streams
	// again.
	mark := len(rc.requests())
	e.tgt.Stop(t)
	e.src.Exec(t, "INSERT INTO wh_a VALUES (1001, 'while the target is down')")
	retrying := rc.await(t, p, mark, "retrying", nil)
	e.tgt.Start(t)
	recovered := rc.await(t, p, mark, "recovered", nil)
	if retrying["attempts"] != 1.0 || retrying["reason"] == "" || recovered["attempts"].(float64) < 1 ||
		recovered["since"] != retrying["since"] || recovered["down_seconds"].(float64) < 0 {
		t.Errorf("retrying %v, then recovered %v", retrying, recovered)
	}
	e2eSync(t, e, p, 2*time.Minute)

	// lag.high while the target is frozen and the source writes 16 MB of
	// WAL, lag.ok once it has caught up.
	mark = len(rc.requests())
	thaw := e.tgt.Freeze(t)
	e.src.Exec(t, "INSERT INTO wh_a SELECT g, repeat('x', 1000) FROM generate_series(10000, 25000) g")
	high := rc.await(t, p, mark, "lag.high", nil)
	thaw()
	e2eSync(t, e, p, 3*time.Minute)
	ok := rc.await(t, p, mark, "lag.ok", nil)
	if high["lag_bytes"].(float64) < 8<<20 || high["threshold"] != "8MB" || ok["lag_bytes"].(float64) >= 0.8*(8<<20) {
		t.Errorf("lag.high %v, then lag.ok %v; want over 8MB, then under 80%% of it", high, ok)
	}

	// replicate.stopped: at the durable position the stop logged, sent
	// before the process exited.
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	stopped := rc.last(mark, "replicate.stopped")
	if want := p.waitLog(t, "stopped cleanly", 0).str("durable_lsn"); stopped == nil || lsnOf(stopped) != want {
		t.Errorf("replicate.stopped: %v; want lsn %s (events: %v)", stopped, want, rc.types(mark))
	}
	e2eCompare(t, e)

	// replicate.failed: a row the target refuses (a check of the target's
	// own), with its table, key and LSN.
	e.tgt.Exec(t, "ALTER TABLE wh_b ADD CONSTRAINT wh_b_v CHECK (v <> 'refused')")
	mark = len(rc.requests())
	p = e.start("replicate")
	procs = append(procs, p)
	rc.await(t, p, mark, "replicate.started", nil)
	e.src.Exec(t, "UPDATE wh_b SET v = 'refused' WHERE id = 7")
	if code := p.wait(t, 2*time.Minute); code != 1 {
		t.Fatalf("replicate exited %d on a refused row, want 1; log:\n%s", code, p.logs())
	}
	rf := rc.last(mark, "replicate.failed")
	if rf == nil || !strings.Contains(fmt.Sprint(rf["table"]), "wh_b") || !strings.Contains(fmt.Sprint(rf["key"]), "7") || lsnOf(rf) == "" ||
		!strings.Contains(rf["reason"].(string), "wh_b_v") {
		t.Errorf("replicate.failed: %v; want the table, key and LSN of the refused row, and the constraint (events: %v)", rf, rc.types(mark))
	}

	rc.checkDelivery(t)
	seen := map[string]bool{}
	for _, ev := range rc.accepted(0) {
		checkEnvelope(t, e, ev)
		seen[ev["event"].(string)] = true
	}
	for _, typ := range []string{"migrate.failed", "migrate.finished", "replicate.started", "retrying", "recovered", "lag.high", "lag.ok", "replicate.stopped", "replicate.failed"} {
		if !seen[typ] {
			t.Errorf("no %s event; got %v", typ, rc.types(0))
		}
	}
	secrets := []string{e.src.Password, e.tgt.Password, wrongPW, hookSecret}
	noSecrets(t, "an event", rc.texts(), secrets...)
	for _, p := range procs {
		noSecrets(t, p.name, append(p.errOut.all(), p.out.all()...), secrets...)
	}
}

// TestWebhookPreparedMariaDB: a source transaction prepared and held as an
// XA transaction on a MariaDB target sends prepared.waiting once, with the
// documented fields and the source LSN of its PREPARE (the target's marker
// row holds it).
func TestWebhookPreparedMariaDB(t *testing.T) {
	major := e2eNewestFrom15(t, "prepared transactions are decoded at PREPARE from")
	e := myE2EPair(t, major)
	rc := newHookReceiver(t, hookSecret, false)
	e = e.with("PGRELAY_WEBHOOK_URL="+rc.url, "PGRELAY_WEBHOOK_SECRET="+hookSecret, "PGRELAY_PREPARED_ALERT=1s")
	e.src.Exec(t, "CREATE TABLE wpm (id int PRIMARY KEY, v text)")
	p := e.start("replicate")
	rc.await(t, p, 0, "replicate.started", nil)

	conn := e2eConn(t, e.src)
	ctx := e2eCtx(t, 3*time.Minute)
	e2eExec(t, ctx, conn, "BEGIN", "INSERT INTO wpm VALUES (1, 'prepared')", "PREPARE TRANSACTION 'wpm_held'")
	after := e.src.QueryString(t, "SELECT pg_current_wal_lsn()::text")
	pw := rc.await(t, p, 0, "prepared.waiting", nil)
	var keys []string
	for k := range pw {
		keys = append(keys, k)
	}
	want := append([]string{"id", "event", "time", "slot", "source", "target", "lsn"}, hookFields["prepared.waiting"]...)
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("prepared.waiting has fields %v, documented %v", keys, want)
	}
	if gid, _ := pw["gid"].(string); !strings.HasPrefix(gid, "pgrelay_"+e.slot+"_") || pw["held_seconds"].(float64) < 1 || pw["threshold_seconds"] != 1.0 {
		t.Errorf("prepared.waiting: %v; want a GID of slot %s held at least the 1 s threshold", pw, e.slot)
	}
	if _, err := time.Parse(time.RFC3339, fmt.Sprint(pw["prepared_at"])); err != nil {
		t.Errorf("prepared.waiting prepared_at %v: %v", pw["prepared_at"], err)
	}
	lsn, err := pglogrepl.ParseLSN(lsnOf(pw))
	if bound, _ := pglogrepl.ParseLSN(after); err != nil || lsn == 0 || lsn > bound {
		t.Errorf("prepared.waiting lsn %v; want its PREPARE's, at most %s", pw["lsn"], after)
	}
	e2eExec(t, ctx, conn, "COMMIT PREPARED 'wpm_held'")
	e.wait(t, p, 2*time.Minute, "the committed row", "SELECT COUNT(*) FROM wpm")
	e.sync(t, p, 2*time.Minute)
	n := 0
	for _, ev := range rc.accepted(0) {
		if ev["event"] == "prepared.waiting" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d prepared.waiting events for one held transaction, want 1", n)
	}
	rc.checkDelivery(t)
}

// TestWebhookSlotAndPrepared: on a source whose max_slot_wal_keep_size is
// 1MB, a transaction prepared there and held sends prepared.waiting; a slot
// pushed past its limit while pgrelay is stopped shows in status, and
// replicate, started again, warns and sends slot.at_risk, then catches up.
// /metrics shows the slot's WAL and the webhook counters.
func TestWebhookSlotAndPrepared(t *testing.T) {
	major := e2eNewestFrom15(t, "prepared transactions are decoded at PREPARE from")
	e2eBinary(t)
	// No checkpoint may invalidate the slot: none timed, none for WAL size.
	src := harness.Postgres(t, major, harness.WithSetting("max_slot_wal_keep_size", "1MB"),
		harness.WithSetting("checkpoint_timeout", "1h"), harness.WithSetting("max_wal_size", "4GB"))
	e := e2eNewEnv(t, src, harness.Postgres(t, e2eTargetMajor))
	rc := newHookReceiver(t, hookSecret, false)
	e.extra = append(e.extra, "PGRELAY_WEBHOOK_URL="+rc.url, "PGRELAY_WEBHOOK_SECRET="+hookSecret,
		"PGRELAY_PREPARED_ALERT=1s", "PGRELAY_METRICS_ADDR=127.0.0.1:0")
	e.src.Exec(t, "CREATE TABLE wp (id int PRIMARY KEY, v text); INSERT INTO wp SELECT g, 'v' FROM generate_series(1, 100) g")

	p := e.start("replicate")
	rc.await(t, p, 0, "replicate.started", nil)
	metrics := "http://" + p.waitLog(t, "serving /metrics", 0).str("addr") + "/metrics"

	// A transaction prepared on the source is prepared on the target and
	// held there until the source finishes it.
	conn := e2eConn(t, e.src)
	ctx := e2eCtx(t, 3*time.Minute)
	e2eExec(t, ctx, conn, "BEGIN", "INSERT INTO wp VALUES (1000, 'prepared')", "PREPARE TRANSACTION 'wp_held'")
	pw := rc.await(t, p, 0, "prepared.waiting", nil)
	if gid, _ := pw["gid"].(string); !strings.HasPrefix(gid, "pgrelay_"+e.slot+"_") || pw["held_seconds"].(float64) < 1 || pw["threshold_seconds"] != 1.0 {
		t.Errorf("prepared.waiting: %v; want a GID of slot %s held at least the 1 s threshold", pw, e.slot)
	}
	if _, err := time.Parse(time.RFC3339, fmt.Sprint(pw["prepared_at"])); err != nil {
		t.Errorf("prepared.waiting prepared_at %v: %v", pw["prepared_at"], err)
	}
	e2eExec(t, ctx, conn, "COMMIT PREPARED 'wp_held'")
	e2eSync(t, e, p, 2*time.Minute)

	// /metrics: the setting and the slot's WAL, the events delivered.
	harness.Eventually(t, time.Minute, "/metrics to show the slot's WAL and the events", func() error {
		m, err := scrape(metrics)
		if err != nil {
			return err
		}
		if m["pgrelay_source_max_slot_wal_keep_size_bytes"] != 1<<20 || m["pgrelay_slot_retained_wal_bytes"] <= 0 ||
			m[`pgrelay_webhook_deliveries_total{outcome="delivered"}`] < 2 || m["pgrelay_webhook_events_total"] < 2 {
			return fmt.Errorf("metrics %v", m)
		}
		return nil
	})

	// Stopped, the slot falls past max_slot_wal_keep_size.
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	for range 3 {
		e.src.Exec(t, "INSERT INTO wp VALUES ((SELECT max(id) + 1 FROM wp), 'push')")
		e.src.Exec(t, "SELECT pg_switch_wal()")
	}
	st, raw := e.status(t)
	w := st.WALRetention
	if w.MaxSlotWALKeepSize != 1<<20 || w.RetainedBytes < 2*16<<20 || w.SafeWALSize == nil || *w.SafeWALSize >= 0 ||
		len(w.Warnings) != 1 || w.Warnings[0].Risk != "unreserved" || !strings.Contains(w.Warnings[0].Message, "max_slot_wal_keep_size") {
		t.Errorf("status --json of a slot past max_slot_wal_keep_size:\n%s", raw)
	}
	text := strings.Join(e.mustRun(time.Minute, "status").out.all(), "\n")
	if !regexp.MustCompile(`(?m)^slot WAL\s+[\d.]+ MB retained, max_slot_wal_keep_size 1 MB, past it by [\d.]+ MB$`).MatchString(text) ||
		!regexp.MustCompile(`(?m)^WARNING\s+slot "`+e.slot+`" retains`).MatchString(text) {
		t.Errorf("status text of a slot past max_slot_wal_keep_size:\n%s", text)
	}

	// Started again: the warning, slot.at_risk, and it catches up while the
	// WAL is still there.
	mark := len(rc.requests())
	p = e.start("replicate")
	risk := rc.await(t, p, mark, "slot.at_risk", func(ev map[string]any) bool { return ev["risk"] == "unreserved" })
	if risk["wal_status"] != "unreserved" || risk["retained_bytes"].(float64) < 2*16<<20 || risk["max_slot_wal_keep_size"] != float64(1<<20) ||
		risk["safe_wal_size"].(float64) >= 0 || !strings.Contains(risk["reason"].(string), "max_slot_wal_keep_size") || lsnOf(risk) == "" {
		t.Errorf("slot.at_risk: %v", risk)
	}
	if l := p.waitLog(t, "wal_status unreserved", 0); l.str("level") != "WARN" || l.str("risk") != "unreserved" {
		t.Errorf("the warning of a slot past max_slot_wal_keep_size: %v", l)
	}
	e2eSync(t, e, p, 2*time.Minute)
	e2eCompare(t, e)
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}

	rc.checkDelivery(t)
	for _, ev := range rc.accepted(0) {
		checkEnvelope(t, e, ev)
	}
	noSecrets(t, "an event", rc.texts(), e.src.Password, e.tgt.Password, hookSecret)
}

// TestWebhookReceiverHangs: with one receiver that never answers and one
// that is down, replicate still applies a workload and catches up, while its
// events wait for them (queued, none delivered); at the stop it gives up on
// them within its bound, says so, and exits 0.
func TestWebhookReceiverHangs(t *testing.T) {
	e := e2ePair(t, harness.Majors()[0])
	hanging := newHookReceiver(t, "", false)
	hanging.hang = make(chan struct{})
	t.Cleanup(func() { close(hanging.hang) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/hook"
	l.Close()
	// Every reading of the slot's WAL is over PGRELAY_SLOT_WAL_ALERT=1:
	// slot.at_risk follows replicate.started.
	e.extra = append(e.extra, "PGRELAY_WEBHOOK_URL="+hanging.url+","+down, "PGRELAY_SLOT_WAL_ALERT=1", "PGRELAY_METRICS_ADDR=127.0.0.1:0")
	e.src.Exec(t, "CREATE TABLE wk (id int PRIMARY KEY, v text)")
	p := e.start("replicate")
	p.waitLog(t, "streaming", time.Minute)
	metrics := "http://" + p.waitLog(t, "serving /metrics", 0).str("addr") + "/metrics"
	// 2,000 transactions of 5 rows.
	e.src.Exec(t, `DO $$ BEGIN FOR i IN 0..1999 LOOP INSERT INTO wk SELECT i * 5 + g, repeat('w', 100) FROM generate_series(1, 5) g; COMMIT; END LOOP; END $$`)
	e2eSync(t, e, p, 3*time.Minute)
	e2eCompare(t, e)
	var m map[string]float64
	harness.Eventually(t, time.Minute, "the events to wait in the queues", func() error {
		if m, err = scrape(metrics); err != nil {
			return err
		}
		if m["pgrelay_webhook_events_total"] < 2 || m["pgrelay_webhook_queued"] < 1 {
			return fmt.Errorf("metrics %v", m)
		}
		return nil
	})
	if m[`pgrelay_webhook_deliveries_total{outcome="delivered"}`] != 0 {
		t.Errorf("deliveries to receivers that hang or are down: %v", m)
	}
	if code := p.term(t, time.Minute); code != 0 {
		t.Fatalf("replicate exited %d after SIGTERM; log:\n%s", code, p.logs())
	}
	if l := p.waitLog(t, "events not delivered before exit", 0); l["undelivered"].(float64) < 1 {
		t.Errorf("the exit's word on what was not delivered: %v", l)
	}
}

// scrape reads /metrics into name{labels} → value.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, nil
}
